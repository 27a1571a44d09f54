//! Writing the generated Rust files: each cell verbatim under a `// book/src/chNN.md:LINE`
//! comment that names the chapter line of the cell's first written line, so that lines map
//! back by a constant offset ([`LineMap`]). Run cells go, in order, into the body of one
//! function called by `main`, indented by four spaces (rustfmt's layout) except for the lines
//! that continue a multi-line string, whose text must not change. Inner attributes move to the
//! top of their file; the map records where each came from.

use std::collections::BTreeSet;
use std::path::Path;

use super::analyse::CellSyntax;
use super::crates::{SOURCE_NOTE, header_line};
use super::line_map::{LineMap, Segment};
use crate::model::{Cell, CellKind, Chapter};

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
        Segment {
            generated,
            chapter: cell.code_line + first - 1,
            len,
            indent,
            prefix: cell.prefix.chars().count(),
            unindented,
        },
    );
}

/// `lib.rs` or `tests/cells.rs`: the cells of `kind`, in chapter order, each under its
/// location comment. Inner attributes move to the top of the file.
pub(crate) fn items_file(
    chapter: &Chapter,
    cells: &[(&Cell, CellSyntax)],
    kind: CellKind,
    path: &Path,
    map: &mut LineMap,
    prelude: &str,
) -> String {
    let mut out = format!("// {}\n// {SOURCE_NOTE}\n\n", header_line(chapter));
    let ours: Vec<&(&Cell, CellSyntax)> = cells.iter().filter(|(c, _)| c.kind == kind).collect();
    let mut hoisted = String::new();
    for (cell, syntax) in &ours {
        let lines: Vec<&str> = cell.code.lines().collect();
        for range in &syntax.inner_attribute_lines {
            for n in range.clone() {
                map.add_hoisted(path, out.lines().count() + hoisted.lines().count() + 1, cell.code_line + n - 1);
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
        // Inner attributes opening the cell went to the top of the file; the cell's text
        // starts after them (and the blank lines that follow them).
        let hoisted: BTreeSet<usize> = syntax.inner_attribute_lines.iter().flat_map(|r| r.clone()).collect();
        let lines: Vec<&str> = cell.code.lines().collect();
        let mut first = 2;
        while first <= lines.len() && (hoisted.contains(&first) || lines[first - 1].trim().is_empty()) {
            first += 1;
        }
        if first <= lines.len() {
            write_cell(&mut out, chapter, cell, syntax, first, 0, path, map);
            out.push('\n');
        }
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// `main.rs`: every run cell in order inside `cells()`, each announced to the runtime by its
/// position, so that a prose edit that moves a cell does not change the program.
pub(crate) fn main_file(chapter: &Chapter, cells: &[(&Cell, CellSyntax)], path: &Path, map: &mut LineMap) -> String {
    let mut out = format!(
        "// {}\n// {SOURCE_NOTE}\n\n#![allow(unused)]\n\nuse {krate}::*;\n\n\
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
