//! `tangle-render`, the last stage, **render**: the HTML book, built by mdBook's library with
//! tangle's preprocessor, and the theme it needs ([`theme`]: stylesheet, script and math font,
//! shipped in this crate and written into each book).
//!
//! mdBook reads the chapters under `[book] src` and hands every chapter to [`TanglePreprocessor`] (which runs
//! before mdBook's own `{{#include}}` expansion, so that nothing in program output expands).
//! The preprocessor works from the chapters as the check parsed them ([`Parsed`], the checked
//! project's documents and chapters, handed over in [`RenderOptions`]): `tangle book` parses
//! each file once, and only a page whose text is not the one parsed (or a book rendered without
//! a check) is read through the shared Markdown front end ([`tangle_core::markdown`]) here. It
//! numbers what can be referred to ([`labels`]) and rewrites each chapter ([`chapter`]) into
//! Markdown and HTML that mdBook shows:
//!
//! - `output` blocks become preformatted program output; cells lose their marker line, test
//!   cells and figure-drawing cells fold ([`cells`]);
//! - `{{#figure name | caption}}` places `figures/chNN/name.svg` (the figures folder of
//!   [`tangle_core::config::Layout`]) as a numbered figure
//!   ([`figures`]); `{{#ref fig:name}}` and plain "Figure 6.1" become links ([`refs`]);
//! - `{{#widget name | caption}}` places a live calculator (a form whose values a run cell
//!   computed with `tangle_runtime::widget`) as a numbered figure ([`widgets`]);
//! - diagram fences (```` ```sequence ````) are drawn as SVG ([`diagrams`]);
//! - `$$ ... \tag{6.1} $$` and `$...$` become MathML at build time ([`math`], by KaTeX run in
//!   QuickJS: [`katex`]);
//! - `[@key]` cites an entry of the book's `references.yaml`, rendered in one style with a reference
//!   list per chapter ([`citations`]);
//! - blockquotes opening with `> **Note — ...**` become asides ([`callouts`]);
//! - chapters take their number from their heading (`# 6 Distributed ...`).
//!
//! After mdBook, [`search`] rebuilds the search index with cell code in a field of its own, so
//! that prose ranks first.
//!
//! What a build works out from inputs that have not changed is kept under
//! `target/tangle/render/` ([`cache`]) and read back: each chapter's preprocessed Markdown,
//! rendered equations and citations, the rebuilt search index; and `tangle book` with nothing
//! written since its last build leaves that build standing. [`build_changed_pages`] renders
//! only the pages whose chapters changed, for `serve` to show at once. [`pdf`] prints the built
//! book to PDF through headless Chromium (`cargo tangle pdf`), driven over the DevTools protocol
//! by [`chromium`], as the browser tests drive it.
//!
//! Before mdBook runs, [`validate()`] refuses what the book cannot show (an unknown citation key,
//! figure or calculator, a calculator placed twice, a missing chapter, an include that reads
//! outside the book's folders); `check` runs the same pass. Any error mdBook itself logs while
//! building fails the build too ([`mdbook_log`]). `check` also warns, as `book` does, of a chapter
//! that `SUMMARY.md` leaves out ([`unlisted_chapters`]), and, from [`reading_order`], of a
//! chapter whose code uses a chapter the reader meets later.
//!
//! Nothing in the output loads a script, stylesheet or font from the network. [`serve`](mod@serve) serves
//! the book while an author writes.

// The maps above name the private modules too: they are for those who read the source or
// `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

mod book;
mod cache;
mod callouts;
mod cells;
mod chapter;
pub mod chromium;
mod citations;
mod diagrams;
mod figures;
mod html;
mod katex;
mod labels;
mod math;
mod mdbook_log;
pub mod pdf;
mod reading_order;
mod refs;
mod search;
pub mod serve;
pub mod theme;
mod validate;
mod widgets;

pub use book::{
    Chapters, NAME, Previous, Refused, RenderOptions, Rendered, TanglePreprocessor, build_book, build_changed_pages,
};
pub use labels::Parsed;
pub use reading_order::later_chapter_uses;
pub use serve::serve;
pub use validate::{
    MDBOOK_05_REMOVED, RemovedKey, mdbook_reads, reads_an_unreadable_file, unlisted_chapters, validate,
};
