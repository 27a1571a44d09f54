//! One chapter's fences → cells and output blocks.
//!
//! The rules, documented for authors in `book/src/building.md`:
//! - A fence whose language is `rust` is a cell unless it carries `ignore`. Its kind is decided
//!   by its first line, exactly: `// @save`, `// @test`, or anything else (a run cell). A line
//!   that looks like a marker anywhere else in the cell is an error, so that a blank first line
//!   or a marker below a comment cannot quietly turn library code into a run cell.
//! - A fence whose language is `output` belongs to the run cell right before it, in the same
//!   container (list item, blockquote), with only blank lines between them.
//! - Every fence must be closed: an unclosed fence swallows the rest of its container.
//! - In an examples chapter (`cells = "examples"` in `book.toml`, or `<!-- tangle: cells
//!   examples -->` in the chapter) every `rust` fence is a run cell that is a program of its
//!   own, as rustdoc reads it; its info string carries rustdoc's attributes
//!   ([`ExampleAttributes`]), `ignore` included, and no cell marker means anything. An mdBook
//!   `{{#playground FILE ATTRIBUTES}}` in its prose is an example too, in its place among the
//!   fences: an include of the whole of FILE, with ATTRIBUTES as its fence's.

use std::path::Path;
use std::sync::Arc;

use regex::Regex;

use super::directives;
use crate::diagnostic::{Diagnostic, Diagnostics, Location};
use crate::markdown::{Document, Fence, FenceInfo};
use crate::model::{
    Cell, CellKind, CellMode, Chapter, ExampleAttributes, OutputBlock, OutputSpec, Presentation, Redaction, ValueQuote,
};

/// Parses one chapter file of a notebook book. `path` is relative to the project root and used
/// in messages.
pub fn parse_chapter(name: &str, path: &Path, bytes: Vec<u8>) -> Result<Chapter, Diagnostics> {
    parse_chapter_as(name, path, bytes, CellMode::Notebook)
}

/// Parses one chapter file; `default` is the book's mode (`book.toml`'s `cells`), which a
/// `<!-- tangle: cells MODE -->` comment in the chapter overrides.
pub(crate) fn parse_chapter_as(
    name: &str,
    path: &Path,
    bytes: Vec<u8>,
    default: CellMode,
) -> Result<Chapter, Diagnostics> {
    let source = decode(path, bytes)?;
    read_chapter(name, path, Arc::new(Document::parse(source)), default)
}

/// The line where the first conflict git left in the chapter starts ([`crate::git::conflicts`]).
/// Markers inside a closed block that is not Rust are the
/// chapter's text, not a conflict: a chapter about git may quote one in a ```` ```text ````
/// block, or print one (its `output` block; a conflict there is an output that drifted).
/// With `quoted_too`, markers count wherever they stand (git says the file is unmerged).
pub(crate) fn merge_conflict(doc: &Document, quoted_too: bool) -> Option<usize> {
    let quoted = |at: usize| {
        !quoted_too
            && doc.fences.iter().any(|f| f.closed && f.content.contains(&at) && !matches!(fence_lang(f), "" | "rust"))
    };
    // A conflict that broke a fence has a marker outside the quoted block.
    let conflicts = crate::git::conflicts(doc.source());
    let first = conflicts.iter().find(|c| !c.markers.iter().all(|&at| quoted(at)))?;
    Some(doc.line_col(first.whole.start).0)
}

/// The error for git's conflict markers left at `line` of `path`.
pub(crate) fn conflict_error(path: &Path, line: usize) -> Diagnostic {
    Diagnostic::error(
        Location::new(path, line).with_column(1),
        "an unresolved merge conflict: git left its markers here (<<<<<<<, =======, >>>>>>>)",
    )
    .with_help("resolve it (keep one side, or combine the two) and delete the three marker lines")
}

/// A chapter file's text, or an error at the line of its first byte that is not UTF-8
/// (mdBook would stop on it too).
pub fn decode(path: &Path, bytes: Vec<u8>) -> Result<String, Diagnostics> {
    crate::diagnostic::utf8_text(path, bytes).map_err(|d| Diagnostics::from(*d))
}

