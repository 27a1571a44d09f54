//! Books that share a target folder (`target-dir` pointing outside the book, or
//! `TANGLE_TARGET_DIR`) must not run each other's programs. Cargo names a path package's
//! artifacts by a hash that leaves out where the package lives, and judges them current by
//! comparing file times, so two books that both have a chapter `ch01` would each find the
//! other's build of `ch01` current and run it. Before a build, [`claim`] looks up which
//! workspace last built each of its packages in that folder, makes cargo forget it built the
//! ones another workspace built, and records this one as their builder.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// The folder, inside the target folder, of one file per package naming its last builder.
const RECORDS: &str = "tangle-builders";

/// Makes `packages` of the workspace `manifest` (a `Cargo.toml`) this workspace's in the
/// profile folder `profile` (`release`, `debug`) of `target`: for those another workspace
/// built there last, drops cargo's record that they are current, then records this workspace
/// as their builder. Cheap when nothing changed hands: one small file read per package.
///
/// Cargo's record (its fingerprint folder, `.fingerprint/NAME-HASH`) goes rather than the
/// artifacts (`cargo clean -p`): the program another book may be running at this moment stays
/// where it is until cargo replaces it.
pub(crate) fn claim(target: &Path, manifest: &Path, profile: &str, packages: &[String]) -> anyhow::Result<()> {
    let owner = std::path::absolute(manifest).unwrap_or_else(|_| manifest.to_path_buf());
    let owner = std::fs::canonicalize(&owner).unwrap_or(owner).display().to_string();
    let records = target.join(RECORDS);
    let record = |package: &str| -> PathBuf { records.join(format!("{package}.{profile}")) };
    let fingerprints = target.join(profile).join(".fingerprint");
    // Under cargo's own lock of the profile folder: never while a build (of another book
    // sharing the folder) writes the fingerprints.
    let lock_path = target.join(profile).join(".cargo-lock");
    std::fs::create_dir_all(target.join(profile)).with_context(|| format!("cannot create {}", target.display()))?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .with_context(|| format!("cannot open {}", lock_path.display()))?;
    lock.lock().with_context(|| format!("cannot lock {}", lock_path.display()))?;
    for package in packages {
        let path = record(package);
        // Unrecorded packages go too: built by a tangle from before the records, or never built.
        if std::fs::read_to_string(&path).is_ok_and(|builder| builder == owner) {
            continue;
        }
        forget(&fingerprints, package)?;
        std::fs::create_dir_all(&records).with_context(|| format!("cannot create {}", records.display()))?;
        crate::fsutil::write_atomic(&path, owner.as_bytes())?;
    }
    Ok(())
}

/// Removes cargo's fingerprints of `package` (`NAME-` and sixteen hex digits; `ch01-run-…`
/// is another package's), so that cargo builds it again.
fn forget(fingerprints: &Path, package: &str) -> anyhow::Result<()> {
    let Ok(entries) = std::fs::read_dir(fingerprints) else { return Ok(()) };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(hash) = name.to_str().and_then(|n| n.strip_prefix(package)).and_then(|r| r.strip_prefix('-')) else {
            continue;
        };
        if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            std::fs::remove_dir_all(entry.path())
                .with_context(|| format!("cannot remove {}", entry.path().display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_another_workspace_built_loses_its_fingerprint_and_only_it() {
        let target = tempfile::tempdir().unwrap();
        let fp = target.path().join("release/.fingerprint");
        for dir in ["ch01-0396182f5038b302", "ch01-run-dac4cedaaa6c61aa", "ch02-9de4b69d7ce7e54d"] {
            std::fs::create_dir_all(fp.join(dir)).unwrap();
        }
        let books = tempfile::tempdir().unwrap();
        let (a, b) = (books.path().join("a/Cargo.toml"), books.path().join("b/Cargo.toml"));
        let packages = ["ch01".to_string(), "ch02".to_string()];
        let exists = |dir: &str| fp.join(dir).exists();
        // The first claim of packages nobody recorded: whoever built them, they go.
        claim(target.path(), &a, "release", &packages).unwrap();
        assert!(!exists("ch01-0396182f5038b302") && !exists("ch02-9de4b69d7ce7e54d"));
        assert!(exists("ch01-run-dac4cedaaa6c61aa"), "another package's fingerprint was removed");
        // The same workspace again: nothing goes.
        std::fs::create_dir_all(fp.join("ch01-1111111111111111")).unwrap();
        claim(target.path(), &a, "release", &packages).unwrap();
        assert!(exists("ch01-1111111111111111"));
        // Another workspace: its build must not be taken for this one's.
        claim(target.path(), &b, "release", &packages[..1]).unwrap();
        assert!(!exists("ch01-1111111111111111"));
        // The release profile's records say nothing about the debug one.
        std::fs::create_dir_all(target.path().join("debug/.fingerprint/ch01-2222222222222222")).unwrap();
        claim(target.path(), &b, "debug", &packages[..1]).unwrap();
        assert!(!target.path().join("debug/.fingerprint/ch01-2222222222222222").exists());
    }
}
