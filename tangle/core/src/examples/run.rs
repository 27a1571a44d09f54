//! Runs built examples, several at a time (one per core), each in a process group of its own
//! under the run stage's watchdog, and judges each by what its attributes claim: it must exit
//! normally, or, with `should_panic`, fail. A panic is reported at the chapter line it names.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use regex::Regex;

use super::build::panic_position;
use super::crates::{Example, Workspace};
use crate::diagnostic::{Diagnostic, Location};
use crate::progress::Progress;
use crate::run::process::{self, ProcessEnd};
use crate::run::{DEFAULT_TIMEOUT, OUTPUT_CAP};

/// One example's run, judged.
#[derive(Debug, Clone)]
pub struct Ran {
    pub stdout: String,
    /// Why it failed, if it did.
    pub failure: Option<Diagnostic>,
}

/// A program to start: an example, its executable and the number that selects it.
pub struct Job<'a> {
    pub example: &'a Example,
    pub exe: PathBuf,
    pub number: Option<usize>,
}

/// How long an example may run before the progress says which one is still running, as
/// rustdoc says after a minute: a minute, or half the chapter's timeout if that is shorter
/// (the timeout that stops it is ten minutes by default).
fn slow(timeout: std::time::Duration) -> std::time::Duration {
    (timeout / 2).min(std::time::Duration::from_secs(60))
}

/// Runs every job, `parallel` at a time, from `root`; results in the order of `jobs`.
pub(crate) fn run_all(
    workspace: &Workspace,
    root: &Path,
    jobs: &[Job],
    parallel: usize,
    progress: &dyn Progress,
) -> Vec<Ran> {
    let next = Mutex::new(0usize);
    let results: Mutex<Vec<Option<Ran>>> = Mutex::new(vec![None; jobs.len()]);
    std::thread::scope(|scope| {
        for _ in 0..parallel.clamp(1, jobs.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().unwrap_or_else(|e| e.into_inner());
                        let i = *n;
                        *n += 1;
                        i
                    };
                    let Some(job) = jobs.get(i) else { break };
                    let ran = run_one(workspace, root, job, progress);
                    results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(ran);
                }
            });
        }
    });
    results.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().map(|r| r.expect("every job ran")).collect()
}

fn run_one(workspace: &Workspace, root: &Path, job: &Job, progress: &dyn Progress) -> Ran {
    let example = job.example;
    let chapter = &example.chapter;
    let at = chapter.location(example.code_line);
    let timeout = chapter.directives.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let mut cmd = std::process::Command::new(&job.exe);
    cmd.current_dir(root).env("RUST_BACKTRACE", "0");
    // No arguments, and the program name rustdoc gives a doctest's: the example sees the
    // command line it would see under `mdbook test`.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::arg0(&mut cmd, "rust_out");
    if let Some(n) = job.number {
        cmd.env(super::crates::EXAMPLE_VAR, n.to_string());
    }
    let (done, ended) = std::sync::mpsc::channel::<()>();
    let place = at.to_string();
    let captured = std::thread::scope(|scope| {
        scope.spawn(move || {
            let slow = slow(timeout);
            if matches!(ended.recv_timeout(slow), Err(std::sync::mpsc::RecvTimeoutError::Timeout)) {
                progress.line(&format!(
                    "  {place}: this example has been running for over {:.0} s (it is stopped at {} s; \
                     `<!-- tangle: timeout N -->` in the chapter changes that)",
                    slow.as_secs_f64().floor(),
                    timeout.as_secs()
                ));
            }
        });
        let captured = process::run_group(cmd, process::Options { timeout, ..Default::default() });
        drop(done);
        captured
    });
    let captured = match captured {
        Ok(c) => c,
        Err(e) => {
            let d = Diagnostic::error(at, format!("cannot run this example ({}): {e}", job.exe.display()));
            return Ran { stdout: String::new(), failure: Some(d) };
        }
    };
    let stdout = String::from_utf8_lossy(&captured.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&captured.stderr).into_owned();
    let failure = match captured.end {
        ProcessEnd::TimedOut => Some(Diagnostic::error(
            at,
            format!("this example was still running after {} s and was stopped", timeout.as_secs()),
        )),
        ProcessEnd::Stopped => {
            Some(Diagnostic::error(at, "this example was stopped: a file of the book was saved while it ran"))
        }
        ProcessEnd::OverCap { stream, .. } => Some(Diagnostic::error(
            at,
            format!("this example printed more than {} MiB on {stream} and was stopped", OUTPUT_CAP >> 20),
        )),
        ProcessEnd::Exited(status) if status.success() => example.attributes.should_panic.then(|| {
            example
                .claim_error("should_panic", "this example did not panic, but `should_panic` says it must")
                .with_help("make it panic again, or drop `should_panic` from its fence")
        }),
        ProcessEnd::Exited(_) if example.attributes.should_panic => None,
        ProcessEnd::Exited(status) => Some(failed(workspace, example, at, &stderr, status)),
    };
    Ran { stdout, failure }
}

/// The failure of an example that exited with `status`: its panic, at the line that panicked
/// when that line is the example's, or what it printed on stderr.
fn failed(
    workspace: &Workspace,
    example: &Example,
    at: Location,
    stderr: &str,
    status: std::process::ExitStatus,
) -> Diagnostic {
    let panic = Regex::new(r"(?s)panicked at ([^\n]+?):(\d+):(\d+):\n(.*?)(\nnote: |\z)").expect("valid");
    if let Some(m) = panic.captures(stderr) {
        let message = m[4].trim_end().to_string();
        let (file, line, column) = (Path::new(&m[1]), m[2].parse().unwrap_or(0), m[3].parse().unwrap_or(0));
        let (location, included_at) = match panic_position(workspace, file, line, column) {
            Some((chapter, location, included_at)) if Arc::ptr_eq(chapter, &example.chapter) => (location, included_at),
            _ => (at, None),
        };
        let mut d = Diagnostic::error(location, format!("this example panicked: {message}"))
            .with_help("fix it, or mark its fence `should_panic` if panicking is what it shows");
        d.included_at = included_at;
        return d;
    }
    let said = stderr.trim_end();
    let said = if said.is_empty() { String::new() } else { format!(":\n{said}") };
    Diagnostic::error(at, format!("this example failed ({status}){said}"))
}
