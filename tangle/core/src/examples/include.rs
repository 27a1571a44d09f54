//! `{{#include FILE}}` and `{{#rustdoc_include FILE}}` lines inside an example, expanded as
//! mdBook expands them before `mdbook test` sees the chapter: `FILE` relative to the chapter's
//! folder, optionally `FILE:ANCHOR` (the lines between `ANCHOR: name` and `ANCHOR_END: name`),
//! `FILE:N` (line N), `FILE:N:M`, `FILE:N:` or `FILE::M` (1-based, inclusive). `rustdoc_include`
//! keeps the whole file and hides (`# `) the lines outside the selection, so that the example
//! still compiles. Lines that hold an anchor marker are dropped, as mdBook drops them.
//!
//! Each line of the result keeps the example line it came from (an included line: its
//! directive's), and an included line also its file and line there ([`Included`]), so that an
//! error in it is reported in that file, where the author fixes it. Only files inside the folders
//! the book may read from ([`Allowed`]) are read; the validation pass says the same of the page.

use std::path::{Path, PathBuf};

use regex::Regex;

use crate::config::Layout;
pub use crate::generate::Included;

/// The folders an include may read from ([`Layout::readable_dirs`], as the renderer's
/// validation allows them). A file elsewhere is never read, built or run.
#[derive(Debug, Clone, Default)]
pub struct Allowed {
    dirs: Vec<(String, PathBuf)>,
    /// The project root, which included files are named from.
    root: PathBuf,
}

/// One line of an expanded example.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    /// The zero-based example line it came from (an included line: its directive's).
    pub example_line: usize,
    /// Where an included line stands in its file.
    pub included: Option<Included>,
}

impl Allowed {
    pub fn of(layout: &Layout) -> Allowed {
        Allowed { dirs: layout.readable_dirs(), root: layout.root.clone() }
    }

    /// `path` (absolute) as diagnostics name it: from the project root when it lies inside.
    fn shown_path(&self, path: &Path) -> PathBuf {
        let path = crate::config::normalize(path);
        path.strip_prefix(&self.root).map_or(path.clone(), Path::to_path_buf)
    }

    fn admits(&self, file: &Path) -> bool {
        let file = crate::fsutil::resolved(file);
        self.dirs.iter().any(|(_, dir)| file.starts_with(dir))
    }

    fn shown(&self) -> String {
        self.dirs.iter().map(|(shown, _)| format!("`{shown}`")).collect::<Vec<_>>().join(", ")
    }
}

/// The example's lines, or why a directive cannot be expanded (and on which zero-based
/// example line).
pub fn expand(code: &str, chapter_dir: &Path, allowed: &Allowed) -> Result<Vec<Line>, (usize, String)> {
    let directive = Regex::new(r"^\s*\{\{#(include|rustdoc_include)\s+([^}\s]+)\s*\}\}\s*$").expect("valid");
    let mut out = Vec::new();
    for (i, line) in code.lines().enumerate() {
        let Some(m) = directive.captures(line) else {
            out.push(Line { text: line.to_string(), example_line: i, included: None });
            continue;
        };
        let hide_rest = &m[1] == "rustdoc_include";
        let lines = included(&m[2], chapter_dir, hide_rest, allowed).map_err(|why| (i, why))?;
        out.extend(lines.into_iter().map(|(text, included)| Line { text, example_line: i, included: Some(included) }));
    }
    Ok(out)
}

