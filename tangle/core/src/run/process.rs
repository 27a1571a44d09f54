//! A chapter program as a process group: started as the leader of a group of its own, so
//! that everything it starts can be stopped with it; stopped as a group on timeout, on too
//! much output, when it exits (nothing it left behind may keep running or keep the pipes
//! open), when `tangle` itself is stopped by SIGINT, SIGTERM or SIGHUP, and when a save makes
//! its run moot ([`saved`], for `serve`).
//!
//! Its stdout and stderr are read by threads while it runs, with a cap on what one cell may
//! print. Once the group is stopped the readers get at most [`Options::grace`] to drain the
//! pipes: a process that left the group (`setsid`) and still holds them cannot hold us.
//! (If `tangle` is killed with SIGKILL nothing here runs; `tangle_runtime::init`'s watchdog
//! then stops the group from inside.)

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant, SystemTime};

use super::cells::Segmenter;

/// How long a chapter may run unless it declares `<!-- tangle: timeout N -->`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Most bytes one cell may print (on stdout; the whole program on stderr). An output block
/// is prose that a reader scrolls past: anything near this is a mistake (a loop printing).
pub const OUTPUT_CAP: usize = 16 << 20;

/// How long the pipes may stay open once the program's group is stopped.
pub const PIPE_GRACE: Duration = Duration::from_secs(1);

/// How a program is run: how long it may take, how much it may print, and where to report
/// the cell printing now. The defaults are a chapter's ([`DEFAULT_TIMEOUT`], [`OUTPUT_CAP`],
/// [`PIPE_GRACE`]), with no one watching the progress.
#[derive(Debug, Clone)]
pub struct Options {
    pub timeout: Duration,
    /// Most bytes one cell may print on stdout (and the whole program on stderr).
    pub cap: usize,
    /// How long to wait for the pipes to close once the group is stopped.
    pub grace: Duration,
    /// Kept at the cell printing now plus one (0: none yet), for a progress display.
    pub progress: Option<Arc<AtomicUsize>>,
}

impl Default for Options {
    fn default() -> Self {
        Options { timeout: DEFAULT_TIMEOUT, cap: OUTPUT_CAP, grace: PIPE_GRACE, progress: None }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl std::fmt::Display for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        })
    }
}

/// How the program ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessEnd {
    Exited(ExitStatus),
    /// Still running at the deadline; the group was killed.
    TimedOut,
    /// Stopped because a save made the run moot ([`saved`]); the group was killed.
    Stopped,
    /// Cell `cell` (`None`: before the first cell) printed more than the cap on `stream`;
    /// the group was killed.
    OverCap {
        stream: Stream,
        cell: Option<usize>,
    },
}

/// What the program printed and how it ended.
#[derive(Debug)]
pub struct Captured {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub end: ProcessEnd,
    /// The pipes were still open [`Options::grace`] after the group was stopped: a process
    /// outside the group holds them, and what it prints is not waited for.
    pub pipes_left_open: bool,
}

enum Event {
    Exited(ExitStatus),
    WaitFailed(std::io::Error),
    OverCap(Stream, Option<usize>),
    ReaderDone,
}

/// The process groups of the chapter programs running now, so that a signal to `tangle`
/// stops them too.
static RUNNING: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// The groups stopped because a save made their runs moot ([`saved`]), whose runs end as
/// [`ProcessEnd::Stopped`].
static STOPPED: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// When the check now running read the book's sources ([`reading_sources`]), and whether a
/// save since has made its runs moot.
static SOURCES_READ: Mutex<(Option<SystemTime>, bool)> = Mutex::new((None, false));

/// Marks the moment a check reads the book's sources: a file saved after it ([`saved`]) makes
/// that check's runs moot. `serve` calls it as each rebuild starts checking.
pub fn reading_sources() {
    *SOURCES_READ.lock().unwrap_or_else(|e| e.into_inner()) = (Some(SystemTime::now()), false);
}

/// A file of the book was saved at `time` (its modification time). If that is after the
/// running check read the sources, its chapter programs are answering a question nobody
/// asks any more: those running are stopped, and those it would start next end at once,
/// each as [`ProcessEnd::Stopped`], instead of running on (a loop up to its timeout) while
/// the save waits for its rebuild. Without [`reading_sources`] (the command line) it does
/// nothing.
pub fn saved(time: SystemTime) {
    let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    let mut read = SOURCES_READ.lock().unwrap_or_else(|e| e.into_inner());
    if read.0.is_none_or(|at| time <= at) {
        return;
    }
    read.1 = true;
    let mut stopped = STOPPED.lock().unwrap_or_else(|e| e.into_inner());
    for &pgid in running.iter() {
        stopped.push(pgid);
        kill_group(pgid);
    }
}

