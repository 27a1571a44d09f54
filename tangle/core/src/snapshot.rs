//! `snapshots/`: one insta snapshot per output block, named after its chapter and section,
//! holding the block's accepted text. `accept` keeps them equal to the prose; the book test
//! asserts them with insta (which never writes when `CI=true`). The snapshots of a chapter the
//! book no longer has are [`orphans`], stale like a generated file no chapter generates.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::compare::normalize;
use crate::model::{Cell, Chapter};

/// `ch06__6_1__02`: chapter, section number (or heading slug), and the block's ordinal in
/// that section. Stable under edits to other sections and to prose.
pub fn names(chapter: &Chapter) -> Vec<(&Cell, String)> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for cell in chapter.run_cells().filter(|c| c.output.is_some()) {
        let section = section_key(&cell.section);
        let n = counts.entry(section.clone()).or_default();
        *n += 1;
        out.push((cell, format!("{}__{section}__{n:02}", chapter.name)));
    }
    out
}

fn section_key(heading: &str) -> String {
    let number: String = heading.trim().chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let number = number.trim_end_matches('.');
    if !number.is_empty() {
        return number.replace('.', "_");
    }
    // A heading in another script is transliterated, as a chapter's file name is for its crate
    // (`## Größe` → `grosse`, not `gr_e`; a Chinese heading not `intro`).
    let heading = match heading.is_ascii() {
        true => heading.to_string(),
        false => deunicode::deunicode(heading),
    };
    let slug: String = heading
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect::<String>()
        .split('_')
        .filter(|s| !s.is_empty())
        .take(4)
        .collect::<Vec<_>>()
        .join("_");
    if slug.is_empty() { "intro".into() } else { slug }
}

/// The snapshot file's path for `name`.
pub fn path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.snap"))
}

/// The file insta reads: a metadata header, then the block's text.
/// The header names the chapter only: a line number would change with every prose edit above
/// the block and churn the snapshot for nothing.
pub fn contents(chapter: &Chapter, text: &str) -> String {
    format!("---\nsource: {}\n---\n{}\n", chapter.path.display(), normalize(text))
}

/// The snapshot files a chapter should have, with their contents.
pub fn expected(dir: &Path, chapter: &Chapter) -> Vec<(PathBuf, String)> {
    names(chapter)
        .into_iter()
        .filter_map(|(cell, name)| {
            let block = cell.output.as_ref()?;
            Some((path(dir, &name), contents(chapter, &block.text)))
        })
        .collect()
}

/// A snapshot file that disagrees with the prose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotDrift {
    Missing(PathBuf),
    Differs(PathBuf),
    /// The same output, under the chapter's old path (the file was moved or renamed).
    Moved(PathBuf),
    /// No output block has this name any more (a renamed section, a removed block), or it is
    /// an insta `.snap.new` left behind.
    Orphan(PathBuf),
}

impl SnapshotDrift {
    pub fn path(&self) -> &Path {
        match self {
            SnapshotDrift::Missing(p)
            | SnapshotDrift::Differs(p)
            | SnapshotDrift::Moved(p)
            | SnapshotDrift::Orphan(p) => p,
        }
    }

    pub fn reason(&self) -> &'static str {
        match self {
            SnapshotDrift::Missing(_) => "missing",
            SnapshotDrift::Differs(_) => "differs from its output block",
            SnapshotDrift::Moved(_) => "names the chapter's old path (the output is the same)",
            SnapshotDrift::Orphan(_) => "belongs to no output block",
        }
    }
}

/// The chapter's snapshot files that disagree with its prose. `check` reports them as drift;
/// `accept` removes the difference.
pub fn stale(dir: &Path, chapter: &Chapter) -> Vec<SnapshotDrift> {
    let expected = expected(dir, chapter);
    let mut stale: Vec<SnapshotDrift> = expected
        .iter()
        .filter_map(|(path, contents)| match std::fs::read_to_string(path) {
            Err(_) => Some(SnapshotDrift::Missing(path.clone())),
            // A checkout that turned its `\n` into `\r\n` changed nothing.
            Ok(text) if crate::fsutil::same_text(text.as_bytes(), contents.as_bytes()) => None,
            Ok(text) if text != *contents && without_source(&text) == without_source(contents) => {
                Some(SnapshotDrift::Moved(path.clone()))
            }
            Ok(text) if text != *contents => Some(SnapshotDrift::Differs(path.clone())),
            Ok(_) => None,
        })
        .collect();
    stale.extend(
        ours(dir, chapter).into_iter().filter(|p| !expected.iter().any(|(e, _)| e == p)).map(SnapshotDrift::Orphan),
    );
    stale
}

/// Snapshots (relative to the project root) that tangle wrote for a chapter the book no longer
/// has as a notebook chapter (deleted, renamed, or now a chapter of examples): `NAME__*.snap`
/// whose `source:` is a Markdown file under `src`, NAME among none of `chapters`. Files of any
/// other kind in the folder (an insta snapshot of someone's test) are not tangle's to remove.
pub fn orphans(root: &Path, dir: &Path, src: &Path, chapters: &[&str]) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else { return Vec::new() };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let (chapter, _) = name.split_once("__")?;
            if !name.ends_with(".snap") || chapters.contains(&chapter) {
                return None;
            }
            let text = std::fs::read_to_string(e.path()).ok()?;
            let source = text.lines().nth(1)?.strip_prefix("source: ")?;
            (source.ends_with(".md") && Path::new(source).starts_with(src)).then(|| dir.join(&name))
        })
        .collect();
    out.sort();
    out
}

/// A snapshot's text without its `source:` line (the chapter's path).
fn without_source(text: &str) -> String {
    text.lines().filter(|l| !l.starts_with("source: ")).collect::<Vec<_>>().join("\n")
}

/// Files under `snapshots/` that belong to `chapter` (`chNN__*.snap` and `chNN__*.snap.new`).
fn ours(dir: &Path, chapter: &Chapter) -> Vec<PathBuf> {
    let prefix = format!("{}__", chapter.name);
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with(&prefix) && (name.ends_with(".snap") || name.ends_with(".snap.new"))
        })
        .collect();
    files.sort();
    files
}

/// Writes the chapter's snapshots (only those that changed) and removes its stale ones.
/// Returns how many files it changed.
pub fn write(dir: &Path, chapter: &Chapter) -> anyhow::Result<usize> {
    let expected = expected(dir, chapter);
    let mut changed = 0;
    for (path, contents) in &expected {
        if crate::fsutil::write_if_changed(path, contents.as_bytes())? {
            changed += 1;
        }
    }
    for path in ours(dir, chapter) {
        if !expected.iter().any(|(e, _)| *e == path) {
            std::fs::remove_file(&path)?;
            changed += 1;
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::section_key;

    #[test]
    fn sections_are_keyed_by_number_else_by_their_words() {
        assert_eq!(section_key("6.3 Tensor parallelism"), "6_3");
        assert_eq!(section_key("A figure, at last!"), "a_figure_at_last");
        assert_eq!(section_key(""), "intro");
        // Other scripts, transliterated, as chapter file names are.
        assert_eq!(section_key("Größe"), "grosse");
        assert_eq!(section_key("第一节"), "di_yi_jie");
    }
}