/// The lines `spec` (`FILE`, `FILE:ANCHOR`, `FILE:N:M`, ...) selects, each with where it is.
fn included(
    spec: &str,
    chapter_dir: &Path,
    hide_rest: bool,
    allowed: &Allowed,
) -> Result<Vec<(String, Included)>, String> {
    let (file, selector) = match spec.split_once(':') {
        Some((file, selector)) => (file, Some(selector)),
        None => (spec, None),
    };
    let path = chapter_dir.join(file);
    if !allowed.admits(&path) {
        return Err(format!(
            "{file} is outside the folders the book may read from ({}): it is not read (list its folder in \
             `include-dirs` under [preprocessor.tangle] in book.toml to allow it)",
            allowed.shown()
        ));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "the example includes {}, which does not exist (the path is relative to the folder of the file \
             that holds the directive)",
            allowed.shown_path(&path).display()
        ),
        _ => format!("cannot include {file}: {e}"),
    })?;
    let lines: Vec<&str> = text.lines().collect();
    let is_marker = |l: &str| l.contains("ANCHOR:") || l.contains("ANCHOR_END:");
    let selected: Vec<bool> = match selector {
        None | Some("") => vec![true; lines.len()],
        Some(sel) if sel.split(':').all(|p| p.is_empty() || p.parse::<usize>().is_ok()) => {
            let mut parts = sel.splitn(2, ':');
            let start = parts.next().and_then(|p| p.parse::<usize>().ok()).unwrap_or(1).max(1);
            let end = match parts.next() {
                None => start,
                Some("") => usize::MAX,
                Some(p) => p.parse::<usize>().unwrap_or(usize::MAX),
            };
            (1..=lines.len()).map(|n| n >= start && n <= end).collect()
        }
        Some(anchor) => {
            let begin = Regex::new(&format!(r"ANCHOR:\s*{}\b", regex::escape(anchor))).expect("valid");
            let end = Regex::new(&format!(r"ANCHOR_END:\s*{}\b", regex::escape(anchor))).expect("valid");
            let mut inside = false;
            let mut found = false;
            let selected = lines
                .iter()
                .map(|l| {
                    if begin.is_match(l) {
                        inside = true;
                        found = true;
                    } else if end.is_match(l) {
                        inside = false;
                    }
                    inside
                })
                .collect();
            if !found {
                return Err(format!(
                    "{file} has no anchor `{anchor}` (`// ANCHOR: {anchor}` … `// ANCHOR_END: {anchor}`)"
                ));
            }
            selected
        }
    };
    let shown = allowed.shown_path(&path);
    let at = |n: usize, shift: usize| Included { file: shown.clone(), line: n + 1, shift };
    Ok(lines
        .iter()
        .zip(selected)
        .enumerate()
        .filter(|(_, (l, _))| !is_marker(l))
        .filter_map(|(n, (l, keep))| match (keep, hide_rest) {
            (true, _) => Some((l.to_string(), at(n, 0))),
            (false, true) => Some((format!("# {l}"), at(n, 2))),
            (false, false) => None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_follow_mdbooks_selectors() {
        let dir = tempfile::tempdir().unwrap();
        let file = "fn helper() -> u8 { 1 }\n// ANCHOR: body\nlet x = helper();\n// ANCHOR_END: body\nfn main() {}\n";
        std::fs::write(dir.path().join("a.rs"), file).unwrap();
        let root = crate::fsutil::resolved(dir.path());
        let here = Allowed { dirs: vec![(".".into(), root.clone())], root: root.clone() };
        let code = "let y = 2;\n{{#include a.rs:body}}\n";
        let lines = expand(code, &root, &here).unwrap();
        let found: Vec<(&str, usize)> = lines.iter().map(|l| (l.text.as_str(), l.example_line)).collect();
        assert_eq!(found, [("let y = 2;", 0), ("let x = helper();", 1)]);
        assert_eq!(lines[0].included, None);
        let third = Included { file: "a.rs".into(), line: 3, shift: 0 };
        assert_eq!(lines[1].included, Some(third), "an included line knows its file and line");
        let lines = expand("{{#rustdoc_include a.rs:body}}\n", &root, &here).unwrap();
        let text: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(text, ["# fn helper() -> u8 { 1 }", "let x = helper();", "# fn main() {}"]);
        let at: Vec<(usize, usize)> =
            lines.iter().filter_map(|l| l.included.as_ref()).map(|i| (i.line, i.shift)).collect();
        assert_eq!(at, [(1, 2), (3, 0), (5, 2)], "hidden lines are two columns to the right of their file's");
        let lines = expand("{{#include a.rs:1:1}}\n", dir.path(), &here).unwrap();
        assert_eq!(lines.len(), 1);
        assert_eq!(expand("{{#include a.rs::3}}\n", dir.path(), &here).unwrap().len(), 2, "anchor lines are dropped");
        assert_eq!(expand("{{#include a.rs}}\n", dir.path(), &here).unwrap().len(), 3);
        let err = expand("x\n{{#include missing.rs}}\n", dir.path(), &here).unwrap_err();
        assert_eq!(err.0, 1);
        assert!(expand("{{#include a.rs:nope}}\n", dir.path(), &here).unwrap_err().1.contains("no anchor `nope`"));
    }

    #[test]
    fn a_file_outside_the_allowed_folders_is_never_read() {
        let root = tempfile::tempdir().unwrap();
        let (book, outside) = (root.path().join("book"), root.path().join("outside"));
        std::fs::create_dir_all(book.join("src")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("a.rs"), "println!(\"outside\");\n").unwrap();
        std::fs::write(book.join("src/b.rs"), "println!(\"inside\");\n").unwrap();
        let allowed = Allowed { dirs: vec![("book".into(), crate::fsutil::resolved(&book))], root: root.path().into() };
        let src = book.join("src");
        assert!(expand("{{#include b.rs}}\n", &src, &allowed).is_ok());
        let err = expand("{{#include ../../outside/a.rs}}\n", &src, &allowed).unwrap_err();
        assert!(err.1.contains("outside the folders the book may read from"), "{}", err.1);
        // Nor through a link that leads out.
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outside.join("a.rs"), src.join("link.rs")).unwrap();
            assert!(expand("{{#include link.rs}}\n", &src, &allowed).is_err());
        }
    }
}
