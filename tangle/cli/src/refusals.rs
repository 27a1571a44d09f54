//! What `book` would refuse, reported by `check`: the renderer's validation pass
//! ([`tangle_render::validate`]), limited to the chapters asked for (and the book-wide files,
//! `SUMMARY.md`, that belong to none); beside it, as warnings, chapters that `SUMMARY.md` leaves
//! out of the book ([`tangle_render::unlisted_chapters`]) and chapters that use a chapter the
//! reader meets later ([`tangle_render::later_chapter_uses`]).

use tangle_core::config::CellMode;
use tangle_core::diagnostic::{Diagnostic, Sources, Style};
use tangle_core::model::Chapter;
use tangle_core::pipeline::Project;

use crate::report::{CLEAN, ERROR};

/// What the book would refuse in `chapters`, and its warnings: [`Found::warn`] prints the
/// warnings, before the chapters run, and [`Found::refuse`] the refusals, after them, so that
/// what fails the check is what it ends with.
pub struct Found<'a> {
    project: &'a Project,
    found: Vec<Diagnostic>,
}

impl<'a> Found<'a> {
    pub fn new(project: &'a Project, chapters: &[&Chapter]) -> Self {
        let found = tangle_core::timing::phase("validate", || {
            let mut found = tangle_render::validate(project);
            found.extend(tangle_render::unlisted_chapters(project));
            found.extend(tangle_render::later_chapter_uses(project));
            found
        });
        let found = found.into_iter().filter(|d| concerns(project, chapters, d)).collect();
        Found { project, found }
    }

    /// Prints the warnings.
    pub fn warn(&self) {
        self.print(|d| !d.is_error());
    }

    /// Prints the refusals; returns [`ERROR`] when there is any.
    pub fn refuse(&self) -> u8 {
        self.print(Diagnostic::is_error);
        let failed = self.found.iter().any(Diagnostic::is_error);
        if failed { ERROR } else { CLEAN }
    }

    fn print(&self, which: impl Fn(&Diagnostic) -> bool) {
        let sources = Sources::new(&self.project.root);
        for d in self.found.iter().filter(|d| which(d) && !reported_by_an_example(self.project, d)) {
            eprintln!("{}\n", d.render(&sources, Style::for_stderr()));
        }
    }
}

/// Whether `d` is about one of `chapters`, or about no chapter (a book-wide file).
fn concerns(project: &Project, chapters: &[&Chapter], d: &Diagnostic) -> bool {
    let file = d.location.as_ref().map(|l| &l.file);
    let other_chapter =
        project.book.chapters.iter().any(|c| Some(&c.path) == file && !chapters.iter().any(|s| s.name == c.name));
    !other_chapter
}

/// Whether `d`, a refused directive, was reported already by the examples run: an
/// `{{#include}}`, `{{#rustdoc_include}}` or `{{#playground}}` of a file that does not exist or
/// may not be read, in an example of a chapter of examples (which fails, saying why, at that
/// line). It still fails the book; it is only not said twice.
pub fn reported_by_an_example(project: &Project, d: &Diagnostic) -> bool {
    let Some(at) = &d.location else { return false };
    if !tangle_render::reads_an_unreadable_file(d) {
        return false;
    }
    let examples = project.book.chapters.iter().filter(|c| c.mode == CellMode::Examples && c.path == at.file);
    examples.filter_map(|c| c.cell_at(at.line)).any(|cell| cell.example.as_ref().is_some_and(|e| !e.ignore))
}
