//! `cargo tangle serve`: builds the HTML book, serves it on localhost, and rebuilds it when a
//! source changes, without ever serving a half-built book or letting one client stall others.
//!
//! - The port is taken first: a busy one is refused before anything is built or written.
//! - Each build goes to a fresh folder of this server's own (`target/tangle/serve/run-*/build-N`,
//!   removed when the server ends, swept by the next one if it was killed); once complete it is
//!   published atomically ([`http::Site::publish`]), and the build before the previous one is
//!   deleted. A failed build leaves the served one in place.
//! - A successful build is also copied to `book/book` (or the `build-dir` of `book.toml`),
//!   which authors open directly.
//! - Builds hold the repository lock ([`tangle_core::lock`]), so a rebuild never reads a chapter or
//!   a figure that an `accept` is halfway through writing. The lock is taken per build, never
//!   for the server's lifetime.
//! - Changes are found by polling modification times every half second (no watcher crate).
//! - Each build checks the chapters as `book` does; what is wrong (a compile error, a panic, a
//!   drift, a refused directive) goes to the terminal and to a banner atop every served page
//!   ([`problems`]), which a build that finds it fixed takes away.
//! - An edit saved in a generated file under `code/` is untangled into its chapter before the
//!   build ([`tangle_core::pipeline::untangle_edits`]), so the page shows it; an edit that
//!   cannot be untangled is reported, and the file stays as it is.
//! - The HTTP side is [`http`]; pages get a live-reload script there, not on disk.

pub mod http;
mod problems;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, bail};
use tangle_core::config::{Config, Layout};

/// The newest modification time under the book's sources, theme, figures and generated
/// crates (build output aside).
fn newest_change(layout: &Layout) -> SystemTime {
    let watched = [
        layout.src.clone(),
        layout.book.join("theme"),
        layout.book_toml(),
        layout.figures.clone(),
        layout.code.clone(),
    ];
    watched
        .iter()
        .flat_map(|p| {
            walkdir::WalkDir::new(layout.abs(p))
                .into_iter()
                .filter_entry(|e| e.file_name() != "target")
                .filter_map(Result::ok)
        })
        .filter_map(|e| e.metadata().ok()?.modified().ok())
        .max()
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Binds `127.0.0.1:port`, with a message that says what to do when it is taken.
pub fn bind(port: u16) -> anyhow::Result<TcpListener> {
    match TcpListener::bind(("127.0.0.1", port)) {
        Ok(listener) => Ok(listener),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            bail!("port {port} is in use (another `cargo tangle serve`?); pass --port N to serve on another one")
        }
        Err(e) => Err(e).with_context(|| format!("cannot listen on 127.0.0.1:{port}")),
    }
}

/// Builds the book, serves it on `127.0.0.1:port`, and rebuilds whenever a file under
/// `book/src`, `book/theme`, `book/book.toml` or `figures/` changes. Runs until killed.
pub fn serve(config: &Config, port: u16) -> anyhow::Result<()> {
    let listener = bind(port)?;
    let mut builds = Builds::new(config)?;
    let (first, problems) = builds.build();
    let site = http::Site::new(first?);
    if !problems.is_empty() {
        site.report(None, problems);
    }
    println!("serving the book on http://127.0.0.1:{port}/ (rebuilds on save, pages reload themselves; Ctrl-C stops)");
    {
        let layout = config.layout.clone();
        let site = site.clone();
        std::thread::Builder::new().name("tangle-serve-watch".into()).spawn(move || {
            let mut seen = newest_change(&layout);
            loop {
                std::thread::sleep(Duration::from_millis(500));
                let now = newest_change(&layout);
                if now <= seen {
                    continue;
                }
                seen = now;
                let (built, problems) = builds.build();
                match built {
                    Ok(dir) => {
                        let generation = site.report(Some(dir), problems);
                        builds.forget_old();
                        println!("rebuilt the book (build {generation})");
                    }
                    Err(e) => {
                        eprintln!("rebuild failed, still serving the previous build: {e:#}");
                        site.report(None, problems);
                    }
                }
            }
        })?;
    }
    http::serve_forever(listener, site, http::Config::default());
    Ok(())
}

/// This server's builds: numbered folders in a staging folder of its own.
struct Builds {
    config: Config,
    staging: tangle_core::lock::Staging,
    /// The number of the last build started.
    last: u64,
}

