//! Examples mode: every Rust block of an examples chapter is a program of its own, as rustdoc
//! treats a doctest and `mdbook test` an example (`cells = "examples"` in `book.toml`, or
//! `<!-- tangle: cells examples -->` in a chapter), and so is an mdBook `{{#playground FILE}}`;
//! each is judged by what its fence claims:
//!
//! - plain: compiles and runs without panicking; `no_run`: compiles; `should_panic`: runs and
//!   fails; `compile_fail` (with error codes such as `E0382`): does not compile (with them);
//!   `ignore`: neither, counted as ignored; `edition20NN`: its edition (else `[rust] edition`);
//! - an example followed by an ```` ```output ```` block must print it, compared and accepted
//!   as a notebook cell's output is ([`crate::compare`], [`crate::pipeline::accept`]).
//!
//! [`program`] turns an example into source as rustdoc would (hidden `# ` lines, `fn main`
//! wrapping, crate-level lines on top); [`crates`] lays the examples out as one workspace under
//! `target/tangle/examples`, merged per edition where they can share a crate; [`build`] builds
//! it with one cargo command and maps rustc's messages to the chapters; [`run`] runs them in
//! parallel; [`pins`] keeps the crate versions they built with in the committed
//! `examples.lock`. An example that passed is remembered under the hash of its program, edition,
//! dependencies and lock file (`target/tangle/cache/examples/`): a second check with nothing
//! changed builds and runs nothing. [`test`](fn@test) is the entry point.

pub mod build;
pub mod crates;
pub mod include;
pub mod pins;
pub mod program;
pub mod run;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::compare::{self, ValueReport, Verdict};
use crate::diagnostic::{Diagnostic, Location};
use crate::fsutil;
use crate::model::{CellMode, Chapter};
use crate::pipeline::{ChapterResult, Project, Writes};
use crate::progress::Progress;
use crate::run::{CellOutput, RunEnd, RunOutput};
use crates::Example;

/// What became of one example.
#[derive(Debug, Clone)]
pub enum ExampleVerdict {
    Passed,
    /// It did not do what its fence claims; why, located in the chapter.
    Failed(Vec<Diagnostic>),
    /// `ignore`: neither compiled nor run.
    Ignored,
}

/// One example's result.
#[derive(Debug, Clone)]
pub struct ExampleResult {
    pub chapter: Arc<Chapter>,
    /// The example's first line (`book/src/ch01.md:12`).
    pub location: Location,
    pub verdict: ExampleVerdict,
    /// Whether the verdict came from the cache (nothing built or run).
    pub cached: bool,
    /// What it printed, when it ran.
    pub stdout: Option<String>,
}

/// What testing the examples found.
#[derive(Debug)]
pub struct ExamplesReport {
    /// Every example of the chapters tested, in book order.
    pub examples: Vec<ExampleResult>,
    /// Per examples chapter, its output blocks against what the examples printed, in the form
    /// [`crate::pipeline::accept`] takes.
    pub chapters: Vec<ChapterResult>,
    /// What became of the committed crate versions (`examples.lock`).
    pub pins: pins::Recorded,
    /// The files and folders that running the examples created in the project's folder, where
    /// they run (as under `mdbook test`): the Rust Cookbook's write `lines.txt` and others.
    pub left_behind: BTreeSet<PathBuf>,
}

/// `N passed, N failed, N ignored`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub ignored: usize,
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} passed, {} failed, {} ignored", self.passed, self.failed, self.ignored)
    }
}

/// What an example that ran as its fence claims, but printed something else than its output
/// block, counts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drift {
    /// Failed: a check, or `tangle test`.
    Fails,
    /// Passed: `accept`, which takes the new output.
    Accepted,
}