/// Runs `cmd` (stdin closed, stdout and stderr captured) as the leader of a new process
/// group, within `options`. Returns once the program has ended and its group has been
/// killed; never later than `options.timeout + options.grace` (plus scheduling noise).
pub(crate) fn run_group(mut cmd: Command, options: Options) -> std::io::Result<Captured> {
    let Options { timeout, cap, grace, progress } = options;
    let current = progress.unwrap_or_default();
    install_signal_handlers();
    cmd.process_group(0).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = {
        // Held across the spawn, so that a signal cannot fall between the spawn and the
        // registration: the handler waits for this lock, then sees the new group.
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        let child = cmd.spawn()?;
        let pgid = child.id() as i32;
        running.push(pgid);
        // A save already made this check's runs moot: this one ends before it starts.
        if SOURCES_READ.lock().unwrap_or_else(|e| e.into_inner()).1 {
            STOPPED.lock().unwrap_or_else(|e| e.into_inner()).push(pgid);
            kill_group(pgid);
        }
        child
    };
    let pgid = child.id() as i32;
    let _registered = Registered(pgid);

    let (tx, rx) = mpsc::channel();
    let stdout = Arc::new(Mutex::new(Vec::new()));
    let stderr = Arc::new(Mutex::new(Vec::new()));
    // The cell printing now, plus one (0: none yet), for pinning stderr overflow to a cell.
    current.store(0, Ordering::Relaxed);
    {
        let pipe = child.stdout.take().expect("piped");
        let (buf, current, tx) = (stdout.clone(), current.clone(), tx.clone());
        std::thread::spawn(move || read_stdout(pipe, &buf, &current, cap, &tx));
    }
    {
        let pipe = child.stderr.take().expect("piped");
        let (buf, current, tx) = (stderr.clone(), current.clone(), tx.clone());
        std::thread::spawn(move || read_stderr(pipe, &buf, &current, cap, &tx));
    }
    {
        let tx = tx.clone();
        // The child is reaped by this thread whatever happens, so no zombie is left.
        std::thread::spawn(move || {
            let _ = tx.send(match child.wait() {
                Ok(status) => Event::Exited(status),
                Err(e) => Event::WaitFailed(e),
            });
        });
    }
    drop(tx);

    let deadline = started + timeout;
    let mut readers_done = 0;
    let end = loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Event::Exited(status)) => break ProcessEnd::Exited(status),
            Ok(Event::OverCap(stream, cell)) => break ProcessEnd::OverCap { stream, cell },
            Ok(Event::ReaderDone) => readers_done += 1,
            Ok(Event::WaitFailed(e)) => {
                kill_group(pgid);
                return Err(e);
            }
            Err(RecvTimeoutError::Timeout) => break ProcessEnd::TimedOut,
            Err(RecvTimeoutError::Disconnected) => unreachable!("the waiter thread always sends"),
        }
    };
    // Whatever ended the run, nothing of the group may outlive it: a background child of a
    // cell would otherwise run on and keep the pipes open. (After a normal exit the leader is
    // reaped already; its pid cannot be reused while other members keep the group alive, and
    // if none is left the kill finds nothing.)
    kill_group(pgid);
    let mut end = match STOPPED.lock().unwrap_or_else(|e| e.into_inner()).contains(&pgid) {
        true => ProcessEnd::Stopped,
        false => end,
    };
    let grace_end = Instant::now() + grace;
    while readers_done < 2 {
        match rx.recv_timeout(grace_end.saturating_duration_since(Instant::now())) {
            Ok(Event::ReaderDone) => readers_done += 1,
            // Output still in the pipe when the program exited may pass the cap.
            Ok(Event::OverCap(stream, cell)) if matches!(end, ProcessEnd::Exited(_)) => {
                end = ProcessEnd::OverCap { stream, cell }
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    let take = |buf: &Arc<Mutex<Vec<u8>>>| std::mem::take(&mut *buf.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(Captured { stdout: take(&stdout), stderr: take(&stderr), end, pipes_left_open: readers_done < 2 })
}

/// Removes the group from [`RUNNING`] however `run_group` returns.
struct Registered(i32);

impl Drop for Registered {
    fn drop(&mut self) {
        RUNNING.lock().unwrap_or_else(|e| e.into_inner()).retain(|&g| g != self.0);
        STOPPED.lock().unwrap_or_else(|e| e.into_inner()).retain(|&g| g != self.0);
    }
}

fn kill_group(pgid: i32) {
    // SAFETY: killpg only sends a signal; a group that no longer exists gives ESRCH.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
}

const CHUNK: usize = 64 * 1024;

fn read_stdout(mut pipe: impl Read, buf: &Mutex<Vec<u8>>, current: &AtomicUsize, cap: usize, tx: &Sender<Event>) {
    let mut seg = Segmenter::default();
    let mut chunk = vec![0; CHUNK];
    loop {
        let n = match pipe.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let mut buf = buf.lock().unwrap_or_else(|e| e.into_inner());
        buf.extend_from_slice(&chunk[..n]);
        seg.feed(&buf);
        current.store(seg.current().map_or(0, |c| c + 1), Ordering::Relaxed);
        if let Some(cell) = seg.over_cap(buf.len(), cap) {
            let _ = tx.send(Event::OverCap(Stream::Stdout, cell));
            break;
        }
    }
    let _ = tx.send(Event::ReaderDone);
}

fn read_stderr(mut pipe: impl Read, buf: &Mutex<Vec<u8>>, current: &AtomicUsize, cap: usize, tx: &Sender<Event>) {
    let mut chunk = vec![0; CHUNK];
    loop {
        let n = match pipe.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let mut buf = buf.lock().unwrap_or_else(|e| e.into_inner());
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > cap {
            let cell = current.load(Ordering::Relaxed).checked_sub(1);
            let _ = tx.send(Event::OverCap(Stream::Stderr, cell));
            break;
        }
    }
    let _ = tx.send(Event::ReaderDone);
}

/// On SIGINT, SIGTERM or SIGHUP: kill every running chapter program's group, then exit with
/// 128 + the signal (130, 143, 129), as a shell reports a process killed by it.
fn install_signal_handlers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
            Ok(s) => s,
            Err(e) => {
                eprintln!(
                    "warning: cannot handle SIGINT/SIGTERM ({e}); stopping tangle may leave chapter programs running"
                );
                return;
            }
        };
        std::thread::Builder::new()
            .name("tangle-signals".into())
            .spawn(move || {
                if let Some(signal) = signals.forever().next() {
                    stop_all();
                    std::process::exit(128 + signal);
                }
            })
            .expect("a thread for signals");
    });
}

