//! Figures are outputs too: the files a chapter's run drew (in its staging folder) against
//! the committed ones under `figures/chNN/`, byte for byte (line endings aside: a checkout may
//! have turned `\n` into `\r\n`). That is every SVG figure and every
//! widget's data file (`*.widget.json`, written by `tangle_runtime::widget`), so a live
//! calculator whose committed data is stale fails `check` as a stale figure does, and `accept`
//! copies both.

use std::path::{Path, PathBuf};

use crate::diagnostic::Location;
use crate::fsutil;
use crate::model::Chapter;

/// The files a chapter's run draws into its figures folder and `check` compares.
pub const DRAWN_SUFFIXES: &[&str] = &[".svg", ".widget.json"];

/// A figure (or widget data file) whose drawn bytes differ from the committed ones.
#[derive(Debug, Clone, PartialEq)]
pub enum FigureDrift {
    Changed(PathBuf),
    New(PathBuf),
    NoLongerDrawn(PathBuf),
}

impl std::fmt::Display for FigureDrift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let noun = |p: &Path| if p.to_string_lossy().ends_with(".widget.json") { "widget data" } else { "figure" };
        match self {
            FigureDrift::Changed(p) => {
                write!(f, "{}: the drawn {} differs from the committed file", p.display(), noun(p))
            }
            FigureDrift::New(p) => write!(f, "{}: drawn by the chapter but not committed", p.display()),
            FigureDrift::NoLongerDrawn(p) => write!(f, "{}: committed but no longer drawn by the chapter", p.display()),
        }
    }
}

impl FigureDrift {
    /// The drawn file, relative to the project root.
    pub fn path(&self) -> &Path {
        match self {
            FigureDrift::Changed(p) | FigureDrift::New(p) | FigureDrift::NoLongerDrawn(p) => p,
        }
    }

    /// The drift, with the line of `chapter` that shows the figure in front when one does
    /// (`{{#figure NAME ...}}`, `{{#widget NAME ...}}`): in a long book the file's name says
    /// the chapter, not where in it to look.
    pub fn located(&self, chapter: &Chapter) -> String {
        match self.shown_at(chapter) {
            Some(at) => format!("{at}: {self}"),
            None => self.to_string(),
        }
    }

    /// The line of `chapter` that shows the figure, if one does.
    pub fn shown_at(&self, chapter: &Chapter) -> Option<Location> {
        let file = self.path().file_name()?.to_str()?;
        let (kind, name) = match file.strip_suffix(".widget.json") {
            Some(name) => ("widget", name),
            None => ("figure", file.strip_suffix(".svg")?),
        };
        let directive = format!("{{{{#{kind} {name}");
        let shows = |line: &str| {
            line.match_indices(&directive).any(|(i, _)| {
                line[i + directive.len()..].starts_with(|c: char| c.is_whitespace() || c == '|' || c == '}')
            })
        };
        chapter.source().lines().position(shows).map(|i| chapter.location(i + 1))
    }
}

/// Compares the figures and widget data a chapter drew (`drawn/chNN`) with the committed ones
/// (`figures/chNN`).
pub(crate) fn compare_figures(
    layout: &crate::config::Layout,
    drawn: &Path,
    chapter: &str,
) -> anyhow::Result<Vec<FigureDrift>> {
    let committed_dir = layout.abs(&layout.figures).join(chapter);
    let drawn_dir = drawn.join(chapter);
    let list = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .filter(|n| DRAWN_SUFFIXES.iter().any(|s| n.ends_with(s)))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let (drawn_files, committed_files) = (list(&drawn_dir), list(&committed_dir));
    let mut drift = Vec::new();
    for name in &drawn_files {
        let rel = layout.figures.join(chapter).join(name);
        match std::fs::read(committed_dir.join(name)) {
            Err(_) => drift.push(FigureDrift::New(rel)),
            Ok(old) if !fsutil::same_text(&old, &std::fs::read(drawn_dir.join(name))?) => {
                drift.push(FigureDrift::Changed(rel))
            }
            Ok(_) => {}
        }
    }
    for name in committed_files.iter().filter(|n| !drawn_files.contains(n)) {
        drift.push(FigureDrift::NoLongerDrawn(layout.figures.join(chapter).join(name)));
    }
    Ok(drift)
}

/// The folders under `figures/` (relative to the project root) that hold drawn files
/// ([`DRAWN_SUFFIXES`]) yet are named after none of the book's notebook `chapters`: what a
/// chapter drew before it was renamed or deleted. They are only warned of, never removed:
/// unlike a snapshot, an SVG carries no mark of who wrote it, and the folder may hold the
/// author's own drawings.
pub fn orphans(layout: &crate::config::Layout, chapters: &[&str]) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(layout.abs(&layout.figures)) else { return Vec::new() };
    let drawn = |dir: &Path| {
        std::fs::read_dir(dir).is_ok_and(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .any(|n| DRAWN_SUFFIXES.iter().any(|s| n.ends_with(s)))
        })
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok().map(|name| (name, e.path())))
        .filter(|(name, path)| !chapters.contains(&name.as_str()) && drawn(path))
        .map(|(name, _)| layout.figures.join(name))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drifted_figure_is_located_at_the_line_that_shows_it() {
        let md =
            "# 1 A\n\n{{#figure curve-2 | Not this one.}}\n\n{{#figure curve | The curve.}}\n\n{{#widget meter}}\n";
        let chapter = crate::parse::parse_chapter("ch01", Path::new("src/ch01.md"), md.as_bytes().to_vec()).unwrap();
        let drift = FigureDrift::Changed("figures/ch01/curve.svg".into());
        assert_eq!(drift.located(&chapter), format!("src/ch01.md:5: {drift}"));
        let widget = FigureDrift::New("figures/ch01/meter.widget.json".into());
        assert!(widget.located(&chapter).starts_with("src/ch01.md:7: "), "{}", widget.located(&chapter));
        // Drawn but shown nowhere: the file alone.
        let hidden = FigureDrift::Changed("figures/ch01/unshown.svg".into());
        assert_eq!(hidden.located(&chapter), hidden.to_string());
    }

    #[test]
    fn a_figures_folder_of_no_chapter_is_an_orphan() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("book.toml"), "[book]\ntitle = \"T\"\n").unwrap();
        let layout = crate::config::Config::load(dir.path()).unwrap().layout;
        let figures = layout.abs(&layout.figures);
        for (folder, file) in [("ch01", "a.svg"), ("old", "b.svg"), ("calc", "c.widget.json"), ("photos", "d.png")] {
            std::fs::create_dir_all(figures.join(folder)).unwrap();
            std::fs::write(figures.join(folder).join(file), "x").unwrap();
        }
        std::fs::write(figures.join("loose.svg"), "x").unwrap();
        // The author's own pictures (no drawn kind of file) and loose files are not a chapter's.
        let expected = [layout.figures.join("calc"), layout.figures.join("old")];
        assert_eq!(orphans(&layout, &["ch01"]), expected);
        assert_eq!(orphans(&layout, &["ch01", "old", "calc"]), Vec::<PathBuf>::new());
    }
}
