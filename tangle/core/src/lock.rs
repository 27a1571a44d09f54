//! One writer at a time per repository, and a private scratch folder per run.
//!
//! [`acquire`] takes an advisory lock on `target/tangle/lock` (std's `File::lock`, `flock(2)`
//! on Linux). The operating system drops the lock when its holder exits, however it exits, so
//! a stale lock cannot exist: there is nothing to clean up after a crash or a `kill -9`. The
//! holder writes its pid and command into the file so that a second run can say whom it is
//! waiting for.
//!
//! [`staging`] makes a fresh folder under `target/tangle/<kind>/` for one run's scratch files
//! (the figures a chapter draws, a `serve` build), so that two runs never share or wipe each
//! other's files. Each folder carries a locked owner file; a folder whose owner is gone (killed
//! before its `TempDir` could clean up) is swept by the next run.
//!
//! The folder ignores itself for git (a `.gitignore` of `*`, written with the lock), so that
//! nothing built there, by tangle or by `cargo test` inside `code/` (whose
//! `.cargo/config.toml` builds there too), is ever an untracked file, whatever the project's
//! own `.gitignore` says.
//!
//! [`acquire_book`] also locks a build folder that books share (`TANGLE_TARGET_DIR`).
//!
//! The lock is per open file, not per process: taking it twice in one process waits forever.
//! Take it once, near the command line, and pass the guard down.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use anyhow::Context;

/// Writes `dir/.gitignore` (`*`: the folder and everything in it) if it is missing. Best
/// effort: a folder that cannot take it still works.
fn ignore_for_git(dir: &Path) {
    let file = dir.join(".gitignore");
    if !file.exists() {
        let _ = crate::fsutil::write_atomic(&file, b"# tangle's working folder: builds, cache, lock.\n*\n");
    }
}

/// The lock file, in tangle's working folder (`target/tangle`, [`crate::config::Layout::work_dir`]).
pub const LOCK_FILE: &str = "lock";

/// Holds the repository lock until dropped (or until the process ends).
#[derive(Debug)]
pub struct RepoLock {
    _file: File,
    /// The lock of a build folder shared with other books ([`acquire_book`]).
    _shared: Option<Box<RepoLock>>,
}

/// What to do when another run holds the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IfHeld {
    /// Say whom we are waiting for, then wait.
    #[default]
    Wait,
    /// Fail at once, naming the holder.
    Refuse,
}

/// How to take the lock: for which command, and what to do while another run holds it.
#[derive(Clone, Copy)]
pub struct Options<'a> {
    /// The command taking it (`"accept"`, `"check"`...), written into the lock file so that a
    /// second run can say whom it waits for.
    pub what: &'a str,
    pub if_held: IfHeld,
    /// Told whom we wait for (at most once) before waiting; `None` says it on stderr.
    pub on_wait: Option<&'a dyn Fn(&Holder)>,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options { what: "tangle", if_held: IfHeld::Wait, on_wait: None }
    }
}

/// Takes the repository lock in `work`; when another run holds it, says whom we wait for and
/// waits, or fails at once naming the holder ([`Options::if_held`]).
pub fn acquire(work: &Path, options: Options) -> anyhow::Result<RepoLock> {
    let Options { what, if_held, on_wait } = options;
    let path = work.join(LOCK_FILE);
    let dir = path.parent().expect("the lock file has a folder");
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    ignore_for_git(dir);
    // Never truncate on open: until we hold the lock, the contents are the holder's.
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("cannot open the repository lock {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let holder = Holder::read(&mut file);
            match if_held {
                IfHeld::Refuse => anyhow::bail!(
                    "another tangle run ({holder}) is working in this repository (it holds the lock file {}); \
                     wait for it to finish, or stop it",
                    path.display()
                ),
                IfHeld::Wait => {
                    match on_wait {
                        Some(tell) => tell(&holder),
                        None => eprintln!("waiting for another tangle run ({holder}) to finish..."),
                    }
                    file.lock().with_context(|| format!("cannot lock {}", path.display()))?;
                }
            }
        }
        Err(TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("cannot lock {}", path.display()));
        }
    }
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    write!(file, "{}\n{}\n", std::process::id(), what.replace('\n', " "))?;
    file.flush()?;
    Ok(RepoLock { _file: file, _shared: None })
}

