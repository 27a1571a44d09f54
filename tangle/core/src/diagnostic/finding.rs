//! What a diagnostic is: a finding, its severity, where it is (a [`Location`] in a chapter
//! and the byte ranges to underline), and the help and notes that say what to do.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A place in a chapter, printed as `book/src/ch06.md:42` or `book/src/ch06.md:42:7` (the form
/// editors and terminals link).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    /// Path relative to the project root.
    pub file: PathBuf,
    /// One-based line number.
    pub line: usize,
    /// One-based column in characters, when known.
    pub column: Option<usize>,
}

impl Location {
    pub fn new(file: impl Into<PathBuf>, line: usize) -> Self {
        Location { file: file.into(), line, column: None }
    }

    pub fn with_column(mut self, column: usize) -> Self {
        self.column = Some(column);
        self
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)?;
        if let Some(column) = self.column {
            write!(f, ":{column}")?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteKind {
    Note,
    Help,
}

/// A labelled byte range of the diagnostic's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    pub range: Range<usize>,
    pub text: String,
}

/// One finding, with where it is and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Lower case, no final period: "this code block is never closed".
    pub message: String,
    /// rustc's error code (`E0425`), when the diagnostic comes from the compiler.
    pub code: Option<String>,
    pub location: Option<Location>,
    /// The byte range of the file that the caret underlines, when finer than the line.
    pub primary: Option<Label>,
    /// Other ranges of the same file worth pointing at.
    pub secondary: Vec<Label>,
    pub notes: Vec<(NoteKind, String)>,
    /// When `location` is in a file a chapter includes (`{{#include FILE}}`), the chapter line
    /// of that directive: the finding belongs to the chapter's cell there.
    pub included_at: Option<Location>,
}

/// The text of `file` (its `bytes`), or an error at the line of its first byte that is not
/// UTF-8: a chapter or `book.toml` that is not UTF-8 (mdBook would stop on it too).
pub fn utf8_text(file: &Path, bytes: Vec<u8>) -> Result<String, Box<Diagnostic>> {
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..valid].iter().filter(|&&b| b == b'\n').count() + 1;
        Box::new(Diagnostic::error(Location::new(file, line), "the file is not valid UTF-8 (re-save it as UTF-8)"))
    })
}

impl Diagnostic {
    pub fn error(location: Location, message: impl Into<String>) -> Self {
        Diagnostic::new(Severity::Error, Some(location), message)
    }

    pub fn warning(location: Location, message: impl Into<String>) -> Self {
        Diagnostic::new(Severity::Warning, Some(location), message)
    }

    /// A diagnostic with no place in a chapter (a missing file, cargo that cannot run).
    pub fn new(severity: Severity, location: Option<Location>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity,
            message: message.into(),
            code: None,
            location,
            primary: None,
            secondary: Vec::new(),
            notes: Vec::new(),
            included_at: None,
        }
    }

    /// Underlines `range` (bytes of the file) with an optional label.
    pub(crate) fn with_span(mut self, range: Range<usize>, label: impl Into<String>) -> Self {
        self.primary = Some(Label { range, text: label.into() });
        self
    }

    pub(crate) fn with_secondary(mut self, range: Range<usize>, label: impl Into<String>) -> Self {
        self.secondary.push(Label { range, text: label.into() });
        self
    }

    pub fn with_help(mut self, text: impl Into<String>) -> Self {
        self.notes.push((NoteKind::Help, text.into()));
        self
    }

    pub(crate) fn with_note(mut self, text: impl Into<String>) -> Self {
        self.notes.push((NoteKind::Note, text.into()));
        self
    }

    /// Where in a chapter it belongs: its location, or for a finding in an included file,
    /// the line of the chapter that includes it.
    pub fn chapter_location(&self) -> Option<&Location> {
        self.included_at.as_ref().or(self.location.as_ref())
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// The one-line form, `book/src/ch06.md:42: message`, for logs and `anyhow` chains.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(location) = &self.location {
            write!(f, "{location}: ")?;
        }
        write!(f, "{}", self.message)?;
        for (kind, text) in &self.notes {
            let word = match kind {
                NoteKind::Help => "help",
                NoteKind::Note => "note",
            };
            write!(f, " ({word}: {text})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

/// Every diagnostic of a stage, in the order found. As an error (at least one of them is an
/// error), it travels through `anyhow` and the CLI renders each one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    pub fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }

    pub(crate) fn has_errors(&self) -> bool {
        self.0.iter().any(Diagnostic::is_error)
    }

    /// `Err(self)` when any of them is an error, else `Ok(value)` (warnings are dropped).
    pub(crate) fn into_result<T>(self, value: T) -> Result<T, Diagnostics> {
        if self.has_errors() { Err(self) } else { Ok(value) }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter()
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Diagnostics(vec![d])
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// The file a diagnostic points into, relative to the project root.
pub fn relative<'p>(root: &Path, path: &'p Path) -> &'p Path {
    path.strip_prefix(root).unwrap_or(path)
}
