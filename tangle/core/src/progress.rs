//! What a check reports while it works: the lines of its log (files `sync` wrote, the chapters
//! it builds, cargo's `Compiling ...`, the chapters it runs) and, for a live display, which
//! chapters are building and which chapter and cell are running. The stages report through
//! [`Progress`]; [`Plain`] writes the log lines to stderr and nothing else (what a pipe or a
//! test sees); the command line shows a live status line on a terminal (`cli::status`).

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use crate::model::Chapter;

/// Where a check's progress goes. Every method but [`Progress::line`] only feeds a live
/// display and does nothing by default.
pub trait Progress: Sync {
    /// One line of the log, printed as it comes.
    fn line(&self, text: &str);

    /// A cargo build of these chapters' programs started.
    fn building(&self, _chapters: &[String]) {}

    /// The build ended (built or failed).
    fn built(&self) {}

    /// A chapter's program started. `current` holds the run cell printing now plus one (0
    /// before the first), kept up to date by the run.
    fn running(&self, _chapter: &Chapter, _current: Arc<AtomicUsize>) {}

    /// The chapter's program ended.
    fn ran(&self, _chapter: &str) {}
}

/// The log on stderr, no live display.
pub struct Plain;

impl Progress for Plain {
    fn line(&self, text: &str) {
        eprintln!("{text}");
    }
}