/// Takes the repository lock of the book at `layout` and, when its chapters build in a folder
/// of their own choosing (`TANGLE_TARGET_DIR`, which other books may share), the lock of that
/// folder too, held as long: two books never build or run chapters there at once. (Cargo
/// names a chapter's program by its package alone, so two books' `ch01` are one file there,
/// and one book would run the other's program between its build and its run.) Always in that
/// order, book then folder, so two books cannot wait for each other.
pub fn acquire_book(layout: &crate::config::Layout, options: Options) -> anyhow::Result<RepoLock> {
    let mut lock = acquire(&layout.work_dir(), options)?;
    let target = crate::build::target_dir(layout);
    if crate::fsutil::resolved(&target) != crate::fsutil::resolved(&layout.work_dir()) {
        lock._shared = Some(Box::new(acquire(&target, options)?));
    }
    Ok(lock)
}

/// Who holds the lock, as written in the lock file by its holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: Option<u32>,
    pub command: Option<String>,
}

impl Holder {
    fn read(file: &mut File) -> Holder {
        let mut text = String::new();
        let _ = file.seek(SeekFrom::Start(0)).and_then(|_| file.read_to_string(&mut text));
        let mut lines = text.lines();
        let pid = lines.next().and_then(|l| l.trim().parse().ok());
        let command = lines.next().map(str::trim).filter(|c| !c.is_empty()).map(str::to_string);
        Holder { pid, command }
    }
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.pid, &self.command) {
            (Some(pid), Some(command)) => write!(f, "pid {pid}, `{command}`"),
            (Some(pid), None) => write!(f, "pid {pid}"),
            // The holder has locked the file but not written it yet.
            _ => write!(f, "starting"),
        }
    }
}

/// A fresh folder for one run's scratch files, removed when dropped.
#[derive(Debug)]
pub struct Staging {
    dir: tempfile::TempDir,
    _owner: File,
}

impl Staging {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The file inside a staging folder that its owner keeps locked.
const OWNER: &str = ".tangle-owner";

/// A fresh staging folder for one run: `target/tangle/runs/XXXXXX` (under `work`, tangle's working folder).
pub(crate) fn run_staging(work: &Path) -> anyhow::Result<Staging> {
    staging(work, "runs")
}

/// A fresh folder under `target/tangle/<kind>/`, private to this run and removed when the
/// returned guard drops. Folders left by runs that died are removed first.
pub fn staging(work: &Path, kind: &str) -> anyhow::Result<Staging> {
    let parent = work.join(kind);
    std::fs::create_dir_all(&parent).with_context(|| format!("cannot create {}", parent.display()))?;
    sweep(&parent);
    let dir = tempfile::Builder::new()
        .prefix("run-")
        .tempdir_in(&parent)
        .with_context(|| format!("cannot create a folder in {}", parent.display()))?;
    // Locked under a temporary name, then renamed: a sweeper never sees an owner file that
    // exists but is not locked yet (the lock belongs to the file, and survives the rename).
    let pending = dir.path().join(".tangle-owner.pending");
    let owner = File::create(&pending).with_context(|| format!("cannot create {}", pending.display()))?;
    owner.lock().with_context(|| format!("cannot lock {}", pending.display()))?;
    std::fs::rename(&pending, dir.path().join(OWNER))?;
    Ok(Staging { dir, _owner: owner })
}

/// Removes the folders of `parent` whose owner file is no longer locked (their run is gone).
/// A folder without an owner file is being created right now and is left alone.
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for dir in entries.flatten().map(|e| e.path()) {
        let Ok(owner) = File::open(dir.join(OWNER)) else { continue };
        if owner.try_lock().is_ok() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// The folders under `target/tangle/<kind>/` that belong to live runs.
#[cfg(test)]
pub(crate) fn live_stagings(work: &Path, kind: &str) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(work.join(kind)) else { return Vec::new() };
    entries.flatten().map(|e| e.path()).filter(|d| d.join(OWNER).is_file()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    #[test]
    fn a_second_run_waits_naming_the_first_and_goes_on_when_it_ends() {
        let root = tempfile::tempdir().unwrap();
        let first = acquire(root.path(), Options { what: "accept", ..Default::default() }).unwrap();
        let (told, heard) = mpsc::channel();
        let (done, finished) = mpsc::channel();
        let path = root.path().to_path_buf();
        let second = std::thread::spawn(move || {
            let tell = |holder: &Holder| told.send(holder.to_string()).unwrap();
            let lock = acquire(&path, Options { what: "check", on_wait: Some(&tell), ..Default::default() }).unwrap();
            done.send(Instant::now()).unwrap();
            lock
        });
        let message = heard.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(message, format!("pid {}, `accept`", std::process::id()));
        // Still waiting while the first holds the lock.
        assert!(finished.recv_timeout(Duration::from_millis(300)).is_err());
        let released = Instant::now();
        drop(first);
        let got = finished.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(got >= released);
        let _second = second.join().unwrap();
        let text = std::fs::read_to_string(root.path().join(LOCK_FILE)).unwrap();
        assert_eq!(text, format!("{}\ncheck\n", std::process::id()));
    }

    #[test]
    fn refusing_names_the_holder_and_a_free_lock_is_taken_at_once() {
        let root = tempfile::tempdir().unwrap();
        let held =
            acquire(root.path(), Options { what: "book", if_held: IfHeld::Refuse, ..Default::default() }).unwrap();
        let err = acquire(root.path(), Options { what: "accept", if_held: IfHeld::Refuse, ..Default::default() })
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("pid {}, `book`", std::process::id())), "{err}");
        drop(held);
        acquire(root.path(), Options { what: "accept", if_held: IfHeld::Refuse, ..Default::default() }).unwrap();
    }

