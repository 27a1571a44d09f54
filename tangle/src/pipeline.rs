//! The stages put together: load (parse + generate) → sync → build → run → compare, and
//! `accept` on top. The CLI and the tests call these; none of them prints results, they
//! return them (progress goes to stderr).

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::build::{self, BuildOptions};
use crate::compare::{self, CellVerdict, FigureDrift, Verdict};
use crate::diagnostic::Diagnostic;
use crate::generate::sync::{self, Stale};
use crate::generate::{self, Generated, Workspace};
use crate::model::Book;
use crate::run::{self, RunOutput};
use crate::{accept, cache, fsutil, parse, snapshot};

/// A book loaded and generated in memory.
pub struct Project {
    pub root: PathBuf,
    pub book: Book,
    pub generated: Generated,
}

impl Project {
    /// Parses every chapter and generates its crate. Mistakes in the input come back as
    /// [`Diagnostics`](crate::diagnostic::Diagnostics) inside the `anyhow::Error`.
    pub fn load(root: &Path) -> anyhow::Result<Project> {
        let book = parse::load_book(root)?;
        let manifest = std::fs::read_to_string(root.join("Cargo.toml")).context("cannot read the top-level Cargo.toml")?;
        let workspace = Workspace::from_manifest(&manifest)?;
        let generated = generate::generate(&book, &workspace)?;
        Ok(Project { root: root.to_path_buf(), book, generated })
    }

    /// Chapter names to work on: all, or the ones asked for (each must exist).
    pub fn select(&self, asked: &[String]) -> anyhow::Result<Vec<String>> {
        if asked.is_empty() {
            return Ok(self.generated.crates.iter().map(|c| c.chapter.clone()).collect());
        }
        // `ch06`, `6`, `06`, `ch06.md` and `book/src/ch06.md` all name chapter 6.
        let asked: Vec<String> = asked
            .iter()
            .map(|a| {
                let stem = a.rsplit('/').next().unwrap_or(a).trim_end_matches(".md");
                match stem.parse::<u32>() {
                    Ok(n) => format!("ch{n:02}"),
                    Err(_) => stem.to_string(),
                }
            })
            .collect();
        let asked = &asked[..];
        for a in asked {
            if self.book.chapter(a).is_none() {
                let known: Vec<&str> = self.book.chapters.iter().map(|c| c.name.as_str()).collect();
                anyhow::bail!("no chapter named `{a}` (the chapters are: {})", known.join(", "));
            }
        }
        Ok(self.generated.crates.iter().map(|c| c.chapter.clone()).filter(|c| asked.contains(c)).collect())
    }

    pub fn stale(&self) -> anyhow::Result<Vec<Stale>> {
        sync::stale_files(&self.root, &self.generated, None)
    }

    pub fn sync(&self) -> anyhow::Result<Vec<Stale>> {
        sync::write(&self.root, &self.generated, None)
    }

    fn figures_dir(&self) -> PathBuf {
        self.root.join("target/tangle/figures")
    }
}

/// One chapter's run and verdicts.
#[derive(Debug)]
pub struct ChapterResult {
    pub chapter: String,
    pub run: RunOutput,
    pub cached: bool,
    pub verdicts: Vec<CellVerdict>,
    pub figures: Vec<FigureDrift>,
    /// Snapshot files that disagree with the prose.
    pub snapshots: Vec<snapshot::SnapshotDrift>,
}

impl ChapterResult {
    pub fn drifted(&self) -> impl Iterator<Item = &CellVerdict> {
        self.verdicts.iter().filter(|v| matches!(v.verdict, Verdict::Drift { .. }))
    }

