//! The runtime half of `tangle`: what a generated chapter binary calls.
//!
//! A chapter's run cells become one `fn main`. Before each cell the generated code calls
//! [`cell`], which prints a marker line on stdout so that `tangle` can split one process's
//! output into per-cell outputs, and records the cell so that a panic names it.
//! The marker protocol is shared with `tangle_core::run` through [`MARKER`].
//!
//! [`init`] also starts a watchdog when `tangle` asks for one (see [`PARENT_PID_VAR`]): a
//! chapter program whose `tangle` died, even by `kill -9`, stops itself and every process it
//! started instead of running on as an orphan.
//!
//! The modules:
//!
//! - [`value`](mod@value): values a cell publishes for the prose to quote (`{{#value NAME text}}`);
//! - [`figure`]: figures drawn with plotters in the bundled font (`{{#figure NAME | caption}}`);
//! - [`widget`]: live calculators, computed at every combination of their inputs and written
//!   as a data file the page reads (`{{#widget NAME | caption}}`);
//! - `file`: the one way both write their files (only when the bytes change, atomically);
//! - `sources` (feature `sources`): this crate's own files, which the tool writes into a book.

pub mod figure;
mod file;
#[cfg(feature = "sources")]
pub mod sources;
pub mod value;
pub mod widget;

pub use value::{value, value_measured, value_within};

use std::io::Write;
use std::sync::Mutex;

/// Prefix of the line printed before each cell's output. It starts with an ASCII record
/// separator so that no ordinary program output can be mistaken for it.
pub const MARKER: &str = "\u{1e}tangle-cell ";

/// Prefix of the line printed on stderr when a cell panics.
pub const PANIC_MARKER: &str = "\u{1e}tangle-panic ";

/// The variable through which `tangle` names its own pid to the chapter programs it starts,
/// each in a process group of its own. While it is set, [`init`] starts the watchdog.
pub const PARENT_PID_VAR: &str = "TANGLE_PARENT_PID";

static CURRENT: Mutex<Option<usize>> = Mutex::new(None);
static CHAPTER: Mutex<&'static str> = Mutex::new("");

/// The run cell that is running, if any (counting from 0).
pub(crate) fn current_cell() -> Option<usize> {
    CURRENT.lock().ok().and_then(|c| *c)
}

/// The chapter (`"ch06"`) whose binary is running, as given to [`init`].
pub fn chapter() -> &'static str {
    CHAPTER.lock().map(|c| *c).unwrap_or("")
}

/// Installs the panic hook that names the running cell, and starts the parent watchdog when
/// `tangle` started this program. Called once at the start of `main` with the chapter's name
/// (`"ch06"`).
pub fn init(chapter: &'static str) {
    if let Some(parent) = std::env::var(PARENT_PID_VAR).ok().and_then(|p| p.trim().parse().ok()) {
        watch_parent(parent);
    }
    if let Ok(mut c) = CHAPTER.lock() {
        *c = chapter;
    }
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = std::io::stdout().flush();
        if let Some(cell) = CURRENT.lock().ok().and_then(|c| *c) {
            eprintln!("{PANIC_MARKER}{cell}");
        }
        default_hook(info);
    }));
}

/// Marks the start of the chapter's run cell number `index` (counting from 0). Cells are
/// named by position, not by line, so that a prose edit above a cell (which moves its line)
/// does not change the program and needs no rebuild.
pub fn cell(index: usize) {
    if let Ok(mut current) = CURRENT.lock() {
        *current = Some(index);
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{MARKER}{index}");
    let _ = out.flush();
}

/// Ends the program for an error that a cell's `?` returned: prints it by its message (and
/// its causes), names the running cell as a panic would, and exits with status 1. The
/// generated `main` calls this; `fn main() -> Result` would print the error's `Debug` form.
pub fn exit_with(error: &dyn std::error::Error) -> ! {
    let _ = std::io::stdout().flush();
    if let Some(cell) = CURRENT.lock().ok().and_then(|c| *c) {
        eprintln!("{PANIC_MARKER}{cell}");
    }
    eprintln!("error: {error}");
    let mut source = error.source();
    while let Some(cause) = source {
        eprintln!("caused by: {cause}");
        source = cause.source();
    }
    std::process::exit(1)
}

/// Polls every 100 ms whether the process that started this one is still `parent` (the pid
/// `tangle` passed). When it is not (the parent died and this process was handed to init or a
/// subreaper), kills this process's group, so that the processes a cell started die too.
///
/// Nothing in `tangle` can run after a `kill -9`, so the program must notice by itself; a
/// poll of `getppid` is portable across Unixes (`PR_SET_PDEATHSIG` is Linux-only, fires when
/// the spawning *thread* ends, and reaches this process only, not its children).
#[cfg(unix)]
fn watch_parent(parent: u32) {
    // `tangle` starts each chapter program as the leader of its own process group. A process
    // that is not a group leader inherited the variable (a chapter binary started by a cell):
    // the leader's watchdog covers it, and it must not kill a group that is not its own.
    // SAFETY: getpgrp and getpid take no arguments and cannot fail.
    if unsafe { libc::getpgrp() != libc::getpid() } {
        return;
    }
    let check = move || {
        if std::os::unix::process::parent_id() != parent {
            // SAFETY: kill(0, ...) signals this process's own group; no memory is involved.
            unsafe { libc::kill(0, libc::SIGKILL) };
        }
    };
    // The parent may have died before this program got here.
    check();
    let _ = std::thread::Builder::new().name("tangle-parent-watchdog".into()).spawn(move || {
        loop {
            std::thread::sleep(std::time::Duration::from_millis(100));
            check();
        }
    });
}

#[cfg(not(unix))]
fn watch_parent(_parent: u32) {}
