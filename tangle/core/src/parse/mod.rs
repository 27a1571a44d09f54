//! Stage 1, **parse**: the chapters under the book's `src` folder → a [`Book`].
//!
//! Which files are chapters: every Markdown file under `src` (any name, any folder; not
//! `SUMMARY.md`) that holds at least one Rust cell or output block. Its crate is named after
//! its file stem ([`crate_name`]): `ch06.md` → `ch06`, `chapter-one.md` → `chapter_one`,
//! `part1/ch03.md` → `ch03`; two files that would share a crate name are an error naming both.
//!
//! Each chapter is read through the shared Markdown front end ([`crate::markdown`]); this stage
//! classifies its fences ([`chapter`]) and reads its `<!-- tangle: ... -->` comments
//! ([`directives`]). Every mistake of every chapter is collected before the stage fails. A page
//! holding the markers of a merge conflict is one: outside a quoted block, or anywhere while git
//! has the file unmerged ([`crate::git::is_unmerged`]). [`summary`] reads the order `SUMMARY.md`
//! gives the pages, which is the reader's, with mdBook's own parser.

mod chapter;
mod directives;
pub mod lint;
pub mod summary;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{CellMode, Layout};
use crate::diagnostic::{Diagnostic, Diagnostics, Location};
use crate::markdown::Document;
use crate::model::Book;

pub(crate) use chapter::parse_chapter_as;
pub use chapter::{parse_chapter, read_chapter};

/// Reads every chapter under the book's `src` folder, in path order, with its cells read as
/// `default` (`book.toml`'s `cells`) unless the chapter says otherwise. The error, if any, is
/// [`Diagnostics`] holding every mistake found.
pub(crate) fn load_book(layout: &Layout, default: CellMode) -> anyhow::Result<Book> {
    let src = layout.abs(&layout.src);
    anyhow::ensure!(
        src.is_dir(),
        "no chapters: {} is not a folder (book.toml's `[book] src` names it)",
        layout.src.display()
    );
    let mut diagnostics = Diagnostics::default();
    let mut chapters = Vec::new();
    let mut documents = BTreeMap::new();
    let mut names: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (rel, bytes) in markdown_files(&layout.src, &src)? {
        let text = match chapter::decode(&rel, bytes) {
            Ok(text) => text,
            Err(found) => {
                diagnostics.extend(found);
                continue;
            }
        };
        // Every page is parsed here, once: the renderer takes these documents.
        let doc = Arc::new(Document::parse(text));
        documents.insert(rel.clone(), doc.clone());
        // Git's conflict markers, on any page: outside a quoted block, or anywhere in a file git
        // still has unmerged (a conflict inside a ```text block is a conflict all the same).
        let conflict = chapter::merge_conflict(&doc, false).or_else(|| {
            chapter::merge_conflict(&doc, true)
                .filter(|_| crate::git::is_unmerged(&layout.root, &layout.root.join(&rel)))
        });
        if let Some(line) = conflict {
            diagnostics.push(chapter::conflict_error(&rel, line));
            continue;
        }
        if doc.fences.is_empty() {
            continue;
        }
        let Some(name) = crate_name(&rel) else {
            diagnostics.push(Diagnostic::error(
                Location::new(&rel, 1),
                "this chapter's file name gives no crate name (its stem has no letter or digit)",
            ));
            continue;
        };
        match read_chapter(&name, &rel, doc, default) {
            Ok(chapter) if chapter.cells.is_empty() => {}
            Ok(mut chapter) => {
                // An examples chapter's name is tangle's own (no chapter imports it): one in a
                // subfolder is named by its path, so that an existing book's `fn.md` and
                // `scope/fn.md` need no renaming (which would change the book's URLs).
                if chapter.mode == CellMode::Examples
                    && let Some(by_path) = rel.strip_prefix(&layout.src).ok().and_then(path_name)
                {
                    chapter.name = by_path;
                }
                let name = chapter.name.clone();
                if chapter.mode == CellMode::Notebook
                    && let Some(why) = reserved(&name)
                {
                    diagnostics.push(
                        Diagnostic::error(
                            Location::new(&rel, 1),
                            format!("this chapter would be crate `{name}`, which {why}"),
                        )
                        .with_help("rename the file: a chapter's crate is named after its file stem"),
                    );
                }
                if let Some(other) = names.insert(name.clone(), rel.clone()) {
                    diagnostics.push(
                        Diagnostic::error(
                            Location::new(&rel, 1),
                            format!("this chapter and {} would both be crate `{name}`", other.display()),
                        )
                        .with_help(
                            "rename one of the files: a chapter's crate is named after its file stem (an examples \
                             chapter in a subfolder, after its path)",
                        ),
                    );
                }
                chapters.push(Arc::new(chapter));
            }
            Err(found) => diagnostics.extend(found),
        }
    }
    if diagnostics.has_errors() {
        return Err(diagnostics.into());
    }
    Ok(Book { chapters, documents })
}

