//! The renderer's caches, under `target/tangle/render/`: what a build worked out from inputs
//! that have not changed since is read back instead of worked out again. Each entry is a pure
//! function of its key, the hash of every input it was made from (and of this tool's version),
//! so a stale entry is never used, only replaced. A cache that cannot be read or written is a
//! cache that misses: the build goes on and makes the entry again.
//!
//! - [`Slots`]: one entry per name (a chapter's preprocessed Markdown, the search index), which
//!   a newer key replaces;
//! - [`Store`]: entries by content hash (a rendered equation, a chapter's citations), which
//!   many builds share.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tangle_core::config::Layout;

/// Bumped whenever what an entry holds changes meaning, or a dependency that makes entries
/// (mdBook, KaTeX, hayagriva) is upgraded.
const VERSION: &str = concat!("tangle-render-cache-1:", env!("CARGO_PKG_VERSION"));

/// The folder of the renderer's caches.
pub fn dir(layout: &Layout) -> PathBuf {
    layout.work_dir().join("render")
}

/// The folder of the content-addressed [`Store`]s, once a build has said where it is
/// ([`crate::build_book`]); until then (a preprocessor run by a stock mdBook) nothing is kept.
static STORES: std::sync::RwLock<Option<PathBuf>> = std::sync::RwLock::new(None);

/// Keeps the [`Store`]s in `dir` from now on.
pub fn keep_in(dir: PathBuf) {
    *STORES.write().unwrap_or_else(|e| e.into_inner()) = Some(dir);
}

/// The store of `kind` (`math`, `citations`), when a build has said where stores are kept.
pub fn store(kind: &str) -> Option<Store> {
    STORES.read().unwrap_or_else(|e| e.into_inner()).as_ref().map(|dir| Store::new(dir.join(kind)))
}

/// A hash of labelled parts ([`tangle_core::cache::feed`]), the tool's version first.
#[derive(Clone)]
pub struct Key(Sha256);

impl Key {
    pub fn new(kind: &str) -> Key {
        let mut key = Key(Sha256::new());
        key.part("version", VERSION.as_bytes());
        key.part("kind", kind.as_bytes());
        key
    }

    pub fn part(&mut self, label: &str, bytes: &[u8]) -> &mut Key {
        tangle_core::cache::feed(&mut self.0, label, bytes);
        self
    }

    pub fn hex(&self) -> String {
        tangle_core::cache::hex(self.0.clone())
    }
}

/// Entries by name: `<dir>/<name>` holds the key on its first line, then the entry.
pub struct Slots {
    dir: PathBuf,
}

impl Slots {
    pub fn new(dir: PathBuf) -> Slots {
        Slots { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The entry stored under `name`, if it was made from `key`.
    pub fn get(&self, name: &str, key: &str) -> Option<String> {
        let text = std::fs::read_to_string(self.path(name)).ok()?;
        let (stored, entry) = text.split_once('\n')?;
        (stored == key).then(|| entry.to_string())
    }

    /// Stores `entry` under `name`, made from `key` (replacing what was there).
    pub fn put(&self, name: &str, key: &str, entry: &str) {
        let _ = put(&self.path(name), format!("{key}\n{entry}").as_bytes());
    }
}

/// Entries by key: `<dir>/<key>`.
pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn new(dir: PathBuf) -> Store {
        Store { dir }
    }

    pub fn get(&self, key: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.join(key)).ok()
    }

    pub fn put(&self, key: &str, entry: &str) {
        let _ = put(&self.dir.join(key), entry.as_bytes());
    }
}

/// A stamp of the files under `roots` (each a file or a folder, absolute), leaving out the
/// folders in `skip` (and anything named `.git`, or `.tangle-*`: serve's temporary copies):
/// every file's path, length and modification time, hashed. Nothing is read: a tree whose
/// stamp is the same as at the last build has not been written since.
pub fn stamp(kind: &str, roots: &[PathBuf], skip: &[PathBuf]) -> Stamp {
    let mut key = Key::new(kind);
    let mut newest = std::time::Duration::ZERO;
    for root in roots {
        key.part("root", root.as_os_str().as_encoded_bytes());
        let walk = walkdir::WalkDir::new(root).sort_by_file_name().into_iter().filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            name != ".git" && !name.starts_with(".tangle-") && !skip.iter().any(|s| e.path() == s)
        });
        for entry in walk.filter_map(Result::ok) {
            let Ok(meta) = entry.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
            newest = newest.max(modified.unwrap_or_default());
            let mut line = format!("{}:{}", meta.len(), modified.map_or(0, |d| d.as_nanos()));
            line.push_str(&entry.path().to_string_lossy());
            key.part("file", line.as_bytes());
        }
    }
    Stamp { hex: key.hex(), newest }
}

/// What [`stamp`] found.
pub struct Stamp {
    pub hex: String,
    /// The newest modification time among the files (since the Unix epoch).
    pub newest: std::time::Duration,
}

impl Stamp {
    /// Whether a file was written so shortly before `now` that another write within the same
    /// tick of the file system's clock (a few milliseconds, read coarsely), of the same length,
    /// would leave the stamp as it is (the "racy" case): such a stamp is not worth recording.
    pub fn is_racy(&self, now: std::time::SystemTime) -> bool {
        let now = now.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        now.saturating_sub(self.newest) < std::time::Duration::from_millis(50)
    }
}

/// Writes atomically (a reader never sees half an entry), creating the folder.
fn put(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    tangle_core::fsutil::write_atomic(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_found_only_under_the_key_it_was_made_from() {
        let dir = tempfile::tempdir().unwrap();
        let slots = Slots::new(dir.path().join("slots"));
        let key = |text: &str| Key::new("test").part("text", text.as_bytes()).hex();
        assert_eq!(slots.get("ch01", &key("a")), None);
        slots.put("ch01", &key("a"), "made from a\nsecond line");
        assert_eq!(slots.get("ch01", &key("a")).as_deref(), Some("made from a\nsecond line"));
        assert_eq!(slots.get("ch01", &key("b")), None);
        slots.put("ch01", &key("b"), "made from b");
        assert_eq!(slots.get("ch01", &key("a")), None);
        // Parts are length-prefixed: moving a byte from one part to the next is another key.
        let two = |a: &str, b: &str| Key::new("test").part("a", a.as_bytes()).part("b", b.as_bytes()).hex();
        assert_ne!(two("ab", "c"), two("a", "bc"));
        let store = Store::new(dir.path().join("store"));
        assert_eq!(store.get(&key("x")), None);
        store.put(&key("x"), "<math/>");
        assert_eq!(store.get(&key("x")).as_deref(), Some("<math/>"));
    }
}
