//! The typed model every stage shares: a [`Book`] of [`Chapter`]s, each a list of [`Cell`]s with
//! their byte spans and lines in the Markdown, and the parsed [`Document`] of every Markdown
//! file. Only `parse` builds it; later stages that write Markdown (accept, fmt) splice by these
//! spans, and the style checks and the renderer read the documents parsed here rather than
//! parse the files again.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use regex::Regex;

pub use crate::config::CellMode;
pub use crate::diagnostic::Location;
pub use crate::markdown::Document;

/// The book: every chapter with cells, in the order of their paths (the generated crates are
/// ordered dependencies first, see `generate`), and every Markdown file of the source folder
/// as parsed, cells or not.
///
/// Chapters are shared ([`Arc`]): what the later stages make of a chapter (its generated
/// crate, its run's result, its examples) holds the chapter itself, never a name to look up
/// again.
#[derive(Debug, Default, Clone)]
pub struct Book {
    pub chapters: Vec<Arc<Chapter>>,
    /// Every Markdown file under the source folder but `SUMMARY.md`, by its path relative to
    /// the project root (`book/src/intro.md`): the pages the renderer works from. A chapter's
    /// entry is the same document as its [`Chapter::doc`].
    pub documents: BTreeMap<PathBuf, Arc<Document>>,
}

impl Book {
    /// A book of these chapters alone, their documents its only pages (for tests).
    #[cfg(test)]
    pub(crate) fn from_chapters(chapters: Vec<Chapter>) -> Book {
        let documents = chapters.iter().map(|c| (c.path.clone(), c.doc.clone())).collect();
        Book { chapters: chapters.into_iter().map(Arc::new).collect(), documents }
    }

    /// The chapter of this name, for names that come from outside the pipeline (`--chapter
    /// ch06`, a `freeze` list); what the stages make of a chapter holds the chapter itself.
    pub fn chapter(&self, name: &str) -> Option<&Arc<Chapter>> {
        self.chapters.iter().find(|c| c.name == name)
    }

    /// Puts `new` in place of the chapter of the same name, and its document in place of that
    /// chapter's page.
    pub fn replace(&mut self, new: Chapter) {
        self.documents.insert(new.path.clone(), new.doc.clone());
        if let Some(old) = self.chapters.iter_mut().find(|c| c.name == new.name) {
            *old = Arc::new(new);
        }
    }

    /// The chapter made from the file at `path` (relative to the project root), if it has cells.
    pub fn chapter_at(&self, path: &Path) -> Option<&Arc<Chapter>> {
        self.chapters.iter().find(|c| c.path == path)
    }
}

/// One chapter file and what `parse` found in it.
#[derive(Debug, Clone)]
pub struct Chapter {
    /// `ch06`: the name of the generated crate (see `parse::crate_name`).
    pub name: String,
    /// `book/src/ch06.md`, relative to the project root.
    pub path: PathBuf,
    /// The file as parsed: its exact text ([`Chapter::source`]) and its Markdown structure.
    pub doc: Arc<Document>,
    pub cells: Vec<Cell>,
    /// Sentences' quotes of values the code publishes (`{{#value NAME shown}}`).
    pub quotes: Vec<ValueQuote>,
    pub directives: Directives,
    /// How its Rust blocks are read: `<!-- tangle: cells MODE -->`, else `book.toml`'s `cells`.
    pub mode: CellMode,
}

impl Chapter {
    /// The file's exact text; `accept` splices into it by byte span.
    pub fn source(&self) -> &str {
        self.doc.source()
    }

    pub fn location(&self, line: usize) -> Location {
        Location::new(self.path.clone(), line)
    }

    /// The cell whose code holds chapter line `line`, if one does.
    pub fn cell_at(&self, line: usize) -> Option<&Cell> {
        self.cells.iter().find(|c| c.code_line <= line && line <= c.last_line())
    }

    pub fn run_cells(&self) -> impl Iterator<Item = &Cell> {
        self.cells.iter().filter(|c| c.kind == CellKind::Run)
    }

    /// The line ending the file uses (`\r\n` if any line ends so), for text added to it.
    pub fn newline(&self) -> &'static str {
        if self.source().contains("\r\n") { "\r\n" } else { "\n" }
    }

    /// The line ending of the line holding byte `offset` (of the line before it, for a last
    /// line without one): what lines written there end with, in a file whose endings are mixed
    /// (a CRLF part pasted into an LF file); [`Chapter::newline`] where no line says.
    pub fn newline_at(&self, offset: usize) -> &'static str {
        let source = self.source();
        let offset = offset.min(source.len());
        let ending = |end: usize| if source[..end].ends_with('\r') { "\r\n" } else { "\n" };
        match source[offset..].find('\n') {
            Some(i) => ending(offset + i),
            None => source[..offset].rfind('\n').map_or_else(|| self.newline(), ending),
        }
    }
}

/// Chapter-wide settings declared in `<!-- tangle: ... -->` comments.
#[derive(Debug, Default, Clone)]
pub struct Directives {
    /// Files the chapter's code reads, relative to the project root, each with the line that
    /// declares it; part of the cache key.
    pub data: Vec<(PathBuf, usize)>,
    /// How long the chapter binary may run before it is stopped.
    pub timeout: Option<Duration>,
    /// Files of values recorded by a run outside the test command (a benchmark), relative to
    /// the project root, each with the line that declares it.
    pub values: Vec<(PathBuf, usize)>,
    /// Numbers the prose types by hand on purpose (`<!-- tangle: typed NUMBER REASON -->`).
    pub typed: Vec<TypedNumber>,
    /// `<!-- tangle: cells examples -->` or `cells notebook`: this chapter's mode, whatever
    /// `book.toml` says.
    pub cells: Option<CellMode>,
    /// The line of `<!-- tangle: freeze -->`: the chapter's run is committed and reused rather
    /// than rerun (see [`crate::freeze`]).
    pub freeze: Option<usize>,
}

