//! File writes that never leave a half-written file behind: a temp file in the same
//! directory, then a rename over the target. Temp files are named `.tangle-tmp-*`, so that one
//! left by a killed run is recognised and swept by the next ([`sweep_temp_files`]), and git
//! ignores them (`.gitignore`).

use std::io::Write;
use std::path::Path;

use anyhow::Context;

/// Writes `contents` to `path` atomically, creating parent directories.
pub fn write_atomic(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = temp_file(dir)?;
    tmp.write_all(contents)?;
    // A temp file is private (0600); the file it replaces keeps its mode, a new one gets the
    // usual 0644 so that git and other users see an ordinary file.
    let permissions = match std::fs::metadata(path) {
        Ok(old) => old.permissions(),
        Err(_) => default_permissions(),
    };
    tmp.as_file().set_permissions(permissions)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(())
}

/// Writes only when the contents differ, so unchanged files keep their mtime.
/// Returns whether it wrote.
pub(crate) fn write_if_changed(path: &Path, contents: &[u8]) -> anyhow::Result<bool> {
    if std::fs::read(path).is_ok_and(|old| old == contents) {
        return Ok(false);
    }
    write_atomic(path, contents)?;
    Ok(true)
}

#[cfg(unix)]
fn default_permissions() -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    std::fs::Permissions::from_mode(0o644)
}

#[cfg(not(unix))]
fn default_permissions() -> std::fs::Permissions {
    tempfile::tempfile().and_then(|f| f.metadata()).map(|m| m.permissions()).expect("a temp file")
}

/// Replaces `path` (whose contents were `expected` when we read it) by `contents`, unless
/// someone changed it meanwhile: the new text is written to a temporary file first, the file
/// is read again, and only if it still holds `expected` does the rename happen. Otherwise the
/// new text is kept beside it as `NAME.tangle-new` and the error says so; nothing is lost.
pub fn replace_if_unchanged(path: &Path, expected: &[u8], contents: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = temp_file(dir)?;
    tmp.write_all(contents)?;
    let permissions = std::fs::metadata(path).map(|m| m.permissions()).unwrap_or_else(|_| default_permissions());
    tmp.as_file().set_permissions(permissions)?;
    tmp.as_file().sync_all()?;
    let now = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if now != expected {
        let mut aside = path.as_os_str().to_owned();
        aside.push(".tangle-new");
        let aside = std::path::PathBuf::from(aside);
        tmp.persist(&aside).with_context(|| format!("cannot write {}", aside.display()))?;
        anyhow::bail!(
            "{} changed while tangle was running, so it was left as it is; what tangle would have written is in {} \
             (run the command again)",
            path.display(),
            aside.display()
        );
    }
    tmp.persist(path).with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(())
}

/// The prefix of every temporary file tangle writes next to a file it replaces.
pub const TEMP_PREFIX: &str = ".tangle-tmp-";

fn temp_file(dir: &Path) -> anyhow::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))
}

/// Removes temporary files that a killed run left in `dir`. Call it holding the repository
/// lock: then no live run owns one. Returns how many it removed.
pub(crate) fn sweep_temp_files(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(TEMP_PREFIX))
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_meanwhile_is_left_alone_and_the_new_text_kept_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ch01.md");
        std::fs::write(&path, "edited by the author\n").unwrap();
        let err = replace_if_unchanged(&path, b"what tangle read\n", b"what tangle wrote\n").unwrap_err();
        assert!(err.to_string().contains("changed while tangle was running"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "edited by the author\n");
        assert_eq!(std::fs::read_to_string(dir.path().join("ch01.md.tangle-new")).unwrap(), "what tangle wrote\n");
        replace_if_unchanged(&path, b"edited by the author\n", b"accepted\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "accepted\n");
    }

    #[test]
    fn temp_files_of_killed_runs_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".tangle-tmp-abc123"), "half").unwrap();
        std::fs::write(dir.path().join("keep.snap"), "x").unwrap();
        assert_eq!(sweep_temp_files(dir.path()), 1);
        assert!(dir.path().join("keep.snap").exists());
    }
}
