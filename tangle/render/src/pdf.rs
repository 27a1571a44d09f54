//! `cargo tangle pdf`: the built book's `print.html` (every chapter on one page, laid out by
//! the print stylesheet in `book/theme/tangle.css`: A4, code and output wrapped, figures kept
//! with their captions) printed to PDF by headless Chromium. Chromium is found on `PATH`
//! (`chromium`, `chromium-browser`, `google-chrome`) or named by `$CHROMIUM`; where there is
//! none, the error says how to install it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// How long Chromium may take to lay out and print the book.
const TIMEOUT: Duration = Duration::from_secs(180);

/// The names Chromium goes by on `PATH`, in the order tried.
const NAMES: &[&str] = &["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"];

/// The Chromium to print with: `$TANGLE_CHROMIUM` or `$CHROMIUM`, or the first of [`NAMES`]
/// on `PATH`. The browser tests find theirs the same way.
pub fn find_chromium() -> Option<PathBuf> {
    for var in ["TANGLE_CHROMIUM", "CHROMIUM"] {
        if let Some(named) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(named));
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| NAMES.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// What to say when there is no Chromium.
pub const INSTALL_HINT: &str = "printing the book needs headless Chromium, and none was found on PATH \
     (chromium, chromium-browser, google-chrome) or in $CHROMIUM: install it with \
     `apt-get install chromium` (Debian, Ubuntu) or `dnf install chromium` (Fedora), or set CHROMIUM \
     to its path";

/// A headless Chromium command with a profile of its own in `profile` (so that a running
/// browser or an old profile changes nothing), kept off the network (the book loads nothing
/// from it anyway), and without its sandbox where it runs as root (containers, CI), where
/// Chromium refuses to start one. The caller adds what to do and which page.
pub fn headless(chromium: &Path, profile: &Path) -> Command {
    let mut command = Command::new(chromium);
    command
        .args([
            "--headless",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()));
    // SAFETY: geteuid has no preconditions and cannot fail.
    #[cfg(unix)]
    if unsafe { libc::geteuid() } == 0 {
        command.arg("--no-sandbox");
    }
    command
}

/// Prints `book_dir/print.html` (a built book) to `pdf`.
pub fn print_book(book_dir: &Path, pdf: &Path) -> anyhow::Result<()> {
    let page = book_dir.join("print.html");
    if !page.is_file() {
        bail!("no {}: build the book first (`cargo tangle book`)", page.display());
    }
    let chromium = find_chromium().context(INSTALL_HINT)?;
    let page = page.canonicalize()?;
    if let Some(parent) = pdf.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let profile = tempfile::Builder::new().prefix("tangle-pdf-").tempdir()?;
    let partial = pdf.with_extension("pdf.partial");
    let mut command = headless(&chromium, profile.path());
    command
        .arg("--no-pdf-header-footer")
        .arg(format!("--print-to-pdf={}", partial.display()))
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().with_context(|| format!("cannot start {}", chromium.display()))?;
    let stderr = child.stderr.take();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut e) = stderr {
            let _ = std::io::Read::read_to_string(&mut e, &mut text);
        }
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{} did not finish printing the book within {} s", chromium.display(), TIMEOUT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let log = log.join().unwrap_or_default();
    let written = std::fs::metadata(&partial).map(|m| m.len()).unwrap_or(0);
    if !status.success() || written == 0 {
        let _ = std::fs::remove_file(&partial);
        let tail: Vec<&str> = log.lines().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
        bail!("{} could not print {} ({status}):\n{}", chromium.display(), page.display(), tail.join("\n"));
    }
    std::fs::rename(&partial, pdf).with_context(|| format!("cannot write {}", pdf.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_book_that_was_never_built_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = print_book(dir.path(), &dir.path().join("book.pdf")).unwrap_err().to_string();
        assert!(err.contains("print.html") && err.contains("cargo tangle book"), "{err}");
    }

    #[test]
    fn the_install_hint_names_the_command() {
        assert!(INSTALL_HINT.contains("apt-get install chromium"));
    }
}