/// A number the prose states by hand although the code prints it too, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypedNumber {
    /// As the prose writes it (`989.4`, `3,584`).
    pub number: String,
    pub reason: String,
    /// The line of the directive.
    pub line: usize,
}

/// `{{#value NAME shown text}}` in a sentence, a caption, a table cell or a callout: a copy of
/// a value the chapter's code publishes, kept in the Markdown so that the file reads right on
/// its own, and kept true by `check` and `accept`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueQuote {
    pub name: String,
    /// What the sentence shows now: its backslash escapes read (`\}` is `}`, see
    /// [`crate::markdown::escape`]), spaces and line breaks collapsed to single spaces.
    pub shown: String,
    /// The bytes of the shown text (an empty range just after the name when nothing is shown
    /// yet): what `accept` replaces.
    pub shown_span: Range<usize>,
    /// The whole directive.
    pub span: Range<usize>,
    pub line: usize,
    pub column: usize,
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

impl CellKind {
    /// The marker line that makes a cell of this kind, if any.
    pub fn marker(self) -> Option<&'static str> {
        match self {
            CellKind::Save => Some("// @save"),
            CellKind::Test => Some("// @test"),
            CellKind::Run => None,
        }
    }
}

/// How the book shows a cell: open, or folded under a summary (the `fold` and `open` fence
/// attributes; without either, the renderer decides by kind and length).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Presentation {
    #[default]
    Default,
    Open,
    /// Folded; the summary the author gave, if any.
    Folded(Option<String>),
}

/// A ```` ```rust ```` block of a chapter.
#[derive(Debug, Clone)]
pub struct Cell {
    pub kind: CellKind,
    /// Line of the first code line (after the fence); the cell's name in markers and errors.
    pub code_line: usize,
    /// The code, `// @save`/`// @test` line included (so line offsets stay true), `\n` endings.
    pub code: String,
    /// The fence's byte span (opening fence to end of closing fence).
    pub span: Range<usize>,
    /// The byte range of the lines between the fences (container prefixes included).
    pub content: Range<usize>,
    /// What each line of the block starts with inside its containers (`> `, list indentation).
    pub prefix: String,
    /// The heading of the section the cell sits in (for snapshot names).
    pub section: String,
    pub presentation: Presentation,
    /// The `output` block that follows the cell, if any.
    pub output: Option<OutputBlock>,
    /// In an examples chapter: what the fence's rustdoc attributes claim (every block of such
    /// a chapter is a run cell with one).
    pub example: Option<ExampleAttributes>,
}

/// The rustdoc attributes of an example's fence (`rust,no_run,edition2021`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExampleAttributes {
    /// `ignore` (or `ignore-TARGET`): not compiled; counted as ignored.
    pub ignore: bool,
    /// `no_run`: compiled, not run.
    pub no_run: bool,
    /// `should_panic`: passes only if it panics.
    pub should_panic: bool,
    /// `compile_fail`: passes only if it does not compile.
    pub compile_fail: bool,
    /// Error codes (`E0382`) a `compile_fail` example must fail with.
    pub error_codes: Vec<String>,
    /// `edition2021`: the example's own edition.
    pub edition: Option<String>,
    /// `test_harness`: rustdoc runs its `#[test]` functions. tangle does not yet, so it is
    /// counted as ignored (and said so), never as passed.
    pub test_harness: bool,
    /// `standalone_crate`: built in a crate of its own, never merged with other examples.
    pub standalone_crate: bool,
}

impl Cell {
    /// Byte offset just after the closing fence: where `accept` inserts a new output block.
    pub fn end(&self) -> usize {
        self.span.end
    }

    /// The chapter line of the cell's last code line.
    pub(crate) fn last_line(&self) -> usize {
        self.code_line + self.code.lines().count().saturating_sub(1)
    }
}

/// A ```` ```output ```` block: what the cell before it printed when it was last accepted.
#[derive(Debug, Clone)]
pub struct OutputBlock {
    /// The whole block, opening fence to end of closing fence.
    pub span: Range<usize>,
    /// The lines between the fences (container prefixes included).
    pub content: Range<usize>,
    /// Line of the opening fence: what drift diffs are headed with.
    pub line: usize,
    /// The block's text, container prefixes removed.
    pub text: String,
    pub spec: OutputSpec,
    /// The fence: character and length, and the prefix of its lines.
    pub marker: char,
    pub marker_len: usize,
    pub prefix: String,
    /// The info string as written, kept when the block is rewritten.
    pub info_raw: String,
}

/// What the author declared may vary in an output block.
#[derive(Debug, Default, Clone)]
pub struct OutputSpec {
    pub redactions: Vec<Redaction>,
    /// Relative tolerance for every number in the block.
    pub rtol: Option<f64>,
}

/// `NAME="regex"` on an output block: the match (or its first group) becomes `[NAME]`.
#[derive(Debug, Clone)]
pub struct Redaction {
    pub name: String,
    pub regex: Regex,
}
