//! The run cache: a chapter whose generated code, dependency chapters, `Cargo.lock`, runtime,
//! compiler and declared data files hash the same as at its last completed run is neither rebuilt nor
//! rerun; its recorded outputs are compared instead. A pure function of those inputs, stored
//! under `target/tangle/cache/`. The key leaves out where the cells stand in the chapter (prose
//! around them may change), so a recorded chapter line is kept as a line of a cell and found
//! again in the chapter as it is now: every location from a cached run is current.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::Layout;
use crate::generate::{Analyses, CellSyntax, Generated};
use crate::model::Chapter;
use crate::run::RunOutput;

/// Bumped whenever the meaning of a cached run changes.
const VERSION: &str = concat!("tangle-cache-3:", env!("CARGO_PKG_VERSION"));

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

/// The hash of what every chapter's run depends on alike: the compiler, the chapter
/// workspace's manifest and lock file, and the generated crates every chapter links (the
/// runtime, its bundled font included, as the tool holds it). Taken once per check, not per
/// chapter.
pub(crate) fn shared_inputs(layout: &Layout, generated: &Generated) -> String {
    let mut h = Sha256::new();
    feed(&mut h, "version", VERSION.as_bytes());
    // Another compiler may print otherwise, or refuse what this one built (a nightly
    // feature): a run it did not make answers nothing. (If rustc cannot run, neither can the
    // build that follows, which says why.)
    let rustc = crate::build::compiler_version(&layout.abs(&layout.code)).unwrap_or_default();
    feed(&mut h, "rustc -V", rustc.as_bytes());
    for name in ["Cargo.lock", "Cargo.toml"] {
        let path = layout.code.join(name);
        feed(&mut h, name, &std::fs::read(layout.abs(path)).unwrap_or_default());
    }
    for (path, bytes) in generated.support.iter().filter(|(p, _)| p.starts_with(&generated.code)) {
        feed(&mut h, &path.display().to_string(), bytes);
    }
    hex(h)
}

/// The hash of everything a chapter's run depends on: the [`shared_inputs`], and its own and
/// its dependency chapters' code (location comments aside) and declared data files.
pub fn key(layout: &Layout, shared: &str, generated: &Generated, chapter: &str) -> anyhow::Result<String> {
    key_of(layout, shared, generated, chapter, What::Run)
}

/// The hash of everything a chapter's test cells depend on: [`key`]'s inputs with the
/// chapter's own test file instead of its run program.
pub(crate) fn tests_key(layout: &Layout, shared: &str, generated: &Generated, chapter: &str) -> anyhow::Result<String> {
    key_of(layout, shared, generated, chapter, What::Tests)
}

#[derive(PartialEq, Eq)]
enum What {
    Run,
    Tests,
}

fn key_of(layout: &Layout, shared: &str, generated: &Generated, chapter: &str, what: What) -> anyhow::Result<String> {
    let mut h = Sha256::new();
    let mut feed = |label: &str, bytes: &[u8]| feed(&mut h, label, bytes);
    feed("shared", shared.as_bytes());
    if what == What::Tests {
        feed("what", b"tests");
    }
    for krate in generated.closure(chapter) {
        for (path, contents) in &krate.files {
            let is_test = path.components().any(|c| c.as_os_str() == "tests");
            let is_main = path.ends_with("src/main.rs");
            let wanted = match what {
                What::Run => !is_test && (krate.name() == chapter || !is_main),
                What::Tests => !is_main && (krate.name() == chapter || !is_test),
            };
            if wanted {
                let code = contents
                    .lines()
                    .filter(|l| !crate::generate::is_location_comment(l))
                    .collect::<Vec<_>>()
                    .join("\n");
                feed(&path.display().to_string(), code.as_bytes());
            }
        }
        let ch = &krate.chapter;
        for (data, line) in &ch.directives.data {
            let bytes = std::fs::read(layout.abs(data)).map_err(|e| {
                crate::diagnostic::Diagnostic::error(
                    ch.location(*line),
                    format!("the declared data file {} cannot be read: {e}", data.display()),
                )
            })?;
            feed(&data.display().to_string(), &bytes);
        }
    }
    Ok(hex(h))
}

/// The recorded run for `chapter` if its key still matches, its locations moved to where the
/// cells stand now.
pub(crate) fn lookup(layout: &Layout, chapter: &Chapter, key: &str) -> Option<RunOutput> {
    let bytes = std::fs::read(entry_path(layout, &chapter.name)).ok()?;
    let entry: Entry = serde_json::from_slice(&bytes).ok()?;
    if entry.key != key {
        return None;
    }
    let mut run = entry.run;
    for (value, anchor) in run.values.iter_mut().zip(&entry.anchors) {
        if let (Some((_, column)), Some((cell, offset))) = (value.at, anchor) {
            value.at = chapter.cells.get(*cell).map(|c| (c.code_line + offset, column));
        }
    }
    Some(run)
}

/// Records a completed run of `chapter` as it stands now.
pub fn store(layout: &Layout, chapter: &Chapter, key: &str, run: &RunOutput) -> anyhow::Result<()> {
    let anchors = run.values.iter().map(|v| v.at.and_then(|(line, _)| anchor(chapter, line))).collect();
    let entry = Entry { key: key.to_string(), run: run.clone(), anchors };
    crate::fsutil::write_atomic(&entry_path(layout, &chapter.name), &serde_json::to_vec(&entry)?)
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