impl ExamplesReport {
    /// The counts of the closing line, a drifted output counting as `drift` says.
    pub fn counts(&self, drift: Drift) -> Counts {
        let drifted: BTreeSet<(String, usize)> =
            self.chapters.iter().flat_map(|r| r.drifted().map(|v| (r.chapter.name.clone(), v.index))).collect();
        let mut counts = Counts::default();
        let mut index_in_chapter: BTreeMap<&str, usize> = BTreeMap::new();
        for e in &self.examples {
            let i = index_in_chapter.entry(&e.chapter.name).or_default();
            let index = *i;
            *i += 1;
            match &e.verdict {
                ExampleVerdict::Ignored => counts.ignored += 1,
                ExampleVerdict::Failed(_) => counts.failed += 1,
                ExampleVerdict::Passed
                    if drift == Drift::Fails && drifted.contains(&(e.chapter.name.clone(), index)) =>
                {
                    counts.failed += 1
                }
                ExampleVerdict::Passed => counts.passed += 1,
            }
        }
        counts
    }

    /// Whether every example did what it claims and printed what its output block says, with
    /// the crate versions committed.
    pub fn passed(&self) -> bool {
        self.counts(Drift::Fails).failed == 0 && !matches!(self.pins, pins::Recorded::Stale(_))
    }
}

/// The examples chapters among `asked` (chapter names as the command line takes them: `ch01`,
/// `1`, `ch01.md`), all of them when `asked` is empty.
pub fn chapters<'p>(project: &'p Project, asked: &[String]) -> Vec<&'p Arc<Chapter>> {
    let asked: Vec<&str> =
        asked.iter().flat_map(|a| crate::pipeline::asked_chapters(&project.book, a)).map(|c| c.name.as_str()).collect();
    project
        .book
        .chapters
        .iter()
        .filter(|c| c.mode == CellMode::Examples)
        .filter(|c| asked.is_empty() || asked.contains(&c.name.as_str()))
        .collect()
}

