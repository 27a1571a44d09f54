//! File writes that never leave a half-written file behind: a temp file in the same
//! directory, then a rename over the target. Temp files are named `.tangle-tmp-*`, so that one
//! left by a killed run is recognised and swept by the next ([`sweep_temp_files`]), and git
//! ignores them (`.gitignore`). A symbolic link is written through: the file it points to is
//! replaced and the link stays.

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use anyhow::Context;

/// Writes `contents` to `path` atomically, creating parent directories.
pub fn write_atomic(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    let path = &link_target(path);
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
/// Returns whether it wrote. A committed file tangle generates (a snapshot, a figure, a frozen
/// record) is compared as text ([`same_text`]) and rewritten in the line endings it has
/// ([`in_endings_of`]): a checkout that turned its `\n` into `\r\n` is no change.
pub(crate) fn write_if_changed(path: &Path, contents: &[u8]) -> anyhow::Result<bool> {
    let old = std::fs::read(path).ok();
    if old.as_deref().is_some_and(|old| same_text(old, contents)) {
        return Ok(false);
    }
    write_atomic(path, &in_endings_of(old.as_deref().unwrap_or_default(), contents))?;
    Ok(true)
}

/// Text as tangle reads what it wrote: `\r\n` read as `\n`, since a checkout may have converted
/// the line endings (git's `core.autocrlf`, on Windows by default); bytes that are not UTF-8
/// text as they are.
pub fn lf(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    match std::str::from_utf8(bytes) {
        Ok(text) if text.contains("\r\n") => text.replace("\r\n", "\n").into_bytes().into(),
        _ => bytes.into(),
    }
}

/// Whether two files hold the same text, line endings aside ([`lf`]).
pub fn same_text(a: &[u8], b: &[u8]) -> bool {
    a == b || lf(a) == lf(b)
}

/// `contents` (lines ending `\n`) ready to replace `old`: with `\r\n` endings where `old` ends
/// every line so (a checkout converted it), so that the rewrite changes what changed and not
/// every line ending; as it is otherwise.
pub fn in_endings_of<'a>(old: &[u8], contents: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
    let crlf_throughout = old.windows(2).any(|w| w == b"\r\n")
        && old.iter().enumerate().all(|(i, b)| *b != b'\n' || (i > 0 && old[i - 1] == b'\r'));
    match std::str::from_utf8(contents) {
        Ok(text) if crlf_throughout && !text.contains("\r\n") => text.replace('\n', "\r\n").into_bytes().into(),
        _ => contents.into(),
    }
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
    let path = &link_target(path);
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = temp_file(dir)?;
    tmp.write_all(contents)?;
    let permissions = std::fs::metadata(path).map(|m| m.permissions()).unwrap_or_else(|_| default_permissions());
    tmp.as_file().set_permissions(permissions)?;
    tmp.as_file().sync_all()?;
    let now = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut aside = path.as_os_str().to_owned();
    aside.push(".tangle-new");
    let aside = PathBuf::from(aside);
    if now != expected {
        tmp.persist(&aside).with_context(|| format!("cannot write {}", aside.display()))?;
        anyhow::bail!(
            "{} changed while tangle was running, so it was left as it is; what tangle would have written is in {} \
             (run the command again)",
            path.display(),
            aside.display()
        );
    }
    tmp.persist(path).with_context(|| format!("cannot replace {}", path.display()))?;
    // What an earlier, refused run would have written is superseded by what this one wrote.
    let _ = std::fs::remove_file(&aside);
    Ok(())
}

/// The file a write to `path` replaces: where a symbolic link points (a chapter linked into
/// the book from elsewhere is updated there, and stays linked), else `path` itself.
fn link_target(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => std::fs::canonicalize(path).unwrap_or_else(|_| {
            // A dangling link: the file it names, created where it names it.
            let link = std::fs::read_link(path).unwrap_or_default();
            path.parent().unwrap_or(Path::new(".")).join(link)
        }),
        _ => path.to_path_buf(),
    }
}

/// `path` with `.` and `..` taken out, and symbolic links followed as far as the path exists
/// (a link inside the book to a file outside it reads outside it).
pub fn resolved(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    // The longest existing ancestor, canonicalized, and the rest as written.
    let mut existing = out.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name().map(|n| n.to_os_string()), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return out,
        }
    }
    let mut full = std::fs::canonicalize(&existing).unwrap_or(existing);
    for name in rest.into_iter().rev() {
        full.push(name);
    }
    full
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

/// A path with `/` between its parts, whatever the platform: how a path is named in what two
/// checkouts on two systems must agree on (a digest, a record).
pub fn slashed(path: &Path) -> String {
    path.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

/// Writes `text` at `path`, making the folders above it: the tests' way of laying out a book.
#[cfg(test)]
pub(crate) fn put(path: &Path, text: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().expect("a file in a folder")).unwrap();
    std::fs::write(path, text).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_compared_and_rewritten_in_the_line_endings_a_checkout_gave_it() {
        assert_eq!(lf(b"a\r\nb\r\n").as_ref(), b"a\nb\n");
        assert_eq!(lf(b"\xff\r\n").as_ref(), b"\xff\r\n", "bytes that are not text stay");
        assert!(same_text(b"a\r\nb\r\n", b"a\nb\n"));
        assert!(!same_text(b"a\r\nb\r\n", b"a\nc\n"));
        assert!(!same_text(b"a\rb", b"a\nb"), "a lone CR is no line ending");
        // Lines that all end CRLF are rewritten so; any other file gets the text as it is.
        assert_eq!(in_endings_of(b"old\r\nlines\r\n", b"new\ntext\n").as_ref(), b"new\r\ntext\r\n");
        assert_eq!(in_endings_of(b"old\r\nmixed\n", b"new\ntext\n").as_ref(), b"new\ntext\n");
        assert_eq!(in_endings_of(b"old\nlines\n", b"new\ntext\n").as_ref(), b"new\ntext\n");
        assert_eq!(in_endings_of(b"", b"new\n").as_ref(), b"new\n", "a new file");
        assert_eq!(in_endings_of(b"a\r\n", b"\xff\n").as_ref(), b"\xff\n", "bytes that are not text stay");
        // A write that would change nothing but the endings writes nothing.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ch01__1__01.snap");
        std::fs::write(&path, "one\r\ntwo\r\n").unwrap();
        assert!(!write_if_changed(&path, b"one\ntwo\n").unwrap());
        assert!(write_if_changed(&path, b"one\nthree\n").unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"one\r\nthree\r\n");
    }

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
        assert!(!dir.path().join("ch01.md.tangle-new").exists(), "the superseded text is not left behind");
    }

    #[cfg(unix)]
    #[test]
    fn a_linked_file_is_replaced_where_it_lives_and_the_link_stays() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("drafts")).unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        let real = dir.path().join("drafts/ch01.md");
        std::fs::write(&real, "old\n").unwrap();
        let link = dir.path().join("src/ch01.md");
        std::os::unix::fs::symlink("../drafts/ch01.md", &link).unwrap();
        replace_if_unchanged(&link, b"old\n", b"accepted\n").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "accepted\n");
        write_atomic(&link, b"formatted\n").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "formatted\n");
        assert!(std::fs::read_dir(dir.path().join("src")).unwrap().count() == 1, "no temp file left in src/");
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
