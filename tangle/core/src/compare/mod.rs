//! Stage 5, **compare**: what each cell printed against what its output block says, after the
//! block's declared redactions and tolerance, with a [`Diff`] numbered by the chapter's lines
//! when they differ. Figures are compared byte for byte ([`figures`]), and a folder of figures
//! that no chapter draws any more is pointed out. A cell whose output
//! depends on this machine's speed is recognised by [`involves_timings`], so that its drift can
//! say so.

mod diff;
mod figures;
mod numbers;
mod text;
mod timings;
mod values;

pub use diff::{Diff, visible};
pub use figures::{DRAWN_SUFFIXES, FigureDrift};
pub(crate) use figures::{compare_figures, orphans as orphan_figures};
pub use numbers::unquoted_numbers;
pub use text::{matches, normalize, redact, unmatched_redactions};
pub use timings::involves_timings;
pub(crate) use values::replacement;
pub use values::{Recorded, ValueDrift, ValueReport, compare_values, load_recorded};

use crate::model::{Cell, Chapter, Location, OutputSpec};
use crate::run::{RunEnd, RunOutput};

/// What a drifted cell's report says of it: that its output changed, or, when no output block
/// follows it, that there is none yet (and which command writes it). In a chapter of examples
/// (`mode`), a block is an example, and so it is called.
pub fn drift_summary(has_output_block: bool, mode: crate::config::CellMode) -> String {
    let cell = match mode {
        crate::config::CellMode::Examples => "example",
        crate::config::CellMode::Notebook => "cell",
    };
    match has_output_block {
        true => format!("the output differs from what the {cell} prints"),
        false => format!(
            "the {cell} prints, and no output block follows it (`{}` adds one)",
            crate::messages::command("accept")
        ),
    }
}

/// The verdict on one run cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Same,
    /// The cell's output and its block differ; `diff` is a unified diff, expected → actual.
    Drift {
        diff: Diff,
    },
    /// The cell never started (an earlier cell panicked or timed out).
    NotRun,
}

/// One cell's verdict, located at its output block (or at the cell when it has none).
#[derive(Debug, Clone)]
pub struct CellVerdict {
    pub location: Location,
    /// The run cell's position among the chapter's run cells.
    pub index: usize,
    pub verdict: Verdict,
}

/// How output blocks are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Judge {
    /// As each block declares: its redactions and tolerance apply.
    #[default]
    AsDeclared,
    /// Every difference counts, redactions and tolerances aside (`accept --refresh` takes this
    /// machine's measurements).
    Exactly,
}

/// Compares every run cell of `chapter` with what `run` printed for it.
pub(crate) fn compare_chapter(chapter: &Chapter, run: &RunOutput, judge: Judge) -> Vec<CellVerdict> {
    let exact = judge == Judge::Exactly;
    chapter
        .run_cells()
        .enumerate()
        .map(|(index, cell)| {
            let location = block_location(chapter, cell);
            let verdict = match run.cells.iter().find(|c| c.index == index) {
                None => Verdict::NotRun,
                Some(out) => {
                    // The cell that failed may have printed only part of its output.
                    let failed_here = matches!(&run.end, RunEnd::Failed { cell: Some(i), .. } | RunEnd::TimedOut { cell: Some(i), .. } if *i == index);
                    let verdict = verdict_for(cell, &out.stdout, &location, exact);
                    if failed_here && verdict != Verdict::Same { Verdict::NotRun } else { verdict }
                }
            };
            CellVerdict { location, index, verdict }
        })
        .collect()
}

/// Where a cell's output is reported: its block's fence line, or the cell's closing fence.
pub(crate) fn block_location(chapter: &Chapter, cell: &Cell) -> Location {
    match &cell.output {
        Some(block) => chapter.location(block.line),
        None => chapter.location(cell.last_line() + 1),
    }
}

fn verdict_for(cell: &Cell, stdout: &str, location: &Location, exact: bool) -> Verdict {
    let actual = normalize(stdout);
    let (expected, spec) = match &cell.output {
        Some(block) if !exact => (normalize(&block.text), block.spec.clone()),
        Some(block) => (normalize(&block.text), OutputSpec::default()),
        None => (String::new(), OutputSpec::default()),
    };
    if matches(&expected, &actual, &spec) {
        return Verdict::Same;
    }
    // The diff shows the redacted texts, so that only differences that matter stand out.
    let (e, a) = (with_newline(&redact(&expected, &spec)), with_newline(&redact(&actual, &spec)));
    let first_line = cell.output.as_ref().map_or(location.line, |b| b.line + 1);
    Verdict::Drift { diff: Diff::new(&e, &a, first_line) }
}

fn with_newline(s: &str) -> String {
    if s.is_empty() { String::new() } else { format!("{s}\n") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Redaction;
    use regex::Regex;

    fn spec(redactions: &[(&str, &str)], rtol: Option<f64>) -> OutputSpec {
        OutputSpec {
            redactions: redactions
                .iter()
                .map(|(n, r)| Redaction { name: n.to_string(), regex: Regex::new(r).unwrap() })
                .collect(),
            rtol,
        }
    }

    #[test]
    fn redaction_replaces_group_or_match() {
        let s = spec(&[("TPS", r"([0-9.]+)k tokens/s"), ("MS", r"\d+ ms")], None);
        assert_eq!(redact("28.2k tokens/s in 40 ms", &s), "[TPS]k tokens/s in [MS]");
        assert!(matches("28.2k tokens/s", "31.0k tokens/s", &s));
        assert!(!matches("28.2k tokens/s", "31.0k token/s", &s));
    }

    #[test]
    fn tolerance_is_relative_and_text_exact() {
        let s = spec(&[], Some(0.1));
        assert!(matches("mfu 41.0% at 170 GFLOP/s", "mfu 44.0% at 160 GFLOP/s", &s));
        assert!(!matches("mfu 41.0%", "mfu 50.0%", &s));
        assert!(!matches("mfu 41.0%", "MFU 41.0%", &s));
        assert!(!matches("1 2", "1 2 3", &s));
        assert!(matches("1.0", "1.0", &spec(&[], None)));
    }

    #[test]
    fn normalization_ignores_trailing_space() {
        assert_eq!(normalize("a  \nb\n\n\n"), "a\nb");
    }
}