/// Compiles and runs every example of `chapters` (see [`chapters`]) and judges it by its
/// attributes and output block: what `tangle test` reports as `N passed, N failed, N ignored`.
/// A passing example unchanged since it last passed is answered from the cache, unless
/// `afresh`.
pub fn test(
    project: &Project,
    chapters: &[&Arc<Chapter>],
    afresh: bool,
    writes: Writes,
    progress: &dyn Progress,
) -> anyhow::Result<ExamplesReport> {
    let config = &project.config;
    let layout = project.layout();
    let examples = crates::examples(config, chapters);
    let workspace_lock = layout.abs(crates::dir(config).join("Cargo.lock"));
    pins::seed(config, &workspace_lock)?;
    let testable: Vec<&Example> = examples.iter().filter(|e| !e.attributes.ignore).collect();
    let buildable: Vec<&Example> = testable.iter().copied().filter(|e| e.include_error.is_none()).collect();
    let lock = || locked_dependencies(&workspace_lock);
    // The compiler is asked once: the keys are taken again after the build.
    let rustc = crate::build::compiler_version(&project.root).unwrap_or_default();
    let keys = keys(project, &testable, &lock(), &rustc)?;
    let mut outcomes: BTreeMap<String, (ExampleVerdict, bool, Option<String>)> = BTreeMap::new();
    let mut to_build: Vec<&Example> = Vec::new();
    for (example, key) in testable.iter().zip(&keys) {
        if let Some((line, why)) = &example.include_error {
            let chapter = &example.chapter;
            let d = Diagnostic::error(chapter.location(example.code_line + line), why.clone());
            outcomes.insert(example.id(), (ExampleVerdict::Failed(vec![d]), false, None));
            continue;
        }
        // Afresh (`check --rerun`, `accept --refresh`): every example is built and run again.
        match lookup(project, key).filter(|_| !afresh) {
            Some(stdout) => {
                outcomes.insert(example.id(), (ExampleVerdict::Passed, true, stdout));
            }
            None => to_build.push(example),
        }
    }

    let mut left_behind = BTreeSet::new();
    if !to_build.is_empty() {
        let mut fallback: Vec<String> = Vec::new();
        let mut pending: Vec<&Example> = to_build.clone();
        // A merged crate that fails to build takes its blameless examples down with it: they
        // are built again, each on its own, once.
        for round in 0..2 {
            let workspace = crates::workspace(config, &buildable, &fallback);
            for (path, contents) in &workspace.files {
                fsutil::write_if_changed(&layout.abs(path), contents.as_bytes())?;
            }
            let binaries: BTreeSet<String> =
                pending.iter().map(|e| workspace.placements[&e.id()].binary.clone()).collect();
            let binaries: Vec<String> = binaries.into_iter().collect();
            progress.line(&format!(" building {} example(s)", pending.len()));
            progress.building(&binaries);
            let targets = build::build(layout, &workspace, &binaries, progress);
            progress.built();
            let targets = targets?;
            let mut jobs = Vec::new();
            let mut retry = Vec::new();
            for example in &pending {
                let placement = &workspace.placements[&example.id()];
                let target = &targets[&placement.binary];
                let own: Vec<Diagnostic> = target.errors.iter().filter(|d| is_in(example, d)).cloned().collect();
                let chapter = &example.chapter;
                let at = chapter.location(example.code_line);
                let verdict = match (&target.exe, example.attributes.compile_fail) {
                    (Some(_), true) => Some(ExampleVerdict::Failed(vec![
                        example
                            .claim_error("compile_fail", "this example compiled, but `compile_fail` says it must not")
                            .with_help("make it fail to compile again, or drop `compile_fail` from its fence"),
                    ])),
                    (None, true) => {
                        let missing: Vec<&String> =
                            example.attributes.error_codes.iter().filter(|c| !target.codes.contains(c)).collect();
                        match missing.is_empty() {
                            true => Some(ExampleVerdict::Passed),
                            false => {
                                let got: BTreeSet<&String> = target.codes.iter().collect();
                                let got: Vec<&str> = got.into_iter().map(String::as_str).collect();
                                let mut d = example.claim_error(
                                    missing[0],
                                    format!(
                                        "this example fails to compile, but not with {} (rustc said: {})",
                                        missing.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", "),
                                        if got.is_empty() { "no error code".to_string() } else { got.join(", ") }
                                    ),
                                );
                                d = d.with_help("fix the error code on its fence, or the example");
                                Some(ExampleVerdict::Failed(std::iter::once(d).chain(own).collect()))
                            }
                        }
                    }
                    (None, false) if !own.is_empty() => Some(ExampleVerdict::Failed(own)),
                    (None, false) if placement.number.is_some() && round == 0 => {
                        retry.push(example.id());
                        None
                    }
                    (None, false) => {
                        let mut errors: Vec<Diagnostic> =
                            target.errors.iter().cloned().map(|d| at_the_example(d, &at)).collect();
                        if errors.is_empty() {
                            errors.push(Diagnostic::error(at, "this example does not compile"));
                        }
                        Some(ExampleVerdict::Failed(errors))
                    }
                    (Some(_), false) if example.attributes.no_run => Some(ExampleVerdict::Passed),
                    (Some(exe), false) => {
                        jobs.push(run::Job { example, exe: exe.clone(), number: placement.number });
                        None
                    }
                };
                if let Some(v) = verdict {
                    outcomes.insert(example.id(), (v, false, None));
                }
            }
            if !jobs.is_empty() {
                let parallel = std::thread::available_parallelism().map_or(1, |n| n.get());
                progress.line(&format!("  running {} example(s)", jobs.len()));
                let before = entries(&project.root);
                let ran = run::run_all(&workspace, &project.root, &jobs, parallel, progress);
                left_behind.extend(entries(&project.root).difference(&before).cloned());
                for (job, ran) in jobs.iter().zip(ran) {
                    let verdict = match ran.failure {
                        Some(d) => ExampleVerdict::Failed(vec![d]),
                        None => ExampleVerdict::Passed,
                    };
                    outcomes.insert(job.example.id(), (verdict, false, Some(ran.stdout)));
                }
            }
            if retry.is_empty() {
                break;
            }
            pending.retain(|e| retry.contains(&e.id()));
            fallback.extend(retry);
        }
        // The build may have written the lock file: passes are stored under keys taken now. A
        // failure forgets a pass stored before (under either key): an example that passed once
        // and fails when run afresh (`--rerun`: it reads a file that is gone) is not taken for
        // passed again by the next check.
        let before = keys;
        let keys = self::keys(project, &testable, &lock(), &rustc)?;
        for ((example, key), old) in testable.iter().zip(&keys).zip(&before) {
            match outcomes.get(&example.id()) {
                Some((ExampleVerdict::Passed, false, stdout)) => store(project, key, stdout.as_deref())?,
                Some((ExampleVerdict::Failed(_), false, _)) => {
                    forget(project, key)?;
                    forget(project, old)?;
                }
                _ => {}
            }
        }
    }

    let mut results = Vec::new();
    for example in &examples {
        let chapter = &example.chapter;
        let location = chapter.location(example.code_line);
        let (verdict, cached, stdout) = match example.attributes.ignore {
            true => (ExampleVerdict::Ignored, false, None),
            false => outcomes.remove(&example.id()).expect("every example was judged"),
        };
        results.push(ExampleResult { chapter: example.chapter.clone(), location, verdict, cached, stdout });
    }
    let chapter_results = chapters.iter().map(|chapter| compare_outputs(chapter, &results)).collect();
    let pins = pins::record(layout, &workspace_lock, writes)?;
    Ok(ExamplesReport { examples: results, chapters: chapter_results, pins, left_behind })
}

