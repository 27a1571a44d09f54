//! Writing the generated Rust files: each cell verbatim under a `// book/src/chNN.md:LINE`
//! comment that names the chapter line of the cell's first written line, so that lines map
//! back by a constant offset ([`LineMap`]). Run cells go, in order, into the body of one
//! function called by `main`, indented by four spaces (rustfmt's layout) except for the lines
//! that continue a multi-line string, whose text must not change.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::analyse::CellSyntax;
use super::{HEADER_NOTE, header_line};
use crate::model::{Cell, CellKind, Chapter};

/// Where generated lines came from: per generated file, one segment per cell.
#[derive(Debug, Default, Clone)]
pub struct LineMap {
    files: BTreeMap<PathBuf, Vec<Segment>>,
}

/// A run of generated lines copied from consecutive chapter lines.
#[derive(Debug, Clone)]
struct Segment {
    /// First generated line (one-based).
    generated: usize,
    /// The chapter line it came from.
    chapter: usize,
    len: usize,
    /// Columns added in front of each line (4 inside `main`).
    indent: usize,
    /// Columns of container prefix (`> `, list indentation) in front of the cell in the chapter.
    prefix: usize,
    /// Generated lines written without the indent (multi-line literals).
    unindented: BTreeSet<usize>,
}

impl LineMap {
    /// The chapter line that generated line `line` of `file` (relative to the project root)
    /// came from; `None` for lines the generator wrote itself.
    pub fn chapter_line(&self, file: &Path, line: usize) -> Option<usize> {
        self.segment(file, line).map(|s| s.chapter + (line - s.generated))
    }

    /// The chapter line and one-based column of a one-based position in a generated file.
    pub fn chapter_position(&self, file: &Path, line: usize, column: usize) -> Option<(usize, usize)> {
        let s = self.segment(file, line)?;
        let indent = if s.unindented.contains(&line) { 0 } else { s.indent };
        Some((s.chapter + (line - s.generated), column.saturating_sub(indent).max(1) + s.prefix))
    }

    fn segment(&self, file: &Path, line: usize) -> Option<&Segment> {
        self.files.get(file)?.iter().find(|s| line >= s.generated && line < s.generated + s.len)
    }

    fn add(&mut self, file: &Path, segment: Segment) {
        self.files.entry(file.to_path_buf()).or_default().push(segment);
    }
}

/// Appends one cell's lines (from cell line `first`, one-based) to `out`, indented by
/// `indent` spaces, and records the segment.
#[allow(clippy::too_many_arguments)]
fn write_cell(
    out: &mut String,
    chapter: &Chapter,
    cell: &Cell,
    syntax: &CellSyntax,
    first: usize,
    indent: usize,
    file: &Path,
    map: &mut LineMap,
) {
    let pad = " ".repeat(indent);
    out.push_str(&format!("{pad}// {}\n", chapter.location(cell.code_line + first - 1)));
    let generated = out.lines().count() + 1;
    let hoisted: BTreeSet<usize> = syntax.inner_attribute_lines.iter().flat_map(|r| r.clone()).collect();
    let mut unindented = BTreeSet::new();
    let lines: Vec<&str> = cell.code.lines().collect();
    for (i, line) in lines.iter().enumerate().skip(first - 1) {
        let n = i + 1;
        let mut text = if hoisted.contains(&n) { String::new() } else { line.to_string() };
        if let Some((l, c)) = syntax.needs_semicolon
            && l == n
        {
            let at = text.char_indices().nth(c).map_or(text.len(), |(b, _)| b);
            text.insert(at, ';');
        }
        let continues_literal = syntax.literal_lines.contains(&n);
        if continues_literal {
            unindented.insert(generated + (i + 1 - first));
        }
        if !text.is_empty() && !continues_literal {
            out.push_str(&pad);
        }
        out.push_str(&text);
        out.push('\n');
    }
    let len = lines.len().saturating_sub(first - 1);
    map.add(
        file,
        Segment { generated, chapter: cell.code_line + first - 1, len, indent, prefix: cell.prefix.chars().count(), unindented },
    );
}

/// `lib.rs` or `tests/cells.rs`: the cells of `kind`, in chapter order, each under its
/// location comment. Inner attributes move to the top of the file.
pub fn items_file(
    chapter: &Chapter,
    cells: &[(&Cell, CellSyntax)],
    kind: CellKind,
    path: &Path,
    map: &mut LineMap,
    prelude: &str,
) -> String {
    let mut out = format!("// {}\n// {HEADER_NOTE}\n\n", header_line(chapter));
    let ours: Vec<&(&Cell, CellSyntax)> = cells.iter().filter(|(c, _)| c.kind == kind).collect();
    let mut hoisted = String::new();
    for (cell, syntax) in &ours {
        let lines: Vec<&str> = cell.code.lines().collect();
        for range in &syntax.inner_attribute_lines {
            for n in range.clone() {
                hoisted.push_str(lines.get(n - 1).copied().unwrap_or(""));
                hoisted.push('\n');
            }
        }
    }
    if !hoisted.is_empty() {
        out.push_str(&hoisted);
        out.push('\n');
    }
    out.push_str(prelude);
    for (cell, syntax) in ours {
        // Line 1 is the `// @save` or `// @test` marker: the location comment takes its place.
        write_cell(&mut out, chapter, cell, syntax, 2, 0, path, map);
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// `main.rs`: every run cell in order inside `cells()`, each announced to the runtime by its
/// position, so that a prose edit that moves a cell does not change the program.
pub fn main_file(chapter: &Chapter, cells: &[(&Cell, CellSyntax)], path: &Path, map: &mut LineMap) -> String {
    let mut out = format!(
        "// {}\n// {HEADER_NOTE}\n\n#![allow(unused)]\n\nuse {krate}::*;\n\n\
         fn main() {{\n    tangle_runtime::init({krate:?});\n    if let Err(error) = cells() {{\n        \
         tangle_runtime::exit_with(&*error);\n    }}\n}}\n\n\
         /// The chapter's run cells, in order; `?` in a cell ends the program with its error.\n\
         fn cells() -> Result<(), Box<dyn std::error::Error>> {{\n",
        header_line(chapter),
        krate = chapter.name,
    );
    let run: Vec<&(&Cell, CellSyntax)> = cells.iter().filter(|(c, _)| c.kind == CellKind::Run).collect();
    for (index, (cell, syntax)) in run.into_iter().enumerate() {
        out.push_str(&format!("    tangle_runtime::cell({index});\n"));
        write_cell(&mut out, chapter, cell, syntax, 1, 4, path, map);
        out.push('\n');
    }
    out.push_str("    Ok(())\n}\n");
    out
}