/// The Markdown files under `src` (absolute), `SUMMARY.md` aside, in path order, each named as
/// `src_rel` (the same folder relative to the project root) joined with its path inside.
/// Hidden files and folders are an editor's or a tool's, never chapters (Emacs marks a file
/// being edited with a link `.#ch02.md` that points nowhere), and so is a link that points
/// nowhere: both are passed over. (mdBook reads only what `SUMMARY.md` lists; a chapter it
/// lists that cannot be read is reported by the book's validation.)
fn markdown_files(src_rel: &Path, src: &Path) -> anyhow::Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut out = Vec::new();
    let walk = walkdir::WalkDir::new(src).follow_links(true).sort_by_file_name().into_iter();
    let walk = walk.filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    for entry in walk {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) if e.path().is_some_and(|p| p.is_symlink() && !p.exists()) => continue,
            Err(e) => {
                let at = e.path().map(|p| p.display().to_string()).unwrap_or_else(|| src.display().to_string());
                let why = e.io_error().map_or_else(|| e.to_string(), ToString::to_string);
                anyhow::bail!("cannot read the chapters' folder at {at}: {why}");
            }
        };
        let path = entry.path();
        if !entry.file_type().is_file() || path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        if path.strip_prefix(src).is_ok_and(|p| p == Path::new("SUMMARY.md")) {
            continue;
        }
        let bytes = std::fs::read(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        out.push((src_rel.join(path.strip_prefix(src).unwrap_or(path)), bytes));
    }
    Ok(out)
}

/// The crate a chapter file becomes: its stem in lower case, every character other than an
/// ASCII letter, digit or `_` replaced by `_`, and `ch` put in front of a stem that starts
/// with a digit (`1-intro.md` → `ch1_intro`). A stem in another script is transliterated
/// first (`über.md` → `uber`, `第一章.md` → `di_yi_zhang`): a crate name is ASCII, and
/// mdBook's own books are written in every script. `None` when nothing usable is left.
pub fn crate_name(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    // Transliteration ends a syllable of a script without letters (Chinese, Japanese) with a
    // space; the last one would leave a trailing `_`.
    let stem = match stem.is_ascii() {
        true => std::borrow::Cow::Borrowed(stem),
        false => std::borrow::Cow::Owned(deunicode::deunicode(stem).trim_end().to_string()),
    };
    let mut name: String =
        stem.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    if name.trim_matches('_').is_empty() {
        return None;
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert_str(0, "ch");
    }
    Some(name)
}

/// Why a notebook chapter may not be crate `name`, if it may not: a crate every chapter
/// links (the standard library's, the runtime's), or a keyword, which no crate can be named.
fn reserved(name: &str) -> Option<&'static str> {
    const LINKED: [&str; 6] = ["std", "core", "alloc", "proc_macro", "test", "tangle_runtime"];
    const KEYWORDS: [&str; 51] = [
        "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for", "if", "impl",
        "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "static", "struct",
        "super", "trait", "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn", "abstract",
        "become", "box", "do", "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
        "gen",
    ];
    if LINKED.contains(&name) {
        Some("every chapter links already (its code would stand in for that crate's)")
    } else if KEYWORDS.contains(&name) {
        Some("is a Rust keyword, and no crate can be named so")
    } else {
        None
    }
}

/// The name of an examples chapter at `inside` (its path under the source folder) when that
/// lies in a subfolder: the folders and the stem, joined by `_`, as [`crate_name`] writes
/// names (`scope/lifetime/fn.md` → `scope_lifetime_fn`). `None` at the top of the folder,
/// where the stem alone names it.
fn path_name(inside: &Path) -> Option<String> {
    let parent = inside.parent().filter(|p| !p.as_os_str().is_empty())?;
    let joined: Vec<String> = parent
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .chain(inside.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    crate_name(Path::new(&format!("{}.md", joined.join("_"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crate_names_follow_the_file_stem() {
        let name = |p: &str| crate_name(Path::new(p));
        assert_eq!(name("book/src/ch06.md").as_deref(), Some("ch06"));
        assert_eq!(name("book/src/ch1.md").as_deref(), Some("ch1"));
        assert_eq!(name("book/src/chapter-one.md").as_deref(), Some("chapter_one"));
        assert_eq!(name("book/src/part1/ch03.md").as_deref(), Some("ch03"));
        assert_eq!(name("book/src/1 Intro.md").as_deref(), Some("ch1_intro"));
        assert_eq!(name("book/src/---.md"), None);
        // Other scripts, transliterated; what ASCII names became before is unchanged.
        assert_eq!(name("src/über-alles.md").as_deref(), Some("uber_alles"));
        assert_eq!(name("src/第一章.md").as_deref(), Some("di_yi_zhang"));
        assert_eq!(name("src/2 Ελληνικά.md").as_deref(), Some("ch2_ellenika"));
        assert_eq!(name("src/ch01_.md").as_deref(), Some("ch01_"));
    }

    #[test]
    fn a_chapter_cannot_be_a_crate_every_chapter_links_or_a_keyword() {
        assert!(reserved("std").is_some() && reserved("tangle_runtime").is_some());
        assert!(reserved("fn").is_some() && reserved("async").is_some());
        assert!(reserved("ch01").is_none() && reserved("stats").is_none());
    }

    #[test]
    fn examples_chapters_in_subfolders_are_named_by_their_path() {
        let name = |p: &str| path_name(Path::new(p));
        assert_eq!(name("fn.md"), None, "at the top, the stem names it");
        assert_eq!(name("scope/lifetime/fn.md").as_deref(), Some("scope_lifetime_fn"));
        assert_eq!(name("flow-control/1 loop.md").as_deref(), Some("flow_control_1_loop"));
    }
}
