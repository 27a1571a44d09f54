//! The runtime half of `tangle`: what a generated chapter binary calls.
//!
//! A chapter's run cells become one `fn main`. Before each cell the generated code calls
//! [`cell`], which prints a marker line on stdout so that `tangle` can split one process's
//! output into per-cell outputs, and records the cell so that a panic names it.
//! The marker protocol is shared with `tangle::run` through [`MARKER`].

pub mod figure;

use std::io::Write;
use std::sync::Mutex;

/// Prefix of the line printed before each cell's output. It starts with an ASCII record
/// separator so that no ordinary program output can be mistaken for it.
pub const MARKER: &str = "\u{1e}tangle-cell ";

/// Prefix of the line printed on stderr when a cell panics.
pub const PANIC_MARKER: &str = "\u{1e}tangle-panic ";

static CURRENT: Mutex<Option<usize>> = Mutex::new(None);
static CHAPTER: Mutex<&'static str> = Mutex::new("");

/// The chapter (`"ch06"`) whose binary is running, as given to [`init`].
pub fn chapter() -> &'static str {
    CHAPTER.lock().map(|c| *c).unwrap_or("")
}

/// Installs the panic hook that names the running cell. Called once at the start of `main`
/// with the chapter's name (`"ch06"`).
pub fn init(chapter: &'static str) {
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