/// Reads the cells, quotes and directives of a chapter already parsed (the book's loader
/// parses every file once, and the renderer reuses what it parsed).
pub fn read_chapter(name: &str, path: &Path, doc: Arc<Document>, default: CellMode) -> Result<Chapter, Diagnostics> {
    // A merge left its markers in the file: what the fences and cells around them mean cannot
    // be told, and every error after this one would be a consequence of it.
    if let Some(line) = merge_conflict(&doc, false) {
        return Err(conflict_error(path, line).into());
    }
    let mut directive_errors = Diagnostics::default();
    let directives = directives::read(path, &doc, &mut directive_errors);
    let mode = directives.cells.unwrap_or(default);
    let mut reader =
        Reader { path, doc: &doc, diagnostics: Diagnostics::default(), cells: Vec::new(), mode, refused_end: None };
    // In a chapter of examples, `{{#playground FILE}}` is an example too, in its place among the
    // fences: mdBook expands it to a rust block of FILE's text, which `mdbook test` tests.
    let mut playgrounds = doc
        .directives_named("playground")
        .filter(|_| mode == CellMode::Examples)
        .collect::<Vec<_>>()
        .into_iter()
        .peekable();
    for fence in &doc.fences {
        while let Some(directive) = playgrounds.next_if(|d| d.span.start < fence.span.start) {
            reader.playground(directive);
        }
        reader.fence(fence);
    }
    playgrounds.for_each(|directive| reader.playground(directive));
    let quotes = reader.quotes();
    let cells = reader.cells;
    let mut diagnostics = reader.diagnostics;
    diagnostics.extend(directive_errors);
    diagnostics.into_result(()).map(|()| Chapter {
        name: name.to_string(),
        path: path.to_path_buf(),
        doc: doc.clone(),
        cells,
        quotes,
        directives,
        mode,
    })
}

/// A fence's first word, as written (before any attribute parsing can fail).
fn fence_lang(fence: &Fence) -> &str {
    fence.info_raw.split(|c: char| c == ',' || c.is_whitespace()).next().unwrap_or("")
}

/// The zero-based line of the block's text that opens a fence as long as the block's own
/// (```` ```rust ```` inside a ```` ```text ```` block). Such a line cannot be part of an example
/// (its own closing fence would have closed the block), so the block was almost certainly left
/// open above it and has swallowed what follows.
fn swallowed_fence(fence: &Fence) -> Option<usize> {
    fence.text.lines().position(|line| {
        let t = line.trim_start();
        let run = t.chars().take_while(|&c| c == fence.marker).count();
        run >= fence.marker_len && !t[run..].trim().is_empty()
    })
}

/// rustdoc's attributes besides `ignore`: a sign that a chapter holds examples, not cells.
const RUSTDOC_ATTRIBUTES: &[&str] =
    &["no_run", "should_panic", "compile_fail", "editable", "noplayground", "mdbook-runnable"];

struct Reader<'a> {
    path: &'a Path,
    doc: &'a Document,
    diagnostics: Diagnostics,
    cells: Vec<Cell>,
    mode: CellMode,
    /// The end of the last rust fence refused with an error: the output block after it
    /// belongs to that refused cell, whose error already stands for both.
    refused_end: Option<usize>,
}

/// The attributes of an example's fence that tangle reads (or knows to leave to mdBook's
/// renderer), for telling a misspelling of one from a word of the book's own.
const EXAMPLE_ATTRIBUTES: &[&str] = &[
    "ignore",
    "no_run",
    "should_panic",
    "compile_fail",
    "edition2015",
    "edition2018",
    "edition2021",
    "edition2024",
    "editable",
    "noplayground",
    "noplaypen",
    "mdbook-runnable",
    "test_harness",
    "standalone_crate",
];

