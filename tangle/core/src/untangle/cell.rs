//! One cell's way back: its lines in the edited file → its new code ([`rebuild`], every change
//! generation made undone), and its new code → the chapter ([`splice`], only the lines that
//! changed rewritten, each with the container prefix its block carries).
//!
//! What generation did, and how it is undone:
//! - the `// @save` or `// @test` line, the blank lines after it and the inner attributes that
//!   open a cell were not copied (the location comment stands in their place): they are kept
//!   from the chapter, an edit of a hoisted attribute at the top of the file going to its line;
//! - an inner attribute further down was written as an empty line: an unchanged empty line
//!   stands for it, so the attribute stays;
//! - run cells were indented by four spaces inside `cells()`, except the lines that continue a
//!   multi-line string: the indentation comes off every line that is not such a line in the
//!   new code;
//! - a `;` was added after a run cell's final expression: when the new code still ends in an
//!   expression statement whose `;` generation would add again at the same place, it goes;
//! - the blank lines that ended the file's last cell were trimmed from the file: they stay;
//! - container prefixes (`> `, list indentation) were stripped: every rewritten line gets its
//!   own prefix back, every added line the block's.

use std::collections::{BTreeMap, BTreeSet};

use similar::{Algorithm, DiffOp, capture_diff_slices};
use syn::spanned::Spanned;

use crate::generate::{Analyses, CellSyntax, literal_continuation_lines};
use crate::markdown::{Edits, LineIndex};
use crate::model::{Cell, CellKind, Chapter};

/// A line of the edited file that belongs to a cell.
#[derive(Debug, Clone, Copy)]
pub enum Line<'a> {
    /// Equal to generated line of cell line `.0` (one-based), with the edited text `.1`.
    Kept(usize, &'a str),
    /// Added or changed.
    New(&'a str),
}

/// How the cell was written into its file.
pub struct Written<'a> {
    pub cell: &'a Cell,
    pub syntax: &'a CellSyntax,
    /// The cell line of the first line copied (after the marker and what was hoisted or
    /// skipped); past the end when nothing was.
    pub first: usize,
    /// Columns added in front of each line.
    pub indent: usize,
    /// Blank lines at the cell's end that the file lost (its last cell, trimmed).
    pub trimmed: usize,
}

/// The cell's new code from its lines in the edited file, with `hoisted` (cell line → text)
/// replacing the inner attribute lines edited at the top of the file.
pub fn rebuild(
    chapter: &Chapter,
    written: &Written,
    lines: &[Line],
    hoisted: &BTreeMap<usize, String>,
    analyses: &mut Analyses,
) -> String {
    let cell = written.cell;
    let old: Vec<&str> = cell.code.lines().collect();
    let original = |n: usize| hoisted.get(&n).cloned().unwrap_or_else(|| old[n - 1].to_string());
    let placeholders: BTreeSet<usize> = written.syntax.inner_attribute_lines.iter().flat_map(|r| r.clone()).collect();
    let pad = " ".repeat(written.indent);

    let mut code: Vec<String> = (1..written.first.min(old.len() + 1)).map(original).collect();
    let head = code.len();
    // The text as edited, for lines whose indentation may have to stay.
    let mut raw: Vec<Option<&str>> = Vec::new();
    for line in lines {
        match *line {
            Line::Kept(n, _) if placeholders.contains(&n) => {
                code.push(original(n));
                raw.push(None);
            }
            Line::Kept(_, text) | Line::New(text) => {
                code.push(text.strip_prefix(pad.as_str()).unwrap_or(text).to_string());
                raw.push(Some(text));
            }
        }
    }
    code.extend(std::iter::repeat_n(String::new(), written.trimmed));
    if written.indent > 0 {
        let literal = literal_continuation_lines(&joined(&code));
        for (i, text) in raw.iter().enumerate() {
            if let Some(text) = text
                && literal.contains(&(head + i + 1))
            {
                code[head + i] = text.to_string();
            }
        }
    }
    let code = joined(&code);
    match (cell.kind, written.syntax.needs_semicolon) {
        (CellKind::Run, Some(_)) => without_added_semicolon(chapter, cell, code, analyses),
        _ => code,
    }
}

