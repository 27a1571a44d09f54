//! Writing the files a chapter program draws (figures, widget data), the one way both do it:
//! only when the bytes change, and atomically.
//!
//! Unchanged bytes leave the file alone, so its modification time keeps meaning "drawn
//! differently" to whatever watches the folder (`tangle serve`). A changed file is written
//! to a temporary file in the same folder and renamed over the old one: a reader (the book
//! being rendered, a browser reloading it) sees the old bytes or the new ones, never half a
//! file, and a program stopped mid-write (a panic in another thread, `kill`) leaves the old
//! file whole. The temporary name starts with `.` and ends with `.tmp`, so that nothing that
//! lists a figures folder by suffix (`.svg`, `.widget.json`) mistakes it for a figure.
//!
//! `tangle_core::fsutil` has the tool's own `write_if_changed`, the same rule. This crate
//! cannot share it: it is linked into every chapter program, and depends on nothing of the
//! tool's (the tidy test holds it there).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `contents` to `path` unless the file already holds exactly these bytes, creating
/// its folder when needed. On failure, names the path that could not be written.
pub(crate) fn write_if_changed(path: &Path, contents: &[u8]) -> Result<(), (PathBuf, std::io::Error)> {
    if std::fs::read(path).is_ok_and(|old| old == contents) {
        return Ok(());
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| (dir.to_path_buf(), e))?;
    let temp = temp_path(dir, path);
    let written = std::fs::File::create(&temp)
        .and_then(|mut f| f.write_all(contents))
        .and_then(|()| std::fs::rename(&temp, path));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        (path.to_path_buf(), e)
    })
}

/// A name in `dir` that no other writer uses: this process's id and a counter, so that two
/// threads or two chapter programs writing the same file never share a temporary file.
fn temp_path(dir: &Path, path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    dir.join(format!(".{name}.{}-{n}.tmp", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_new_and_changed_bytes_and_leaves_equal_ones_alone() {
        let dir = std::env::temp_dir().join(format!("tangle-runtime-file-{}", std::process::id()));
        let path = dir.join("sub").join("a.svg");
        write_if_changed(&path, b"one").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one");
        let before = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        write_if_changed(&path, b"one").unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), before, "equal bytes are not rewritten");
        write_if_changed(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let left: Vec<_> =
            std::fs::read_dir(path.parent().unwrap()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("a.svg")], "no temporary file is left behind");
        // A folder that cannot be created names itself.
        let (at, _) = write_if_changed(&path.join("below-a-file.svg"), b"x").unwrap_err();
        assert_eq!(at, path);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