    #[test]
    fn a_lock_held_by_a_killed_process_is_free() {
        // A child process takes the lock with flock(1); `-o` keeps it in flock itself, not in
        // the command it runs, so that killing flock is the holder dying.
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path()).unwrap();
        let lock = root.path().join(LOCK_FILE);
        let mut flock = std::process::Command::new("flock");
        // A group of its own, so that the holder and its `sleep` are killed together.
        std::os::unix::process::CommandExt::process_group(&mut flock, 0);
        let Ok(mut child) = flock.arg("-o").arg(&lock).arg("sleep").arg("30").spawn() else {
            eprintln!("no flock(1) here; skipped");
            return;
        };
        let start = Instant::now();
        // Wait until the child holds it.
        loop {
            match acquire(root.path(), Options { what: "check", if_held: IfHeld::Refuse, ..Default::default() }) {
                Err(_) => break,
                Ok(l) => drop(l),
            }
            assert!(start.elapsed() < Duration::from_secs(10), "flock(1) never took the lock");
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: killpg only sends a signal, to the group this test started.
        unsafe { libc::killpg(child.id() as i32, libc::SIGKILL) };
        child.wait().unwrap();
        // flock's own child may still be exiting (killed between its fork and closing its copy
        // of the locked descriptor, which `-o` does only then): it is not reaped here, so give
        // the kernel a moment. A lock that outlived its holders would never come free.
        let killed = Instant::now();
        loop {
            match acquire(root.path(), Options { what: "check", if_held: IfHeld::Refuse, ..Default::default() }) {
                Ok(_) => break,
                Err(e) if killed.elapsed() > Duration::from_secs(5) => panic!("the dead holder's lock is held: {e:#}"),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    #[test]
    fn staging_folders_are_private_and_swept_when_their_owner_is_gone() {
        let root = tempfile::tempdir().unwrap();
        let a = run_staging(root.path()).unwrap();
        let b = run_staging(root.path()).unwrap();
        assert_ne!(a.path(), b.path());
        std::fs::write(a.path().join("fig.svg"), "a").unwrap();
        // Another run starting sweeps nothing that is alive.
        let c = run_staging(root.path()).unwrap();
        assert!(a.path().join("fig.svg").is_file());
        assert_eq!(live_stagings(root.path(), "runs").len(), 3);
        // A run that died: its folder stays, its owner file is unlocked.
        let dead = a.path().to_path_buf();
        let Staging { dir, _owner } = a;
        drop(_owner);
        let _kept = dir.keep();
        assert!(dead.is_dir());
        let _d = run_staging(root.path()).unwrap();
        assert!(!dead.exists(), "the dead run's folder is swept");
        assert!(b.path().is_dir() && c.path().is_dir());
        let path = b.path().to_path_buf();
        drop(b);
        assert!(!path.exists(), "dropping the guard removes the folder");
    }

    #[test]
    fn two_threads_staging_at_once_never_remove_each_others_folders() {
        let root = tempfile::tempdir().unwrap();
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let root = root.path().to_path_buf();
                std::thread::spawn(move || {
                    for j in 0..20 {
                        let s = run_staging(&root).unwrap();
                        let f = s.path().join(format!("{i}-{j}"));
                        std::fs::write(&f, "x").unwrap();
                        std::thread::yield_now();
                        assert!(f.is_file(), "another run removed {}", f.display());
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }
}
