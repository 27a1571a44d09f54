//! `cargo tangle serve`: builds the HTML book, serves it on localhost, and rebuilds it when a
//! source changes, without ever serving a half-built book or letting one client stall others.
//!
//! - The port is taken first: a busy one is refused before anything is built or written.
//! - Each build goes to a fresh folder of this server's own (`target/tangle/serve/run-*/build-N`,
//!   removed when the server ends, swept by the next one if it was killed); once complete it is
//!   published atomically ([`http::Site::publish`]), and the build before the previous one is
//!   deleted. A failed build leaves the served one in place. A book that cannot be built when
//!   the server starts is served anyway ([`Builds::placeholder`]): every page asked for is a
//!   page that says so, under the problems' banner, until a save fixes the book.
//! - After a save that changed only chapters (the same `SUMMARY.md`, `book.toml` and theme),
//!   the changed pages are built first, beside the pages of the build served
//!   ([`crate::build_changed_pages`]), and served at once; the complete build follows, and its
//!   print page and search index are put into the served folder file by file, each in one
//!   rename.
//! - A successful build is also copied to `book/book` (or the `build-dir` of `book.toml`),
//!   which authors open directly.
//! - Builds hold the repository lock ([`tangle_core::lock`]), so a rebuild never reads a chapter or
//!   a figure that an `accept` is halfway through writing. The lock is taken per build, never
//!   for the server's lifetime.
//! - Changes are reported by the operating system as they are saved ([`Watcher`], through
//!   `notify`); a burst of them (an editor's save, a `git checkout`) makes one rebuild, started
//!   once the files have been quiet for [`QUIET`]. What a rebuild writes itself (sealed
//!   generated files, the lock file) makes no other; the same files written at another time
//!   (`tangle sync --discard`) do. Besides the book's folders, what the last check found the
//!   runs read elsewhere is watched ([`Watcher::watch_outside`]): declared data files and
//!   folders, and the crates used by `path`. A save during a check stops the chapter programs
//!   it runs ([`tangle_core::run::saved`]): one stuck in a loop does not hold the rebuild
//!   that follows up to its timeout.
//! - Each build checks the chapters as `book` does; what is wrong (a compile error, a panic, a
//!   drift, a refused directive) goes to the terminal and to a banner atop every served page
//!   ([`problems`]), which a build that finds it fixed takes away.
//! - An edit saved in a generated file under `code/` is untangled into its chapter before the
//!   build ([`tangle_core::pipeline::untangle_edits`]), so the page shows it; an edit that
//!   cannot be untangled is reported, and the file stays as it is. The chapter as serve wrote
//!   it is kept under `target/tangle/untangled/` (a folder per untangle), and a later save of
//!   the chapter that lacks
//!   the lines the edit added (an editor's older copy saved over it) is warned of.
//! - The HTTP side is [`http`]; pages get a live-reload script there, not on disk, and a badge
//!   while a rebuild runs ([`REBUILDING`]): a chapter whose cells take a while to run shows
//!   that the save was seen.

pub mod http;
mod problems;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use anyhow::{Context, bail};
use notify::Watcher as _;
use tangle_core::config::{Config, Layout};

/// What the open pages' badge says while a save is being rebuilt.
pub const REBUILDING: &str = "Rebuilding after your edit: checking the chapters and running what it affects…";

/// How long the watched files must be quiet after a change before the rebuild starts: an
/// editor's save (a temporary file, a rename) or a `git checkout` is a burst of events, which
/// should make one rebuild.
pub const QUIET: Duration = Duration::from_millis(50);

/// The folders and files whose changes call for a rebuild: the book's sources, theme and
/// `book.toml`, the figures and snapshots (an `accept` in a terminal writes them), and the
/// generated crates (an edit there is untangled).
fn watched(layout: &Layout) -> Vec<PathBuf> {
    let paths = [&layout.src, &layout.theme, &layout.figures, &layout.snapshots, &layout.code];
    paths.into_iter().cloned().chain([layout.book_toml()]).map(|p| layout.abs(p)).collect()
}

/// The files the chapter runs of the check under way read, shared by the builds, which set
/// them, and the watcher, which stops the runs when one is saved.
type RunInputs = Arc<std::sync::Mutex<Vec<PathBuf>>>;

/// The operating system's reports of changes to the [`watched`] files.
struct Watcher {
    /// Kept for its watches: dropping it ends them.
    inner: notify::RecommendedWatcher,
    events: mpsc::Receiver<notify::Event>,
    /// When the last rebuild ended, and whether it left edited files under `code/`
    /// ([`Watcher::settle`]).
    rebuilt: Option<(std::time::SystemTime, bool)>,
    layout: Layout,
    /// The watched paths that did not exist when last looked for (watched once they appear).
    missing: Vec<PathBuf>,
    /// What the last check found its runs read outside the [`watched`] folders: a data file, a
    /// data folder, a crate used by path's manifest, build script and `src/`.
    outside: Vec<PathBuf>,
    /// The folders watched for them, each once.
    outside_watches: std::collections::BTreeSet<(PathBuf, bool)>,
}

