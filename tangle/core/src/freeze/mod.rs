//! Frozen chapters: a chapter that needs hours or hardware CI does not have keeps the record of
//! its last run committed beside the book (`frozen/chNN.toml`, [`record`]), under a hash of
//! everything the run depends on ([`inputs`]). While the hash matches, `check`, `test`,
//! `book` and `serve` compare the prose with the record and neither build nor run the chapter;
//! its test cells are counted as ignored. When an input changes, that chapter fails on its
//! own ([`Answers::unanswered`]; the others are checked as usual), naming the input and the
//! command that remakes the record where the chapter can run
//! (`accept --refresh --chapter chNN`, which reruns it and rewrites the record; never on CI,
//! where `accept` refuses to write).
//!
//! A chapter is frozen by `freeze = ["chNN"]` in `book.toml` or by `<!-- tangle: freeze -->`
//! in the chapter; examples chapters cannot be. Its figures are committed under `figures/`
//! like any chapter's: the record holds their digests, so a figure changed by hand is drift.
//! (Quarto's `freeze` and jupyter-cache keep executed notebooks the same way.)

mod inputs;
mod record;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::compare::FigureDrift;
use crate::config::{CellMode, Config, Layout};
use crate::diagnostic::{Diagnostic, Diagnostics, Location};
use crate::generate::Generated;
use crate::messages;
use crate::model::{Book, CellKind, Chapter};
use crate::run::RunOutput;
use crate::run::test_cells::{self, TestCase};

pub use inputs::Recipe;
pub use record::Record;

/// Whether `chapter` is frozen (by `book.toml` or by its own directive).
pub fn is_frozen(config: &Config, chapter: &Chapter) -> bool {
    chapter.mode == CellMode::Notebook && declared_at(config, chapter).is_some()
}

/// Where `chapter` is declared frozen: its directive, else its entry in `book.toml`.
fn declared_at(config: &Config, chapter: &Chapter) -> Option<Location> {
    match chapter.directives.freeze {
        Some(line) => Some(chapter.location(line)),
        None => config.freeze.iter().find(|(name, _)| *name == chapter.name).map(|(_, at)| at.clone()),
    }
}

/// `book.toml`'s `freeze` names chapters of the book, and only notebook chapters are frozen.
pub fn validate(config: &Config, book: &Book) -> Result<(), Diagnostics> {
    let mut found = Diagnostics::default();
    for (name, at) in &config.freeze {
        if book.chapter(name).is_none() {
            let known = book.chapters.iter().map(|c| c.name.as_str());
            let hint = match messages::closest(name, known) {
                Some(near) => format!(" (did you mean `{near}`?)"),
                None => String::new(),
            };
            found.push(Diagnostic::error(at.clone(), format!("`freeze` names `{name}`, which is no chapter{hint}")));
        }
    }
    for chapter in book.chapters.iter().filter(|c| c.mode == CellMode::Examples) {
        if let Some(at) = declared_at(config, chapter) {
            found.push(
                Diagnostic::error(at, format!("{} is an examples chapter, which cannot be frozen", chapter.name))
                    .with_help("only notebook chapters, whose cells run as one program, have a run to freeze"),
            );
        }
    }
    found.into_result(())
}

/// The record's path, relative to the project root.
pub(crate) fn record_path(layout: &Layout, chapter: &str) -> PathBuf {
    layout.frozen.join(format!("{chapter}.toml"))
}

/// The command that remakes a chapter's record.
fn refresh_command(chapter: &str) -> String {
    messages::command(&format!("accept --refresh --chapter {chapter}"))
}

/// What the records of the frozen chapters can answer.
#[derive(Debug, Default)]
pub struct Answers {
    /// The current records, by chapter: these chapters are compared with them.
    pub records: BTreeMap<String, Record>,
    /// The frozen chapters whose record is missing, unreadable or stale, each with its error:
    /// these are neither built nor run (they are frozen because they cannot run here), and
    /// fail on their own while the other chapters are checked as usual.
    pub unanswered: BTreeMap<String, Unanswered>,
}

/// Why a frozen chapter's record cannot answer for it.
#[derive(Debug, Clone)]
pub struct Unanswered {
    pub why: Diagnostic,
    /// The record is missing or stale: out of date, as a stale snapshot is, and remade the
    /// same way (exit status 1). Otherwise it cannot be read: the input is wrong (status 2).
    pub outdated: bool,
}

