//! The run cache: a chapter whose generated code (its plain comments aside, [`comments`]),
//! dependency chapters, `Cargo.lock`, runtime, compiler, crates used by path ([`local_crates`]) and
//! declared data files hash the same as at one of its last completed runs is neither rebuilt nor
//! rerun; the recorded outputs are compared instead. A pure function of those inputs, stored under
//! `target/tangle/cache/`: the last run of each chapter, and up to three earlier ones ([`store`],
//! [`lookup`]). The key leaves out where the cells stand in the chapter (prose around them may
//! change), so a recorded chapter line is kept as a line of a cell and found again in the chapter
//! as it is now: every location from a cached run is current.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::{Config, Layout};
use crate::generate::{self, Analyses, CellSyntax, Generated};
use crate::model::Chapter;
use crate::run::RunOutput;

mod comments;
pub(crate) use comments::without_comments;

/// Bumped whenever the meaning of a cached run changes.
const VERSION: &str = concat!("tangle-cache-4:", env!("CARGO_PKG_VERSION"));

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    key: String,
    run: RunOutput,
    /// For each published value of `run`, where its call stands: the cell (among all the
    /// chapter's cells) and the line within the cell's code, when it lies in one.
    #[serde(default)]
    anchors: Vec<Option<(usize, usize)>>,
}

fn entry_path(layout: &Layout, chapter: &str) -> PathBuf {
    layout.work_dir().join("cache").join(format!("{chapter}.json"))
}

