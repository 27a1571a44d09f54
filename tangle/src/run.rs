//! Stage 4, **run**: runs a chapter binary once and splits its stdout into per-cell outputs
//! at the markers the generated `main` prints (see `tangle-runtime`). A panic, an error
//! returned from `main`, or a timeout is attributed to the cell that was running.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Context;
use regex::Regex;
use serde::{Deserialize, Serialize};
use tangle_runtime::{MARKER, PANIC_MARKER};
use wait_timeout::ChildExt;

use crate::generate::ChapterCrate;
use crate::model::Chapter;

/// How long a chapter may run unless it declares `<!-- tangle: timeout N -->`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// What one run of a chapter binary produced.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunOutput {
    /// The cells that started, in order, with what each printed.
    pub cells: Vec<CellOutput>,
    pub end: RunEnd,
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
    /// Run cell number `cell` panicked (or `main` returned an error while it ran).
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
    pub fn completed(&self) -> bool {
        self.end == RunEnd::Completed
    }
}

/// Runs `chapter`'s binary from the project root, with figures going to `figures_dir`.
pub fn run(root: &Path, chapter: &Chapter, krate: &ChapterCrate, figures_dir: &Path) -> anyhow::Result<RunOutput> {
    let exe = crate::build::binary(root, &chapter.name);
    let timeout = chapter.directives.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let mut child = Command::new(&exe)
        .current_dir(root)
        .env("TANGLE_FIGURES_DIR", figures_dir)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {}", exe.display()))?;
    let mut out_pipe = child.stdout.take().expect("piped");
    let mut err_pipe = child.stderr.take().expect("piped");
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out_pipe.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err_pipe.read_to_end(&mut s);
        s
    });
    let status = match child.wait_timeout(timeout)? {
        Some(status) => Some(status),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    };
    let stdout = String::from_utf8_lossy(&out_reader.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    let cells = split_cells(&stdout);
    let last = cells.last().map(|c| c.index);
    let end = match status {
        None => RunEnd::TimedOut { cell: last, seconds: timeout.as_secs() },
        Some(s) if s.success() && cells.len() == chapter.run_cells().count() => RunEnd::Completed,
        Some(s) if s.success() => RunEnd::Failed {
            cell: last,
            message: "the program exited before the cells after this one ran (`std::process::exit`?)".into(),
        },
        Some(s) => {
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
    Ok(RunOutput { cells, end })
}

/// Splits a chapter binary's stdout at the cell markers.
pub fn split_cells(stdout: &str) -> Vec<CellOutput> {
    let mut cells: Vec<CellOutput> = Vec::new();
    for line in stdout.split_inclusive('\n') {
        // A cell that ends with `print!` leaves no newline, so the next marker may start
        // mid-line: the text before it still belongs to the cell before.
        let (text, marker) = match line.find(MARKER) {
            Some(at) => (&line[..at], line[at + MARKER.len()..].trim_end().parse().ok()),
            None => (line, None),
        };
        if let Some(cell) = cells.last_mut() {
            cell.stdout.push_str(text);
        }
        if let Some(index) = marker {
            cells.push(CellOutput { index, stdout: String::new() });
        }
    }
    cells
}

/// Appends the chapter line to every `chNN/src/*.rs:LINE` that a panic message names (rustc
/// names files relative to the chapter workspace, `code/`).
fn locate_generated_paths(message: &str, krate: &ChapterCrate, chapter: &Chapter) -> String {
    static RE: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"(?:code/)?([A-Za-z0-9_]+/(?:src|tests)/[\w/]+\.rs):(\d+)(?::\d+)?").expect("a valid regex")
    });
    RE.replace_all(message, |caps: &regex::Captures| {
        let file = Path::new(crate::generate::CODE).join(&caps[1]);
        let line: usize = caps[2].parse().unwrap_or(0);
        match krate.line_map.chapter_line(&file, line) {
            Some(l) => format!("{} ({})", &caps[0], chapter.location(l)),
            None => caps[0].to_string(),
        }
    })
    .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_without_a_final_newline_stays_with_its_cell() {
        let stdout = format!("{MARKER}0\nno newline{MARKER}1\nsecond\n{MARKER}2\n");
        let cells = split_cells(&stdout);
        let texts: Vec<(usize, &str)> = cells.iter().map(|c| (c.index, c.stdout.as_str())).collect();
        assert_eq!(texts, vec![(0, "no newline"), (1, "second\n"), (2, "")]);
    }
}
