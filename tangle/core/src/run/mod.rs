//! Stage 4, **run**: runs a chapter binary once and splits its stdout into per-cell outputs
//! at the markers the generated `main` prints (see `tangle-runtime`). A panic, an error
//! returned from `main`, a timeout, too much output or output that is not UTF-8 is attributed
//! to the cell that was running.
//!
//! [`process`] owns the process side (a process group per run, pipes read by threads, the cap,
//! signals); [`cells`] finds the cells in the byte stream; this module turns both into a
//! [`RunOutput`].

pub mod cells;
pub mod process;
pub mod test_cells;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use anyhow::Context;
use regex::Regex;
use serde::{Deserialize, Serialize};
use tangle_runtime::{PANIC_MARKER, PARENT_PID_VAR};

use crate::generate::ChapterCrate;
use crate::model::Chapter;
use process::{Captured, ProcessEnd};
pub use process::{DEFAULT_TIMEOUT, OUTPUT_CAP, PIPE_GRACE, reading_sources, saved};

/// The message of a run that a save stopped ([`saved`]): no failure of the chapter's, and its
/// rebuild follows.
pub const STOPPED: &str = "stopped: a file of the book was saved while this ran, and the run starts over";

/// What one run of a chapter binary produced.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunOutput {
    /// The cells that started, in order, with what each printed.
    pub cells: Vec<CellOutput>,
    pub end: RunEnd,
    /// The values the cells published for the prose to quote, in the order published.
    #[serde(default)]
    pub values: Vec<PublishedValue>,
}

/// A value a run cell published (`tangle_runtime::value`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PublishedValue {
    pub name: String,
    pub text: String,
    /// `exact`, `rtol=0.05` or `measured` (see `tangle_runtime::value::Vary`).
    pub vary: String,
    /// The run cell that published it (`None` outside any cell).
    pub cell: Option<usize>,
    /// The chapter line and column of the call that published it, when it maps to a cell.
    #[serde(default)]
    pub at: Option<(usize, usize)>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CellOutput {
    /// The run cell's position among the chapter's run cells (0-based).
    pub index: usize,
    pub stdout: String,
}

/// How the run ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub enum RunEnd {
    Completed,
    /// Run cell number `cell` panicked (or `main` returned an error while it ran, or it
    /// printed too much or printed bytes that are not UTF-8).
    Failed {
        cell: Option<usize>,
        message: String,
    },
    /// Run cell number `cell` was still running when the time ran out.
    TimedOut {
        cell: Option<usize>,
        seconds: u64,
    },
}

impl RunOutput {
    /// Whether every cell ran to its end (none failed or was stopped).
    pub fn completed(&self) -> bool {
        self.end == RunEnd::Completed
    }
}

impl RunEnd {
    /// The run cell that failed or was stopped, if the run ended in one.
    pub fn stopped_at(&self) -> Option<usize> {
        match self {
            RunEnd::Completed => None,
            RunEnd::Failed { cell, .. } | RunEnd::TimedOut { cell, .. } => *cell,
        }
    }
}

/// Runs `chapter`'s program `exe` from the project root, with figures going to `figures_dir`,
/// keeping `current` at the run cell printing now plus one (0: none yet).
pub(crate) fn run_reporting(
    exe: &Path,
    root: &Path,
    chapter: &Chapter,
    krate: &ChapterCrate,
    figures_dir: &Path,
    current: Arc<AtomicUsize>,
) -> anyhow::Result<RunOutput> {
    let timeout = chapter.directives.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let values_file = figures_dir.join(format!("{}.values", chapter.name));
    let _ = std::fs::remove_file(&values_file);
    let mut cmd = std::process::Command::new(exe);
    cmd.current_dir(root)
        .env("TANGLE_FIGURES_DIR", figures_dir)
        .env(tangle_runtime::value::FILE_ENV, &values_file)
        .env("RUST_BACKTRACE", "0")
        // The runtime's watchdog stops the program's group if this process dies (kill -9).
        .env(PARENT_PID_VAR, std::process::id().to_string());
    let options = process::Options { timeout, progress: Some(current), ..Default::default() };
    let captured = process::run_group(cmd, options).with_context(|| format!("cannot run {}", exe.display()))?;
    if captured.pipes_left_open {
        eprintln!(
            "warning: {}: a process that {} started outside its process group still holds its output open; \
             it was not waited for",
            chapter.path.display(),
            chapter.name
        );
    }
    let mut output = interpret(captured, chapter, krate, timeout);
    output.values = read_values(&values_file, krate);
    Ok(output)
}

