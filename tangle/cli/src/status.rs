//! A check's live status line on a terminal: which chapters cargo is building, which chapter
//! is running and which of its cells, with the time each has taken so far, redrawn in place
//! below the log lines ten times a second. When stderr is not a terminal (a pipe, a CI log, a
//! test), or `TERM=dumb`, the log lines are written as they come (as
//! [`tangle_core::progress::Plain`] does), and a build or run that goes on for a minute gets a
//! log line of its own, once a minute: the same words, after `still` (a CI job that prints
//! nothing for long may be taken for hung and killed).

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tangle_core::model::Chapter;
use tangle_core::progress::Progress;

/// How often the line is redrawn.
const TICK: Duration = Duration::from_millis(100);
/// Nothing is shown for work shorter than this, so that a quick check does not flicker.
const QUIET_FOR: Duration = Duration::from_millis(300);

/// Without a terminal, how long a build or run goes on before a line says it still does, and
/// how often after that.
const HEARTBEAT: Duration = Duration::from_secs(60);

/// Calls `f` with the progress display fit for stderr; the status line is gone when it returns.
pub fn with_status<T>(f: impl FnOnce(&dyn Progress) -> T) -> T {
    let terminal = std::io::stderr().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb");
    let status = Status { log: !terminal, ..Status::default() };
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut last_beat = Instant::now();
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(TICK);
                match status.log {
                    true => drop(status.beat(&mut last_beat, Instant::now())),
                    false => status.redraw(),
                }
            }
        });
        let out = f(&status);
        done.store(true, Ordering::Relaxed);
        status.clear();
        out
    })
}

#[derive(Default)]
struct Status {
    state: Mutex<State>,
    /// No terminal: log lines only, and a heartbeat ([`Status::beat`]) for long work.
    log: bool,
}

#[derive(Default)]
struct State {
    building: Option<(String, Instant)>,
    running: Option<Running>,
    /// A status line is on the screen (the cursor at its end).
    shown: bool,
}

struct Running {
    chapter: String,
    /// The chapter line of each run cell.
    cell_lines: Vec<usize>,
    path: String,
    current: Arc<AtomicUsize>,
    since: Instant,
}

impl Status {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn redraw(&self) {
        let mut state = self.lock();
        let text = state.text(Instant::now(), QUIET_FOR);
        let mut err = std::io::stderr().lock();
        match text {
            Some(text) => {
                let _ = write!(err, "\r\x1b[2K{}", fit(&text, width()));
                state.shown = true;
            }
            None if state.shown => {
                let _ = write!(err, "\r\x1b[2K");
                state.shown = false;
            }
            None => {}
        }
        let _ = err.flush();
    }

    /// Without a terminal: a log line for work that has gone on for [`HEARTBEAT`], at most one
    /// per [`HEARTBEAT`] (`last` is when the previous one was written, or the start).
    fn beat(&self, last: &mut Instant, now: Instant) -> Option<String> {
        if now - *last < HEARTBEAT {
            return None;
        }
        let text = format!("still {}", self.lock().text(now, HEARTBEAT)?);
        eprintln!("{text}");
        *last = now;
        Some(text)
    }

    fn clear(&self) {
        let mut state = self.lock();
        if state.shown {
            eprint!("\r\x1b[2K");
            state.shown = false;
        }
    }
}

impl State {
    /// The status line, if anything has been going on for `quiet` or longer.
    fn text(&self, now: Instant, quiet: Duration) -> Option<String> {
        let mut parts = Vec::new();
        if let Some((chapters, since)) = &self.building
            && now - *since >= quiet
        {
            parts.push(format!("building {chapters} · {:.1} s", (now - *since).as_secs_f64()));
        }
        if let Some(r) = &self.running
            && now - r.since >= quiet
        {
            let cell = match r.current.load(Ordering::Relaxed) {
                0 => "starting".to_string(),
                n => format!(
                    "cell {n} of {} ({}:{})",
                    r.cell_lines.len(),
                    r.path,
                    r.cell_lines.get(n - 1).copied().unwrap_or(0)
                ),
            };
            parts.push(format!("running {} · {cell} · {:.1} s", r.chapter, (now - r.since).as_secs_f64()));
        }
        (!parts.is_empty()).then(|| parts.join("  |  "))
    }
}

impl Progress for Status {
    fn line(&self, text: &str) {
        let mut state = self.lock();
        let mut err = std::io::stderr().lock();
        if state.shown {
            let _ = write!(err, "\r\x1b[2K");
            state.shown = false;
        }
        let _ = writeln!(err, "{text}");
    }

    fn building(&self, chapters: &[String]) {
        self.lock().building = Some((chapters.join(", "), Instant::now()));
    }

    fn built(&self) {
        self.lock().building = None;
    }

    fn running(&self, chapter: &Chapter, current: Arc<AtomicUsize>) {
        self.lock().running = Some(Running {
            chapter: chapter.name.clone(),
            cell_lines: chapter.run_cells().map(|c| c.code_line.saturating_sub(1)).collect(),
            path: chapter.path.display().to_string(),
            current,
            since: Instant::now(),
        });
    }

    fn ran(&self, _chapter: &str) {
        self.lock().running = None;
    }
}

/// `text` cut to `width` characters (a wrapped status line could not be redrawn in place).
fn fit(text: &str, width: usize) -> String {
    match text.char_indices().nth(width.saturating_sub(1)) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The terminal's width in columns (80 if it cannot be told).
fn width() -> usize {
    // SAFETY: TIOCGWINSZ fills the winsize we pass; on failure we keep the default.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    if ok && size.ws_col > 0 { size.ws_col as usize } else { 80 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_what_builds_and_the_cell_that_runs() {
        let start = Instant::now();
        let current = Arc::new(AtomicUsize::new(0));
        let mut state = State {
            building: Some(("ch06, ch07".into(), start)),
            running: Some(Running {
                chapter: "ch02".into(),
                cell_lines: vec![251, 1517, 1611],
                path: "book/src/ch02.md".into(),
                current: current.clone(),
                since: start,
            }),
            shown: false,
        };
        assert_eq!(state.text(start, QUIET_FOR), None, "nothing for the first moments");
        let later = start + Duration::from_millis(2500);
        assert_eq!(
            state.text(later, QUIET_FOR).unwrap(),
            "building ch06, ch07 · 2.5 s  |  running ch02 · starting · 2.5 s"
        );
        current.store(2, Ordering::Relaxed);
        state.building = None;
        assert_eq!(state.text(later, QUIET_FOR).unwrap(), "running ch02 · cell 2 of 3 (book/src/ch02.md:1517) · 2.5 s");
        assert_eq!(fit("abcdef", 4), "abc…");

        // Without a terminal: a line once the run has gone on for a minute, then once a minute.
        let status = Status { state: Mutex::new(state), log: true };
        let mut last = start;
        assert_eq!(status.beat(&mut last, start + Duration::from_secs(59)), None);
        let minute = start + Duration::from_secs(61);
        assert_eq!(
            status.beat(&mut last, minute).unwrap(),
            "still running ch02 · cell 2 of 3 (book/src/ch02.md:1517) · 61.0 s"
        );
        assert_eq!(last, minute);
        assert_eq!(status.beat(&mut last, minute + Duration::from_secs(30)), None, "once a minute");
        assert!(status.beat(&mut last, minute + Duration::from_secs(60)).is_some());
        status.lock().running = None;
        assert_eq!(status.beat(&mut last, minute + Duration::from_secs(200)), None, "nothing going on");
        assert_eq!(fit("abc", 4), "abc");
    }
}