/// Labelled, length-prefixed input to a hash, so that no two input lists collide (the run
/// cache's keys, frozen records' hashes, and the renderer's cache keys).
pub fn feed(h: &mut Sha256, label: &str, bytes: &[u8]) {
    h.update((label.len() as u64).to_le_bytes());
    h.update(label.as_bytes());
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

/// The hash's digest, in lowercase hexadecimal.
pub fn hex(h: Sha256) -> String {
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// What every chapter's run depends on alike, read once per check: the compiler, the
/// generated crates every chapter links (the runtime, its bundled font included, as the tool
/// holds it), and the lock file and workspace manifest, of which each chapter's key takes only
/// its own part ([`key`]).
pub(crate) struct Shared {
    hash: String,
    /// `code/Cargo.lock`'s packages (none when there is no lock file yet).
    lock: Lock,
    /// The chapter workspace's manifest as generated, parsed.
    workspace: toml::Table,
    /// Each chapter crate's code, digested once per check: a chapter's key takes the digests
    /// of the crates it builds on, each of which a long book's later chapters all share (a
    /// book of 200 chapters, each importing the ones before, spent seconds hashing the same
    /// files again for every chapter).
    code: std::collections::HashMap<String, CrateCode>,
    /// Each chapter's declared data files, digested when a key first needs them: a file that
    /// cannot be read is an error only for the chapters that build on that chapter.
    data: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

/// The digests of a chapter crate's generated code, by what reads it (location comments aside).
struct CrateCode {
    /// The library: what every chapter that imports it builds with.
    library: String,
    /// The chapter's run program (`src/main.rs`).
    program: String,
    /// The chapter's test cells (`tests/`).
    tests: String,
    /// The `[workspace.dependencies]` its manifests use.
    deps: CrateDeps,
}

impl CrateCode {
    fn of(krate: &generate::ChapterCrate) -> CrateCode {
        let (mut library, mut program, mut tests) = (Sha256::new(), Sha256::new(), Sha256::new());
        for (path, contents) in &krate.files {
            let part = if path.components().any(|c| c.as_os_str() == "tests") {
                &mut tests
            } else if path.ends_with("src/main.rs") {
                &mut program
            } else {
                &mut library
            };
            let code = contents.lines().filter(|l| !generate::is_location_comment(l)).collect::<Vec<_>>().join("\n");
            // What the program can see of its source: no plain comment (rewording one reruns
            // nothing), every token and doc comment where it stands.
            feed(part, &path.display().to_string(), &code_of(path, code.as_bytes()));
        }
        CrateCode { library: hex(library), program: hex(program), tests: hex(tests), deps: CrateDeps::of(krate) }
    }
}

/// A generated file as a run can depend on it: a Rust file without its comments, any other
/// file as it is.
pub(crate) fn code_of<'b>(path: &Path, bytes: &'b [u8]) -> std::borrow::Cow<'b, [u8]> {
    match (path.extension().is_some_and(|e| e == "rs"), std::str::from_utf8(bytes)) {
        (true, Ok(text)) => std::borrow::Cow::Owned(without_comments(text).into_bytes()),
        _ => std::borrow::Cow::Borrowed(bytes),
    }
}

/// Reads the [`Shared`] inputs.
pub(crate) fn shared_inputs(layout: &Layout, generated: &Generated, config: &Config) -> Shared {
    let mut h = Sha256::new();
    feed(&mut h, "version", VERSION.as_bytes());
    feed(&mut h, "crates used by path", local_crates(layout, &config.dependencies).as_bytes());
    // Another compiler may print otherwise, or refuse what this one built (a nightly
    // feature): a run it did not make answers nothing. (If rustc cannot run, neither can the
    // build that follows, which says why.)
    let rustc = crate::build::compiler_version(&layout.abs(&layout.code)).unwrap_or_default();
    feed(&mut h, "rustc -V", rustc.as_bytes());
    for (path, bytes) in generated.support.iter().filter(|(p, _)| p.starts_with(&generated.code)) {
        feed(&mut h, &path.display().to_string(), &code_of(path, bytes));
    }
    let lock_text = std::fs::read_to_string(layout.abs(layout.code.join("Cargo.lock"))).unwrap_or_default();
    let lock = match packages(&lock_text) {
        Ok(lock) => lock,
        // A lock file that does not parse is taken whole: any change of it reruns everything.
        Err(_) => {
            feed(&mut h, "Cargo.lock", lock_text.as_bytes());
            Vec::new()
        }
    };
    let workspace = toml::from_str(&generated.workspace.1).unwrap_or_else(|_| {
        feed(&mut h, "Cargo.toml", generated.workspace.1.as_bytes());
        toml::Table::new()
    });
    let code = generated.crates.iter().map(|c| (c.name().to_string(), CrateCode::of(c))).collect();
    Shared { hash: hex(h), lock: Lock::new(&lock), workspace, code, data: Default::default() }
}

/// The hash of everything a chapter's run depends on: the [`shared_inputs`], with the packages
/// of the lock file it builds with and the workspace manifest without the other chapters'
/// entries (so that a new chapter reruns no other), and its own and its dependency chapters'
/// code (location comments aside) and declared data files.
pub(crate) fn key(layout: &Layout, shared: &Shared, generated: &Generated, chapter: &str) -> anyhow::Result<String> {
    key_of(layout, shared, generated, chapter, What::Run)
}

/// The hash of everything a chapter's test cells depend on: [`key`]'s inputs with the
/// chapter's own test file instead of its run program.
pub(crate) fn tests_key(
    layout: &Layout,
    shared: &Shared,
    generated: &Generated,
    chapter: &str,
) -> anyhow::Result<String> {
    key_of(layout, shared, generated, chapter, What::Tests)
}

#[derive(PartialEq, Eq)]
enum What {
    Run,
    Tests,
}

fn key_of(
    layout: &Layout,
    shared: &Shared,
    generated: &Generated,
    chapter: &str,
    what: What,
) -> anyhow::Result<String> {
    let mut h = Sha256::new();
    let mut feed = |label: &str, bytes: &[u8]| feed(&mut h, label, bytes);
    feed("shared", shared.hash.as_bytes());
    let closure = generated.closure(chapter);
    let names: Vec<&str> = closure.iter().map(|k| k.name()).collect();
    feed("Cargo.lock", shared.lock.digest(chapter, &names).as_bytes());
    let deps = closure.iter().filter_map(|k| Some((k.name(), &shared.code.get(k.name())?.deps)));
    let used = used_keys(deps, chapter, what == What::Tests);
    feed("Cargo.toml", workspace_digest(&shared.workspace, chapter, Some(&used)).as_bytes());
    if what == What::Tests {
        feed("what", b"tests");
    }
    for krate in closure {
        let name = krate.name();
        let code = shared.code.get(name).ok_or_else(|| anyhow::anyhow!("no generated crate {name}"))?;
        feed(&format!("{name} library"), code.library.as_bytes());
        match what {
            _ if name != chapter => {}
            What::Run => feed(&format!("{name} program"), code.program.as_bytes()),
            What::Tests => feed(&format!("{name} tests"), code.tests.as_bytes()),
        }
        feed(&format!("{name} data"), shared.data_digest(layout, &krate.chapter)?.as_bytes());
    }
    Ok(hex(h))
}

impl Shared {
    /// The digest of `chapter`'s declared data files, read once per check.
    fn data_digest(&self, layout: &Layout, chapter: &Chapter) -> anyhow::Result<String> {
        let known = self.data.lock().unwrap_or_else(|e| e.into_inner()).get(&chapter.name).cloned();
        if let Some(digest) = known {
            return Ok(digest);
        }
        let mut h = Sha256::new();
        for (data, bytes) in data_files(layout, chapter)? {
            feed(&mut h, &data, &bytes);
        }
        let digest = hex(h);
        self.data.lock().unwrap_or_else(|e| e.into_inner()).insert(chapter.name.clone(), digest.clone());
        Ok(digest)
    }
}

/// The files `chapter` declares it reads (`<!-- tangle: data FILE -->`), each named from the
/// project root with `/` between folders and with its bytes; a declared folder gives every file
/// under it, in order of name. An error at the directive of one that cannot be read.
pub(crate) fn data_files(layout: &Layout, chapter: &Chapter) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for (data, line) in &chapter.directives.data {
        let unreadable = |what: &Path, e: &dyn std::fmt::Display| {
            crate::diagnostic::Diagnostic::error(
                chapter.location(*line),
                format!("the declared data file {} cannot be read: {e}", what.display()),
            )
        };
        let path = layout.abs(data);
        if !path.is_dir() {
            let bytes = std::fs::read(&path).map_err(|e| unreadable(data, &e))?;
            out.push((crate::fsutil::slashed(data), bytes));
            continue;
        }
        for entry in walkdir::WalkDir::new(&path).follow_links(true).sort_by_file_name() {
            let entry = entry.map_err(|e| unreadable(data, &e))?;
            if entry.file_type().is_dir() {
                continue;
            }
            let name = data.join(entry.path().strip_prefix(&path).unwrap_or(entry.path()));
            let bytes = std::fs::read(entry.path()).map_err(|e| unreadable(&name, &e))?;
            out.push((crate::fsutil::slashed(&name), bytes));
        }
    }
    Ok(out)
}