/// The values a run recorded, one per line (see `tangle_runtime::value`), each call located in
/// the chapter through the line map (rustc names files relative to `code/`).
fn read_values(file: &Path, krate: &ChapterCrate) -> Vec<PublishedValue> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut fields = line.splitn(5, tangle_runtime::value::SEPARATOR);
            let cell = fields.next()?.parse().ok();
            let at = fields.next()?;
            let name = fields.next()?.to_string();
            let vary = fields.next()?.to_string();
            let text = fields.next()?.to_string();
            let at = at.rsplitn(3, ':').collect::<Vec<_>>();
            let at = match at.as_slice() {
                [column, line, file] => {
                    let (line, column) = (line.parse().ok()?, column.parse().ok()?);
                    krate.line_map.chapter_position(&krate.code_dir().join(file), line, column)
                }
                _ => None,
            };
            Some(PublishedValue { name, text, vary, cell, at })
        })
        .collect()
}

/// What the captured run means for the chapter's cells.
fn interpret(captured: Captured, chapter: &Chapter, krate: &ChapterCrate, timeout: Duration) -> RunOutput {
    let Captured { stdout, stderr, end, .. } = captured;
    // Output that is not UTF-8 fails its cell rather than being decoded lossily or escaped:
    // an output block is text a reader sees, a lossy decoding would let different bytes
    // compare equal, and an escape (`\xE9`) would have to be written into the prose as if the
    // program had printed those four characters. No chapter has a reason to print raw bytes;
    // one that does gets told where, and can print them escaped (`{:?}`) itself.
    let stopped_by_us = !matches!(end, ProcessEnd::Exited(_));
    let spans = cells::split(&stdout);
    let mut cells = Vec::with_capacity(spans.len());
    let mut not_utf8 = None;
    for (i, (index, range)) in spans.iter().enumerate() {
        let bytes = &stdout[range.clone()];
        match std::str::from_utf8(bytes) {
            Ok(text) => cells.push(CellOutput { index: *index, stdout: text.to_string() }),
            Err(e) => {
                let valid = std::str::from_utf8(&bytes[..e.valid_up_to()]).expect("valid up to here");
                cells.push(CellOutput { index: *index, stdout: valid.to_string() });
                // A program that we stopped may have been cut in the middle of a character.
                let cut_by_us = stopped_by_us && i + 1 == spans.len() && e.error_len().is_none();
                if !cut_by_us {
                    not_utf8 = Some(not_utf8_failure(*index, bytes, &e));
                    break;
                }
            }
        }
    }
    let last = cells.last().map(|c| c.index);
    let end = match end {
        ProcessEnd::OverCap { stream, cell } => RunEnd::Failed {
            cell,
            message: format!(
                "{} more than {} MiB on {stream}; the chapter program was stopped (print a summary instead)",
                match cell {
                    Some(_) => "this cell printed",
                    None => "the chapter program printed, before its first cell,",
                },
                OUTPUT_CAP >> 20
            ),
        },
        _ if not_utf8.is_some() => not_utf8.expect("just checked"),
        ProcessEnd::TimedOut => RunEnd::TimedOut { cell: last, seconds: timeout.as_secs() },
        ProcessEnd::Stopped => RunEnd::Failed { cell: last, message: STOPPED.into() },
        ProcessEnd::Exited(s) if s.success() && cells.len() == chapter.run_cells().count() => RunEnd::Completed,
        ProcessEnd::Exited(s) if s.success() => RunEnd::Failed {
            cell: last,
            message: "the program ended before the cells after this one ran (a `return` in this cell, or `std::process::exit`?)".into(),
        },
        ProcessEnd::Exited(s) => {
            // stderr is shown, never compared: bytes that are not UTF-8 are shown escaped.
            let stderr = escape_non_utf8(&stderr);
            let cell = stderr.lines().find_map(|l| l.strip_prefix(PANIC_MARKER)?.trim().parse().ok()).or(last);
            let message: String = stderr
                .lines()
                .filter(|l| !l.starts_with(PANIC_MARKER))
                .collect::<Vec<_>>()
                .join("\n")
                .trim()
                .to_string();
            let message =
                if message.trim().is_empty() { format!("the chapter program exited with {s}") } else { message };
            RunEnd::Failed { cell, message: locate_generated_paths(&message, krate, chapter) }
        }
    };
    RunOutput { cells, end, values: Vec::new() }
}