/// The names in a folder (none if it cannot be read).
fn entries(dir: &std::path::Path) -> BTreeSet<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else { return BTreeSet::new() };
    read.filter_map(|e| Some(PathBuf::from(e.ok()?.file_name()))).collect()
}

/// An error of an example's crate that rustc could not place (the linker's) put at the
/// example, `at`; the linker's command line, pages of flags that say nothing about the
/// example, is left out, and the advice fits a book.
fn at_the_example(mut d: Diagnostic, at: &crate::diagnostic::Location) -> Diagnostic {
    if d.location.is_some() {
        return d;
    }
    d.location = Some(at.clone());
    if d.message.starts_with("linking with") {
        // rustc's rendering: the headline, the command line, then what the linker said.
        let said: Vec<String> = d
            .message
            .lines()
            .skip(1)
            .map(|l| l.trim_start_matches([' ', '|', '=']).trim_start_matches("note:").trim())
            .filter(|l| !l.is_empty() && !l.starts_with('"') && !l.contains("arguments are omitted"))
            .map(str::to_string)
            .collect();
        d.message = "this example compiles but does not link".to_string();
        if !said.is_empty() {
            d.notes.push((crate::diagnostic::NoteKind::Note, format!("the linker said: {}", said.join("\n"))));
        }
        d.notes.push((
            crate::diagnostic::NoteKind::Help,
            "mark it `no_run` if the library it links is the reader's to install (rustdoc then only checks it, and \
             so does tangle)"
                .into(),
        ));
    }
    d
}

/// Whether a diagnostic lies within `example`'s lines.
fn is_in(example: &Example, d: &Diagnostic) -> bool {
    // A line the example included is the example's too.
    let Some(at) = d.chapter_location() else { return false };
    let chapter = &example.chapter;
    at.file == chapter.path && at.line >= example.code_line && at.line < example.code_line + example.lines.max(1)
}

/// The chapter's output blocks against what its examples printed. Only examples with an
/// output block are compared: an example that prints without one is not drift, so that a
/// book can add output checks one block at a time.
fn compare_outputs(chapter: &Arc<Chapter>, results: &[ExampleResult]) -> ChapterResult {
    let mine: Vec<&ExampleResult> = results.iter().filter(|r| Arc::ptr_eq(&r.chapter, chapter)).collect();
    let mut cells = Vec::new();
    for (index, (cell, result)) in chapter.cells.iter().zip(&mine).enumerate() {
        if let (Some(_), Some(stdout), ExampleVerdict::Passed) = (&cell.output, &result.stdout, &result.verdict) {
            cells.push(CellOutput { index, stdout: stdout.clone() });
        }
    }
    let run = RunOutput { cells, end: RunEnd::Completed, values: Vec::new() };
    let verdicts = compare::compare_chapter(chapter, &run, compare::Judge::AsDeclared)
        .into_iter()
        .filter(|v| v.verdict != Verdict::NotRun)
        .collect();
    ChapterResult {
        chapter: chapter.clone(),
        run,
        drawn: PathBuf::new(),
        cached: mine.iter().any(|r| r.cached)
            && mine.iter().all(|r| r.cached || matches!(r.verdict, ExampleVerdict::Ignored)),
        frozen: false,
        verdicts,
        values: ValueReport::default(),
        figures: Vec::new(),
        // Snapshots mirror notebook chapters only: an existing book gains no snapshots/.
        snapshots: Vec::new(),
        unanswered: None,
    }
}