    pub fn is_clean(&self) -> bool {
        self.run.completed() && self.drifted().next().is_none() && self.figures.is_empty() && self.snapshots.is_empty()
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

/// How a check runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct CheckOptions {
    pub verbose: bool,
}

/// Syncs `code/` (or, on CI, refuses to), builds what the cache cannot answer, runs it and
/// compares every selected chapter with its prose.
pub fn check(project: &Project, chapters: &[String]) -> anyhow::Result<Outcome> {
    check_with(project, chapters, CheckOptions::default())
}

/// [`check`] with options.
pub fn check_with(project: &Project, chapters: &[String], options: CheckOptions) -> anyhow::Result<Outcome> {
    let stale = project.stale()?;
    if !stale.is_empty() {
        if on_ci() {
            return Ok(Outcome::Stale(stale));
        }
        for fixed in project.sync()? {
            eprintln!("{:>9} {}", fixed.fix_verb(), fixed.path().display());
        }
    }

    let shared = cache::shared_inputs(&project.root);
    let mut lookups = Vec::new();
    let mut to_build = Vec::new();
    for chapter in chapters {
        let key = cache::key(&project.root, &shared, &project.book, &project.generated, chapter)?;
        let cached = cache::lookup(&project.root, chapter, &key);
        if cached.is_none() {
            to_build.push(chapter.clone());
        }
        lookups.push((chapter.clone(), cached));
    }
    if !to_build.is_empty() {
        eprintln!(" building {}", to_build.join(", "));
        let build_options = BuildOptions { verbose: options.verbose, locked: on_ci() };
        let report = build::build(&project.root, &project.book, &project.generated, &to_build, build_options)?;
        if report.failed() {
            return Ok(Outcome::CompileErrors(report.diagnostics));
        }
    }

    // The build may have rewritten Cargo.lock (a new chapter enters it), so runs are stored
    // under keys taken after it: the ones taken before would never match again.
    let shared = if to_build.is_empty() { shared } else { cache::shared_inputs(&project.root) };
    let mut results = Vec::new();
    for (name, cached) in lookups {
        let chapter = project.book.chapter(&name).expect("selected chapters exist");
        let krate = project.generated.get(&name).expect("every chapter is generated");
        let (run, from_cache) = match cached {
            Some(run) => (run, true),
            None => {
                eprintln!("  running {name}");
                let dir = project.figures_dir();
                let _ = std::fs::remove_dir_all(dir.join(&name));
                let run = run::run(&project.root, chapter, krate, &dir)?;
                if run.completed() {
                    let key = cache::key(&project.root, &shared, &project.book, &project.generated, &name)?;
                    cache::store(&project.root, &name, &key, &run)?;
                }
                (run, false)
            }
        };
        let verdicts = compare::compare_chapter(chapter, &run);
        // A run that stopped early drew only some figures; the rest are not "no longer drawn".
        let figures = match run.completed() {
            true => compare::compare_figures(&project.root, &project.figures_dir(), &name)?,
            false => Vec::new(),
        };
        let snapshots = snapshot::stale(&project.root, chapter);
        results.push(ChapterResult { chapter: name, run, cached: from_cache, verdicts, figures, snapshots });
    }
    Ok(Outcome::Ran(results))
}

/// What `accept` changed.
#[derive(Debug, Default)]
pub struct Accepted {
    pub files: Vec<PathBuf>,
}

/// Writes the actual outputs of `results` into the prose, `figures/` and `snapshots/`.
pub fn accept(project: &Project, results: &[ChapterResult]) -> anyhow::Result<Accepted> {
    anyhow::ensure!(!on_ci(), "accept writes the book and never runs with CI set");
    let mut accepted = Accepted::default();
    for result in results {
        let chapter = project.book.chapter(&result.chapter).expect("results come from the book");
        let path = project.root.join(&chapter.path);
        let text = match accept::rewrite(chapter, &result.run, &result.verdicts) {
            Some(text) => {
                // The chapter may have been edited while its program ran; never overwrite that.
                let now = std::fs::read(&path).with_context(|| format!("cannot read {}", chapter.path.display()))?;
                anyhow::ensure!(
                    now == chapter.source.as_bytes(),
                    "{} changed while tangle was running; nothing was written to it (run `cargo tangle accept` again)",
                    chapter.path.display()
                );
                fsutil::write_atomic(&path, text.as_bytes())?;
                accepted.files.push(chapter.path.clone());
                text
            }
            None => chapter.source.clone(),
        };
        let reparsed = parse::parse_chapter(&chapter.name, &chapter.path, text.into_bytes())?;
        if snapshot::write(&project.root, &reparsed)? > 0 {
            accepted.files.push(PathBuf::from(format!("snapshots/{}__*.snap", chapter.name)));
        }
        for drift in &result.figures {
            match drift {
                FigureDrift::Changed(rel) | FigureDrift::New(rel) => {
                    let drawn = project.figures_dir().join(rel.strip_prefix("figures")?);
                    fsutil::write_atomic(&project.root.join(rel), &std::fs::read(drawn)?)?;
                }
                FigureDrift::NoLongerDrawn(rel) => std::fs::remove_file(project.root.join(rel))?,
            }
            accepted.files.push(match drift {
                FigureDrift::Changed(p) | FigureDrift::New(p) | FigureDrift::NoLongerDrawn(p) => p.clone(),
            });
        }
    }
    // The new blocks moved the cells below them, and with them the line comments in `code/`.
    if !accepted.files.is_empty() {
        accepted.files.extend(Project::load(&project.root)?.sync()?.iter().map(|s| s.path().to_path_buf()));
    }
    Ok(accepted)
}