impl Watcher {
    /// Watches the book at `layout`; `inputs` is what the check under way reads.
    fn new(layout: &Layout, inputs: RunInputs) -> anyhow::Result<Watcher> {
        let (tx, events) = mpsc::channel();
        let inner = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if let Ok(event) = event {
                // A save of what the runs read (a chapter, a data file, book.toml) makes the
                // runs of the check under way moot (one stuck in a loop would hold the rebuild
                // up to its timeout): they stop at once, and the rebuild this event queues runs
                // them again. What the check writes itself (`code/`), or a chapter program
                // writes, stops nothing.
                let inputs = inputs.lock().unwrap_or_else(|e| e.into_inner());
                // A file, or one under a folder (a data folder, a crate's `src/`).
                let saved = event.paths.iter().filter(|p| inputs.iter().any(|i| p.starts_with(i)));
                for time in saved.filter_map(|p| std::fs::metadata(p).ok()?.modified().ok()) {
                    tangle_core::run::saved(time);
                }
                drop(inputs);
                let _ = tx.send(event);
            }
        })
        .context("cannot watch the book's files for changes")?;
        let mut watcher = Watcher {
            inner,
            events,
            rebuilt: None,
            layout: layout.clone(),
            missing: watched(layout),
            outside: Vec::new(),
            outside_watches: Default::default(),
        };
        // The folders that hold the watched paths, on their own, so that a watched folder made
        // after the server started (figures/, code/) is seen being made.
        let mut parents: Vec<PathBuf> =
            watcher.missing.iter().filter_map(|p| p.parent().map(Path::to_path_buf)).collect();
        parents.sort();
        parents.dedup();
        for parent in parents.iter().filter(|p| p.is_dir()) {
            watcher.inner.watch(parent, notify::RecursiveMode::NonRecursive)?;
        }
        watcher.watch_new();
        Ok(watcher)
    }

    /// Watches the watched paths that have appeared since they were last looked for.
    fn watch_new(&mut self) {
        let inner = &mut self.inner;
        self.missing.retain(|path| !(path.exists() && inner.watch(path, notify::RecursiveMode::Recursive).is_ok()));
    }

    /// Watches what the runs read outside the book's folders, as the last check found it. A
    /// folder is watched whole; a file through its folder, not on its own: an editor that saves
    /// by writing a new file and renaming it over the old one would end a watch on the file.
    fn watch_outside(&mut self, outside: &[PathBuf]) {
        self.outside = outside.to_vec();
        for path in outside {
            let watch = match path.is_dir() {
                true => (path.clone(), true),
                false => match path.parent() {
                    Some(parent) => (parent.to_path_buf(), false),
                    None => continue,
                },
            };
            if self.outside_watches.contains(&watch) || !watch.0.is_dir() {
                continue;
            }
            let mode = if watch.1 { notify::RecursiveMode::Recursive } else { notify::RecursiveMode::NonRecursive };
            if self.inner.watch(&watch.0, mode).is_ok() {
                self.outside_watches.insert(watch);
            }
        }
    }

    /// Waits for a change that matters, then for the files to be quiet for [`QUIET`]. Returns
    /// whether any of the changes was under `code/` (an edit there is untangled first).
    fn next_change(&mut self) -> anyhow::Result<bool> {
        let mut events = Vec::new();
        loop {
            let event = self.events.recv().context("the watcher stopped")?;
            if matters(&self.layout, &self.outside, &event) && !self.rebuild_s_own(&event) {
                events.push(event);
                break;
            }
        }
        while let Ok(event) = self.events.recv_timeout(QUIET) {
            events.push(event);
        }
        self.watch_new();
        let code = self.layout.abs(&self.layout.code);
        Ok(events.iter().flat_map(|e| &e.paths).any(|p| p.starts_with(&code) || code.starts_with(p)))
    }

    /// After a rebuild: from now on, a generated file (sealed, under `code/` or the theme)
    /// reported changed but last written before this moment is the rebuild's own write, which
    /// calls for no other rebuild; one written later (`tangle sync --discard` in a terminal)
    /// does. While the rebuild left edited files under `code/` (`edits_left`) it wrote nothing
    /// there, and every write there is someone else's.
    fn settle(&mut self, edits_left: bool) {
        self.rebuilt = Some((std::time::SystemTime::now(), edits_left));
    }

    /// Whether every path of `event` is what the last rebuild wrote itself (see
    /// [`Watcher::settle`]), or no source at all.
    fn rebuild_s_own(&self, event: &notify::Event) -> bool {
        let Some((at, edits_left)) = self.rebuilt else { return false };
        let layout = &self.layout;
        let code = layout.abs(&layout.code);
        let written_before = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).is_ok_and(|t| t <= at);
        let ours =
            |p: &PathBuf| !(edits_left && p.starts_with(&code)) && written_by_tangle(layout, p) && written_before(p);
        !event.paths.is_empty() && event.paths.iter().all(|p| beside_the_sources(layout, p) || ours(p))
    }
}