/// The crates the book uses by `path` (a project's own crate, a crate of listings beside the
/// book), as cargo builds them: each one's manifest, build script and `src/` files, and so on
/// for the crates it uses by path in turn. A change there changes what cells and examples build
/// against, and neither they nor a lock file show it. Hashed anew on every check, which costs
/// nothing for a book without such crates.
pub(crate) fn local_crates(layout: &Layout, dependencies: &BTreeMap<String, toml::Value>) -> String {
    let mut h = Sha256::new();
    // Paths with `/` and text with `\n`, as the frozen records read them (which take this
    // digest too): the same on every machine and checkout. Relative to the root even above it
    // (`../src/lib.rs`), so that no absolute path of this checkout enters the digest.
    let label = |file: &Path| crate::fsutil::slashed(&crate::config::relative_to(file, Path::new(""), &layout.root));
    for dir in local_crate_dirs(layout, dependencies) {
        let manifest = std::fs::read(dir.join("Cargo.toml")).unwrap_or_default();
        feed(&mut h, &label(&dir.join("Cargo.toml")), &crate::fsutil::lf(&manifest));
        let sources = walkdir::WalkDir::new(dir.join("src")).sort_by_file_name().into_iter().filter_map(Result::ok);
        let files = sources.filter(|e| e.file_type().is_file()).map(walkdir::DirEntry::into_path);
        for file in std::iter::once(dir.join("build.rs")).chain(files) {
            if let Ok(bytes) = std::fs::read(&file) {
                feed(&mut h, &label(&file), &crate::fsutil::lf(&bytes));
            }
        }
    }
    hex(h)
}

/// The folders of the crates the book uses by `path`, and of the crates they use by path in
/// turn (absolute, each once): the ones [`local_crates`] digests.
fn local_crate_dirs(layout: &Layout, dependencies: &BTreeMap<String, toml::Value>) -> Vec<PathBuf> {
    let by_path = |spec: &toml::Value| spec.get("path")?.as_str().map(PathBuf::from);
    let mut todo: Vec<PathBuf> = dependencies.values().filter_map(by_path).map(|p| layout.abs(&p)).collect();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    while let Some(dir) = todo.pop() {
        let dir = crate::config::normalize(&dir);
        if !seen.insert(dir.clone()) {
            continue;
        }
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
        if let Ok(doc) = toml::from_str::<toml::Table>(&manifest) {
            let targets = doc.get("target").and_then(|t| t.as_table()).into_iter().flat_map(|t| t.values());
            let tables = [&doc].into_iter().map(|d| d as &toml::Table).chain(targets.filter_map(|t| t.as_table()));
            for table in tables {
                for kind in ["dependencies", "build-dependencies"] {
                    let specs = table.get(kind).and_then(|d| d.as_table()).into_iter().flat_map(|d| d.values());
                    todo.extend(specs.filter_map(by_path).map(|p| dir.join(p)));
                }
            }
        }
        out.push(dir);
    }
    out
}

/// What the chapters' runs read outside the book's own folders, so that a change there calls
/// for running them again (absolute paths): the declared data files and folders (`<!-- tangle: data -->`), and the manifest,
/// build script and `src/` of each crate used by path. `serve` watches them.
pub fn outside_inputs<'a>(
    layout: &Layout,
    dependencies: &BTreeMap<String, toml::Value>,
    chapters: impl IntoIterator<Item = &'a Chapter>,
) -> Vec<PathBuf> {
    let data = chapters.into_iter().flat_map(|c| c.directives.data.iter().map(|(d, _)| layout.abs(d)));
    let crates = local_crate_dirs(layout, dependencies)
        .into_iter()
        .flat_map(|dir| [dir.join("Cargo.toml"), dir.join("build.rs"), dir.join("src")]);
    let mut out: Vec<PathBuf> = data.chain(crates).collect();
    out.sort();
    out.dedup();
    out
}

/// `code/Cargo.lock`'s packages, each one's dependencies resolved to the packages they name
/// once, so that [`Lock::digest`] walks a chapter's part of the graph without searching the
/// file again for every edge (a book of 200 chapters, each importing the ones before, spent
/// seconds of every `check` searching).
#[derive(Debug, Clone, Default)]
pub(crate) struct Lock {
    /// Each package's `name`.
    names: Vec<String>,
    /// Each package's entry as TOML: what the digest takes.
    entries: Vec<String>,
    /// The packages each package depends on.
    deps: Vec<Vec<usize>>,
}

