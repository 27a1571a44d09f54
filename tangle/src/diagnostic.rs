//! Errors in the author's input (the Markdown and the code in it), always with the chapter
//! file and line, so that the terminal and the editor can jump to the cause.

use std::fmt;

use crate::model::Location;

/// A mistake in a chapter that stops the pipeline: malformed Markdown, a cell that does not
/// parse or compile, a cycle between chapters. The CLI exits with status 2 on these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub location: Location,
    pub message: String,
}

impl InputError {
    pub fn new(location: Location, message: impl Into<String>) -> Self {
        InputError { location, message: message.into() }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

impl std::error::Error for InputError {}

/// Maps byte offsets of a text to one-based line numbers.
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        LineIndex { starts }
    }

    /// The one-based line that contains byte `offset`.
    pub fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset)
    }
}
