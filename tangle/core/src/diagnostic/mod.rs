//! Diagnostics: what went wrong in the author's input (the Markdown and the code in it) or in
//! the build, always located in a chapter file (`book/src/ch06.md:42:7`), and shown as rustc
//! shows its errors: the chapter's line with a caret under the column ([`render`]). The types
//! are in [`finding`].
//!
//! Stages collect every diagnostic they can before stopping ([`Diagnostics`]), so that one run
//! reports all the mistakes of a chapter rather than the first.

mod finding;
mod render;

pub use finding::{Diagnostic, Diagnostics, Label, Location, NoteKind, Severity, relative, utf8_text};
pub use render::{Sources, Style};
