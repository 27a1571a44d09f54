//! What `book` would refuse, reported by `check`: the renderer's validation pass
//! ([`tangle_render::validate`]), limited to the chapters asked for (and the book-wide files,
//! `SUMMARY.md`, that belong to none); beside it, as warnings, chapters that use a chapter the
//! reader meets later ([`tangle_render::later_chapter_uses`]).

use tangle_core::config::CellMode;
use tangle_core::diagnostic::{Diagnostic, Sources, Style};
use tangle_core::model::Chapter;
use tangle_core::pipeline::Project;

use crate::report::{CLEAN, ERROR};

/// Prints what the book would refuse in `chapters`; returns [`ERROR`] when anything is.
pub fn report(project: &Project, chapters: &[&Chapter]) -> u8 {
    let sources = Sources::new(&project.root);
    let mut code = CLEAN;
    let found = tangle_core::timing::phase("validate", || {
        let mut found = tangle_render::validate(project);
        found.extend(tangle_render::later_chapter_uses(project));
        found
    });
    for d in found {
        if reported_by_an_example(project, &d) {
            code = ERROR;
            continue;
        }
        let file = d.location.as_ref().map(|l| l.file.clone());
        let other_chapter = project
            .book
            .chapters
            .iter()
            .any(|c| Some(&c.path) == file.as_ref() && !chapters.iter().any(|s| s.name == c.name));
        if other_chapter {
            continue;
        }
        eprintln!("{}\n", d.render(&sources, Style::for_stderr()));
        if d.is_error() {
            code = ERROR;
        }
    }
    code
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