/// Kills the group of every chapter program running now.
pub(crate) fn stop_all() {
    let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    for &pgid in running.iter() {
        kill_group(pgid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script);
        cmd
    }

    fn limits(timeout: u64) -> Options {
        Options { timeout: Duration::from_secs(timeout), cap: 1 << 20, grace: Duration::from_secs(1), progress: None }
    }

    /// Whether `pid` still runs (a zombie waiting for a reaper that may never come does not).
    fn alive(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
            Err(_) => false,
        }
    }

    #[test]
    fn a_background_child_holding_the_pipes_neither_delays_the_exit_nor_survives_it() {
        let start = Instant::now();
        let got = run_group(sh("sleep 40 & echo $!; echo done"), limits(30)).unwrap();
        let elapsed = start.elapsed();
        assert!(matches!(got.end, ProcessEnd::Exited(s) if s.success()), "{:?}", got.end);
        assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");
        let text = String::from_utf8(got.stdout).unwrap();
        let sleeper: i32 = text.lines().next().unwrap().parse().unwrap();
        assert!(text.ends_with("done\n"));
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(sleeper), "the background `sleep` survived");
        assert!(!got.pipes_left_open);
    }

    #[test]
    fn the_timeout_kills_the_group_and_returns_on_time() {
        let start = Instant::now();
        let got = run_group(sh("sleep 40 & echo $!; while :; do sleep 0.05; done"), limits(1)).unwrap();
        let elapsed = start.elapsed();
        assert_eq!(got.end, ProcessEnd::TimedOut);
        assert!(elapsed < Duration::from_millis(1900), "took {elapsed:?}");
        let sleeper: i32 = String::from_utf8(got.stdout).unwrap().trim().parse().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(sleeper));
    }

    #[test]
    fn a_process_that_left_the_group_cannot_hold_the_run_past_the_grace() {
        // `setsid` puts the sleeper in a session (and group) of its own, out of our reach.
        if Command::new("setsid").arg("--version").output().is_err() {
            return;
        }
        let start = Instant::now();
        let got = run_group(sh("setsid sleep 5 & sleep 0.3; echo started"), limits(30)).unwrap();
        let elapsed = start.elapsed();
        assert!(got.pipes_left_open);
        assert!(elapsed < Duration::from_millis(2500), "took {elapsed:?}");
        assert_eq!(got.stdout, b"started\n");
    }

    #[test]
    fn printing_past_the_cap_stops_the_program_and_names_the_cell() {
        let marker = tangle_runtime::MARKER;
        let script = format!("printf '{marker}0\\nsmall\\n{marker}1\\n'; exec yes 0123456789");
        let start = Instant::now();
        let got = run_group(sh(&script), limits(30)).unwrap();
        assert_eq!(got.end, ProcessEnd::OverCap { stream: Stream::Stdout, cell: Some(1) });
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(got.stdout.len() < (1 << 20) + 2 * CHUNK, "kept {} bytes", got.stdout.len());
        let got = run_group(sh("exec yes 0123456789 >&2"), limits(30)).unwrap();
        assert_eq!(got.end, ProcessEnd::OverCap { stream: Stream::Stderr, cell: None });
    }
}