impl Lock {
    pub(crate) fn new(packages: &[toml::Table]) -> Lock {
        let field = |p: &toml::Table, key: &str| p.get(key).and_then(|n| n.as_str()).unwrap_or("").to_string();
        let names: Vec<String> = packages.iter().map(|p| field(p, "name")).collect();
        let mut by_name: std::collections::HashMap<&str, Vec<usize>> = Default::default();
        for (i, name) in names.iter().enumerate() {
            by_name.entry(name).or_default().push(i);
        }
        let deps = packages
            .iter()
            .map(|p| {
                let listed = p.get("dependencies").and_then(|d| d.as_array()).into_iter().flatten();
                listed
                    .filter_map(|d| d.as_str())
                    .flat_map(|dep| {
                        // `name`, `name version` or `name version (source)`.
                        let mut words = dep.split_whitespace();
                        let name = words.next().unwrap_or("");
                        let version = words.next();
                        let same = by_name.get(name).map(Vec::as_slice).unwrap_or_default();
                        same.iter()
                            .copied()
                            .filter(move |&i| version.is_none_or(|v| field(&packages[i], "version") == v))
                    })
                    .collect()
            })
            .collect();
        let entries = packages.iter().map(|p| toml::to_string(p).unwrap_or_default()).collect();
        Lock { names, entries, deps }
    }

    /// The digest of the packages that the chapters `names` (the frozen one's program and
    /// libraries) build with: everything reachable from them in the lock file's graph, sorted.
    pub(crate) fn digest(&self, chapter: &str, names: &[&str]) -> String {
        let run = generate::run_package(chapter);
        let wanted: BTreeSet<&str> = names.iter().copied().chain([run.as_str()]).collect();
        let mut todo: Vec<usize> = (0..self.names.len()).filter(|&i| wanted.contains(self.names[i].as_str())).collect();
        let mut seen = vec![false; self.names.len()];
        while let Some(i) = todo.pop() {
            if !std::mem::replace(&mut seen[i], true) {
                todo.extend(&self.deps[i]);
            }
        }
        let mut entries: Vec<&str> = (0..seen.len()).filter(|&i| seen[i]).map(|i| self.entries[i].as_str()).collect();
        entries.sort();
        let mut h = Sha256::new();
        for e in entries {
            feed(&mut h, "package", e.as_bytes());
        }
        hex(h)
    }
}

/// The workspace manifest without what concerns other chapters: its member list, the profiles
/// of the other chapters' programs, and, given the crates `used` by the chapter and the chapters
/// it imports ([`workspace_keys`]), the other entries of `[workspace.dependencies]` (`None`
/// keeps them all, as frozen records made before tangle-frozen-3 were hashed).
pub(crate) fn workspace_digest(workspace: &toml::Table, chapter: &str, used: Option<&BTreeSet<String>>) -> String {
    let mut manifest = workspace.clone();
    if let Some(toml::Value::Table(ws)) = manifest.get_mut("workspace") {
        ws.remove("members");
        if let (Some(used), Some(toml::Value::Table(deps))) = (used, ws.get_mut("dependencies")) {
            deps.retain(|key, _| used.contains(key));
        }
    }
    let run = generate::run_package(chapter);
    let packages = manifest
        .get_mut("profile")
        .and_then(|p| p.get_mut("release"))
        .and_then(|r| r.get_mut("package"))
        .and_then(|p| p.as_table_mut());
    if let Some(packages) = packages {
        packages.retain(|name, _| name == "*" || *name == run || !name.ends_with("-run"));
    }
    let mut h = Sha256::new();
    h.update(toml::to_string(&manifest).unwrap_or_default().as_bytes());
    hex(h)
}

/// The keys of `[workspace.dependencies]` (`rand.workspace = true`) that what `chapter` runs
/// builds with uses: the `[dependencies]` of its library and program, and of the libraries of
/// the chapters it imports (`crates`, its closure); with `tests`, its test cells'
/// `[dev-dependencies]` too. What the book declares for other chapters, or for the programs
/// and tests of the chapters it imports, its build cannot see.
pub(crate) fn workspace_keys(crates: &[&generate::ChapterCrate], chapter: &str, tests: bool) -> BTreeSet<String> {
    let deps: Vec<(&str, CrateDeps)> = crates.iter().map(|k| (k.name(), CrateDeps::of(k))).collect();
    used_keys(deps.iter().map(|(name, d)| (*name, d)), chapter, tests)
}

/// [`workspace_keys`] of crates whose [`CrateDeps`] are known.
fn used_keys<'a>(
    crates: impl Iterator<Item = (&'a str, &'a CrateDeps)>,
    chapter: &str,
    tests: bool,
) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for (name, deps) in crates {
        used.extend(deps.library.iter().cloned());
        if name == chapter {
            used.extend(deps.program.iter().cloned());
            if tests {
                used.extend(deps.tests.iter().cloned());
            }
        }
    }
    used
}

/// The keys of `[workspace.dependencies]` one chapter crate's manifests use, by what builds
/// with them: read once per command, and shared by every chapter that imports the crate.
#[derive(Debug, Default)]
struct CrateDeps {
    /// Its library's `[dependencies]`.
    library: BTreeSet<String>,
    /// Its program's (`run/Cargo.toml`).
    program: BTreeSet<String>,
    /// Its test cells' (the library's `[dev-dependencies]`).
    tests: BTreeSet<String>,
}