/// The failure of cell `index`, whose output `bytes` stops being UTF-8 where `e` says.
fn not_utf8_failure(index: usize, bytes: &[u8], e: &std::str::Utf8Error) -> RunEnd {
    let at = e.valid_up_to();
    let bad = &bytes[at..at + e.error_len().unwrap_or(bytes.len() - at).min(4)];
    let shown: Vec<String> = bad.iter().map(|b| format!("0x{b:02x}")).collect();
    RunEnd::Failed {
        cell: Some(index),
        message: format!(
            "this cell printed bytes that are not UTF-8 at offset {at} of its output ({}); \
             output blocks are text: print bytes escaped (for example with `{{:?}}`)",
            shown.join(" ")
        ),
    }
}

/// `bytes` as text, each byte that is not part of valid UTF-8 written `\xNN`.
fn escape_non_utf8(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out
}

/// Splits a chapter binary's stdout at the cell markers.
#[cfg(test)]
fn split_cells(stdout: &str) -> Vec<CellOutput> {
    cells::split(stdout.as_bytes())
        .into_iter()
        .map(|(index, range)| CellOutput { index, stdout: stdout[range].to_string() })
        .collect()
}

/// Replaces every `chNN/src/main.rs:LINE:COL` that a panic message names (rustc names files
/// relative to the chapter workspace, `code/`, and the program's from its package,
/// `chNN/run/../src/main.rs`) by the chapter position it came from.
pub(crate) fn locate_generated_paths(message: &str, krate: &ChapterCrate, chapter: &Chapter) -> String {
    static RE: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"(?:code/)?([A-Za-z0-9_]+/(?:run/\.\./)?(?:src|tests)/[\w/]+\.rs):(\d+)(?::(\d+))?")
            .expect("a valid regex")
    });
    RE.replace_all(message, |caps: &regex::Captures| {
        let file = krate.code_dir().join(&caps[1]);
        let line: usize = caps[2].parse().unwrap_or(0);
        let column: usize = caps.get(3).and_then(|c| c.as_str().parse().ok()).unwrap_or(1);
        match krate.line_map.chapter_position(&file, line, column) {
            Some((l, c)) => chapter.location(l).with_column(c).to_string(),
            None => caps[0].to_string(),
        }
    })
    .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tangle_runtime::MARKER;

    #[test]
    fn output_without_a_final_newline_stays_with_its_cell() {
        let stdout = format!("{MARKER}0\nno newline{MARKER}1\nsecond\n{MARKER}2\n");
        let cells = split_cells(&stdout);
        let texts: Vec<(usize, &str)> = cells.iter().map(|c| (c.index, c.stdout.as_str())).collect();
        assert_eq!(texts, vec![(0, "no newline"), (1, "second\n"), (2, "")]);
    }
}
