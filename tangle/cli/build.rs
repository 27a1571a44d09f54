//! Records the git commit a build of tangle comes from, for `tangle --version`: every build
//! before a release says `0.1.0`, and a bug report, or an author comparing two machines whose
//! tangles write different files, needs to tell them apart. Built outside a git checkout
//! (from crates.io), the version is the package's alone.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    // Only a repository that tracks this very file holds tangle's source: a package unpacked
    // inside some other repository (a vendored copy, a registry under a versioned home) is not
    // at that repository's commit.
    let ours = git(&["ls-files", "--error-unmatch", "build.rs"]).is_some();
    let commit = git(&["rev-parse", "--short=9", "HEAD"]).filter(|c| ours && !c.is_empty());
    let suffix = commit.map_or(String::new(), |c| format!(" (commit {c})"));
    println!("cargo:rustc-env=TANGLE_BUILD_COMMIT={suffix}");
    // Run again when HEAD moves: a commit, a checkout. (Not on every edit of the work tree.)
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]).map(PathBuf::from) {
        rerun_if_changed(&dir.join("HEAD"));
        if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
            rerun_if_changed(&dir.join(reference));
        }
        rerun_if_changed(&dir.join("packed-refs"));
    }
}

fn rerun_if_changed(path: &Path) {
    println!("cargo:rerun-if-changed={}", path.display());
}
