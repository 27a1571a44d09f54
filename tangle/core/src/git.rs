//! What git leaves in a file a merge stopped on, and what it knows besides. In the file, its
//! conflicts ([`conflicts`]): `<<<<<<<`, this side's lines, diff3's `|||||||` and the base's,
//! `=======`, the other side's, `>>>>>>>`, each marker at the start of a line; every reader of
//! conflicts in tangle (generated files, `code/Cargo.lock`, chapters) reads them here. In the
//! index, during a merge or rebase that stopped on a conflict, the two sides of each conflicted
//! file (stages 2 and 3, ours and theirs). tangle asks git only when a file holds conflict
//! markers, or where a new book goes ([`work_tree`]), and reads no answer as "nothing known": a
//! book need not be in git, nor git be installed.

use std::ffi::OsStr;
use std::ops::Range;
use std::path::Path;

/// One conflict git left in a text, in byte offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Conflict {
    /// Where the `<<<<<<<`, `=======` and `>>>>>>>` lines start.
    pub markers: [usize; 3],
    /// This side's lines, and the other side's (diff3's base section belongs to neither).
    pub ours: Range<usize>,
    pub theirs: Range<usize>,
    /// From the start of the `<<<<<<<` line to the end of the `>>>>>>>` line.
    pub whole: Range<usize>,
}

/// The conflicts git left in `text`, in order: each a `<<<<<<<` line, then a `=======` line,
/// then a `>>>>>>>` line (a diff3 `|||||||` section before the `=======` is passed over). A
/// `<<<<<<<` before the last one closed starts over; markers out of that order are no conflict.
pub(crate) fn conflicts(text: &str) -> Vec<Conflict> {
    let marker =
        |line: &str, m: &str| line.strip_prefix(m).is_some_and(|rest| rest.is_empty() || rest.starts_with(' '));
    let mut out = Vec::new();
    // The open conflict: its `<<<<<<<` line, where its side starts and ends, its `=======` line.
    let mut open: Option<(usize, usize, Option<usize>, Option<usize>)> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let (at, next) = (offset, offset + line.len());
        offset = next;
        let bare = line.trim_end_matches(['\n', '\r']);
        match open {
            _ if marker(bare, "<<<<<<<") => open = Some((at, next, None, None)),
            Some((start, ours, None, None)) if marker(bare, "|||||||") => open = Some((start, ours, Some(at), None)),
            Some((start, ours, ours_end, None)) if bare == "=======" => {
                open = Some((start, ours, Some(ours_end.unwrap_or(at)), Some(at)));
            }
            Some((start, ours, Some(ours_end), Some(middle))) if marker(bare, ">>>>>>>") => {
                let theirs = middle + text[middle..].find('\n').map_or(text.len() - middle, |n| n + 1);
                out.push(Conflict {
                    markers: [start, middle, at],
                    ours: ours..ours_end,
                    theirs: theirs..at,
                    whole: start..next,
                });
                open = None;
            }
            _ => {}
        }
    }
    out
}

/// `git -C root ARGS`'s output, if git ran and succeeded.
fn git(root: &Path, args: &[&OsStr]) -> Option<Vec<u8>> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// The two sides git keeps of `path` (relative to `root`, or absolute) while a merge has it in
/// conflict: ours and theirs. None when no merge is under way, the conflict is marked resolved
/// (`git add`), or git cannot be asked.
pub(crate) fn conflict_sides(root: &Path, path: &Path) -> Vec<Vec<u8>> {
    let listed = git(root, &["ls-files".as_ref(), "-u".as_ref(), "-z".as_ref(), "--".as_ref(), path.as_os_str()]);
    let listed = String::from_utf8_lossy(listed.as_deref().unwrap_or_default()).into_owned();
    listed
        .split('\0')
        .filter_map(|entry| {
            // `MODE OBJECT STAGE\tPATH`
            let mut fields = entry.split('\t').next()?.split(' ');
            let (object, stage) = (fields.nth(1)?, fields.next()?);
            matches!(stage, "2" | "3").then(|| git(root, &["cat-file".as_ref(), "blob".as_ref(), object.as_ref()]))?
        })
        .collect()
}

/// The top folder of the git work tree holding `dir`, if `dir` is in one.
pub fn work_tree(dir: &Path) -> Option<std::path::PathBuf> {
    let out = git(dir, &["rev-parse".as_ref(), "--show-toplevel".as_ref()])?;
    let top = String::from_utf8(out).ok()?;
    Some(top.trim_end_matches(['\n', '\r']).into())
}

/// Whether git has `path` unmerged: a merge or rebase stopped on a conflict in it.
pub(crate) fn is_unmerged(root: &Path, path: &Path) -> bool {
    git(root, &["ls-files".as_ref(), "-u".as_ref(), "--".as_ref(), path.as_os_str()]).is_some_and(|out| !out.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_work_tree_is_found_from_any_folder_in_it_and_none_outside() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join("a/b")).unwrap();
        assert_eq!(work_tree(&repo), None, "not a repository yet");
        if git(&repo, &["init".as_ref(), "-q".as_ref()]).is_none() {
            eprintln!("git is not installed: skipped");
            return;
        }
        let top = work_tree(&repo.join("a/b")).expect("inside the repository");
        assert_eq!(top.canonicalize().unwrap(), repo.canonicalize().unwrap());
    }

    #[test]
    fn conflicts_are_read_with_both_sides_and_diff3_s_base_passed_over() {
        let text = "a\n<<<<<<< HEAD\nours\n||||||| base\nold\n=======\ntheirs\n>>>>>>> b\nz\n";
        let found = conflicts(text);
        assert_eq!(found.len(), 1);
        let c = &found[0];
        assert_eq!((&text[c.ours.clone()], &text[c.theirs.clone()]), ("ours\n", "theirs\n"));
        assert_eq!(&text[c.whole.clone()], "<<<<<<< HEAD\nours\n||||||| base\nold\n=======\ntheirs\n>>>>>>> b\n");
        assert_eq!(c.markers.map(|m| &text[m..m + 3]), ["<<<", "===", ">>>"]);
        let plain = "<<<<<<< HEAD\r\na\r\n=======\r\nb\r\n>>>>>>> theirs\r\n";
        assert_eq!(conflicts(plain).len(), 1, "CRLF");
        // Not conflicts: markers out of order, a heading's underline, a marker not at a line's start.
        assert!(conflicts("=======\n<<<<<<< a\n>>>>>>> b\n").is_empty());
        assert!(conflicts("Title\n=======\n").is_empty());
        assert!(conflicts("x <<<<<<< a\n=======\n>>>>>>> b\n").is_empty());
        assert!(conflicts("<<<<<<<< a\n=======\n>>>>>>> b\n").is_empty(), "eight `<` are not git's");
    }

    #[test]
    fn outside_a_merge_git_knows_no_sides() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "<<<<<<< a\n=======\n>>>>>>> b\n").unwrap();
        // Not a repository (or no git at all): nothing known.
        assert!(conflict_sides(dir.path(), Path::new("a.rs")).is_empty());
        assert!(!is_unmerged(dir.path(), Path::new("a.rs")));
    }
}