/// The crates from outside the book that the examples workspace's lock file pins (their
/// `[[package]]` tables, [`pins`]' reading): the lock file without the workspace's own packages,
/// which come and go with the examples and would otherwise make every edit invalidate every
/// example.
fn locked_dependencies(lock: &std::path::Path) -> Vec<u8> {
    let text = std::fs::read_to_string(lock).unwrap_or_default();
    pins::outside_packages(&text).join("\n\n").into_bytes()
}

/// Bumped whenever the meaning of a cached verdict changes.
const VERSION: &str = concat!("tangle-examples-1:", env!("CARGO_PKG_VERSION"));

/// Each example's cache key: its program as compiled, its attributes and edition, the
/// compiler (`rustc -V`), the dependencies, the sources of those used by path
/// ([`crate::cache::local_crates`]) and the workspace's lock file, its chapter's timeout and the
/// data files it declares (an error at the directive of one that cannot be read).
/// `rustc` is the compiler's `rustc -V`: another compiler may refuse what this one accepted (a
/// nightly feature) or print otherwise.
fn keys(project: &Project, examples: &[&Example], lock: &[u8], rustc: &str) -> anyhow::Result<Vec<String>> {
    let layout = project.layout();
    let deps = format!("{:?}", project.config.dependencies);
    let local = crate::cache::local_crates(layout, &project.config.dependencies);
    let mut data: BTreeMap<&str, Vec<(String, Vec<u8>)>> = BTreeMap::new();
    for e in examples {
        if !data.contains_key(e.chapter.name.as_str()) {
            data.insert(&e.chapter.name, crate::cache::data_files(layout, &e.chapter)?);
        }
    }
    Ok(examples
        .iter()
        .map(|e| {
            let mut h = Sha256::new();
            let chapter = &e.chapter;
            let (program, _) = e.program.source(e.standalone());
            let how = format!("{:?} {}", e.attributes, e.edition);
            let timeout = format!("{:?}", chapter.directives.timeout);
            let files = data[chapter.name.as_str()].iter().flat_map(|(path, bytes)| [path.as_bytes(), bytes]);
            let parts = [
                VERSION.as_bytes(),
                program.as_bytes(),
                how.as_bytes(),
                deps.as_bytes(),
                local.as_bytes(),
                rustc.as_bytes(),
                lock,
                timeout.as_bytes(),
            ];
            for part in parts.into_iter().chain(files) {
                h.update((part.len() as u64).to_le_bytes());
                h.update(part);
            }
            h.finalize().iter().map(|b| format!("{b:02x}")).collect()
        })
        .collect())
}

#[derive(Serialize, Deserialize)]
struct Entry {
    stdout: Option<String>,
}

fn entry_path(project: &Project, key: &str) -> PathBuf {
    project.layout().work_dir().join("cache/examples").join(format!("{key}.json"))
}

/// A passing example's recorded stdout (`Some(None)`: passed without running).
fn lookup(project: &Project, key: &str) -> Option<Option<String>> {
    let bytes = std::fs::read(entry_path(project, key)).ok()?;
    serde_json::from_slice::<Entry>(&bytes).ok().map(|e| e.stdout)
}

/// Removes the pass stored under `key`, if there is one.
fn forget(project: &Project, key: &str) -> anyhow::Result<()> {
    match std::fs::remove_file(entry_path(project, key)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

fn store(project: &Project, key: &str, stdout: Option<&str>) -> anyhow::Result<()> {
    let entry = Entry { stdout: stdout.map(str::to_string) };
    fsutil::write_atomic(&entry_path(project, key), &serde_json::to_vec(&entry)?)
}
