//! Stage 5, **compare**: what each cell printed against what its output block says, after the
//! block's declared redactions and tolerance, with a unified diff headed by the block's
//! `book/src/chNN.md:LINE` when they differ. Figures are compared byte for byte.

use std::path::{Path, PathBuf};

use regex::Regex;
use similar::TextDiff;

use crate::model::{Cell, Chapter, Location, OutputSpec};
use crate::run::{RunEnd, RunOutput};

/// The verdict on one run cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Same,
    /// The cell's output and its block differ; `diff` is a unified diff, expected → actual.
    Drift {
        diff: String,
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

/// A figure whose drawn SVG differs from the committed one.
#[derive(Debug, Clone, PartialEq)]
pub enum FigureDrift {
    Changed(PathBuf),
    New(PathBuf),
    NoLongerDrawn(PathBuf),
}

impl std::fmt::Display for FigureDrift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FigureDrift::Changed(p) => write!(f, "{}: the drawn figure differs from the committed file", p.display()),
            FigureDrift::New(p) => write!(f, "{}: drawn by the chapter but not committed", p.display()),
            FigureDrift::NoLongerDrawn(p) => write!(f, "{}: committed but no longer drawn by the chapter", p.display()),
        }
    }
}

/// Trailing spaces on a line and trailing blank lines are not part of an output.
pub fn normalize(text: &str) -> String {
    let mut out: String = text.lines().map(str::trim_end).collect::<Vec<_>>().join("\n");
    while out.ends_with('\n') {
        out.pop();
    }
    out
}

/// Replaces each redaction's match (or first capture group) by `[NAME]`.
pub fn redact(text: &str, spec: &OutputSpec) -> String {
    let mut text = text.to_string();
    for r in &spec.redactions {
        let placeholder = format!("[{}]", r.name);
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for caps in r.regex.captures_iter(&text) {
            let m = caps.get(1).or_else(|| caps.get(0)).expect("a match has group 0");
            out.push_str(&text[last..m.start()]);
            out.push_str(&placeholder);
            last = m.end();
        }
        out.push_str(&text[last..]);
        text = out;
    }
    text
}

fn number_regex() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| Regex::new(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?").unwrap())
}

/// Whether `actual` matches `expected` under `spec` (both already normalized).
pub fn matches(expected: &str, actual: &str, spec: &OutputSpec) -> bool {
    let (expected, actual) = (redact(expected, spec), redact(actual, spec));
    let Some(rtol) = spec.rtol else { return expected == actual };
    let re = number_regex();
    if re.replace_all(&expected, "#") != re.replace_all(&actual, "#") {
        return false;
    }
    re.find_iter(&expected).zip(re.find_iter(&actual)).all(|(e, a)| {
        match (e.as_str().parse::<f64>(), a.as_str().parse::<f64>()) {
            (Ok(e), Ok(a)) => (e - a).abs() <= rtol * e.abs().max(a.abs()),
            _ => e.as_str() == a.as_str(),
        }
    })
}

/// Compares every run cell of `chapter` with what `run` printed for it.
pub fn compare_chapter(chapter: &Chapter, run: &RunOutput) -> Vec<CellVerdict> {
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
                    let verdict = verdict_for(cell, &out.stdout, &location);
                    if failed_here && verdict != Verdict::Same { Verdict::NotRun } else { verdict }
                }
            };
            CellVerdict { location, index, verdict }
        })
        .collect()
}

/// Where a cell's output is reported: its block's fence line, or the cell's closing fence.
pub fn block_location(chapter: &Chapter, cell: &Cell) -> Location {
    match &cell.output {
        Some(block) => chapter.location(block.line),
        None => chapter.location(cell.code_line + cell.code.lines().count()),
    }
}

fn verdict_for(cell: &Cell, stdout: &str, location: &Location) -> Verdict {
    let actual = normalize(stdout);
    let (expected, spec) = match &cell.output {
        Some(block) => (normalize(&block.text), block.spec.clone()),
        None => (String::new(), OutputSpec::default()),
    };
    if matches(&expected, &actual, &spec) {
        return Verdict::Same;
    }
    // The diff shows the redacted texts, so that only differences that matter stand out.
    let (e, a) = (with_newline(&redact(&expected, &spec)), with_newline(&redact(&actual, &spec)));
    let header = location.to_string();
    let diff = TextDiff::from_lines(&e, &a)
        .unified_diff()
        .context_radius(3)
        .header(&header, &format!("{header} (actual)"))
        .to_string();
    Verdict::Drift { diff }
}

fn with_newline(s: &str) -> String {
    if s.is_empty() { String::new() } else { format!("{s}\n") }
}

/// Compares the SVGs a chapter drew (`drawn/chNN`) with the committed ones (`figures/chNN`).
pub fn compare_figures(root: &Path, drawn: &Path, chapter: &str) -> anyhow::Result<Vec<FigureDrift>> {
    let committed_dir = root.join("figures").join(chapter);
    let drawn_dir = drawn.join(chapter);
    let list = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| n.ends_with(".svg")).collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let (drawn_files, committed_files) = (list(&drawn_dir), list(&committed_dir));
    let mut drift = Vec::new();
    for name in &drawn_files {
        let rel = Path::new("figures").join(chapter).join(name);
        match std::fs::read(committed_dir.join(name)) {
            Err(_) => drift.push(FigureDrift::New(rel)),
            Ok(old) if old != std::fs::read(drawn_dir.join(name))? => drift.push(FigureDrift::Changed(rel)),
            Ok(_) => {}
        }
    }
    for name in committed_files.iter().filter(|n| !drawn_files.contains(n)) {
        drift.push(FigureDrift::NoLongerDrawn(Path::new("figures").join(chapter).join(name)));
    }
    Ok(drift)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Redaction;

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