impl Builds {
    fn new(config: &Config) -> anyhow::Result<Builds> {
        let staging = tangle_core::lock::staging(&config.layout.work_dir(), "serve")?;
        Ok(Builds { config: config.clone(), staging, last: 0 })
    }

    fn dir(&self, n: u64) -> PathBuf {
        self.staging.path().join(format!("build-{n}"))
    }

    /// Checks the chapters and builds into a new folder, under the repository lock, and
    /// copies the result to the author's `book/book`. Returns the folder to serve (if the
    /// build succeeded) and what is wrong with the book.
    fn build(&mut self) -> (anyhow::Result<PathBuf>, Vec<String>) {
        self.last += 1;
        let out = self.dir(self.last);
        let work = self.config.layout.work_dir();
        let _lock = match tangle_core::lock::acquire(
            &work,
            tangle_core::lock::Options { what: "serve (rebuilding the book)", ..Default::default() },
        ) {
            Ok(lock) => lock,
            Err(e) => return (Err(e), Vec::new()),
        };
        // The configuration as it is now (an edited book.toml takes effect at once).
        let config = Config::load(&self.config.layout.root).unwrap_or_else(|_| self.config.clone());
        // `serve` is the author's loop, never CI's: it writes what the author's edits call for
        // (code/, untangled chapters) whatever the environment says.
        match tangle_core::pipeline::untangle_edits(&config, tangle_core::pipeline::Writes::Allow) {
            Some(Ok(untangled)) => untangled.report().iter().for_each(|line| println!("{line}")),
            Some(Err(e)) => eprintln!("could not untangle the edits in code/ (the files stay as they are): {e:#}"),
            None => {}
        }
        let mut found = problems::check(&config);
        let built = build_into(&config, &out).and_then(|(site, book_dir)| {
            mirror(&site, &book_dir).with_context(|| format!("cannot update {}", book_dir.display()))?;
            Ok(site)
        });
        if let Err(e) = &built {
            found.extend(problems::from_error(e, &config));
            let _ = std::fs::remove_dir_all(&out);
        }
        (built, found)
    }

    /// Deletes the builds before the previous one (a request may still be reading the
    /// previous one).
    fn forget_old(&self) {
        for n in 1..self.last.saturating_sub(1) {
            let _ = std::fs::remove_dir_all(self.dir(n));
        }
    }
}

/// Builds the HTML book into `out`. Returns the folder holding `index.html` and the author's
/// configured build folder (`book/book`).
pub fn build_into(config: &Config, out: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let layout = &config.layout;
    // Read afresh: a broken book.toml fails the build (and the served book stays).
    let book_toml = layout.abs(layout.book_toml());
    mdbook_driver::config::Config::from_disk(&book_toml).with_context(|| format!("reading {}", book_toml.display()))?;
    let authors_dir = layout.abs(&layout.build);
    super::book::build_book(config, &super::RenderOptions { dest: Some(out.to_path_buf()) })?;
    // With more than one renderer, mdBook puts each in a subfolder.
    match out.join("index.html").is_file() {
        true => Ok((out.to_path_buf(), authors_dir)),
        false => Ok((out.join("html"), authors_dir.join("html"))),
    }
}

