//! `TANGLE_TIMINGS=1`: how long each phase of a command took, on stderr (`timing: parse 0.041 s`),
//! for whoever measures the author's loop (`bench/author-loop`). Off by default, and then
//! nothing but an environment lookup. Counts go there too (how many Markdown documents a
//! command parsed).

use std::sync::OnceLock;
use std::time::Instant;

fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("TANGLE_TIMINGS").is_some_and(|v| !v.is_empty() && v != "0"))
}

/// Times `f` under `phase` when timings are on.
pub fn phase<T>(phase: &str, f: impl FnOnce() -> T) -> T {
    if !enabled() {
        return f();
    }
    let start = Instant::now();
    let out = f();
    eprintln!("timing: {phase} {:.3} s", start.elapsed().as_secs_f64());
    out
}

/// Reports a count (`timing: markdown parses 7`) when timings are on.
pub fn count(what: &str, n: usize) {
    if enabled() {
        eprintln!("timing: {what} {n}");
    }
}

/// A phase timed from [`Span::new`] until the span is dropped.
pub struct Span {
    phase: &'static str,
    start: Option<Instant>,
}

impl Span {
    pub fn new(phase: &'static str) -> Span {
        Span { phase, start: enabled().then(Instant::now) }
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some(start) = self.start {
            eprintln!("timing: {} {:.3} s", self.phase, start.elapsed().as_secs_f64());
        }
    }
}
