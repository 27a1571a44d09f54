//! The stages put together: load (config + parse + generate) → sync → build → run → compare,
//! the test cells, and `accept` and `fmt` on top; `untangle` the other way, from edited
//! generated files to the chapters. Nothing here overwrites a generated file edited since
//! tangle wrote it, unless told to. The command line and the tests call these; they return
//! results rather than print them. What does reach stderr from here: progress lines, through
//! the [`Progress`] they are given; the lints of wide cell lines and of run cells defining a
//! `main` nothing calls; and three warnings that stop nothing, printed where they happen (a
//! frozen record that belongs to no frozen chapter, a chapter program whose stray process
//! keeps its output open, signals that cannot be caught).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use anyhow::Context;

use crate::build::{self, BuildOptions};
use crate::compare::{self, CellVerdict, FigureDrift, ValueReport, Verdict};
use crate::config::{Config, Layout};
use crate::diagnostic::Diagnostic;
use crate::generate::sync::{self, Discard, Stale};
use crate::generate::{self, ChapterCrate, Generated};
use crate::model::{Book, Chapter};
use crate::progress::{Plain, Progress};
use crate::run::test_cells::{TestCase, TestOutcome};
use crate::run::{self, RunOutput};
use crate::{accept, cache, freeze, fsutil, parse, snapshot, timing, untangle as back};

/// The chapters a `--chapter` value names: its crate name (`ch06`, `scope_lifetime_fn`), its
/// number (`6` for `ch06`), or its file, as a path from the project root or from any folder
/// above it (`book/src/ch06.md`, `scope/lifetime/fn.md`) or its file name alone (`fn.md`, which
/// names every chapter of that file name). A name the chapter files do not give is read as
/// a file's stem would be (`chapter-two` → `chapter_two`).
pub(crate) fn asked_chapters<'b>(book: &'b Book, asked: &str) -> Vec<&'b Arc<Chapter>> {
    let by_path: Vec<&Arc<Chapter>> = match asked.ends_with(".md") || asked.contains('/') {
        true => {
            let path = Path::new(asked.trim_start_matches("./"));
            book.chapters.iter().filter(|c| c.path.ends_with(path)).collect()
        }
        false => Vec::new(),
    };
    if !by_path.is_empty() {
        return by_path;
    }
    let stem = asked.rsplit('/').next().unwrap_or(asked).trim_end_matches(".md");
    let name = match stem.parse::<u32>() {
        Ok(n) => format!("ch{n:02}"),
        // A file's name is its crate's as the chapter's file makes it (`chapter-two` → `chapter_two`).
        Err(_) => crate::parse::crate_name(Path::new(&format!("{stem}.md"))).unwrap_or_else(|| stem.to_string()),
    };
    book.chapters.iter().filter(|c| c.name == asked || c.name == name).collect()
}

/// The error for `--chapter ASKED` naming no chapter: the near spelling, or the chapters whose
/// names hold the word (a book of examples names a chapter by its path: `rand` is in
/// `algorithms_randomness_rand`), else the chapters, the first few of a long list.
fn no_such_chapter(book: &Book, asked: &str) -> String {
    const SHOWN: usize = 12;
    let known: Vec<&str> = book.chapters.iter().map(|c| c.name.as_str()).collect();
    let holding: Vec<&str> = known.iter().copied().filter(|k| k.contains(asked) && !asked.is_empty()).collect();
    let list = |names: &[&str]| match names.len() > SHOWN {
        true => format!("{}, and {} more", names[..SHOWN].join(", "), names.len() - SHOWN),
        false => names.join(", "),
    };
    let hint = if let Some(near) = crate::messages::closest(asked, known.iter().copied()) {
        format!("did you mean `{near}`?")
    } else if !holding.is_empty() {
        format!("the chapters whose names hold it are: {}", list(&holding))
    } else {
        format!("the chapters are: {}", list(&known))
    };
    format!("no chapter named `{asked}`: {hint} (a chapter's file names it too: `--chapter src/NAME.md`)")
}

/// A chapter a command works on, as [`Project::select`] found it: its generated crate, which
/// holds the parsed chapter, borrowed from one project, so that nothing looks either up again
/// by name.
#[derive(Debug, Clone, Copy)]
pub struct Selected<'p> {
    pub krate: &'p ChapterCrate,
}

impl<'p> Selected<'p> {
    /// The parsed chapter.
    pub fn chapter(&self) -> &'p Arc<Chapter> {
        &self.krate.chapter
    }

    /// The chapter's name (`ch06`), which is also its crate's.
    pub fn name(&self) -> &'p str {
        self.krate.name()
    }
}