/// Whether an event tells of a change to a watched file, or to what the runs read `outside`
/// the book's folders: not a mere read, and not in what serve writes itself beside them (the
/// author's copy of the book, its temporary copies, a build folder, the lock file cargo writes).
fn matters(layout: &Layout, outside: &[PathBuf], event: &notify::Event) -> bool {
    if event.kind.is_access() {
        return false;
    }
    let roots = watched(layout);
    event.paths.iter().any(|path| {
        !beside_the_sources(layout, path)
            && (roots.iter().any(|root| path.starts_with(root) || root.starts_with(path))
                || outside.iter().any(|input| path.starts_with(input)))
    })
}

/// Whether `path` is one of the files written beside the watched sources that are no source:
/// the author's copy of the book, temporary files (tangle's own, on their way to a rename), a
/// build folder, the lock file cargo writes, and hidden files and folders (an editor's swap
/// files and settings, `.idea/` in `code/`) other than the `.cargo/` tangle writes, and than an
/// Emacs mark that has just gone.
fn beside_the_sources(layout: &Layout, path: &Path) -> bool {
    // Only the part below the watched folder counts: the project, or a folder book.toml names
    // (`src = ".pages"`), may itself be hidden.
    let roots = watched(layout);
    let inside = match roots.iter().find_map(|root| path.strip_prefix(root).ok()) {
        Some(inside) => inside,
        None => path.file_name().map_or(Path::new(""), Path::new),
    };
    // Emacs's mark on a chapter being edited (`.#ch01.md`, a link to nowhere) stops the book
    // while it exists (mdBook cannot copy it): its going away, when the chapter is saved, is
    // reason to build again. Its coming, as the author starts typing, is not.
    let mark_gone =
        path.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".#")) && path.symlink_metadata().is_err();
    path.starts_with(layout.abs(&layout.build))
        || path == layout.abs(layout.code.join("Cargo.lock"))
        || !mark_gone
            && inside.components().any(|c| {
                let c = c.as_os_str().to_string_lossy();
                c == "target" || (c.starts_with('.') && c != ".cargo" && c != "..")
            })
}

/// Whether `path` is a generated file as tangle left it (under `code/` or the theme, its seal
/// intact): what a rebuild writes itself. A generated file an author edits has lost its seal.
fn written_by_tangle(layout: &Layout, path: &Path) -> bool {
    let (code, theme) = (layout.abs(&layout.code), layout.abs(&layout.theme));
    (path.starts_with(&code) || path.starts_with(&theme))
        && std::fs::read(path).is_ok_and(|bytes| tangle_core::generate::seal::is_intact(&bytes))
}

