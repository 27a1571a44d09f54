//! Where generated lines came from. Each cell is copied verbatim, so a generated line maps to
//! its chapter line by the constant offset of the cell's segment, and a column by the
//! indentation the generator added (none in a multi-line literal) and the container prefix the
//! chapter had. Inner attributes hoisted to the top of a file are recorded apart, each line
//! with the chapter line it came from (`untangle` maps edits of them back). A line an example
//! took from another file (`{{#include}}`) is recorded apart too, with its file and line there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Where generated lines came from: per generated file, one segment per cell.
#[derive(Debug, Default, Clone)]
pub struct LineMap {
    files: BTreeMap<PathBuf, Vec<Segment>>,
    /// Per generated file, `(generated line, chapter line)` of each hoisted inner attribute line.
    hoisted: BTreeMap<PathBuf, Vec<(usize, usize)>>,
    /// Per generated file, the lines included from another file: generated line → where it is.
    included: BTreeMap<PathBuf, BTreeMap<usize, Included>>,
}

/// Where a line included from another file (`{{#include FILE}}` in an example) stands there.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Included {
    /// The file, relative to the project root (absolute if it lies outside it).
    pub file: PathBuf,
    /// Its one-based line there.
    pub line: usize,
    /// Columns added in front of it: 2 for a line `rustdoc_include` hides (`# `).
    pub shift: usize,
}

/// A run of generated lines copied from consecutive chapter lines.
#[derive(Debug, Clone)]
pub struct Segment {
    /// First generated line (one-based).
    pub generated: usize,
    /// The chapter line it came from.
    pub chapter: usize,
    pub len: usize,
    /// Columns added in front of each line (4 inside `main`).
    pub indent: usize,
    /// Columns of container prefix (`> `, list indentation) in front of the cell in the chapter.
    pub prefix: usize,
    /// Generated lines written without the indent (multi-line literals).
    pub unindented: BTreeSet<usize>,
}

/// `path` with each `dir/..` removed, as written, without looking at the file system. A run
/// program's source is named from its package, `code/ch06/run/../src/main.rs`, in rustc's
/// messages, panics and `Location`s.
pub(crate) fn lexically_normal(path: &Path) -> PathBuf {
    crate::config::normalize(path)
}

impl LineMap {
    /// The chapter line and one-based column of a one-based position in a generated file.
    pub(crate) fn chapter_position(&self, file: &Path, line: usize, column: usize) -> Option<(usize, usize)> {
        let s = self.segment(file, line)?;
        let indent = if s.unindented.contains(&line) { 0 } else { s.indent };
        Some((s.chapter + (line - s.generated), column.saturating_sub(indent).max(1) + s.prefix))
    }

    fn segment(&self, file: &Path, line: usize) -> Option<&Segment> {
        let segments = match self.files.get(file) {
            Some(segments) => segments,
            None => self.files.get(&lexically_normal(file))?,
        };
        segments.iter().find(|s| line >= s.generated && line < s.generated + s.len)
    }

    pub fn add(&mut self, file: &Path, segment: Segment) {
        self.files.entry(file.to_path_buf()).or_default().push(segment);
    }

    /// Records that generated line `generated` of `file` is the inner attribute line that
    /// stands at `chapter` in the chapter (hoisted to the top of the file).
    pub(crate) fn add_hoisted(&mut self, file: &Path, generated: usize, chapter: usize) {
        self.hoisted.entry(file.to_path_buf()).or_default().push((generated, chapter));
    }

    /// Records that generated line `generated` of `file` was included from `from`.
    pub(crate) fn add_included(&mut self, file: &Path, generated: usize, from: Included) {
        self.included.entry(file.to_path_buf()).or_default().insert(generated, from);
    }

    /// The file, line and one-based column that a position in a generated file was included
    /// from, if it was.
    pub(crate) fn included_position(&self, file: &Path, line: usize, column: usize) -> Option<(&Path, usize, usize)> {
        let lines = match self.included.get(file) {
            Some(lines) => lines,
            None => self.included.get(&lexically_normal(file))?,
        };
        let from = lines.get(&line)?;
        Some((from.file.as_path(), from.line, column.saturating_sub(from.shift).max(1)))
    }

    /// The segments of `file` (one per cell), in file order.
    pub fn segments(&self, file: &Path) -> &[Segment] {
        self.files.get(file).map_or(&[], Vec::as_slice)
    }

    /// The hoisted inner attribute lines of `file`: `(generated line, chapter line)`.
    pub(crate) fn hoisted(&self, file: &Path) -> &[(usize, usize)] {
        self.hoisted.get(file).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_through_the_run_package_maps_like_the_file_itself() {
        let mut map = LineMap::default();
        let segment = Segment { generated: 3, chapter: 40, len: 2, indent: 4, prefix: 0, unindented: BTreeSet::new() };
        map.add(Path::new("code/ch06/src/main.rs"), segment);
        assert_eq!(map.chapter_position(Path::new("code/ch06/run/../src/main.rs"), 4, 9), Some((41, 5)));
        assert_eq!(map.chapter_position(Path::new("code/ch06/src/main.rs"), 3, 5), Some((40, 1)));
        assert_eq!(lexically_normal(Path::new("a/./b/../../c")), Path::new("c"));
        assert_eq!(lexically_normal(Path::new("../a")), Path::new("../a"));
    }
}
