//! The generated tree as data: one [`ChapterCrate`] per chapter, the [`Generated`] whole with
//! the chapter workspace's manifest, and the header every generated file starts with.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::line_map::LineMap;
use crate::diagnostic::Location;
use crate::model::Chapter;

/// Everything `sync` writes for one chapter.
#[derive(Debug)]
pub struct ChapterCrate {
    /// The chapter it is generated from.
    pub chapter: Arc<Chapter>,
    /// The crate's folder, relative to the project root (`code/ch06`).
    pub dir: PathBuf,
    /// Chapters this one imports, each with where the first reference is.
    pub chapter_deps: BTreeMap<String, Location>,
    /// The chapters of [`ChapterCrate::chapter_deps`] its library (its save cells) imports:
    /// what orders the chapters. Its run and test cells may import a later chapter, which
    /// itself imports this one's library.
    pub lib_chapters: BTreeSet<String>,
    /// `(path relative to the project root, contents)`, in a fixed order.
    pub files: Vec<(PathBuf, String)>,
    pub line_map: LineMap,
}

impl ChapterCrate {
    /// The crate's name, the chapter's (`ch06`).
    pub fn name(&self) -> &str {
        &self.chapter.name
    }

    /// The folder of all the generated crates (`code`), relative to the project root.
    pub(crate) fn code_dir(&self) -> &Path {
        self.dir.parent().unwrap_or(Path::new(""))
    }
}

/// The whole generated tree: the chapters in dependency order (dependencies first) and the
/// workspace manifest that lists them.
#[derive(Debug)]
pub struct Generated {
    /// The folder of the generated crates, relative to the project root (`code`).
    pub code: PathBuf,
    pub crates: Vec<ChapterCrate>,
    /// `code/Cargo.toml`.
    pub workspace: (PathBuf, String),
    /// Files that come from the tool rather than a chapter: the runtime crate every chapter
    /// program links (`code/tangle-runtime/`), cargo's configuration for the folder, and what
    /// the command line adds (the renderer's theme, in the book's theme folder).
    pub support: Vec<(PathBuf, Vec<u8>)>,
}

impl Generated {
    pub fn get(&self, chapter: &str) -> Option<&ChapterCrate> {
        self.crates.iter().find(|c| c.name() == chapter)
    }

    /// `chapter` and every chapter it depends on, transitively, dependencies first.
    pub fn closure(&self, chapter: &str) -> Vec<&ChapterCrate> {
        let mut wanted = BTreeSet::from([chapter.to_string()]);
        let mut todo = vec![chapter.to_string()];
        while let Some(name) = todo.pop() {
            for dep in self.get(&name).into_iter().flat_map(|c| c.chapter_deps.keys()) {
                if wanted.insert(dep.clone()) {
                    todo.push(dep.clone());
                }
            }
        }
        self.crates.iter().filter(|c| wanted.contains(c.name())).collect()
    }

    /// Every generated file and its bytes, the workspace manifest first. A book without a
    /// notebook chapter has no `code/` at all (no workspace, no runtime): only what lies
    /// outside it, the theme.
    pub fn files(&self) -> impl Iterator<Item = (&Path, &[u8])> {
        fn text((p, s): &(PathBuf, String)) -> (&Path, &[u8]) {
            (p.as_path(), s.as_bytes())
        }
        let has_code = !self.crates.is_empty();
        std::iter::once(text(&self.workspace))
            .filter(move |_| has_code)
            .chain(
                self.support
                    .iter()
                    .filter(move |(p, _)| has_code || !p.starts_with(&self.code))
                    .map(|(p, b)| (p.as_path(), b.as_slice())),
            )
            .chain(self.crates.iter().flat_map(|c| c.files.iter().map(text)))
    }

    /// The chapter line (and column) that a position in a generated file came from.
    pub(crate) fn chapter_position(
        &self,
        file: &Path,
        line: usize,
        column: usize,
    ) -> Option<(&Arc<Chapter>, usize, usize)> {
        let chapter = file.strip_prefix(&self.code).ok()?.components().next()?.as_os_str().to_str()?;
        let krate = self.get(chapter)?;
        let (l, c) = krate.line_map.chapter_position(file, line, column)?;
        Some((&krate.chapter, l, c))
    }

    /// The file, line and column that a position in a generated file was included from
    /// (`{{#include FILE}}` in an example), if it was.
    pub(crate) fn included_position(&self, file: &Path, line: usize, column: usize) -> Option<(&Path, usize, usize)> {
        let chapter = file.strip_prefix(&self.code).ok()?.components().next()?.as_os_str().to_str()?;
        self.get(chapter)?.line_map.included_position(file, line, column)
    }
}

pub const HEADER_NOTE: &str = "Change the chapter and run `tangle sync`.";

/// The second line of a generated source file, whose cells may be edited in place.
pub const SOURCE_NOTE: &str =
    "Change the chapter and run `tangle sync`, or edit the cells here and run `tangle untangle`.";

/// The first line of every generated chapter file (with `//` or `#` before it).
pub(crate) fn header_line(chapter: &Chapter) -> String {
    format!("@generated by tangle from {}: do not edit.", chapter.path.display())
}

/// The chapter a generated file's [`header_line`] names (`book/src/ch01.md`), if its first
/// line is one; the workspace manifest's names `book.toml and the chapters`.
pub(crate) fn header_source(text: &str) -> Option<PathBuf> {
    let first = text.lines().next()?;
    let rest = first.trim_start_matches(['/', '#', ' ']).strip_prefix("@generated by tangle from ")?;
    Some(PathBuf::from(rest.split_once(": do not edit")?.0))
}

/// Whether a generated line only records where code came from (`// book/src/ch06.md:42`).
/// The cache ignores these lines, so that prose edits that move cells rebuild nothing.
pub(crate) fn is_location_comment(line: &str) -> bool {
    line.trim_start().strip_prefix("// ").is_some_and(|rest| {
        rest.rsplit_once(".md:").is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}