/// The records of the frozen chapters among `chapters`, each checked against the chapter's
/// inputs as they are now.
pub fn answer(config: &Config, book: &Book, generated: &Generated, chapters: &[String]) -> anyhow::Result<Answers> {
    for record in orphans(config, book) {
        eprintln!(
            "warning: {} is the record of no frozen chapter: remove it (or freeze the chapter again)",
            record.display()
        );
    }
    let frozen: Vec<&Arc<Chapter>> =
        chapters.iter().filter_map(|name| book.chapter(name)).filter(|c| is_frozen(config, c)).collect();
    let mut answers = Answers::default();
    if frozen.is_empty() {
        return Ok(answers);
    }
    let layout = &config.layout;
    let shared = inputs::shared(config, generated)?;
    for chapter in frozen {
        let name = &chapter.name;
        let at = declared_at(config, chapter).expect("a frozen chapter is declared so");
        let now = inputs::of(&shared, layout, generated, name)?;
        let before = inputs::as_before(&shared, layout, name, &now);
        // A record an earlier tangle made answers while its inputs, read its way, are unchanged,
        // and a stale one is compared with them read that way.
        let made_before = |record: &Record| {
            record.inputs != now && before.iter().any(|(k, v)| now.get(k) != Some(v) && record.inputs.get(k) == Some(v))
        };
        // A record this tangle wrote is sealed; one written before records were sealed can only
        // be of the recipe before.
        let current = |record: &Record| {
            record.chapter == *name
                && match record.sealed {
                    true => record.hash == inputs::hash(&now, Recipe::Current),
                    false => record.hash == inputs::hash(&before, Recipe::Before),
                }
        };
        let seal_lost = |record: &Record| !record.sealed && record.hash == inputs::hash(&now, Recipe::Current);
        let rel = record_path(layout, name);
        let (why, outdated) = match Record::load(&layout.abs(&rel), &rel) {
            Err(d) => ((*d).with_help(format!("rerun {name} where it can run: `{}`", refresh_command(name))), false),
            Ok(None) => (
                Diagnostic::error(
                    at,
                    format!(
                        "{name} is frozen but has no record ({} is missing): run it where it can run (`{}`)",
                        rel.display(),
                        refresh_command(name)
                    ),
                ),
                true,
            ),
            Ok(Some(record)) if seal_lost(&record) => (
                Diagnostic::error(
                    Location::new(&rel, 1),
                    format!(
                        "{} has lost its seal (the `[seal ...]` that ends the first line of every record tangle \
                         writes): it was edited since tangle wrote it, and only a run may change it",
                        rel.display()
                    ),
                )
                .with_note(format!("to go back to what the run printed: `git checkout -- {}`", rel.display()))
                .with_help(format!("or rerun {name} where it can run: `{}`", refresh_command(name))),
                false,
            ),
            Ok(Some(record)) if !current(&record) => (
                Diagnostic::error(
                    at,
                    format!(
                        "the frozen record of {name} is stale: rerun it where it can run (`{}`)",
                        refresh_command(name)
                    ),
                )
                .with_note(format!(
                    "changed since {} was recorded: {}",
                    rel.display(),
                    changes(&record.inputs, if made_before(&record) { &before } else { &now })
                )),
                true,
            ),
            Ok(Some(record)) => {
                answers.records.insert(name.clone(), record);
                continue;
            }
        };
        answers.unanswered.insert(name.clone(), Unanswered { why, outdated });
    }
    Ok(answers)
}

/// The records under `frozen/` whose chapter is not frozen (any more), relative to the root.
pub fn orphans(config: &Config, book: &Book) -> Vec<PathBuf> {
    let layout = &config.layout;
    let Ok(entries) = std::fs::read_dir(layout.abs(&layout.frozen)) else { return Vec::new() };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|name| Some((name.strip_suffix(".toml")?.to_string(), name)))
        .filter(|(chapter, _)| !book.chapter(chapter).is_some_and(|c| is_frozen(config, c)))
        .map(|(_, name)| layout.frozen.join(name))
        .collect();
    out.sort();
    out
}

