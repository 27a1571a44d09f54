//! What git knows that a file does not say: during a merge or rebase that stopped on a conflict,
//! the index holds the two sides of each conflicted file (stages 2 and 3, ours and theirs).
//! tangle asks only when a file holds conflict markers, and reads no answer as "nothing known":
//! a book need not be in git, nor git be installed.

use std::ffi::OsStr;
use std::path::Path;

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

/// Whether git has `path` unmerged: a merge or rebase stopped on a conflict in it.
pub(crate) fn is_unmerged(root: &Path, path: &Path) -> bool {
    git(root, &["ls-files".as_ref(), "-u".as_ref(), "--".as_ref(), path.as_os_str()]).is_some_and(|out| !out.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_merge_git_knows_no_sides() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "<<<<<<< a\n=======\n>>>>>>> b\n").unwrap();
        // Not a repository (or no git at all): nothing known.
        assert!(conflict_sides(dir.path(), Path::new("a.rs")).is_empty());
        assert!(!is_unmerged(dir.path(), Path::new("a.rs")));
    }
}