impl CrateDeps {
    fn of(krate: &generate::ChapterCrate) -> CrateDeps {
        let mut deps = CrateDeps::default();
        for (path, text) in krate.files.iter().filter(|(path, _)| path.ends_with("Cargo.toml")) {
            let Ok(manifest) = toml::from_str::<toml::Table>(text) else { continue };
            let program = path.parent().and_then(Path::file_name).is_some_and(|d| d == "run");
            let inherited = |section: &str| -> BTreeSet<String> {
                let Some(toml::Value::Table(table)) = manifest.get(section) else { return BTreeSet::new() };
                let inherits = |spec: &toml::Value| spec.get("workspace").and_then(toml::Value::as_bool) == Some(true);
                table.iter().filter(|(_, spec)| inherits(spec)).map(|(key, _)| key.clone()).collect()
            };
            match program {
                true => deps.program.extend(inherited("dependencies")),
                false => {
                    deps.library.extend(inherited("dependencies"));
                    deps.tests.extend(inherited("dev-dependencies"));
                }
            }
        }
        deps
    }
}

/// The `[[package]]` tables of a lock file.
pub(crate) fn packages(text: &str) -> Result<Vec<toml::Table>, toml::de::Error> {
    let lock: toml::Table = toml::from_str(text)?;
    Ok(lock
        .get("package")
        .and_then(|p| p.as_array())
        .map(|list| list.iter().filter_map(|p| p.as_table().cloned()).collect())
        .unwrap_or_default())
}

/// The recorded run for `chapter` under `key`, its locations moved to where the cells stand now.
/// The last run is looked at first; an earlier one of the same key (an edit undone, a branch
/// checked out again) takes its place, with its figures, and the last run becomes an earlier one.
pub(crate) fn lookup(layout: &Layout, chapter: &Chapter, key: &str) -> Option<RunOutput> {
    let last = read_entry(&entry_path(layout, &chapter.name)).filter(|e| e.key == key);
    let entry = match last {
        Some(entry) => entry,
        None => bring_back(layout, &chapter.name, key)?,
    };
    let mut run = entry.run;
    for (value, anchor) in run.values.iter_mut().zip(&entry.anchors) {
        if let (Some((_, column)), Some((cell, offset))) = (value.at, anchor) {
            value.at = chapter.cells.get(*cell).map(|c| (c.code_line + offset, column));
        }
    }
    Some(run)
}

/// Records a completed run of `chapter` as it stands now, with the figures it drew into `drawn`
/// (a folder of their own, moved into the cache). The run it replaces is kept as an earlier one.
pub fn store(layout: &Layout, chapter: &Chapter, key: &str, run: &RunOutput, drawn: &Path) -> anyhow::Result<()> {
    let name = &chapter.name;
    set_aside(layout, name, key)?;
    forget_oldest(layout, name)?;
    keep_figures(drawn, &kept_figures(layout).join(name))?;
    let anchors = run.values.iter().map(|v| v.at.and_then(|(line, _)| anchor(chapter, line))).collect();
    let entry = Entry { key: key.to_string(), run: run.clone(), anchors };
    crate::fsutil::write_atomic(&entry_path(layout, name), &serde_json::to_vec(&entry)?)
}

/// Where the figures of each chapter's last completed run are kept (`<dir>/chNN/*.svg`), so
/// that a cached run compares them as a fresh one would. This folder and `<chapter>.json` beside
/// it are the last run, which CI workflows pass from a chapter's job to the book's.
pub(crate) fn kept_figures(layout: &Layout) -> PathBuf {
    layout.work_dir().join("cache/figures")
}

/// How many runs of a chapter the cache holds: the last one, and earlier ones of other keys,
/// so that an edit undone, or a branch checked out again, finds its run instead of running
/// the chapter again. An earlier run is a `run.json` and the `figures/` it drew, in a folder
/// named after its key under `earlier/<chapter>/`.
const RUNS_KEPT: usize = 4;

fn earlier_runs(layout: &Layout, chapter: &str) -> PathBuf {
    layout.work_dir().join("cache/earlier").join(chapter)
}

fn earlier_run(layout: &Layout, chapter: &str, key: &str) -> PathBuf {
    earlier_runs(layout, chapter).join(key)
}