/// Replaces `dest` by a copy of `site`: copied next to it first, then swapped in by two
/// renames, so that `dest` is never a half-copied book.
fn mirror(site: &Path, dest: &Path) -> anyhow::Result<()> {
    let parent = dest.parent().context("the book folder has a parent")?;
    std::fs::create_dir_all(parent)?;
    let fresh = tempfile::Builder::new().prefix(".tangle-book-").tempdir_in(parent)?;
    copy_tree(site, fresh.path())?;
    let old = tempfile::Builder::new().prefix(".tangle-old-").tempdir_in(parent)?;
    let old_book = old.path().join("book");
    if dest.exists() {
        std::fs::rename(dest, &old_book)?;
    }
    std::fs::rename(fresh.keep(), dest)?;
    drop(old);
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry?;
        let target = to.join(entry.path().strip_prefix(from)?);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny_book(root: &Path) {
        std::fs::create_dir_all(root.join("book/src")).unwrap();
        std::fs::write(root.join("book/book.toml"), "[book]\ntitle = \"T\"\n").unwrap();
        std::fs::write(root.join("book/src/SUMMARY.md"), "# Summary\n\n- [One](ch01.md)\n").unwrap();
        std::fs::write(root.join("book/src/ch01.md"), "# 1 One\n\nFirst words.\n").unwrap();
    }

    #[test]
    fn builds_go_to_fresh_folders_and_the_authors_copy_follows() {
        let root = tempfile::tempdir().unwrap();
        tiny_book(root.path());
        let mut builds = Builds::new(&Config::load(root.path()).unwrap()).unwrap();
        let (first, problems) = builds.build();
        let first = first.unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert!(first.join("ch01.html").is_file());
        let page = std::fs::read_to_string(root.path().join("book/book/ch01.html")).unwrap();
        assert!(page.contains("First words."));
        assert!(!page.contains("__tangle"), "no reload script on disk");
        std::fs::write(root.path().join("book/src/ch01.md"), "# 1 One\n\nSecond words.\n").unwrap();
        let second = builds.build().0.unwrap();
        assert_ne!(first, second);
        assert!(std::fs::read_to_string(first.join("ch01.html")).unwrap().contains("First words."));
        assert!(std::fs::read_to_string(second.join("ch01.html")).unwrap().contains("Second words."));
        let page = std::fs::read_to_string(root.path().join("book/book/ch01.html")).unwrap();
        assert!(page.contains("Second words."));
        let third = builds.build().0.unwrap();
        builds.forget_old();
        assert!(!first.exists() && second.exists() && third.exists());
        // No temporary folders left next to book/book.
        let leftovers: Vec<_> = std::fs::read_dir(root.path().join("book"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".tangle"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        // A build that fails leaves nothing behind and the served one in place.
        std::fs::write(root.path().join("book/book.toml"), "[book\n").unwrap();
        let (built, problems) = builds.build();
        assert!(built.is_err());
        assert!(problems.iter().any(|p| p.contains("book.toml")), "{problems:?}");
        assert!(third.exists() && !builds.dir(builds.last).exists());
    }

    #[test]
    fn a_refused_directive_is_a_problem_at_its_line_until_it_is_fixed() {
        let root = tempfile::tempdir().unwrap();
        tiny_book(root.path());
        let mut builds = Builds::new(&Config::load(root.path()).unwrap()).unwrap();
        std::fs::write(root.path().join("book/src/ch01.md"), "# 1 One\n\n{{#include /etc/hostname}}\n").unwrap();
        let (built, problems) = builds.build();
        assert!(built.is_err());
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("book/src/ch01.md:3:1") && problems[0].contains("outside the folders"),
            "{problems:?}"
        );
        std::fs::write(root.path().join("book/src/ch01.md"), "# 1 One\n\nFixed.\n").unwrap();
        let (built, problems) = builds.build();
        assert!(built.is_ok() && problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn an_edit_saved_in_a_generated_file_is_untangled_into_the_page() {
        let root = tempfile::tempdir().unwrap();
        tiny_book(root.path());
        let chapter = "# 1 One\n\n```rust\n// @save\n/// First words.\npub fn one() -> u32 {\n    1\n}\n```\n";
        std::fs::write(root.path().join("book/src/ch01.md"), chapter).unwrap();
        let config = Config::load(root.path()).unwrap();
        tangle_core::pipeline::Project::load_with(config.clone()).unwrap().sync().unwrap();
        let lib = root.path().join("code/ch01/src/lib.rs");
        let text = std::fs::read_to_string(&lib).unwrap();
        std::fs::write(&lib, text.replace("/// First words.", "/// Second words.")).unwrap();
        let mut builds = Builds::new(&config).unwrap();
        let (site, problems) = builds.build();
        let site = site.unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        let md = std::fs::read_to_string(root.path().join("book/src/ch01.md")).unwrap();
        assert_eq!(md, chapter.replace("/// First words.", "/// Second words."));
        assert!(std::fs::read_to_string(site.join("ch01.html")).unwrap().contains("Second words."));
        assert!(tangle_core::pipeline::Project::load_with(config).unwrap().stale().unwrap().is_empty());
    }

    #[test]
    fn a_busy_port_is_refused_before_anything_is_built() {
        let root = tempfile::tempdir().unwrap();
        tiny_book(root.path());
        let taken = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = taken.local_addr().unwrap().port();
        let err = serve(&Config::load(root.path()).unwrap(), port).unwrap_err().to_string();
        assert!(err.contains(&format!("port {port} is in use")) && err.contains("--port"), "{err}");
        assert!(!root.path().join("book/book").exists());
        assert!(!root.path().join("target").exists());
    }
}