fn joined(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// `code` without the `;` after its final expression when generation would add that very
/// `;` again (the cell, as the author wrote it, ended in an expression without one).
fn without_added_semicolon(chapter: &Chapter, cell: &Cell, code: String, analyses: &mut Analyses) -> String {
    let Ok(stmts) = syn::parse::Parser::parse_str(syn::Block::parse_within, &code) else { return code };
    let Some(syn::Stmt::Expr(_, Some(semi))) = stmts.last() else { return code };
    let at = semi.span().start();
    let mut lines: Vec<String> = code.lines().map(str::to_string).collect();
    let Some(line) = lines.get_mut(at.line.wrapping_sub(1)) else { return code };
    let Some((byte, _)) = line.char_indices().nth(at.column) else { return code };
    line.remove(byte);
    let candidate = joined(&lines);
    let probe = Cell { code: candidate.clone(), ..cell.clone() };
    match analyses.cell(chapter, &probe) {
        Ok(syntax) if syntax.needs_semicolon == Some((at.line, at.column)) => candidate,
        _ => code,
    }
}

/// Rewrites, into `edits` of the chapter, the lines of `cell` that differ in `new_code`.
/// Returns whether anything changed.
pub fn splice(chapter: &Chapter, index: &LineIndex, cell: &Cell, new_code: &str, edits: &mut Edits) -> bool {
    let old: Vec<&str> = cell.code.lines().collect();
    let new: Vec<&str> = new_code.lines().collect();
    if old == new {
        return false;
    }
    let source = chapter.source();
    // Lines end as the cell's own do, where a file mixes its endings.
    let nl = chapter.newline_at(cell.content.start);
    // Byte offset where cell line `i` (zero-based) starts; the closing fence's line past the end.
    let start = |i: usize| match i < old.len() {
        true => index.line_start(cell.code_line + i).min(source.len()),
        false => cell.content.end,
    };
    let added = |lines: &[&str]| -> String {
        lines
            .iter()
            .map(|l| format!("{}{l}{nl}", if l.is_empty() { cell.prefix.trim_end() } else { &cell.prefix }))
            .collect()
    };
    for op in capture_diff_slices(Algorithm::Myers, &old, &new) {
        match op {
            DiffOp::Equal { .. } => {}
            DiffOp::Delete { old_index, old_len, .. } => {
                edits.replace(start(old_index)..start(old_index + old_len), "")
            }
            DiffOp::Insert { old_index, new_index, new_len } => {
                let at = start(old_index);
                edits.replace(at..at, added(&new[new_index..new_index + new_len]));
            }
            DiffOp::Replace { old_index, old_len, new_index, new_len } if old_len == new_len => {
                for k in 0..old_len {
                    replace_line(source, cell, start(old_index + k), old[old_index + k], new[new_index + k], edits);
                }
            }
            DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                edits
                    .replace(start(old_index)..start(old_index + old_len), added(&new[new_index..new_index + new_len]));
            }
        }
    }
    true
}

/// Replaces the code of one chapter line (starting at byte `at`, showing `old` after its
/// container prefix) by `new`, keeping the line's own prefix and line ending.
fn replace_line(source: &str, cell: &Cell, at: usize, old: &str, new: &str, edits: &mut Edits) {
    let rest = &source[at..];
    let mut end = at + rest.find('\n').unwrap_or(rest.len());
    if source[..end].ends_with('\r') {
        end -= 1;
    }
    let line = &source[at..end];
    match line.strip_suffix(old) {
        // A blank line keeps its prefix without trailing spaces (`>`), as the block writes it.
        Some(prefix) if new.is_empty() => edits.replace(at..end, prefix.trim_end()),
        Some(prefix) if old.is_empty() && prefix.len() < cell.prefix.len() => {
            edits.replace(at..end, format!("{}{new}", cell.prefix))
        }
        Some(prefix) => edits.replace(at + prefix.len()..end, new),
        None => edits.replace(at..end, format!("{}{new}", cell.prefix)),
    }
}
