//! What can go wrong declaring, computing, writing or reading back a widget: one error type
//! for the whole module, so that a chapter's `?` names the widget's problem in its words.

use std::error::Error;
use std::fmt;
use std::path::PathBuf;

/// What can go wrong declaring, computing, writing or reading back a widget.
#[derive(Debug)]
pub enum WidgetError {
    /// The name would not make a plain file name (`a-z`, `0-9`, `-`, `_`).
    BadName(String),
    /// [`crate::init`] was not called, so the widget has no chapter directory.
    NoChapter,
    /// Another widget of this chapter already has this name.
    Duplicate(String),
    /// The declaration is inconsistent (a default that is not an option, no outputs, ...).
    Declaration(String),
    /// The outputs closure failed at one combination of inputs (named by their values).
    Compute { at: String, error: String },
    /// The outputs at two combinations have different shapes (other labels, other charts).
    Shape { at: String, why: String },
    /// Writing the file failed.
    Io(PathBuf, std::io::Error),
    /// A data file could not be read back.
    Data(String),
    /// A data file disagrees with the native values.
    Mismatch(String),
}

impl fmt::Display for WidgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WidgetError::BadName(n) => {
                write!(f, "widget name {n:?} must be lower-case ASCII letters, digits, '-' or '_'")
            }
            WidgetError::NoChapter => write!(f, "tangle_runtime::init(chapter) must run before a widget is written"),
            WidgetError::Duplicate(n) => {
                write!(f, "a widget named {n:?} was already written by this chapter; give each widget its own name")
            }
            WidgetError::Declaration(why) => write!(f, "widget declaration: {why}"),
            WidgetError::Compute { at, error } => write!(f, "widget outputs failed at {at}: {error}"),
            WidgetError::Shape { at, why } => write!(
                f,
                "widget outputs at {at} differ in shape from the default state's ({why}); every combination must produce the same labelled outputs and charts with the same number of layers"
            ),
            WidgetError::Io(p, e) => write!(f, "cannot write {}: {e}", p.display()),
            WidgetError::Data(why) => write!(f, "widget data file: {why}"),
            WidgetError::Mismatch(why) => write!(f, "widget data file disagrees with the native values: {why}"),
        }
    }
}

impl Error for WidgetError {}
