//! Stage 6, **accept**: splices actual outputs into a chapter's Markdown by byte span. Only
//! the output blocks of drifted cells change (replaced, added after a cell that started
//! printing, or removed after one that stopped); every other byte stays as it was.

use crate::compare::{CellVerdict, Verdict, normalize};
use crate::model::Chapter;
use crate::run::RunOutput;

/// The chapter's new text with every drifted cell's output block rewritten, or `None` when
/// nothing changes (so the file is not touched and keeps its mtime).
pub fn rewrite(chapter: &Chapter, run: &RunOutput, verdicts: &[CellVerdict]) -> Option<String> {
    // A file written with CRLF line ends gets CRLF in what we add, so its endings stay uniform.
    let nl = if chapter.source.contains("\r\n") { "\r\n" } else { "\n" };
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for v in verdicts.iter().filter(|v| matches!(v.verdict, Verdict::Drift { .. })) {
        let Some(cell) = chapter.run_cells().nth(v.index) else { continue };
        let Some(out) = run.cells.iter().find(|c| c.index == v.index) else { continue };
        let actual = normalize(&out.stdout).replace('\n', nl);
        match (&cell.output, actual.is_empty()) {
            (Some(block), true) => edits.push((cell.end..block.span.end, String::new())),
            (Some(block), false) => {
                let fence = fence_for(&actual, &chapter.source[block.span.clone()]);
                let opening = &chapter.source[block.span.start..block.content.start];
                if opening.trim_start().starts_with(&fence) && !needs_longer_fence(&actual, &fence) {
                    edits.push((block.content.clone(), format!("{actual}{nl}")));
                } else {
                    let info = opening.trim().trim_start_matches(['`', '~']);
                    edits.push((block.span.clone(), format!("{fence}{info}{nl}{actual}{nl}{fence}")));
                }
            }
            (None, false) => {
                let fence = fence_for(&actual, "```");
                edits.push((cell.end..cell.end, format!("{nl}{nl}{fence}output{nl}{actual}{nl}{fence}")));
            }
            (None, true) => {}
        }
    }
    if edits.is_empty() {
        return None;
    }
    edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    let mut text = chapter.source.clone();
    for (range, new) in edits {
        text.replace_range(range, &new);
    }
    (text != chapter.source).then_some(text)
}

/// The block's own fence, lengthened if the output itself contains a line that would close it.
fn fence_for(actual: &str, block: &str) -> String {
    let ch = if block.trim_start().starts_with('~') { '~' } else { '`' };
    let existing = block.trim_start().chars().take_while(|&c| c == ch).count().max(3);
    let mut fence: String = std::iter::repeat_n(ch, existing).collect();
    while needs_longer_fence(actual, &fence) {
        fence.push(ch);
    }
    fence
}

fn needs_longer_fence(actual: &str, fence: &str) -> bool {
    actual.lines().any(|l| l.trim_start().starts_with(fence))
}
