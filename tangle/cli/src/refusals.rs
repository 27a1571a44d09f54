//! What `book` would refuse, reported by `check`: the renderer's validation pass
//! ([`tangle_render::validate`]), limited to the chapters asked for (and the book-wide files,
//! `SUMMARY.md`, that belong to none).

use tangle_core::diagnostic::{Sources, Style};
use tangle_core::model::Chapter;
use tangle_core::pipeline::Project;

use crate::report::{CLEAN, ERROR};

/// Prints what the book would refuse in `chapters`; returns [`ERROR`] when anything is.
pub fn report(project: &Project, chapters: &[&Chapter]) -> u8 {
    let sources = Sources::new(&project.root);
    let mut code = CLEAN;
    for d in tangle_core::timing::phase("validate", || tangle_render::validate(project)) {
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