/// Binds `127.0.0.1:port`, with a message that says what to do when it is taken.
pub fn bind(port: u16) -> anyhow::Result<TcpListener> {
    match TcpListener::bind(("127.0.0.1", port)) {
        Ok(listener) => Ok(listener),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            bail!(
                "port {port} is in use (another `{}`?); pass --port N to serve on another one",
                tangle_core::messages::command("serve")
            )
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
    // A book that cannot be built yet is served too: a page that says why (the banner holds
    // the problems), replaced by the first build a save makes possible.
    let first = match first {
        Ok(site) => site,
        Err(e) => {
            eprintln!("error: the book could not be built: {e:#}\n(the served page says so until a save fixes it)");
            builds.placeholder()?
        }
    };
    let site = http::Site::new(first);
    if !problems.is_empty() {
        site.report(None, problems);
    }
    println!("serving the book on http://127.0.0.1:{port}/ (rebuilds on save, pages reload themselves; Ctrl-C stops)");
    {
        let layout = config.layout.clone();
        let site = site.clone();
        let mut watcher = Watcher::new(&layout, builds.inputs.clone())?;
        watcher.watch_outside(&builds.outside_inputs);
        std::thread::Builder::new().name("tangle-serve-watch".into()).spawn(move || {
            loop {
                match watcher.next_change() {
                    Ok(code) => {
                        site.set_busy(Some(REBUILDING.to_string()));
                        builds.rebuild(&site, code);
                        site.set_busy(None);
                        watcher.settle(builds.edits_left);
                        watcher.watch_outside(&builds.outside_inputs);
                    }
                    Err(e) => {
                        eprintln!("no longer rebuilding on changes: {e:#}");
                        return;
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
    /// The last two builds served (the newest last): older ones are deleted.
    served: Vec<u64>,
    /// The complete build now served, and the stamp of the files that make the book's
    /// structure (`SUMMARY.md`, `book.toml`, theme) it was made from: while they stay the
    /// same, a save renders the changed pages first.
    previous: Option<(crate::Previous, String)>,
    /// Whether the last check stopped at generated files edited by hand: while they are left,
    /// this server writes nothing under `code/`, and a write there is someone else's.
    edits_left: bool,
    /// What the check under way reads, for the watcher.
    inputs: RunInputs,
    /// What the runs read outside the book's folders, as the last check found it
    /// ([`problems::Checked::outside_inputs`]).
    outside_inputs: Vec<PathBuf>,
    /// The chapters this server wrote edits from `code/` into, watched until they are saved
    /// with those edits in (or without them: then an editor's older copy overwrote them).
    untangled_into: Vec<Untangled>,
    /// How many times this server untangled edits (each keeps its copies in a folder of its own).
    untangles: u64,
}

/// A chapter that serve untangled edits into: an editor that still holds the chapter as it was
/// may save that copy over them.
struct Untangled {
    /// The chapter file, relative to the root.
    chapter: PathBuf,
    /// The text serve wrote.
    written: String,
    /// The lines the edits added to the chapter (what an older copy lacks).
    added: Vec<String>,
    /// Where the text serve wrote is kept (relative to the root).
    kept: PathBuf,
    /// The generated files the edits came from.
    from: Vec<PathBuf>,
}

impl Untangled {
    /// Whether the chapter (under `root`), saved again, lost lines the edits added; `None`
    /// while it is as serve wrote it (still to be watched).
    fn lost(&self, root: &Path) -> Option<bool> {
        let now = std::fs::read_to_string(root.join(&self.chapter)).ok()?;
        if now == self.written {
            return None;
        }
        let lines: std::collections::HashSet<&str> = now.lines().collect();
        Some(self.added.iter().any(|l| !lines.contains(l.as_str())))
    }
}

/// The lines an untangle wrote into a chapter (`lines`, one-based, of its new `text`), blank
/// ones aside: what an older copy of the chapter lacks.
fn written_lines(text: &str, lines: &[usize]) -> Vec<String> {
    let all: Vec<&str> = text.lines().collect();
    lines.iter().filter_map(|n| all.get(n - 1)).filter(|l| !l.trim().is_empty()).map(|l| l.to_string()).collect()
}

impl Builds {
    fn new(config: &Config) -> anyhow::Result<Builds> {
        let staging = tangle_core::lock::staging(&config.layout.work_dir(), "serve")?;
        Ok(Builds {
            config: config.clone(),
            staging,
            last: 0,
            served: Vec::new(),
            previous: None,
            edits_left: false,
            inputs: RunInputs::default(),
            outside_inputs: Vec::new(),
            untangled_into: Vec::new(),
            untangles: 0,
        })
    }

    fn dir(&self, n: u64) -> PathBuf {
        self.staging.path().join(format!("build-{n}"))
    }

    /// A new build folder.
    fn next(&mut self) -> PathBuf {
        self.last += 1;
        self.dir(self.last)
    }

    /// Untangles what was saved in `code/` (when anything there changed) and checks the
    /// chapters (under the repository lock, which the caller holds). Returns the
    /// configuration as it is now, what is wrong with the book, and the stamp of the chapters
    /// the check read.
    fn prepare(&mut self, code_changed: bool) -> (Config, Vec<String>, String, Arc<crate::Parsed>) {
        // The configuration as it is now (an edited book.toml takes effect at once).
        let config = Config::load(&self.config.layout.root).unwrap_or_else(|_| self.config.clone());
        // `serve` is the author's loop, never CI's: it writes what the author's edits call for
        // (code/, untangled chapters) whatever the environment says.
        self.watch_untangled();
        let untangled = match code_changed {
            true => tangle_core::pipeline::untangle_edits(&config, tangle_core::pipeline::Writes::Allow),
            false => None,
        };
        match untangled {
            Some(Ok(untangled)) => {
                untangled.report().iter().for_each(|line| println!("{line}"));
                self.remember_untangled(&config, &untangled);
            }
            Some(Err(e)) => eprintln!("could not untangle the edits in code/ (the files stay as they are): {e:#}"),
            None => {}
        }
        let checked = sources_stamp(&config);
        // From here on, a save of what the runs read makes this check's runs moot (see
        // `Watcher::new`): the pages `SUMMARY.md` lists and it, `book.toml`, and what the last
        // check found the runs read outside the book's folders (data, crates used by path).
        // (Not any file of the source folder: a chapter program that writes one would stop
        // itself, again and again.)
        let layout = &config.layout;
        let src = layout.abs(&layout.src);
        let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap_or_default();
        let pages =
            tangle_core::parse::summary::entries(&summary).unwrap_or_default().into_iter().map(|(_, p)| src.join(p));
        let mut inputs: Vec<PathBuf> = pages.chain(self.outside_inputs.iter().cloned()).collect();
        inputs.extend([src.join("SUMMARY.md"), layout.abs(layout.book_toml())]);
        *self.inputs.lock().unwrap_or_else(|e| e.into_inner()) = inputs;
        tangle_core::run::reading_sources();
        let found = problems::check(&config);
        self.edits_left = found.edits_left;
        self.outside_inputs = found.outside_inputs;
        (config, found.problems, checked, Arc::new(found.parsed))
    }

    /// Keeps a copy of each chapter serve just wrote edits into, says to reload it, and watches
    /// it ([`Builds::watch_untangled`]).
    fn remember_untangled(&mut self, config: &Config, untangled: &tangle_core::pipeline::Untangled) {
        let layout = &config.layout;
        // A folder of its own for each untangle: a copy the author has not taken from yet is
        // never overwritten by the next one.
        self.untangles += 1;
        let folder = layout.stamped_dir("untangled").join(self.untangles.to_string());
        for c in untangled.chapters.iter().filter(|c| c.text != c.chapter.source()) {
            let kept = folder.join(&c.chapter.path);
            if let Err(e) = tangle_core::fsutil::write_atomic(&layout.abs(&kept), c.text.as_bytes()) {
                eprintln!("cannot keep a copy of {}: {e:#}", c.chapter.path.display());
            }
            println!(
                "  serve wrote {}: reload it in your editor before you save it there (a copy is kept in {})",
                c.chapter.path.display(),
                kept.display()
            );
            self.untangled_into.retain(|u| u.chapter != c.chapter.path);
            self.untangled_into.push(Untangled {
                chapter: c.chapter.path.clone(),
                written: c.text.clone(),
                added: written_lines(&c.text, &c.lines),
                kept,
                from: c.files.clone(),
            });
        }
    }

    /// After a save: a chapter serve wrote edits into that was saved again without the lines
    /// they added was overwritten by an editor's older copy. Nothing of the edits is anywhere
    /// else by now (`code/` follows the chapter), so say so, and where the copy is.
    fn watch_untangled(&mut self) {
        let root = self.config.layout.root.clone();
        self.untangled_into.retain(|u| match u.lost(&root) {
            None => true,
            Some(false) => false,
            Some(true) => {
                let from: Vec<String> = u.from.iter().map(|p| p.display().to_string()).collect();
                eprintln!(
                    "warning: {} was saved without the edits serve took into it from {} (an editor's copy from \
                     before serve wrote it?): the chapter as serve wrote it is in {}; take what you need from there",
                    u.chapter.display(),
                    from.join(", "),
                    u.kept.display()
                );
                false
            }
        });
    }

    /// Checks the chapters and builds the whole book into a new folder, under the repository
    /// lock, and copies the result to the author's `book/book`. Returns the folder to serve
    /// (if the build succeeded) and what is wrong with the book.
    fn build(&mut self) -> (anyhow::Result<PathBuf>, Vec<String>) {
        let _lock = match tangle_core::lock::acquire_book(
            &self.config.layout,
            tangle_core::lock::Options { what: "serve (rebuilding the book)", ..Default::default() },
        ) {
            Ok(lock) => lock,
            Err(e) => return (Err(e), Vec::new()),
        };
        let (config, mut found, _, parsed) = self.prepare(true);
        let built = self.complete(&config, &parsed);
        if let Err(e) = &built {
            found.extend(problems::from_error(e, &config));
        }
        if let Ok(site) = &built {
            self.served(site);
        }
        (built, found)
    }

    /// After a save (`code_changed`: under `code/`, whose edits are untangled first): checks
    /// the chapters; when only chapters changed, builds their pages first
    /// and serves them at once ([`crate::build_changed_pages`]); then builds the whole book,
    /// whose print page and search index complete the pages served (or which is served, when
    /// no pages were), and copies it to `book/book`.
    fn rebuild(&mut self, site: &http::Site, code_changed: bool) {
        let options = tangle_core::lock::Options { what: "serve (rebuilding the book)", ..Default::default() };
        let _lock = match tangle_core::lock::acquire_book(&self.config.layout, options) {
            Ok(lock) => lock,
            Err(e) => {
                eprintln!("rebuild failed, still serving the previous build: {e:#}");
                return;
            }
        };
        let (config, mut found, checked, parsed) =
            tangle_core::timing::phase("serve: untangle and check", || self.prepare(code_changed));
        // The chapters as the check read them: a build that read them otherwise (saved again
        // meanwhile) is not served with the check's problems; the save has queued a rebuild.
        let as_checked = || sources_stamp(&config) == checked;
        let pages = tangle_core::timing::phase("serve: changed pages", || self.changed_pages(&config, &parsed));
        let pages = match pages {
            Some(pages) if as_checked() => {
                // The pages reload with the edit: what is left (the print page, the search
                // index) does not change what they show.
                site.set_busy(None);
                let generation = site.report(Some(pages.clone()), found.clone());
                self.served(&pages);
                println!("rebuilt the changed pages (build {generation})");
                Some(pages)
            }
            Some(pages) => {
                let _ = std::fs::remove_dir_all(&pages);
                None
            }
            None => None,
        };
        let whole = self.complete(&config, &parsed);
        if !as_checked() {
            // Neither served nor a base for changed pages: the next rebuild builds it all.
            if let Ok(whole) = whole {
                let _ = std::fs::remove_dir_all(whole);
            }
            self.previous = None;
            return;
        }
        match (whole, pages) {
            (Ok(whole), Some(pages)) => {
                let completed = complete_pages(&whole, &pages);
                let _ = std::fs::remove_dir_all(&whole);
                match completed {
                    Ok(()) => {
                        if let Some((previous, _)) = &mut self.previous {
                            previous.site = pages;
                        }
                    }
                    Err(e) => {
                        eprintln!("the print page and search index of the served pages are out of date: {e:#}");
                        self.previous = None;
                    }
                }
            }
            (Ok(whole), None) => {
                let generation = site.report(Some(whole.clone()), found);
                self.served(&whole);
                println!("rebuilt the book (build {generation})");
            }
            (Err(e), _) => {
                eprintln!("rebuild failed, still serving the previous build: {e:#}");
                found.extend(problems::from_error(&e, &config));
                site.report(None, found);
            }
        }
    }

    /// The changed pages built beside the previous complete build, when the book's structure
    /// is as it was then; `None` when they cannot be (the whole book is built instead).
    fn changed_pages(&mut self, config: &Config, parsed: &Arc<crate::Parsed>) -> Option<PathBuf> {
        let (previous, structure) = self.previous.clone()?;
        if structure_stamp(config) != structure {
            return None;
        }
        let out = self.next();
        let built = crate::build_changed_pages(
            config,
            &crate::RenderOptions { dest: Some(out.clone()), parsed: parsed.clone() },
            &previous,
        );
        match built {
            Ok(rendered) => Some(rendered.site),
            Err(_) => {
                // The complete build that follows reports why.
                let _ = std::fs::remove_dir_all(&out);
                None
            }
        }
    }

    /// Builds the whole book into a new folder and copies it to `book/book`; remembers it as
    /// the previous complete build.
    fn complete(&mut self, config: &Config, parsed: &Arc<crate::Parsed>) -> anyhow::Result<PathBuf> {
        let structure = structure_stamp(config);
        let out = self.next();
        let built = build_into(config, &out, parsed).and_then(|(rendered, book_dir)| {
            mirror(&rendered.site, &book_dir).with_context(|| format!("cannot update {}", book_dir.display()))?;
            Ok(rendered)
        });
        match built {
            Ok(rendered) => {
                let previous = crate::Previous { site: rendered.site.clone(), chapters: rendered.chapters };
                self.previous = Some((previous, structure));
                Ok(rendered.site)
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&out);
                self.previous = None;
                Err(e)
            }
        }
    }

    /// A build folder holding only a page that says the book could not be built, for
    /// [`http::Site`] to serve (with the problems' banner) until a build succeeds.
    fn placeholder(&mut self) -> anyhow::Result<PathBuf> {
        let dir = self.next();
        std::fs::create_dir_all(&dir)?;
        let page = "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"UTF-8\"><title>Not built yet</title></head>\n\
                    <body>\n<p style=\"margin-top:40vh;text-align:center;font-family:sans-serif\">The book could not be \
                    built: see what is wrong above. This page reloads when a save fixes it.</p>\n</body>\n</html>\n";
        for name in ["index.html", "404.html"] {
            std::fs::write(dir.join(name), page)?;
        }
        self.served(&dir);
        Ok(dir)
    }

    /// Records that the build in `site` is served, and deletes the builds served before the
    /// previous one (a request may still be reading the previous one).
    fn served(&mut self, site: &Path) {
        let Some(n) = (1..=self.last).rev().find(|&n| site.starts_with(self.dir(n))) else { return };
        self.served.push(n);
        while self.served.len() > 2 {
            let old = self.served.remove(0);
            let _ = std::fs::remove_dir_all(self.dir(old));
        }
    }
}

/// The stamp of the chapters (every file under the book's source folder).
fn sources_stamp(config: &Config) -> String {
    crate::cache::stamp("sources", &[config.layout.abs(&config.layout.src)], &[]).hex
}

/// The stamp of the files that make the book's structure: `SUMMARY.md`, `book.toml`, the
/// theme. Pages of a build made under another stamp are not taken into a new one.
fn structure_stamp(config: &Config) -> String {
    let layout = &config.layout;
    let files = [layout.src.join("SUMMARY.md"), layout.book_toml(), layout.theme.clone()].map(|p| layout.abs(p));
    crate::cache::stamp("structure", &files, &[]).hex
}

/// Makes the changed pages served from `pages` what the complete build in `whole` is, file by
/// file: each file that differs is replaced in one rename (a reader never gets half a file),
/// then the files `whole` lacks are removed (search indexes aside: a page served earlier may
/// still ask for its own). The pages read the same; what changes is the
/// print page, the search index, and the pages' links to the index (its name carries a hash
/// of its contents when `hash-files` is on).
fn complete_pages(whole: &Path, pages: &Path) -> anyhow::Result<()> {
    let mut kept = std::collections::HashSet::new();
    for entry in walkdir::WalkDir::new(whole) {
        let entry = entry?;
        let rel = entry.path().strip_prefix(whole)?.to_path_buf();
        let target = pages.join(&rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target)?;
        } else {
            let bytes = std::fs::read(entry.path())?;
            if std::fs::read(&target).ok().as_ref() != Some(&bytes) {
                tangle_core::fsutil::write_atomic(&target, &bytes)?;
            }
        }
        kept.insert(rel);
    }
    for entry in walkdir::WalkDir::new(pages).contents_first(true) {
        let entry = entry?;
        let rel = entry.path().strip_prefix(pages)?;
        // An open page may still ask for the search index it was served with.
        let index = rel.to_string_lossy().starts_with("searchindex");
        if !rel.as_os_str().is_empty() && !kept.contains(rel) && !index {
            match entry.file_type().is_dir() {
                true => std::fs::remove_dir(entry.path())?,
                false => std::fs::remove_file(entry.path())?,
            }
        }
    }
    Ok(())
}

/// Builds the HTML book into `out`, from the pages the check parsed. Returns what was built and
/// the author's configured build folder (`book/book`, or its `html` subfolder when mdBook put
/// the site in one).
pub fn build_into(
    config: &Config,
    out: &Path,
    parsed: &Arc<crate::Parsed>,
) -> anyhow::Result<(crate::Rendered, PathBuf)> {
    let layout = &config.layout;
    // Read afresh: a broken book.toml fails the build (and the served book stays).
    let book_toml = layout.abs(layout.book_toml());
    mdbook_driver::config::Config::from_disk(&book_toml).with_context(|| format!("reading {}", book_toml.display()))?;
    let authors_dir = layout.abs(&layout.build);
    let rendered = super::book::build_book(
        config,
        &super::RenderOptions { dest: Some(out.to_path_buf()), parsed: parsed.clone() },
    )?;
    // With more than one renderer, mdBook puts each in a subfolder.
    let authors_dir = match out.join("index.html").is_file() {
        true => authors_dir,
        false => authors_dir.join("html"),
    };
    Ok((rendered, authors_dir))
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
    #[test]
    fn a_chapter_saved_from_an_editor_s_older_copy_is_told_from_one_saved_with_the_edits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ch01.md");
        let after = "a\n/// Why.\nb\n";
        std::fs::write(&path, after).unwrap();
        let u = super::Untangled {
            chapter: "ch01.md".into(),
            written: after.to_string(),
            added: super::written_lines(after, &[2]),
            kept: "kept/ch01.md".into(),
            from: vec!["code/ch01/src/lib.rs".into()],
        };
        assert_eq!(u.added, ["/// Why."]);
        // As serve wrote it: still watched.
        assert_eq!(u.lost(dir.path()), None);
        // Saved again with the edit in, and more: fine.
        std::fs::write(&path, "a\n/// Why.\nb\nmore\n").unwrap();
        assert_eq!(u.lost(dir.path()), Some(false));
        // Saved from a copy older than the edit: the edit is lost.
        std::fs::write(&path, "a\nb\nmore\n").unwrap();
        assert_eq!(u.lost(dir.path()), Some(true));
    }

    use super::*;

    #[test]
    fn an_editor_s_hidden_files_call_for_no_rebuild() {
        let dir = tempfile::tempdir().unwrap();
        // The project itself in a hidden folder: only what lies inside it is judged.
        let root = dir.path().join(".books/mine");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("book.toml"), "[book]\ntitle = \"T\"\n").unwrap();
        let layout = Config::load(&root).unwrap().layout;
        for source in ["src/ch01.md", "code/.cargo/config.toml", "code/ch01/src/lib.rs"] {
            assert!(!beside_the_sources(&layout, &root.join(source)), "{source} is a source");
        }
        for other in ["src/.ch01.md.swp", "code/.idea/workspace.xml", "code/.vscode/settings.json", "src/.DS_Store"] {
            assert!(beside_the_sources(&layout, &root.join(other)), "{other} is no source");
        }
        // Emacs's mark on a chapter being edited: its coming calls for no rebuild, its going
        // (the book builds again) does.
        let mark = root.join("src/.#ch01.md");
        std::os::unix::fs::symlink("someone@host.1:2", &mark).unwrap();
        assert!(beside_the_sources(&layout, &mark), "a mark that comes is no source");
        std::fs::remove_file(&mark).unwrap();
        assert!(!beside_the_sources(&layout, &mark), "a mark that goes is reason to rebuild");
        // A source folder that is itself hidden is still watched.
        std::fs::write(root.join("book.toml"), "[book]\ntitle = \"T\"\nsrc = \".pages\"\n").unwrap();
        let layout = Config::load(&root).unwrap().layout;
        assert!(!beside_the_sources(&layout, &root.join(".pages/ch01.md")));
        assert!(beside_the_sources(&layout, &root.join(".pages/.ch01.md.swp")));
    }

    fn tiny_book(root: &Path) {
        std::fs::create_dir_all(root.join("book/src")).unwrap();
        std::fs::write(root.join("book/book.toml"), "[book]\ntitle = \"T\"\n\n[preprocessor.tangle]\nroot = \"..\"\n")
            .unwrap();
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
    fn a_saved_chapter_is_served_from_its_changed_pages_then_completed() {
        let root = tempfile::tempdir().unwrap();
        tiny_book(root.path());
        let summary = "# Summary\n\n- [One](ch01.md)\n- [Two](ch02.md)\n";
        std::fs::write(root.path().join("book/src/SUMMARY.md"), summary).unwrap();
        std::fs::write(root.path().join("book/src/ch02.md"), "# 2 Two\n\nSee Chapter 1.\n").unwrap();
        let mut builds = Builds::new(&Config::load(root.path()).unwrap()).unwrap();
        let first = builds.build().0.unwrap();
        let site = http::Site::new(first.clone());
        std::fs::write(root.path().join("book/src/ch01.md"), "# 1 One\n\nSaved words.\n").unwrap();
        builds.rebuild(&site, false);
        let (served, generation) = site.current();
        assert_eq!(generation, 2, "one new generation: the changed pages");
        assert!(std::fs::read_to_string(served.join("ch01.html")).unwrap().contains("Saved words."));
        assert!(std::fs::read_to_string(served.join("print.html")).unwrap().contains("Saved words."));
        // Completed, the served folder is the complete build, file by file.
        let book = root.path().join("book/book");
        for entry in walkdir::WalkDir::new(&book).into_iter().flatten().filter(|e| e.file_type().is_file()) {
            let rel = entry.path().strip_prefix(&book).unwrap();
            assert_eq!(std::fs::read(served.join(rel)).ok(), Some(std::fs::read(entry.path()).unwrap()), "{rel:?}");
        }
        // A change to the book's structure builds it all.
        std::fs::write(root.path().join("book/src/SUMMARY.md"), "# Summary\n\n- [One](ch01.md)\n").unwrap();
        builds.rebuild(&site, false);
        let (served, generation) = site.current();
        assert_eq!(generation, 3);
        assert!(!served.join("ch02.html").exists());
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
    fn a_chapter_the_check_could_not_read_is_shown_as_text_and_reported_once() {
        let root = tempfile::tempdir().unwrap();
        tiny_book(root.path());
        std::fs::write(root.path().join("book/src/ch01.md"), "# 1 One\n\n```rust\nlet x = 1;\n").unwrap();
        let config = Config::load(root.path()).unwrap();
        let checked = problems::check(&config);
        assert!(checked.problems.iter().any(|p| p.contains("never closed")), "{:?}", checked.problems);
        let warned = |parsed: crate::Parsed, out: &str| -> Vec<String> {
            let (rendered, _) = build_into(&config, &root.path().join(out), &Arc::new(parsed)).unwrap();
            rendered.warnings
        };
        let after_the_check = warned(checked.parsed, "after");
        assert!(!after_the_check.iter().any(|w| w.contains("never closed")), "{after_the_check:?}");
        // Built with no check before it, the renderer says it.
        let alone = warned(crate::Parsed::default(), "alone");
        assert!(alone.iter().any(|w| w.contains("never closed")), "{alone:?}");
    }

    #[test]
    fn an_edit_saved_in_a_generated_file_is_untangled_into_the_page() {
        let root = tempfile::tempdir().unwrap();
        tiny_book(root.path());
        let chapter = "# 1 One\n\n```rust\n// @save\n/// First words.\npub fn one() -> u32 {\n    1\n}\n```\n";
        std::fs::write(root.path().join("book/src/ch01.md"), chapter).unwrap();
        let config = Config::load(root.path()).unwrap();
        tangle_core::pipeline::Project::from_config(config.clone())
            .unwrap()
            .sync(&tangle_core::generate::sync::Discard::Nothing)
            .unwrap();
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
        assert!(tangle_core::pipeline::Project::from_config(config).unwrap().stale().unwrap().is_empty());
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