/// The names of `chapters`, in order (what the build and the cache take).
fn names(chapters: &[Selected<'_>]) -> Vec<String> {
    chapters.iter().map(|s| s.name().to_string()).collect()
}

/// A book loaded and generated in memory.
pub struct Project {
    /// The project root (`config.layout.root`).
    pub root: PathBuf,
    /// What `book.toml` says: the layout, the edition, the dependencies, the checks.
    pub config: Config,
    pub book: Book,
    pub generated: Generated,
}

impl Project {
    /// Reads `book.toml`, parses every chapter and generates its crate. Mistakes in the input
    /// come back as [`Diagnostics`](crate::diagnostic::Diagnostics) inside the `anyhow::Error`.
    pub fn load(root: &Path) -> anyhow::Result<Project> {
        let config = Config::load(root)?;
        Project::from_config(config)
    }

    /// The project of a configuration already read ([`Project::load`] reads it first).
    pub fn from_config(config: Config) -> anyhow::Result<Project> {
        let book = timing::phase("parse", || parse::load_book(&config.layout, config.cells))?;
        Project::with_book(config, book)
    }

    /// The project of a book already parsed: its crates generated.
    fn with_book(config: Config, book: Book) -> anyhow::Result<Project> {
        let layout = &config.layout;
        freeze::validate(&config, &book)?;
        let mut analyses = timing::phase("load analyses", || cache::load_analyses(layout));
        let generated = timing::phase("generate", || generate::generate(&book, &config, &mut analyses))?;
        timing::phase("store analyses", || cache::store_analyses(layout, &analyses));
        Ok(Project { root: layout.root.clone(), config, book, generated })
    }

    pub fn layout(&self) -> &Layout {
        &self.config.layout
    }

    /// This project with `rewritten` (chapters this command wrote and parsed again) in place of
    /// the chapters of the same names, its crates generated again: what `code/` must now hold,
    /// with no other file read or parsed again.
    fn with_chapters(&self, rewritten: Vec<Chapter>) -> anyhow::Result<Project> {
        let mut book = self.book.clone();
        for new in rewritten {
            book.replace(new);
        }
        Project::with_book(self.config.clone(), book)
    }

    /// The chapters to work on, in the book's order: every generated one, or the ones asked for
    /// (each must exist). The book's order is `SUMMARY.md`'s, the reader's; chapters it does not
    /// list come last, in the order of their paths.
    pub fn select(&self, asked: &[String]) -> anyhow::Result<Vec<Selected<'_>>> {
        let mut names: Vec<&str> = Vec::new();
        for a in asked {
            let found = asked_chapters(&self.book, a);
            if found.is_empty() {
                anyhow::bail!("{}", no_such_chapter(&self.book, a));
            }
            names.extend(found.iter().map(|c| c.name.as_str()));
        }
        let wanted = |name: &str| asked.is_empty() || names.contains(&name);
        let mut selected: Vec<Selected<'_>> =
            self.generated.crates.iter().filter(|krate| wanted(krate.name())).map(|krate| Selected { krate }).collect();
        // The crates come in the order they build in, imports first, which follows the chapters'
        // paths: `advanced.md` before `basics.md`, `part2/` after every file beside it.
        if let Some(order) = parse::summary::reading_order(self.layout()) {
            selected.sort_by_key(|s| order.get(&s.chapter().path).copied().unwrap_or(usize::MAX));
        }
        Ok(selected)
    }

    /// Every generated file that differs from what the chapters generate: under `code/`, and the
    /// snapshots of chapters the book no longer has.
    pub fn stale(&self) -> anyhow::Result<Vec<Stale>> {
        let mut stale = sync::stale_files(&self.root, &self.generated)?;
        stale.extend(self.orphan_snapshots().into_iter().map(Stale::Unexpected));
        Ok(stale)
    }

    fn orphan_snapshots(&self) -> Vec<PathBuf> {
        let layout = self.layout();
        snapshot::orphans(&self.root, &layout.snapshots, &layout.src, &self.notebook_chapters())
    }

    /// The names of the notebook chapters: those with snapshots and figures of their own.
    fn notebook_chapters(&self) -> Vec<&str> {
        let notebook = self.book.chapters.iter().filter(|c| c.mode == crate::model::CellMode::Notebook);
        notebook.map(|c| c.name.as_str()).collect()
    }

    /// Writes `code/`, doing with files edited since tangle wrote them what `discard` says:
    /// with [`Discard::Nothing`] it refuses (before anything is written), the error naming
    /// each such file and the ways out.
    pub fn sync(&self, discard: &Discard) -> anyhow::Result<Vec<Stale>> {
        if let Discard::Nothing = discard {
            self.refuse_edits()?;
        }
        let mut written = sync::write(&self.root, &self.generated, discard, self.layout().discarded_dir())?;
        for orphan in self.orphan_snapshots() {
            std::fs::remove_file(self.root.join(&orphan))
                .with_context(|| format!("cannot remove {}", orphan.display()))?;
            written.push(Stale::Unexpected(orphan));
        }
        Ok(written)
    }

    /// An error naming every generated file edited since tangle wrote it, at its first edited
    /// line, if there is one.
    pub(crate) fn refuse_edits(&self) -> anyhow::Result<()> {
        let edited = self.edited(&self.stale()?)?;
        match edited.is_empty() {
            true => Ok(()),
            false => Err(back::refusal(&self.book, &self.config, &self.generated, &edited).into()),
        }
    }

    /// Whether `untangle` would take the edits of the generated files under `code/` among
    /// `stale` (tried in memory, nothing written); else its first reason, at its place.
    pub fn untangle_would_take(&self, stale: &[Stale]) -> anyhow::Result<Result<(), String>> {
        let code = &self.layout().code;
        let edited: std::collections::BTreeMap<PathBuf, String> =
            self.edited(stale)?.into_iter().filter(|(p, _)| p.starts_with(code)).collect();
        Ok(back::untangle(&self.book, &self.config, &self.generated, &edited)
            .map(|_| ())
            .map_err(|r| back::first_reason(&r)))
    }

    /// The files of `stale` that hold someone's work (edited, or not tangle's), with their text.
    fn edited(&self, stale: &[Stale]) -> anyhow::Result<Vec<(PathBuf, String)>> {
        let mut out = Vec::new();
        for s in stale {
            if s.is_hand_made() {
                let path = s.path();
                let bytes = std::fs::read(self.root.join(path))?;
                out.push((path.to_path_buf(), String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
        Ok(out)
    }

    /// Where the figures of a chapter's last completed run are kept ([`cache::kept_figures`]).
    fn kept_figures(&self) -> PathBuf {
        cache::kept_figures(self.layout())
    }
}

/// One chapter's run and verdicts.
#[derive(Debug)]
pub struct ChapterResult {
    pub chapter: Arc<Chapter>,
    pub run: RunOutput,
    /// The folder holding what the run drew, `<dir>/chNN/*.svg`.
    pub drawn: PathBuf,
    pub cached: bool,
    /// Answered from the chapter's frozen record: nothing was built or run.
    pub frozen: bool,
    pub verdicts: Vec<CellVerdict>,
    /// The prose's quotes of values against what the code published.
    pub values: ValueReport,
    pub figures: Vec<FigureDrift>,
    /// Snapshot files that disagree with the prose.
    pub snapshots: Vec<snapshot::SnapshotDrift>,
    /// A frozen chapter whose record cannot answer (missing, unreadable or stale): why. Such a
    /// chapter is not built, run or compared (it has no verdicts), and fails with this error
    /// while the other chapters are checked.
    pub unanswered: Option<freeze::Unanswered>,
}

impl ChapterResult {
    /// A frozen chapter that its record cannot answer, for `why`: nothing ran or was compared.
    fn unanswered(chapter: &Arc<Chapter>, why: freeze::Unanswered) -> Self {
        ChapterResult {
            chapter: chapter.clone(),
            run: RunOutput { cells: Vec::new(), end: run::RunEnd::Completed, values: Vec::new() },
            drawn: PathBuf::new(),
            cached: false,
            frozen: true,
            verdicts: Vec::new(),
            values: ValueReport::default(),
            figures: Vec::new(),
            snapshots: Vec::new(),
            unanswered: Some(why),
        }
    }

    pub fn drifted(&self) -> impl Iterator<Item = &CellVerdict> {
        self.verdicts.iter().filter(|v| matches!(v.verdict, Verdict::Drift { .. }))
    }

    /// The drifted figures `accept` can take: none of a frozen chapter's, which only a run of it
    /// can redraw ([`freeze::refuse_figure_drift`]).
    pub fn acceptable_figures(&self) -> usize {
        if self.frozen { 0 } else { self.figures.len() }
    }
}

/// What `check` found.
#[derive(Debug)]
pub enum Outcome {
    /// `code/` differs from the chapters and may not be written (`CI=true`).
    Stale(Vec<Stale>),
    /// The build failed; its diagnostics (errors and warnings), located in the chapters.
    CompileErrors(Vec<Diagnostic>),
    Ran(Vec<ChapterResult>),
}

/// Whether we are on CI, where nothing in the tree may be written (insta's rule).
pub fn on_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Whether a command may write the book's generated files and lock file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writes {
    /// Write what is stale (a check syncs `code/`, a build updates the lock file).
    Allow,
    /// Refuse: fail on stale files and build `--locked` (on CI, insta's rule).
    Refuse,
}

impl Default for Writes {
    /// Refuse on CI, allow elsewhere.
    fn default() -> Self {
        if on_ci() { Writes::Refuse } else { Writes::Allow }
    }
}

/// How a check runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct CheckOptions {
    /// Whether stale generated files may be rewritten (and the lock file updated).
    pub writes: Writes,
    pub verbose: bool,
    /// Rerun every chapter (no cache) and judge outputs and values exactly, redactions and
    /// tolerances aside: how `accept --refresh` records this machine's measurements.
    pub refresh: bool,
    /// Rerun every chapter asked for (no cache), judging as usual: `check --rerun`, for an
    /// output that depends on how busy the machine was when the cached run was made.
    pub rerun: bool,
    /// With `rerun`, run the frozen chapters too (`check --rerun --chapter ch08` names them);
    /// else they answer from their records, as they were frozen for: they cannot run here.
    pub rerun_frozen: bool,
}

/// Syncs `code/` (or, where writes are refused, reports it stale; and anywhere, refuses to
/// overwrite a generated file edited since tangle wrote it), builds what the cache cannot
/// answer, runs it and compares every selected chapter with its prose, reporting its progress
/// to `progress` ([`Plain`] for log lines alone).
///
/// The chapters whose runs the cache cannot answer are built by one cargo build, then run one
/// at a time, in order. (Running a chapter as soon as its program is built, while cargo builds
/// the chapters after it, was measured slower on two cores: chapter 2's two training threads
/// then share the machine with rustc; and a program that measures its own speed must not
/// share it at all.)
pub fn check(
    project: &Project,
    chapters: &[Selected<'_>],
    options: CheckOptions,
    progress: &dyn Progress,
) -> anyhow::Result<Outcome> {
    let stale = timing::phase("stale", || project.stale())?;
    if !stale.is_empty() {
        if options.writes == Writes::Refuse {
            return Ok(Outcome::Stale(stale));
        }
        for (verb, what) in sync::summary(&project.sync(&Discard::Nothing)?, &project.generated, project.layout()) {
            progress.line(&format!("{verb:>9} {what}"));
        }
    }

    // Cell lines wider than the book's column, and run cells defining a `main` nothing calls:
    // warnings only, on stderr.
    timing::phase("lint", || {
        parse::lint::report_long_lines(
            &project.root,
            &project.book,
            &names(chapters),
            project.config.checks.line_width,
        );
        parse::lint::report_uncalled_mains(&project.root, &project.book, &names(chapters));
        let whole_book = chapters.len() == project.generated.crates.len();
        parse::lint::report_unread_rust(&project.root, &project.book, &names(chapters), whole_book);
        report_orphan_figures(project);
        if let Some(warning) = abandoned_code_folder(project.layout()) {
            eprintln!("{warning}");
        }
    });

    // Frozen chapters are answered from their records, unless asked to run afresh; one whose
    // record cannot answer is neither built nor run, and fails on its own.
    let freeze::Answers { records: mut frozen, mut unanswered } =
        match options.refresh || (options.rerun && options.rerun_frozen) {
            true => Default::default(),
            false => timing::phase("frozen records", || {
                freeze::answer(&project.config, &project.book, &project.generated, &names(chapters))
            })?,
        };
    let shared = timing::phase("cache shared inputs", || {
        cache::shared_inputs(project.layout(), &project.generated, &project.config)
    });
    let mut lookups = Vec::new();
    let mut to_build = Vec::new();
    let _keys = timing::Span::new("cache keys and lookups");
    for &selected in chapters.iter().filter(|s| !frozen.contains_key(s.name()) && !unanswered.contains_key(s.name())) {
        let name = selected.name();
        let key = cache::key(project.layout(), &shared, &project.generated, name)?;
        // `accept --refresh` asks for this machine's measurements as they come out now, and
        // `--rerun` for a fresh run: neither looks (a lookup may bring an earlier run back into
        // place). A cached run is only as good as the figures kept from it.
        let answers = !options.refresh && !options.rerun;
        let cached = answers
            .then(|| cache::lookup(project.layout(), selected.chapter(), &key))
            .flatten()
            .filter(|_| project.kept_figures().join(name).is_dir());
        if cached.is_none() {
            to_build.push(name.to_string());
        }
        lookups.push((selected, cached));
    }
    drop(_keys);
    let built = Mutex::new(Vec::new());
    if !to_build.is_empty() {
        progress.line(&format!(" building {}", crate::messages::few(&to_build)));
        progress.building(&to_build);
        let build_options = BuildOptions {
            verbose: options.verbose,
            locked: options.writes == Writes::Refuse,
            full_optimisation: false,
        };
        let report = timing::phase("build", || {
            build::build(
                project.layout(),
                &project.generated,
                build::Targets::Programs(&to_build),
                build_options,
                progress,
                &collect_into(&built),
            )
        });
        progress.built();
        let report = report?;
        if report.failed() {
            return Ok(Outcome::CompileErrors(report.diagnostics));
        }
    }
    let built = built.into_inner().unwrap_or_else(|e| e.into_inner());

    // The build may have rewritten code/Cargo.lock (a new chapter enters it), so runs are
    // stored under keys taken after it: the ones taken before would never match again.
    let shared = if to_build.is_empty() {
        shared
    } else {
        cache::shared_inputs(project.layout(), &project.generated, &project.config)
    };
    // Figures are drawn into a folder of this run's own, so that two runs never wipe each
    // other's; a completed run's figures then move to where cached runs find them.
    let staging = crate::lock::run_staging(&project.layout().work_dir())?;
    let mut results = Vec::new();
    for selected in chapters {
        let chapter = selected.chapter();
        if let Some(why) = unanswered.remove(&chapter.name) {
            results.push(ChapterResult::unanswered(chapter, why));
            continue;
        }
        let Some(record) = frozen.remove(&chapter.name) else { continue };
        let figures = freeze::figure_drift(project.layout(), &chapter.name, &record)?;
        let drawn = project.layout().abs(&project.layout().figures);
        let result = compare(project, chapter, record.run(chapter), drawn, figures, options)?;
        results.push(ChapterResult { frozen: true, ..result });
    }
    for (selected, cached) in lookups {
        let (chapter, krate) = (selected.chapter(), selected.krate);
        let name = selected.name();
        let (run, from_cache, drawn) = match cached {
            Some(run) => (run, true, project.kept_figures()),
            None => {
                // The program cargo reported (the copy in target/tangle/release is the same file,
                // unless another build replaced it since).
                let exe = match built.iter().find(|(c, _)| c == name) {
                    Some((_, exe)) => exe.clone(),
                    None => build::binary(project.layout(), name),
                };
                progress.line(&format!("  running {name}"));
                let current = Arc::new(AtomicUsize::new(0));
                progress.running(chapter, current.clone());
                let run = timing::phase(&format!("run {name}"), || {
                    run::run_reporting(&exe, &project.root, chapter, krate, staging.path(), current)
                });
                progress.ran(name);
                let run = run?;
                let drawn = match run.completed() {
                    true => {
                        let key = cache::key(project.layout(), &shared, &project.generated, name)?;
                        cache::store(project.layout(), chapter, &key, &run, &staging.path().join(name))?;
                        project.kept_figures()
                    }
                    false => staging.path().to_path_buf(),
                };
                (run, false, drawn)
            }
        };
        results.push(timing::phase(&format!("compare {name}"), || {
            // A run that stopped early drew only some figures; the rest are not "no longer drawn".
            let figures = match run.completed() {
                true => compare::compare_figures(project.layout(), &drawn, name)?,
                false => Vec::new(),
            };
            Ok::<_, anyhow::Error>(ChapterResult {
                cached: from_cache,
                ..compare(project, chapter, run, drawn, figures, options)?
            })
        })?);
    }
    // In the order asked for.
    results.sort_by_key(|r| chapters.iter().position(|c| Arc::ptr_eq(c.chapter(), &r.chapter)));
    Ok(Outcome::Ran(results))
}

/// A build's `on_built` that collects each chapter and its program into `built`.
fn collect_into(built: &Mutex<Vec<(String, PathBuf)>>) -> impl Fn(&str, &Path) + Sync + '_ {
    move |chapter, exe| built.lock().unwrap_or_else(|e| e.into_inner()).push((chapter.to_string(), exe.to_path_buf()))
}

/// One chapter's run at full optimisation.
#[derive(Debug)]
pub struct ReferenceRun {
    pub chapter: Arc<Chapter>,
    pub run: RunOutput,
    /// The folder holding what the run drew, `<dir>/chNN/*.svg`.
    pub drawn: PathBuf,
}

/// Builds the programs of `chapters` at full optimisation (the release profile, without the
/// run programs' own, see `generate::manifest::RUN_PROFILE`) and runs each, drawing into
/// `figures_dir`: the reference that a check's runs must equal, timings aside. Neither the
/// cache nor the kept figures are touched. (The reference programs are built beside the quick
/// ones, under their own hashes, so that neither build undoes the other.)
pub fn run_fully_optimised(
    project: &Project,
    chapters: &[Selected<'_>],
    figures_dir: &Path,
) -> anyhow::Result<Vec<ReferenceRun>> {
    let options = BuildOptions { verbose: false, locked: on_ci(), full_optimisation: true };
    let built = Mutex::new(Vec::new());
    let report = build::build(
        project.layout(),
        &project.generated,
        build::Targets::Programs(&names(chapters)),
        options,
        &Plain,
        &collect_into(&built),
    )?;
    if report.failed() {
        let errors: Vec<String> = report.errors().map(|d| d.to_string()).collect();
        anyhow::bail!("the chapters do not build at full optimisation:\n{}", errors.join("\n"));
    }
    let built = built.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut runs = Vec::new();
    for selected in chapters {
        let (chapter, krate) = (selected.chapter(), selected.krate);
        let name = &chapter.name;
        let (_, exe) =
            built.iter().find(|(c, _)| c == name).with_context(|| format!("cargo built no program for {name}"))?;
        let run = run::run_reporting(exe, &project.root, chapter, krate, figures_dir, Arc::new(AtomicUsize::new(0)))?;
        runs.push(ReferenceRun { chapter: chapter.clone(), run, drawn: figures_dir.to_path_buf() });
    }
    Ok(runs)
}

/// One chapter's verdicts: its outputs, values and snapshots against the prose, with the
/// figures' drift as found.
fn compare(
    project: &Project,
    chapter: &Arc<Chapter>,
    run: RunOutput,
    drawn: PathBuf,
    figures: Vec<FigureDrift>,
    options: CheckOptions,
) -> anyhow::Result<ChapterResult> {
    let verdicts = compare::compare_chapter(
        chapter,
        &run,
        if options.refresh { compare::Judge::Exactly } else { compare::Judge::AsDeclared },
    );
    let values = match compare::load_recorded(&project.root, chapter) {
        Ok(recorded) => compare::compare_values(chapter, &run, &recorded, options.refresh),
        Err(d) => ValueReport { drifts: Vec::new(), diagnostics: vec![*d] },
    };
    let snapshots = snapshot::stale(&project.layout().abs(&project.layout().snapshots), chapter);
    let (cached, frozen, unanswered) = (false, false, None);
    Ok(ChapterResult {
        chapter: chapter.clone(),
        run,
        drawn,
        cached,
        frozen,
        verdicts,
        values,
        figures,
        snapshots,
        unanswered,
    })
}

/// Warns of each folder under `figures/` that no notebook chapter draws into any more (see
/// [`compare::orphan_figures`]): the book still ships it, and nothing checks it.
fn report_orphan_figures(project: &Project) {
    for folder in compare::orphan_figures(project.layout(), &project.notebook_chapters()) {
        eprintln!(
            "warning: {}/ holds figures that no chapter draws (the chapter was renamed or deleted?): \
             remove the folder, or give its figures to the chapter that draws them now",
            folder.display()
        );
    }
}

/// Warns of the crates tangle generated in `code/`, the default folder, before `book.toml` named
/// another for them (`code = "crates"`): nothing builds or checks them any more. Only a folder
/// whose workspace manifest is tangle's, as tangle wrote it, is pointed out.
fn abandoned_code_folder(layout: &Layout) -> Option<String> {
    let default = Path::new("code");
    let manifest = std::fs::read(layout.abs(default).join("Cargo.toml")).ok()?;
    (layout.code != default && generate::seal::is_intact(&manifest)).then(|| {
        format!(
            "warning: code/ holds the crates tangle generated before book.toml named {}/ for them: nothing \
             builds or checks them any more; remove the folder",
            layout.code.display()
        )
    })
}

/// What `accept` changed.
#[derive(Debug, Default)]
pub struct Accepted {
    pub files: Vec<PathBuf>,
    /// Figures no cell draws any more, removed from `figures/`.
    pub removed: Vec<PathBuf>,
}

impl Accepted {
    /// What accept did, a line a file: `updated PATH`, `removed PATH (...)`.
    pub fn report(&self) -> Vec<String> {
        let updated = self.files.iter().map(|f| format!("updated {}", f.display()));
        let removed = self.removed.iter().map(|f| format!("removed {} (no cell draws it any more)", f.display()));
        updated.chain(removed).collect()
    }
}

/// Writes the actual outputs of `results` into the prose, `figures/` and `snapshots/`.
/// `writes` must allow it (`accept` never runs on CI, where the book is only checked).
pub fn accept(project: &Project, results: &[ChapterResult], writes: Writes) -> anyhow::Result<Accepted> {
    anyhow::ensure!(writes == Writes::Allow, "accept writes the book and never runs with CI set");
    // Temporary files a killed run left where we write (we hold the repository lock, so no
    // live run owns them).
    let layout = project.layout();
    let figure_dirs = project.book.chapters.iter().map(|c| layout.figures.join(&c.name));
    let chapter_dirs = project.book.chapters.iter().filter_map(|c| c.path.parent().map(Path::to_path_buf));
    for dir in [layout.snapshots.clone()].into_iter().chain(figure_dirs).chain(chapter_dirs) {
        fsutil::sweep_temp_files(&project.root.join(dir));
    }
    let mut accepted = Accepted::default();
    // The chapters whose text accept rewrote, parsed again (once each).
    let mut rewritten: Vec<Chapter> = Vec::new();
    for result in results.iter().filter(|r| r.frozen) {
        freeze::refuse_figure_drift(&result.chapter.name, &result.figures)?;
    }
    // A frozen chapter whose record cannot answer has nothing to accept (its error says how to
    // remake the record).
    for result in results.iter().filter(|r| r.unanswered.is_none()) {
        let chapter = &result.chapter;
        // A frozen chapter that ran (`--refresh`): its record is remade from this run.
        if !result.frozen && result.run.completed() && freeze::is_frozen(&project.config, chapter) {
            let written = freeze::write(&project.config, &project.generated, chapter, &result.run, &result.drawn)?;
            accepted.files.extend(written);
        }
        let path = project.root.join(&chapter.path);
        let now = match accept::rewrite(chapter, &result.run, &result.verdicts, &result.values.drifts) {
            Some(text) => {
                // The chapter may have been edited while its program ran; never overwrite that.
                fsutil::replace_if_unchanged(&path, chapter.source().as_bytes(), text.as_bytes())?;
                accepted.files.push(chapter.path.clone());
                let reparsed = parse::parse_chapter_as(&chapter.name, &chapter.path, text.into_bytes(), chapter.mode)?;
                rewritten.push(reparsed);
                rewritten.last().expect("just pushed")
            }
            None => chapter,
        };
        // An examples chapter (an existing mdBook's) is not mirrored in snapshots/.
        if now.mode == crate::model::CellMode::Notebook && snapshot::write(&layout.abs(&layout.snapshots), now)? > 0 {
            accepted.files.push(layout.snapshots.join(format!("{}__*.snap", chapter.name)));
        }
        for drift in &result.figures {
            match drift {
                FigureDrift::Changed(rel) | FigureDrift::New(rel) => {
                    let drawn = result.drawn.join(rel.strip_prefix(&layout.figures)?);
                    let old = std::fs::read(project.root.join(rel)).unwrap_or_default();
                    fsutil::write_atomic(
                        &project.root.join(rel),
                        &fsutil::in_endings_of(&old, &std::fs::read(drawn)?),
                    )?;
                }
                FigureDrift::NoLongerDrawn(rel) => {
                    let file = project.root.join(rel);
                    std::fs::remove_file(&file)?;
                    // The chapter's folder goes with its last figure (it fails if anything is left).
                    if let Some(folder) = file.parent() {
                        let _ = std::fs::remove_dir(folder);
                    }
                    accepted.removed.push(rel.clone());
                    continue;
                }
            }
            accepted.files.push(match drift {
                FigureDrift::Changed(p) | FigureDrift::New(p) | FigureDrift::NoLongerDrawn(p) => p.clone(),
            });
        }
    }
    // The new blocks moved the cells below them, and with them the line comments in `code/`.
    // (A book of examples alone has no `code/` to keep in step.)
    if !accepted.files.is_empty() && !project.generated.crates.is_empty() {
        let resynced = project.with_chapters(rewritten)?.sync(&Discard::Nothing)?;
        accepted.files.extend(resynced.iter().map(|s| s.path().to_path_buf()));
    }
    Ok(accepted)
}

/// A chapter whose cells were not all formatted.
#[derive(Debug)]
pub struct Unformatted {
    pub chapter: PathBuf,
    /// Where each cell that rustfmt changes starts (its first line of code).
    pub cells: Vec<crate::diagnostic::Location>,
}

/// Formats the cells of `chapters` with rustfmt. With `write`, rewrites the chapters (and
/// re-syncs `code/`); returns the chapters whose cells were not (or are no longer) formatted.
pub fn fmt(project: &Project, chapters: &[&Chapter], write: bool) -> anyhow::Result<Vec<Unformatted>> {
    if write {
        // fmt rewrites cells and then code/: edits there would be lost, or no longer fit.
        project.refuse_edits()?;
    }
    let mut changed = Vec::new();
    let mut rewritten = Vec::new();
    // The chapter workspace's style (code/ may not exist yet in a new book: then the root's).
    let code = project.layout().abs(&project.layout().code);
    let style_dir = Some(code).filter(|d| d.is_dir()).unwrap_or_else(|| project.root.clone());
    // The cells rustfmt found formatted before are not given to it again.
    let mut clean = accept::fmt::Clean::load(&project.layout().work_dir(), &style_dir);
    for &chapter in chapters {
        let formatted =
            accept::fmt::format_chapter(chapter, project.config.edition(chapter.mode), &style_dir, &mut clean);
        let formatted = formatted.inspect_err(|_| clean.save())?;
        let Some(accept::fmt::Formatted { text, cells }) = formatted else {
            continue;
        };
        if write {
            anyhow::ensure!(!on_ci(), "fmt writes the book and never runs with CI set");
            fsutil::replace_if_unchanged(
                &project.root.join(&chapter.path),
                chapter.source().as_bytes(),
                text.as_bytes(),
            )?;
            rewritten.push(parse::parse_chapter_as(&chapter.name, &chapter.path, text.into_bytes(), chapter.mode)?);
        }
        changed.push(Unformatted {
            chapter: chapter.path.clone(),
            cells: cells.into_iter().map(|line| chapter.location(line)).collect(),
        });
    }
    clean.save();
    if write && !changed.is_empty() {
        project.with_chapters(rewritten)?.sync(&Discard::Nothing)?;
    }
    Ok(changed)
}

/// What the chapters' test cells did.
#[derive(Debug)]
pub enum TestCellsOutcome {
    /// The test cells did not build; their diagnostics, located in the chapters.
    CompileErrors(Vec<Diagnostic>),
    /// Each chapter with test cells, its cases, and whether they come from the cache.
    Ran(Vec<(Arc<Chapter>, Vec<TestCase>, bool)>),
}

/// Builds and runs the `// @test` cells of `chapters` (the chapters without any are left out),
/// skipping the chapters whose tests and what they depend on passed unchanged before.
pub fn test_cells(
    project: &Project,
    chapters: &[Selected<'_>],
    progress: &dyn Progress,
) -> anyhow::Result<TestCellsOutcome> {
    let with_tests =
        chapters.iter().filter(|s| s.chapter().cells.iter().any(|cell| cell.kind == crate::model::CellKind::Test));
    let shared = cache::shared_inputs(project.layout(), &project.generated, &project.config);
    let mut done = Vec::new();
    let mut to_run = Vec::new();
    for &selected in with_tests {
        let name = selected.name();
        // A frozen chapter's tests are not built: each counts as ignored.
        if freeze::is_frozen(&project.config, selected.chapter()) {
            done.push((selected.chapter().clone(), freeze::ignored_tests(selected.chapter()), false));
            continue;
        }
        let key = cache::tests_key(project.layout(), &shared, &project.generated, name)?;
        match cache::lookup_tests(project.layout(), name, &key) {
            Some(records) => {
                let cases = records
                    .into_iter()
                    .map(|(test, passed)| run::test_cells::recorded(selected.chapter(), test, passed))
                    .collect();
                done.push((selected.chapter().clone(), cases, true));
            }
            None => to_run.push(selected),
        }
    }
    if !to_run.is_empty() {
        let to_run_names = names(&to_run);
        progress.line(&format!(" building the test cells of {}", to_run_names.join(", ")));
        let built = Mutex::new(Vec::new());
        let options = BuildOptions { verbose: false, locked: on_ci(), full_optimisation: false };
        let report = build::build(
            project.layout(),
            &project.generated,
            build::Targets::TestCells(&to_run_names),
            options,
            progress,
            &collect_into(&built),
        )?;
        if report.failed() {
            return Ok(TestCellsOutcome::CompileErrors(report.diagnostics));
        }
        let built = built.into_inner().unwrap_or_else(|e| e.into_inner());
        // Cargo wrote the lock file if a chapter entered it: keys taken now match next time.
        let shared = cache::shared_inputs(project.layout(), &project.generated, &project.config);
        for selected in &to_run {
            let (chapter, krate) = (selected.chapter(), selected.krate);
            let name = &chapter.name;
            let (_, exe) = built
                .iter()
                .find(|(c, _)| c == name)
                .with_context(|| format!("cargo built no test program for {name}"))?;
            progress.line(&format!("  testing {name}"));
            let cases = run::test_cells::run(exe, project.layout(), chapter, krate)?;
            let clean = cases.iter().all(|c| !matches!(c.outcome, TestOutcome::Failed { .. }));
            if clean {
                let key = cache::tests_key(project.layout(), &shared, &project.generated, name)?;
                let records: Vec<cache::TestRecord> =
                    cases.iter().map(|c| (c.name.clone(), c.outcome == TestOutcome::Passed)).collect();
                cache::store_tests(project.layout(), name, &key, &records)?;
            }
            done.push((chapter.clone(), cases, false));
        }
    }
    // In the book's order.
    done.sort_by_key(|(chapter, _, _)| chapters.iter().position(|c| Arc::ptr_eq(c.chapter(), chapter)));
    Ok(TestCellsOutcome::Ran(done))
}

/// What `untangle` did.
#[derive(Debug, Default)]
pub struct Untangled {
    /// Each chapter that took edits, with the files they came from and its changed lines.
    pub chapters: Vec<back::ChapterEdit>,
    /// What the `sync` after it wrote, as `sync` prints it.
    pub written: Vec<(&'static str, String)>,
}

impl Untangled {
    /// What the command prints, a line each.
    pub fn report(&self) -> Vec<String> {
        let mut out = Vec::new();
        for c in &self.chapters {
            let files: Vec<String> = c.files.iter().map(|f| f.display().to_string()).collect();
            let mut lines = match c.lines.len() {
                0 => String::new(),
                1 => format!("line {}", ranges(&c.lines)),
                _ => format!("lines {}", ranges(&c.lines)),
            };
            if c.removed > 0 {
                let sep = if lines.is_empty() { "" } else { "; " };
                lines += &format!("{sep}{} line(s) removed", c.removed);
            }
            if lines.is_empty() {
                lines = "no line changed".to_string();
            }
            out.push(format!("untangled {} into {} ({lines})", files.join(", "), c.chapter.path.display()));
        }
        if self.chapters.is_empty() {
            out.push("nothing to untangle: no generated file was edited since tangle wrote it".to_string());
        }
        out.extend(self.written.iter().map(|(verb, what)| format!("{verb} {what}")));
        out
    }
}

/// `3, 7-9` for lines 3, 7, 8, 9.
fn ranges(lines: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let mut j = i;
        while j + 1 < lines.len() && lines[j + 1] == lines[j] + 1 {
            j += 1;
        }
        parts.push(if i == j { lines[i].to_string() } else { format!("{}-{}", lines[i], lines[j]) });
        i = j + 1;
    }
    parts.join(", ")
}

/// Takes the edits made in the generated files of `chapters` (and, when every chapter is
/// asked for, in the files that belong to none: those are refused) into their chapters, then
/// writes `code/` again: the edited files come out as edited (the location comments' numbers
/// and the seal aside). Either every edit goes in, or nothing is written. The caller holds the
/// repository lock; `writes` must allow writing (never on CI).
pub fn untangle(project: &Project, chapters: &[Selected<'_>], writes: Writes) -> anyhow::Result<Untangled> {
    anyhow::ensure!(writes == Writes::Allow, "untangle writes the book and never runs with CI set");
    let every = chapters.len() == project.generated.crates.len();
    let ours = |path: &Path| match project.generated.crates.iter().find(|c| c.files.iter().any(|(p, _)| p == path)) {
        Some(krate) => chapters.iter().any(|s| s.name() == krate.name()),
        None => every,
    };
    // Generated files edited; a file of someone's that no chapter generates is no edit to take
    // (and `sync` keeps it).
    let generates = |path: &Path| project.generated.files().any(|(p, _)| p == path);
    let all_edited = project.edited(&project.stale()?)?;
    // An edited file of a chapter renamed, moved or deleted since: its edits have no chapter to
    // go to, which is an error to explain, not "nothing to untangle".
    let orphaned: Vec<(PathBuf, String)> = all_edited
        .iter()
        .filter(|(p, text)| every && !generates(p) && back::gone_chapter(&project.book, text).is_some())
        .cloned()
        .collect();
    if !orphaned.is_empty() {
        return Err(back::refusal(&project.book, &project.config, &project.generated, &orphaned).into());
    }
    let edited: std::collections::BTreeMap<PathBuf, String> =
        all_edited.into_iter().filter(|(p, _)| generates(p) && ours(p)).collect();
    if edited.is_empty() {
        return Ok(Untangled::default());
    }
    let taken = match back::untangle(&project.book, &project.config, &project.generated, &edited) {
        Ok(taken) => taken,
        Err(mut found) => {
            // Nothing was taken: say whose edits wait on these.
            let refused = back::refused_files(&found);
            let waiting: Vec<String> =
                edited.keys().filter(|p| !refused.contains(*p)).map(|p| p.display().to_string()).collect();
            if let (false, Some(first)) = (waiting.is_empty() || refused.is_empty(), found.0.first_mut()) {
                first.notes.push((
                    crate::diagnostic::NoteKind::Note,
                    format!(
                        "nothing was taken: the edits of {} wait until these are mended, or dropped with `{}`",
                        waiting.join(", "),
                        back::discard_command(&refused)
                    ),
                ));
            }
            // One refusal alone, as one error.
            return match found.0.len() {
                1 => Err(found.0.remove(0).into()),
                _ => Err(found.into()),
            };
        }
    };
    for c in &taken {
        let chapter = &c.chapter;
        if c.text != chapter.source() {
            // The chapter may have been edited meanwhile; never overwrite that.
            fsutil::replace_if_unchanged(
                &project.root.join(&chapter.path),
                chapter.source().as_bytes(),
                c.text.as_bytes(),
            )?;
        }
    }
    let files = taken.iter().flat_map(|c| c.files.iter().cloned()).collect();
    let reloaded = Project::from_config(project.config.clone())?;
    // What it overwrote it took in first: nothing was discarded.
    let fixed: Vec<Stale> = reloaded
        .sync(&Discard::These(files))?
        .into_iter()
        .map(|s| match s {
            Stale::Edited(p) => Stale::Differs(p),
            s => s,
        })
        .collect();
    let written = sync::summary(&fixed, &reloaded.generated, reloaded.layout());
    Ok(Untangled { chapters: taken, written })
}

/// For `serve`: when a generated file was edited since tangle wrote it, takes the edits of
/// every chapter in ([`untangle`]); `None` when nothing was edited (or the book does not load,
/// which the build then reports, or writes are refused). The caller holds the repository lock.
pub fn untangle_edits(config: &Config, writes: Writes) -> Option<anyhow::Result<Untangled>> {
    if writes == Writes::Refuse {
        return None;
    }
    let project = Project::from_config(config.clone()).ok()?;
    let stale = project.stale().ok()?;
    if !stale.iter().any(|s| matches!(s, Stale::Edited(_))) {
        return None;
    }
    let chapters = project.select(&[]).ok()?;
    Some(untangle(&project, &chapters, writes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crates_left_in_code_after_book_toml_moved_them_are_pointed_out() {
        let dir = tempfile::tempdir().unwrap();
        let layout = |toml: &str| Config::parse(dir.path(), Path::new(""), toml).unwrap().layout;
        let moved = layout("[book]\ntitle = \"T\"\n[preprocessor.tangle]\ncode = \"crates\"\n");
        assert_eq!(abandoned_code_folder(&moved), None, "no code/ at all");
        std::fs::create_dir_all(dir.path().join("code")).unwrap();
        let manifest = generate::seal::seal("# @generated by tangle from book.toml: do not edit.\n[workspace]\n");
        std::fs::write(dir.path().join("code/Cargo.toml"), &manifest).unwrap();
        let warning = abandoned_code_folder(&moved).expect("tangle's crates left behind");
        assert!(warning.contains("named crates/"), "{warning}");
        // Where tangle still generates them, or an author's own manifest: nothing to say.
        assert_eq!(abandoned_code_folder(&layout("[book]\ntitle = \"T\"\n")), None);
        std::fs::write(dir.path().join("code/Cargo.toml"), "[workspace]\nmembers = [\"mine\"]\n").unwrap();
        assert_eq!(abandoned_code_folder(&moved), None);
    }

    #[test]
    fn chapters_are_selected_in_the_order_the_reader_meets_them() {
        let dir = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| crate::fsutil::put(&dir.path().join(path), text);
        write("book.toml", "[book]\ntitle = \"T\"\n\n[preprocessor.tangle]\n");
        // Path order would be advanced, basics, part/intro, zebra; imports come first when built.
        write(
            "src/SUMMARY.md",
            "# Summary\n\n- [Intro](part/intro.md)\n- [Basics](basics.md)\n- [Advanced](advanced.md)\n",
        );
        for (page, code) in [
            ("part/intro.md", "// @save\npub fn one() -> u32 { 1 }"),
            ("basics.md", "// @save\npub fn two() -> u32 { advanced::three() - 1 }"),
            ("advanced.md", "// @save\npub fn three() -> u32 { 3 }"),
            ("zebra.md", "println!(\"unlisted\");"),
        ] {
            write(&format!("src/{page}"), &format!("# A page\n\n```rust\n{code}\n```\n"));
        }
        let project = Project::load(dir.path()).unwrap();
        let built: Vec<&str> = project.generated.crates.iter().map(|c| c.name()).collect();
        assert_eq!(built, ["advanced", "basics", "intro", "zebra"], "the build's order, imports first");
        let names = |asked: &[&str]| -> Vec<String> {
            let asked: Vec<String> = asked.iter().map(|a| a.to_string()).collect();
            project.select(&asked).unwrap().iter().map(|s| s.name().to_string()).collect()
        };
        assert_eq!(names(&[]), ["intro", "basics", "advanced", "zebra"]);
        assert_eq!(names(&["zebra", "advanced", "intro"]), ["intro", "advanced", "zebra"]);
        // Without a summary mdBook can read, the build's order.
        write("src/SUMMARY.md", "- [Basics](basics.md)\n\n[Suffix](s.md)\n\n- [Two](advanced.md)\n");
        assert_eq!(names(&[]), built);
    }
}
