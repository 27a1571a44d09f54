//! The typed model every stage shares: a [`Book`] of [`Chapter`]s, each a list of [`Cell`]s with
//! their byte spans and lines in the Markdown. Only `parse` builds it; no later stage re-reads
//! Markdown.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use regex::Regex;

/// A place in a chapter, printed as `book/src/ch06.md:42` (the form editors and terminals link).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    /// Path relative to the project root.
    pub file: PathBuf,
    /// One-based line number.
    pub line: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// The book: every `book/src/chNN.md`, in chapter-number order.
#[derive(Debug)]
pub struct Book {
    pub chapters: Vec<Chapter>,
}

impl Book {
    pub fn chapter(&self, name: &str) -> Option<&Chapter> {
        self.chapters.iter().find(|c| c.name == name)
    }
}

/// One chapter file and what `parse` found in it.
#[derive(Debug)]
pub struct Chapter {
    /// `ch06`: the file stem, and the name of the generated crate.
    pub name: String,
    /// `book/src/ch06.md`, relative to the project root.
    pub path: PathBuf,
    /// The file's exact text; `accept` splices into it by byte span.
    pub source: String,
    pub cells: Vec<Cell>,
    pub directives: Directives,
}

impl Chapter {
    pub fn location(&self, line: usize) -> Location {
        Location { file: self.path.clone(), line }
    }

    pub fn run_cells(&self) -> impl Iterator<Item = &Cell> {
        self.cells.iter().filter(|c| c.kind == CellKind::Run)
    }
}

/// Chapter-wide settings declared in `<!-- tangle: ... -->` comments.
#[derive(Debug, Default)]
pub struct Directives {
    /// Files the chapter's code reads, relative to the project root, each with the line that
    /// declares it; part of the cache key.
    pub data: Vec<(PathBuf, usize)>,
    /// How long the chapter binary may run before it is stopped.
    pub timeout: Option<Duration>,
}

/// What a Rust cell is for, decided by its first line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellKind {
    /// `// @save`: library items, `code/chNN/src/lib.rs`.
    Save,
    /// `// @test`: test items, `code/chNN/tests/cells.rs`.
    Test,
    /// Anything else: statements of the chapter's `main`, run in order.
    Run,
}

/// A ```` ```rust ```` block of a chapter.
#[derive(Debug)]
pub struct Cell {
    pub kind: CellKind,
    /// Line of the first code line (after the fence); the cell's name in markers and errors.
    pub code_line: usize,
    /// The code, `// @save`/`// @test` line included (so line offsets stay true).
    pub code: String,
    /// Byte offset just after the closing fence (before its newline): where `accept` inserts a
    /// new output block.
    pub end: usize,
    /// The heading of the section the cell sits in (for snapshot names).
    pub section: String,
    /// The `output` block that follows the cell, if any.
    pub output: Option<OutputBlock>,
}

/// A ```` ```output ```` block: what the cell before it printed when it was last accepted.
#[derive(Debug)]
pub struct OutputBlock {
    /// The whole block, fences included.
    pub span: Range<usize>,
    /// Just the contents between the fences.
    pub content: Range<usize>,
    /// Line of the opening fence: what drift diffs are headed with.
    pub line: usize,
    pub text: String,
    pub spec: OutputSpec,
}

/// What the author declared may vary in an output block.
#[derive(Debug, Default, Clone)]
pub struct OutputSpec {
    pub redactions: Vec<Redaction>,
    /// Relative tolerance for every number in the block.
    pub rtol: Option<f64>,
}

impl OutputSpec {
    /// True when the block must match byte for byte (after trailing-space normalisation).
    pub fn is_exact(&self) -> bool {
        self.redactions.is_empty() && self.rtol.is_none()
    }
}

/// `NAME="regex"` on an output block: the match (or its first group) becomes `[NAME]`.
#[derive(Debug, Clone)]
pub struct Redaction {
    pub name: String,
    pub regex: Regex,
}