fn read_entry(path: &Path) -> Option<Entry> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Moves the last run of `chapter`, unless it is of `key` (about to be replaced by a new run of
/// the same inputs), among the earlier runs. Each step leaves the cache readable: a `run.json`
/// is moved after its figures, so that no run is ever found beside another run's figures.
fn set_aside(layout: &Layout, chapter: &str, key: &str) -> anyhow::Result<()> {
    let (json, figures) = (entry_path(layout, chapter), kept_figures(layout).join(chapter));
    let last = read_entry(&json).filter(|e| e.key != key && figures.is_dir());
    if let Some(last) = last {
        let to = earlier_run(layout, chapter, &last.key);
        if to.exists() {
            std::fs::remove_dir_all(&to)?;
        }
        std::fs::create_dir_all(&to)?;
        std::fs::rename(&figures, to.join("figures"))?;
        std::fs::rename(&json, to.join("run.json"))?;
        // Set aside now: the oldest to go is the one set aside (or brought back) longest ago.
        std::fs::File::options().write(true).open(to.join("run.json"))?.set_modified(std::time::SystemTime::now())?;
    }
    Ok(())
}

/// Forgets the earlier runs of `chapter` set aside longest ago, beyond [`RUNS_KEPT`] in all.
fn forget_oldest(layout: &Layout, chapter: &str) -> anyhow::Result<()> {
    let mut kept: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(earlier_runs(layout, chapter))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let at = e.path().join("run.json").metadata().and_then(|m| m.modified()).ok();
            (at.unwrap_or(std::time::UNIX_EPOCH), e.path())
        })
        .collect();
    kept.sort_by(|a, b| b.cmp(a));
    for (_, old) in kept.into_iter().skip(RUNS_KEPT - 1) {
        std::fs::remove_dir_all(old)?;
    }
    Ok(())
}

/// The earlier run of `chapter` under `key`, made the last run again (the last one set aside in
/// its place); `None` when there is none, or it cannot be moved back.
fn bring_back(layout: &Layout, chapter: &str, key: &str) -> Option<Entry> {
    let from = earlier_run(layout, chapter, key);
    let entry = read_entry(&from.join("run.json")).filter(|e| e.key == key && from.join("figures").is_dir())?;
    let bring = || -> anyhow::Result<()> {
        set_aside(layout, chapter, key)?;
        let (json, figures) = (entry_path(layout, chapter), kept_figures(layout).join(chapter));
        // Whatever is left in the last run's place is no complete run (set_aside moved one).
        if json.exists() {
            std::fs::remove_file(&json)?;
        }
        keep_figures(&from.join("figures"), &figures)?;
        std::fs::rename(from.join("run.json"), &json)?;
        std::fs::remove_dir_all(&from)?;
        forget_oldest(layout, chapter)
    };
    bring().ok().map(|()| entry)
}

/// Replaces `kept` by the figures a completed run drew into `drawn` (a rename within
/// `target/`, after the old copy is moved aside).
fn keep_figures(drawn: &Path, kept: &Path) -> anyhow::Result<()> {
    use anyhow::Context;
    let parent = kept.parent().expect("a folder under target/");
    std::fs::create_dir_all(parent)?;
    if !drawn.is_dir() {
        std::fs::create_dir_all(drawn)?;
    }
    if kept.exists() {
        let old = tempfile::Builder::new().prefix(".old-").tempdir_in(parent)?;
        std::fs::rename(kept, old.path().join("figures"))?;
    }
    std::fs::rename(drawn, kept).with_context(|| format!("cannot move {} to {}", drawn.display(), kept.display()))
}

/// The cell holding chapter line `line`, and the line's place in the cell's code.
pub(crate) fn anchor(chapter: &Chapter, line: usize) -> Option<(usize, usize)> {
    let cell = chapter.cells.iter().position(|c| (c.code_line..=c.last_line()).contains(&line))?;
    Some((cell, line - chapter.cells[cell].code_line))
}

/// The test cells' results recorded under `key`, if it still matches.
pub(crate) fn lookup_tests(layout: &Layout, chapter: &str, key: &str) -> Option<Vec<TestRecord>> {
    let bytes = std::fs::read(tests_path(layout, chapter)).ok()?;
    let entry: TestsEntry = serde_json::from_slice(&bytes).ok()?;
    (entry.key == key).then_some(entry.tests)
}

/// Records the results of a chapter's test cells (only when every test passed or was ignored:
/// a failure is run again, so that its message is always current).
pub(crate) fn store_tests(layout: &Layout, chapter: &str, key: &str, tests: &[TestRecord]) -> anyhow::Result<()> {
    let entry = TestsEntry { key: key.to_string(), tests: tests.to_vec() };
    crate::fsutil::write_atomic(&tests_path(layout, chapter), &serde_json::to_vec(&entry)?)
}

/// A test's name and whether it passed (`true`) or was ignored (`false`).
pub type TestRecord = (String, bool);

#[derive(Debug, Serialize, Deserialize)]
struct TestsEntry {
    key: String,
    tests: Vec<TestRecord>,
}

fn tests_path(layout: &Layout, chapter: &str) -> PathBuf {
    layout.work_dir().join("cache").join(format!("{chapter}.tests.json"))
}

/// Cell analyses kept from one command to the next ([`Analyses`]), with what made them.
#[derive(Debug, Serialize, Deserialize)]
struct AnalysisFile {
    /// The tool that analysed: its version, and its executable's size and modification time,
    /// so that a rebuilt tool, whose analysis may differ, starts afresh.
    made_by: String,
    cells: BTreeMap<String, CellSyntax>,
}

fn analyses_path(layout: &Layout) -> PathBuf {
    layout.work_dir().join("cache/analyses.json")
}

/// The running tool, as [`AnalysisFile::made_by`] names it (`None` if it cannot tell).
fn made_by() -> Option<String> {
    let meta = std::env::current_exe().and_then(std::fs::metadata).ok()?;
    let modified = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(format!("{VERSION} {} {}", meta.len(), modified.as_nanos()))
}

