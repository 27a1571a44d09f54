//! Stage 6, **accept**: splices actual outputs into a chapter's Markdown by byte span. Only
//! the output blocks of drifted cells change (replaced, added after a cell that started
//! printing, or removed after one that stopped); every other byte stays as it was. Inside a
//! list item or a blockquote, every line written carries the container's prefix (`> `, the
//! item's indentation), so the block stays where it was. [`fmt`] rewrites the cells
//! themselves, with rustfmt, the same way.

pub mod fmt;

use crate::compare::{CellVerdict, ValueDrift, Verdict, normalize, replacement};
use crate::markdown::Edits;
use crate::model::{Cell, Chapter};
use crate::run::RunOutput;

/// The chapter's new text with every drifted cell's output block and every drifted value
/// quote rewritten, or `None` when nothing changes (so the file is not touched and keeps its
/// mtime). A quote's shown text is all that changes of its sentence.
pub fn rewrite(chapter: &Chapter, run: &RunOutput, verdicts: &[CellVerdict], values: &[ValueDrift]) -> Option<String> {
    let mut edits = Edits::new();
    for drift in values {
        edits.replace(drift.quote.shown_span.clone(), replacement(&drift.quote, &drift.actual, chapter.source()));
    }
    for v in verdicts.iter().filter(|v| matches!(v.verdict, Verdict::Drift { .. })) {
        let Some(cell) = chapter.run_cells().nth(v.index) else { continue };
        let Some(out) = run.cells.iter().find(|c| c.index == v.index) else { continue };
        let actual = normalize(&out.stdout);
        match (&cell.output, actual.is_empty()) {
            // The cell stopped printing: the block goes, with the blank line before it.
            (Some(block), true) => edits.replace(cell.end()..block.span.end, ""),
            (Some(block), false) => {
                // Lines end as the block's own do, where a file mixes its endings.
                let nl = chapter.newline_at(block.span.start);
                let fence = fence_for(&actual, block.marker, block.marker_len);
                if fence.chars().count() == block.marker_len {
                    edits.replace(block.content.clone(), lines(&actual, &block.prefix, nl));
                } else {
                    // The output holds a line that would close the block: lengthen its fence.
                    let text = format!(
                        "{fence}{}{nl}{}{}{fence}",
                        block.info_raw,
                        lines(&actual, &block.prefix, nl),
                        block.prefix
                    );
                    edits.replace(block.span.clone(), text);
                }
            }
            (None, false) => {
                let nl = chapter.newline_at(cell.end().saturating_sub(1));
                edits.replace(cell.end()..cell.end(), new_block(cell, &actual, nl))
            }
            (None, true) => {}
        }
    }
    if edits.is_empty() {
        return None;
    }
    let text = edits.apply(chapter.source());
    (text != chapter.source()).then_some(text)
}

/// An output block for a cell that had none, written after its closing fence.
fn new_block(cell: &Cell, actual: &str, nl: &str) -> String {
    let fence = fence_for(actual, '`', 3);
    let p = &cell.prefix;
    format!("{nl}{}{nl}{p}{fence}output{nl}{}{p}{fence}", p.trim_end(), lines(actual, p, nl))
}

/// Each line of `text` with the container prefix before it and the file's line ending after
/// it; a blank line gets the prefix without its trailing spaces.
fn lines(text: &str, prefix: &str, nl: &str) -> String {
    let mut out = String::new();
    for line in text.split('\n') {
        out.push_str(if line.is_empty() { prefix.trim_end() } else { prefix });
        out.push_str(line);
        out.push_str(nl);
    }
    out
}

/// A fence of `ch` at least `len` long and longer than any run of `ch` that starts a line of
/// the output (which would otherwise close the block early).
fn fence_for(actual: &str, ch: char, len: usize) -> String {
    let longest = actual.lines().map(|l| l.trim_start().chars().take_while(|&c| c == ch).count()).max().unwrap_or(0);
    std::iter::repeat_n(ch, len.max(longest + 1).max(3)).collect()
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