impl Reader<'_> {
    /// The `{{#value NAME shown}}` quotes of the chapter's prose.
    fn quotes(&mut self) -> Vec<ValueQuote> {
        let mut quotes = Vec::new();
        for d in self.doc.directives_named("value") {
            let args = self.doc.text(d.args.clone());
            let lead = args.len() - args.trim_start().len();
            let name_len = args[lead..].find(char::is_whitespace).unwrap_or(args.len() - lead);
            let name = &args[lead..lead + name_len];
            if name.is_empty() {
                self.error(d.span.clone(), "this value quote names no value").notes.push((
                    crate::diagnostic::NoteKind::Help,
                    "write `{{#value NAME shown text}}`, NAME as a cell publishes it with `tangle_runtime::value`"
                        .into(),
                ));
                continue;
            }
            let rest = &args[lead + name_len..];
            let shown_start = d.args.start + lead + name_len + (rest.len() - rest.trim_start().len());
            let shown_span = shown_start..(d.args.start + args.trim_end().len()).max(shown_start);
            let shown = crate::markdown::escape::unquote(
                &self.doc.text(shown_span.clone()).split_whitespace().collect::<Vec<_>>().join(" "),
            );
            let (line, column) = self.doc.line_col(d.span.start);
            quotes.push(ValueQuote { name: name.to_string(), shown, shown_span, span: d.span.clone(), line, column });
        }
        quotes
    }

    /// An error underlining `range` of the file.
    fn error(&mut self, range: std::ops::Range<usize>, message: impl Into<String>) -> &mut Diagnostic {
        let (line, column) = self.doc.line_col(range.start);
        let d = Diagnostic::error(Location::new(self.path, line).with_column(column), message).with_span(range, "");
        self.diagnostics.push(d);
        self.diagnostics.0.last_mut().expect("just pushed")
    }

    /// The opening fence line's range, for errors about the fence itself.
    fn opening(&self, fence: &Fence) -> std::ops::Range<usize> {
        let end =
            self.doc.source()[fence.span.start..].find(['\n', '\r']).map_or(fence.span.end, |i| fence.span.start + i);
        fence.span.start..end
    }

    fn fence(&mut self, fence: &Fence) {
        let (errors, cells) = (self.diagnostics.iter().count(), self.cells.len());
        self.read_fence(fence);
        if self.is_rust(fence) && self.cells.len() == cells && self.diagnostics.iter().count() > errors {
            self.refused_end = Some(fence.span.end);
        }
    }

    /// Whether the fence holds Rust: ```` ```rust ```` in a notebook chapter; in an examples
    /// chapter, every block rustdoc tests (a bare fence, ```` ```no_run ````), as `mdbook test`
    /// would.
    fn is_rust(&self, fence: &Fence) -> bool {
        match self.mode {
            CellMode::Notebook => fence_lang(fence) == "rust",
            CellMode::Examples => crate::markdown::rustdoc_tests(&fence.info_raw),
        }
    }

    fn read_fence(&mut self, fence: &Fence) {
        let lang = fence_lang(fence);
        if !fence.closed {
            let marker: String = std::iter::repeat_n(fence.marker, fence.marker_len).collect();
            let opening = self.opening(fence);
            self.error(opening, "this code block is never closed")
                .notes
                .push((crate::diagnostic::NoteKind::Help, format!("close it with a line of {marker} where it ends")));
            return;
        }
        if let Some(line) = swallowed_fence(fence) {
            let opening = self.opening(fence);
            let marker: String = std::iter::repeat_n(fence.marker, fence.marker_len).collect();
            self.error(opening, format!("this code block runs on over the fence at line {}: it was probably never closed", fence.body_line() + line))
                .notes
                .push((crate::diagnostic::NoteKind::Help, format!(
                    "close it with a line of {marker} where it ends; to show a fence inside a block, make the outer fence longer ({marker}{})",
                    fence.marker
                )));
            return;
        }
        let rust = self.is_rust(fence);
        if !rust && lang != "output" {
            return;
        }
        let info = match &fence.info {
            Ok(info) => info.clone(),
            Err(why) => {
                let opening = self.opening(fence);
                self.error(opening, format!("cannot read this fence's attributes: {why}"));
                return;
            }
        };
        match rust {
            true => self.cell(fence, &info),
            false => self.output(fence, &info),
        }
    }

    /// `{{#playground FILE ATTRIBUTES}}` as the example mdBook makes of it: a rust block of the
    /// whole of FILE (relative to the chapter), with the attributes on its fence. The example's
    /// code is an include of that file, so that its lines are read, and their mistakes reported,
    /// in FILE.
    fn playground(&mut self, directive: &crate::markdown::Directive) {
        let args = self.doc.text(directive.args.clone());
        let mut words = args.split_whitespace();
        let Some(file) = words.next() else { return };
        let info_raw = std::iter::once("rust").chain(words).collect::<Vec<_>>().join(",");
        let opening = directive.span.clone();
        let info = match FenceInfo::parse(&info_raw) {
            Ok(info) => info,
            Err(why) => {
                self.error(opening, format!("cannot read this playground's attributes: {why}"));
                return;
            }
        };
        let Some(example) = self.example_attributes(opening, &info) else { return };
        let section = self.section_at(directive.span.start);
        self.cells.push(Cell {
            kind: CellKind::Run,
            code_line: self.doc.line_col(directive.span.start).0,
            code: format!("{{{{#include {file}}}}}\n"),
            span: directive.span.clone(),
            content: directive.span.clone(),
            prefix: String::new(),
            section,
            presentation: Presentation::Default,
            output: None,
            example: Some(example),
        });
    }

    fn cell(&mut self, fence: &Fence, info: &FenceInfo) {
        if self.mode == CellMode::Examples {
            let Some(example) = self.example_attributes(self.opening(fence), info) else { return };
            let section = self.section(fence);
            self.cells.push(Cell {
                kind: CellKind::Run,
                code_line: fence.body_line(),
                code: fence.text.clone(),
                span: fence.span.clone(),
                content: fence.content.clone(),
                prefix: fence.prefix.clone(),
                section,
                presentation: Presentation::Default,
                output: None,
                example: Some(example),
            });
            return;
        }
        let mut presentation = Presentation::Default;
        for attr in &info.attributes {
            match (attr.key.as_str(), &attr.value) {
                ("ignore", None) => return,
                ("fold", value) => presentation = Presentation::Folded(value.clone()),
                ("open", None) => presentation = Presentation::Open,
                (key, _) => {
                    let opening = self.opening(fence);
                    let d = self.error(opening, format!("unknown attribute `{key}` on a rust cell"));
                    d.notes.push((
                        crate::diagnostic::NoteKind::Help,
                        "known: `ignore` (shown, not run), `fold`, `fold=\"Summary\"`, `open`".into(),
                    ));
                    // An existing mdBook's examples, read as notebook cells by mistake.
                    if RUSTDOC_ATTRIBUTES.contains(&key) || key.starts_with("edition") {
                        d.notes.push((
                            crate::diagnostic::NoteKind::Help,
                            format!(
                                "`{key}` is rustdoc's: for blocks that are each a program of their own, as \
                                 `mdbook test` reads them, write `cells = \"examples\"` under \
                                 [preprocessor.tangle] in book.toml, or `<!-- tangle: cells examples -->` \
                                 in this chapter"
                            ),
                        ));
                    }
                    return;
                }
            }
        }
        // After a marker error the cell still counts (as a run cell), so that its output block
        // finds it and one mistake is reported once.
        let kind = self.kind(fence).unwrap_or(CellKind::Run);
        let section = self.section(fence);
        self.cells.push(Cell {
            kind,
            code_line: fence.body_line(),
            code: fence.text.clone(),
            span: fence.span.clone(),
            content: fence.content.clone(),
            prefix: fence.prefix.clone(),
            section,
            presentation,
            output: None,
            example: None,
        });
    }

    /// The heading of the section a fence sits in.
    fn section(&self, fence: &Fence) -> String {
        self.section_at(fence.span.start)
    }

    /// The heading of the section byte `at` is in.
    fn section_at(&self, at: usize) -> String {
        self.doc
            .headings
            .iter()
            .take_while(|h| h.span.start < at)
            .filter(|h| h.level <= 2)
            .last()
            .map(|h| h.text.clone())
            .unwrap_or_default()
    }

    /// rustdoc's attributes of an example's fence, or `None` after reporting a near miss of one
    /// (a misspelled `should_panic` would otherwise pass as a plain example).
    /// `opening` is what an error about them underlines (the fence's first line).
    fn example_attributes(&mut self, opening: std::ops::Range<usize>, info: &FenceInfo) -> Option<ExampleAttributes> {
        let mut example = ExampleAttributes::default();
        // In ```` ```no_run ```` the first word is an attribute, not a language.
        let first = Some(&info.lang)
            .filter(|lang| !lang.is_empty() && *lang != "rust")
            .map(|lang| crate::markdown::Attribute { key: lang.clone(), value: None });
        for attr in first.iter().chain(&info.attributes) {
            let key = attr.key.as_str();
            match key {
                "ignore" => example.ignore = true,
                _ if key.starts_with("ignore-") => example.ignore = true,
                "no_run" => example.no_run = true,
                "should_panic" => example.should_panic = true,
                "compile_fail" => example.compile_fail = true,
                "edition2015" | "edition2018" | "edition2021" | "edition2024" => {
                    example.edition = Some(key["edition".len()..].to_string());
                }
                // Display hints for mdBook's HTML renderer, and rustdoc's own that change nothing
                // here; `hidelines=` and other `key=value` settings belong to the renderer.
                "editable" | "noplayground" | "noplaypen" | "mdbook-runnable" => {}
                "test_harness" => (example.test_harness, example.ignore) = (true, true),
                "standalone_crate" => example.standalone_crate = true,
                _ if attr.value.is_some() => {}
                _ if key.len() == 5 && key.starts_with('E') && key[1..].bytes().all(|b| b.is_ascii_digit()) => {
                    example.error_codes.push(key.to_string());
                }
                // A near miss of one of rustdoc's (`should-panic`) would pass as a plain example.
                _ if let Some(near) = crate::messages::closest(key, EXAMPLE_ATTRIBUTES.iter().copied()) => {
                    self.error(opening, format!("unknown attribute `{key}` on a rust example: did you mean `{near}`?"))
                        .notes
                        .push((
                            crate::diagnostic::NoteKind::Help,
                            "known: `ignore`, `no_run`, `should_panic`, `compile_fail` (with an error code such as \
                             `E0382`), `edition2015`…`edition2024`, `editable`, `noplayground`, `mdbook-runnable`"
                                .into(),
                        ));
                    return None;
                }
                // Any other word is the book's own (`does_not_compile`, for its own preprocessor or
                // stylesheet), which rustdoc ignores, and so does tangle.
                _ => {}
            }
        }
        if !example.error_codes.is_empty() && !example.compile_fail {
            self.error(opening, format!("`{}` is only meaningful with `compile_fail`", example.error_codes[0]));
            return None;
        }
        Some(example)
    }

    /// The cell's kind from its first line, or `None` after reporting a misplaced or unknown
    /// marker.
    fn kind(&mut self, fence: &Fence) -> Option<CellKind> {
        let mut kind = CellKind::Run;
        for (i, line) in fence.text.lines().enumerate() {
            let text = line.trim();
            let marker = text.strip_prefix("//").map(str::trim_start).filter(|m| m.starts_with('@'));
            let line_start = self.doc.line_index().line_start(fence.body_line() + i).min(self.doc.source().len());
            let source_line = self.doc.source()[line_start..].split(['\n', '\r']).next().unwrap_or("");
            let at = line_start + source_line.find("//").unwrap_or(0);
            let range = at..line_start + source_line.trim_end().len().max(at - line_start);
            let Some(marker) = marker else { continue };
            let word = marker.split_whitespace().next().unwrap_or(marker);
            let known = match word {
                "@save" => Some(CellKind::Save),
                "@test" => Some(CellKind::Test),
                _ => None,
            };
            match (i, known) {
                (0, Some(k)) if text == k.marker().unwrap_or_default() => kind = k,
                (0, Some(k)) => {
                    let m = k.marker().unwrap_or_default();
                    self.error(range, format!("the cell marker must be exactly `{m}`")).notes.push((
                        crate::diagnostic::NoteKind::Help,
                        format!("write `{m}` alone on the cell's first line"),
                    ));
                    return None;
                }
                (0, None) => {
                    self.error(range, format!("unknown cell marker `{word}`")).notes.push((
                        crate::diagnostic::NoteKind::Help,
                        "the first line must be exactly `// @save` or `// @test`; anything else makes a run cell"
                            .into(),
                    ));
                    return None;
                }
                (_, Some(k)) => {
                    let m = k.marker().unwrap_or_default();
                    self.error(range, format!("`{m}` must be the cell's first line")).notes.push((
                        crate::diagnostic::NoteKind::Help,
                        "move it to the first line (no blank line or comment above it); as it stands this is a run cell"
                            .into(),
                    ));
                    return None;
                }
                (_, None) => {}
            }
        }
        Some(kind)
    }

    fn output(&mut self, fence: &Fence, info: &FenceInfo) {
        let spec = match self.output_spec(fence, info) {
            Some(spec) => spec,
            None => return,
        };
        let source = self.doc.source();
        // The output of a cell refused above: its error says what is wrong.
        if let Some(end) = self.refused_end
            && self.cells.last().is_none_or(|c| c.end() < end)
            && source[end..fence.span.start].chars().all(|c| c.is_whitespace() || c == '>')
        {
            return;
        }
        let opening = self.opening(fence);
        let Some(cell) = self.cells.last() else {
            self.error(opening, "this output block has no rust cell before it");
            return;
        };
        let between = &source[cell.end()..fence.span.start];
        let adjacent = between.chars().all(|c| c.is_whitespace() || c == '>') && cell.prefix == fence.prefix;
        if !adjacent {
            self.error(opening, "this output block does not follow a rust cell").notes.push((
                crate::diagnostic::NoteKind::Help,
                "put it right after the cell whose output it shows (only blank lines between them, in the same list item or quote)"
                    .into(),
            ));
            return;
        }
        if cell.kind != CellKind::Run {
            self.error(opening, "an output block may only follow a run cell, not a `// @save` or `// @test` cell");
            return;
        }
        if cell.output.is_some() {
            self.error(opening, "this cell already has an output block");
            return;
        }
        let block = OutputBlock {
            span: fence.span.clone(),
            content: fence.content.clone(),
            line: fence.line,
            text: fence.text.clone(),
            spec,
            marker: fence.marker,
            marker_len: fence.marker_len,
            prefix: fence.prefix.clone(),
            info_raw: fence.info_raw.clone(),
        };
        self.cells.last_mut().expect("checked").output = Some(block);
    }

    /// `output NAME="regex" rtol=0.05` → an [`OutputSpec`].
    fn output_spec(&mut self, fence: &Fence, info: &FenceInfo) -> Option<OutputSpec> {
        let opening = self.opening(fence);
        let mut spec = OutputSpec::default();
        for (i, attr) in info.attributes.iter().enumerate() {
            let key = attr.key.as_str();
            if info.attributes[..i].iter().any(|a| a.key == key) {
                self.error(opening, format!("`{key}` is given twice on this output block"));
                return None;
            }
            let Some(value) = &attr.value else {
                self.error(opening.clone(), format!("`{key}` on an output block needs a value"))
                    .notes
                    .push((crate::diagnostic::NoteKind::Help, "write `rtol=0.05` or `NAME=\"regex\"`".into()));
                return None;
            };
            if key == "rtol" {
                match value.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0) {
                    Some(rtol) => spec.rtol = Some(rtol),
                    None => {
                        self.error(opening, format!("rtol must be a non-negative number, not `{value}`"));
                        return None;
                    }
                }
            } else if key.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') {
                match Regex::new(value) {
                    Ok(regex) => spec.redactions.push(Redaction { name: key.to_string(), regex }),
                    Err(e) => {
                        self.error(opening, format!("the redaction {key} is not a valid regex: {e}"));
                        return None;
                    }
                }
            } else {
                self.error(opening, format!("unknown output attribute `{key}`"))
                    .notes
                    .push((crate::diagnostic::NoteKind::Help, "use rtol=… or an upper-case redaction name".into()));
                return None;
            }
        }
        Some(spec)
    }
}

#[cfg(test)]
mod tests;