/// The cell analyses the last command recorded (none if they are missing,
/// unreadable or made by another build of the tool).
pub(crate) fn load_analyses(layout: &Layout) -> Analyses {
    let recorded = std::fs::read(analyses_path(layout))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<AnalysisFile>(&bytes).ok())
        .filter(|file| Some(&file.made_by) == made_by().as_ref());
    match recorded {
        Some(file) => Analyses::from_recorded(file.cells),
        None => Analyses::default(),
    }
}

/// Records the analyses a command used, for the next one, when they changed. A cache: a
/// failure to write it is not an error.
pub(crate) fn store_analyses(layout: &Layout, analyses: &Analyses) {
    let (Some(cells), Some(made_by)) = (analyses.used(), made_by()) else { return };
    let file = AnalysisFile { made_by, cells: cells.clone() };
    if let Ok(bytes) = serde_json::to_vec(&file) {
        let _ = crate::fsutil::write_atomic(&analyses_path(layout), &bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of a one-cell chapter that printed `printed`, and drew one figure that says so.
    fn stored(layout: &Layout, chapter: &Chapter, key: &str, printed: &str) {
        let run = RunOutput {
            cells: vec![crate::run::CellOutput { index: 0, stdout: printed.to_string() }],
            end: crate::run::RunEnd::Completed,
            values: Vec::new(),
        };
        let drawn = layout.work_dir().join("staging").join(&chapter.name);
        std::fs::create_dir_all(&drawn).unwrap();
        std::fs::write(drawn.join("plot.svg"), printed).unwrap();
        store(layout, chapter, key, &run, &drawn).unwrap();
        assert!(!drawn.exists(), "the drawn figures are moved into the cache");
    }

    /// What a lookup of `key` finds: what the run printed, and the figure in the last run's place.
    fn found(layout: &Layout, chapter: &Chapter, key: &str) -> Option<(String, String)> {
        let run = lookup(layout, chapter, key)?;
        let figure = kept_figures(layout).join(&chapter.name).join("plot.svg");
        Some((run.cells[0].stdout.clone(), std::fs::read_to_string(figure).unwrap()))
    }

    #[test]
    fn earlier_runs_are_found_again_with_their_figures_until_four_newer_ones_push_them_out() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Config::parse(dir.path(), Path::new(""), "").unwrap().layout;
        let text = b"```rust\nprintln!();\n```\n".to_vec();
        let chapter = crate::parse::parse_chapter("ch01", Path::new("src/ch01.md"), text).unwrap();
        let key = |n: usize| format!("{n:064x}");
        let pair = |s: &str| Some((s.to_string(), s.to_string()));
        stored(&layout, &chapter, &key(1), "one");
        stored(&layout, &chapter, &key(2), "two");
        // The last run is where CI workflows find it, the one before set aside.
        assert!(entry_path(&layout, "ch01").is_file());
        assert_eq!(found(&layout, &chapter, &key(2)), pair("two"));
        // An edit undone: the earlier run comes back, figure and all, and the other waits.
        assert_eq!(found(&layout, &chapter, &key(1)), pair("one"));
        assert_eq!(read_entry(&entry_path(&layout, "ch01")).unwrap().key, key(1));
        assert_eq!(found(&layout, &chapter, &key(2)), pair("two"));
        assert_eq!(found(&layout, &chapter, &key(9)), None, "never run");
        // A run of the key already last replaces it, and sets nothing aside.
        stored(&layout, &chapter, &key(2), "two again");
        assert_eq!(found(&layout, &chapter, &key(2)), pair("two again"));
        assert_eq!(found(&layout, &chapter, &key(1)), pair("one"));
        // Four runs in all: 1, then 3, 4, 5 make 1 the oldest of three earlier ones; 6 pushes it out.
        for n in 3..=6 {
            stored(&layout, &chapter, &key(n), &n.to_string());
        }
        assert_eq!(found(&layout, &chapter, &key(1)), None, "the oldest is forgotten");
        assert_eq!(found(&layout, &chapter, &key(2)), None);
        for n in 3..=6 {
            assert_eq!(found(&layout, &chapter, &key(n)), pair(&n.to_string()));
        }
        let kept = std::fs::read_dir(earlier_runs(&layout, "ch01")).unwrap().count();
        assert_eq!(kept, RUNS_KEPT - 1);
    }

    #[test]
    fn a_chapter_s_key_sees_the_dependencies_its_build_uses_and_no_others() {
        let dir = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| crate::fsutil::put(&dir.path().join(path), text);
        write(
            "book.toml",
            "[book]\ntitle = \"T\"\n\n[preprocessor.tangle.dependencies]\nitoa = \"1\"\nryu = \"1\"\nfastrand = \"2\"\n",
        );
        write("src/SUMMARY.md", "- [One](ch01.md)\n- [Two](ch02.md)\n");
        let cell = |code: &str| format!("```rust\n{code}\n```\n\n");
        // ch01's library uses itoa, its program ryu, its tests fastrand; ch02 imports ch01 and
        // runs fastrand.
        write(
            "src/ch01.md",
            &format!(
                "# One\n\n{}{}{}",
                cell("// @save\npub fn digits(n: u32) -> usize { itoa::Buffer::new().format(n).len() }"),
                cell("println!(\"{}\", ryu::Buffer::new().format(1.5));"),
                cell("// @test\n#[test]\nfn t() { assert!(fastrand::u8(..) <= 255); }"),
            ),
        );
        write("src/ch02.md", &format!("# Two\n\n{}", cell("println!(\"{} {}\", ch01::digits(42), fastrand::u8(..));")));
        let project = crate::pipeline::Project::load(dir.path()).unwrap();
        let keys = |chapter: &str, tests: bool| -> Vec<String> {
            let closure = project.generated.closure(chapter);
            workspace_keys(&closure, chapter, tests).into_iter().filter(|k| k != crate::config::RUNTIME).collect()
        };
        assert_eq!(keys("ch01", false), ["itoa", "ryu"]);
        assert_eq!(keys("ch01", true), ["fastrand", "itoa", "ryu"]);
        assert_eq!(keys("ch02", false), ["fastrand", "itoa"], "not ch01's program's ryu");
    }

    #[test]
    fn a_declared_folder_is_every_file_under_it_in_order_of_name() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, text) in [("data/b.txt", "b"), ("data/a/z.csv", "z"), ("data/a/y.csv", "y"), ("one.txt", "1")] {
            crate::fsutil::put(&root.join(path), text);
        }
        let config = Config::parse(root, Path::new(""), "").unwrap();
        let chapter = |text: &str| {
            crate::parse::parse_chapter("ch01", Path::new("src/ch01.md"), text.as_bytes().to_vec()).unwrap()
        };
        let files = data_files(&config.layout, &chapter("<!-- tangle: data data one.txt -->\n")).unwrap();
        let names: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["data/a/y.csv", "data/a/z.csv", "data/b.txt", "one.txt"]);
        assert_eq!(files[0].1, b"y");
        let err = data_files(&config.layout, &chapter("# T\n\n<!-- tangle: data nope -->\n")).unwrap_err();
        let d = err.downcast_ref::<crate::diagnostic::Diagnostic>().unwrap();
        assert_eq!(d.location.as_ref().unwrap().line, 3);
        assert!(d.message.contains("nope cannot be read"), "{}", d.message);
    }

    #[test]
    fn a_crate_used_by_path_is_an_input_down_to_the_crates_it_uses_by_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |path: &str, text: &str| crate::fsutil::put(&root.join(path), text);
        write("mine/Cargo.toml", "[package]\nname = \"mine\"\n\n[dependencies]\nhelper = { path = \"../helper\" }\n");
        write("mine/src/lib.rs", "pub fn add(a: u32, b: u32) -> u32 { a + b }\n");
        write("helper/Cargo.toml", "[package]\nname = \"helper\"\n");
        write("helper/src/deep/mod.rs", "pub fn one() -> u32 { 1 }\n");
        let text = "[preprocessor.tangle.dependencies]\nmine = { path = \"mine\" }\nitoa = \"1\"\n";
        let config = Config::parse(root, Path::new(""), text).unwrap();
        let digest = || local_crates(&config.layout, &config.dependencies);
        let first = digest();
        assert_eq!(digest(), first, "nothing changed");
        write("mine/src/lib.rs", "pub fn add(a: u32, b: u32) -> u32 { a - b }\n");
        let second = digest();
        assert_ne!(second, first, "the crate's own source");
        write("helper/src/deep/mod.rs", "pub fn one() -> u32 { 2 }\n");
        assert_ne!(digest(), second, "a crate it uses by path, in a subfolder of src/");
        // What cargo does not build into the crate is no input.
        let third = digest();
        write("mine/README.md", "words\n");
        write("mine/target/debug/junk", "x");
        assert_eq!(digest(), third);
        // A crate above the root, and the same book elsewhere: the same digest.
        let elsewhere = tempfile::tempdir().unwrap();
        let copy = |from: &Path, to: &Path| {
            for entry in
                walkdir::WalkDir::new(from).into_iter().filter_map(Result::ok).filter(|e| e.file_type().is_file())
            {
                let target = to.join(entry.path().strip_prefix(from).unwrap());
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                std::fs::copy(entry.path(), target).unwrap();
            }
        };
        copy(root, elsewhere.path());
        let above = "[preprocessor.tangle.dependencies]\nmine = { path = \"../mine\" }\n";
        let here = Config::parse(&root.join("book"), Path::new(""), above).unwrap();
        let there = Config::parse(&elsewhere.path().join("book"), Path::new(""), above).unwrap();
        assert_eq!(local_crates(&here.layout, &here.dependencies), local_crates(&there.layout, &there.dependencies));
        // A book without crates used by path hashes nothing of the file system.
        let plain = Config::parse(root, Path::new(""), "[preprocessor.tangle.dependencies]\nitoa = \"1\"\n").unwrap();
        assert_eq!(local_crates(&plain.layout, &plain.dependencies), hex(Sha256::new()));
    }
}