/// The inputs that differ between a record's and today's, as a sentence's list.
fn changes(recorded: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> String {
    let mut out = Vec::new();
    for (name, digest) in now {
        match recorded.get(name) {
            None => out.push(format!("{name} (new)")),
            Some(old) if old != digest && name == "rustc -V" => {
                out.push(format!("the compiler (`{old}`, now `{digest}`)"))
            }
            Some(old) if old != digest && name == crate::config::RUNTIME => {
                out.push(format!("{name} (this version of tangle links the chapters with another runtime)"))
            }
            Some(old) if old != digest => out.push(name.clone()),
            Some(_) => {}
        }
    }
    out.extend(recorded.keys().filter(|k| !now.contains_key(*k)).map(|k| format!("{k} (no longer an input)")));
    match out.is_empty() {
        // Same inputs, another recipe: a record made by another version of the hash.
        true => "how tangle hashes the inputs".to_string(),
        false => out.join(", "),
    }
}

/// The committed figures of `chapter` against the ones its frozen run drew.
pub(crate) fn figure_drift(layout: &Layout, chapter: &str, record: &Record) -> anyhow::Result<Vec<FigureDrift>> {
    let committed = record::digests(&layout.abs(&layout.figures).join(chapter))?;
    let rel = |name: &str| layout.figures.join(chapter).join(name);
    let mut drift = Vec::new();
    for (name, digest) in &record.figures {
        match committed.get(name) {
            None => drift.push(FigureDrift::New(rel(name))),
            Some(d) if d != digest => drift.push(FigureDrift::Changed(rel(name))),
            Some(_) => {}
        }
    }
    drift.extend(
        committed.keys().filter(|n| !record.figures.contains_key(*n)).map(|n| FigureDrift::NoLongerDrawn(rel(n))),
    );
    Ok(drift)
}

/// `accept` cannot redraw a frozen chapter's figures: an error naming them and the two ways out.
pub(crate) fn refuse_figure_drift(chapter: &str, drift: &[FigureDrift]) -> anyhow::Result<()> {
    if drift.is_empty() {
        return Ok(());
    }
    let files: Vec<String> = drift.iter().map(|d| d.to_string()).collect();
    anyhow::bail!(
        "the figures of {chapter} are not those of its frozen run, and accept cannot redraw them without running it:\n  {}\n\
         restore the committed files, or rerun {chapter} where it can run (`{}`); nothing was written, in this \
         chapter or any other",
        files.join("\n  "),
        refresh_command(chapter)
    )
}

/// Writes the record of a completed run of the frozen `chapter`, which drew into `drawn`
/// (`drawn/chNN`), under the inputs as they are now (after the build that made the program).
/// Returns the record's path when its bytes changed.
pub fn write(
    config: &Config,
    generated: &Generated,
    chapter: &Chapter,
    run: &RunOutput,
    drawn: &Path,
) -> anyhow::Result<Option<PathBuf>> {
    anyhow::ensure!(run.completed(), "a run of {} that did not complete cannot be frozen", chapter.name);
    let layout = &config.layout;
    let shared = inputs::shared(config, generated)?;
    let now = inputs::of(&shared, layout, generated, &chapter.name)?;
    let text = Record::new(chapter, now, run, drawn)?.to_text(chapter)?;
    let rel = record_path(layout, &chapter.name);
    Ok(crate::fsutil::write_if_changed(&layout.abs(&rel), text.as_bytes())?.then_some(rel))
}

/// A frozen chapter's test functions, each an ignored case: they are not built while the
/// chapter is frozen.
pub(crate) fn ignored_tests(chapter: &Chapter) -> Vec<TestCase> {
    let mut names = Vec::new();
    for cell in chapter.cells.iter().filter(|c| c.kind == CellKind::Test) {
        if let Ok(file) = syn::parse_file(&cell.code) {
            test_functions(&file.items, "", &mut names);
        }
    }
    names.into_iter().map(|name| test_cells::recorded(chapter, name, false)).collect()
}

/// The `#[test]` functions among `items` (and their modules'), named as libtest names them.
fn test_functions(items: &[syn::Item], prefix: &str, out: &mut Vec<String>) {
    for item in items {
        match item {
            syn::Item::Fn(f) if f.attrs.iter().any(|a| a.path().segments.last().is_some_and(|s| s.ident == "test")) => {
                out.push(format!("{prefix}{}", f.sig.ident));
            }
            syn::Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    test_functions(items, &format!("{prefix}{}::", m.ident), out);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
