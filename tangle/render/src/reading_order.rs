//! The book's reading order against its chapters' imports: a chapter whose code uses a chapter
//! the reader meets later ([`later_chapter_uses`]). Cargo builds it (only a cycle stops the
//! build), but the page shows code that calls what the book has not explained yet, and the
//! printed book cannot be read front to back. A warning, not a refusal: a book may mean it
//! (an appendix of helpers listed last), and `book` renders it either way.

use tangle_core::diagnostic::Diagnostic;
use tangle_core::pipeline::Project;

/// One warning for every chapter import of a chapter that `SUMMARY.md` lists later. Chapters
/// it does not list have no place in the order and are left out, as is a book without a
/// summary, or with one mdBook cannot read (`check` refuses those already).
pub fn later_chapter_uses(project: &Project) -> Vec<Diagnostic> {
    let Some(order) = tangle_core::parse::summary::reading_order(&project.config.layout) else { return Vec::new() };
    let place = |name: &str| {
        let chapter = project.book.chapters.iter().find(|c| c.name == name)?;
        order.get(&chapter.path).copied()
    };
    let mut out = Vec::new();
    for krate in &project.generated.crates {
        let Some(here) = place(krate.name()) else { continue };
        for (dep, at) in &krate.chapter_deps {
            let Some(there) = place(dep) else { continue };
            if there <= here {
                continue;
            }
            let dep_path = project.book.chapters.iter().find(|c| &c.name == dep).map(|c| c.path.display().to_string());
            out.push(
                Diagnostic::warning(
                    at.clone(),
                    format!(
                        "{} uses {dep}, a chapter the reader meets later ({}): this page shows code that \
                         calls what the book has not explained yet",
                        krate.name(),
                        dep_path.unwrap_or_default(),
                    ),
                )
                .with_help(format!(
                    "move what {} needs into it or an earlier chapter, or list {dep} before it in SUMMARY.md",
                    krate.name()
                )),
            );
        }
    }
    out
}
