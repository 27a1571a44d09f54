//! The chapters' run programs are compiled without optimisation (`code/Cargo.toml`, so that an
//! edited run cell recompiles at once); their libraries keep the release profile. That must
//! change no result: every chapter of the book, built with its program at full optimisation,
//! prints what the check's build prints (cell by cell, after only the redactions and the
//! tolerance its output block declares: what it measures), draws the same figures byte for
//! byte, and publishes the same values (those marked measured aside).

use std::path::{Path, PathBuf};

use tangle_core::compare::{matches, normalize};
use tangle_core::model::{Chapter, OutputSpec};
use tangle_core::pipeline::{self, Outcome, Project};
use tangle_core::run::{RunEnd, RunOutput};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

/// Every `.svg` under `dir/chapter`, by name, with its bytes.
fn figures(dir: &Path, chapter: &str) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir.join(chapter))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.path().extension().is_some_and(|x| x == "svg"))
                .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// One chapter's run: its name, what it printed and published, and where its figures are.
struct Side<'a> {
    chapter: &'a Chapter,
    run: &'a RunOutput,
    drawn: &'a Path,
}

/// How `check` differs from `full` for one chapter, beyond what the prose lets vary.
fn differences(full: &Side, check: &Side) -> Vec<String> {
    let mut problems = Vec::new();
    let chapter = full.chapter;
    for (index, cell) in chapter.run_cells().enumerate() {
        let printed =
            |run: &RunOutput| normalize(run.cells.iter().find(|c| c.index == index).map_or("", |c| c.stdout.as_str()));
        let spec = cell.output.as_ref().map(|b| b.spec.clone()).unwrap_or_else(OutputSpec::default);
        let (full_text, check_text) = (printed(full.run), printed(check.run));
        if !matches(&full_text, &check_text, &spec) {
            problems.push(format!(
                "{}:{}: the cell prints differently at full optimisation\n--- full\n{full_text}\n--- check\n{check_text}",
                chapter.path.display(),
                cell.code_line
            ));
        }
    }
    let exact = |run: &RunOutput| {
        run.values.iter().filter(|v| v.vary == "exact").map(|v| (v.name.clone(), v.text.clone())).collect::<Vec<_>>()
    };
    if exact(full.run) != exact(check.run) {
        problems.push(format!(
            "{}: exact values differ: {:?} vs {:?}",
            full.chapter.name,
            exact(full.run),
            exact(check.run)
        ));
    }
    let (full_figures, check_figures) =
        (figures(full.drawn, &full.chapter.name), figures(check.drawn, &check.chapter.name));
    if full_figures != check_figures {
        let names = |v: &[(String, Vec<u8>)]| v.iter().map(|(n, b)| (n.clone(), b.len())).collect::<Vec<_>>();
        problems.push(format!(
            "{}: figures differ at full optimisation: {:?} vs {:?}",
            full.chapter.name,
            names(&full_figures),
            names(&check_figures)
        ));
    }
    problems
}

#[test]
fn outputs_do_not_depend_on_the_run_programs_optimisation() {
    let root = root();
    let project = Project::load(&root).unwrap_or_else(|e| panic!("the book does not load: {e:#}"));
    let chapters = project.select(&[]).unwrap();
    // The check's runs (cached when nothing changed since the last check: they came from the
    // same quick build).
    let checked = match pipeline::check(&project, &chapters, Default::default(), &tangle_core::progress::Plain).unwrap()
    {
        Outcome::Ran(results) => results,
        other => panic!("the book does not check: {other:?}"),
    };
    // A chapter may print a verdict on a measurement that the prose does not redact (ch07's
    // "measured within 0.08 of the simulator: true"), which a busy machine can flip: a
    // difference must show in each of three runs at full optimisation to count.
    let mut problems = Vec::new();
    for attempt in 1..=3 {
        problems = differences_from_full_optimisation(&project, &chapters, &checked);
        if problems.is_empty() {
            return;
        }
        eprintln!("attempt {attempt}: {}", problems.join("\n"));
    }
    panic!("{}", problems.join("\n\n"));
}

/// Every difference between the check's runs and a build at full optimisation.
fn differences_from_full_optimisation(
    project: &Project,
    chapters: &[pipeline::Selected<'_>],
    checked: &[pipeline::ChapterResult],
) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let full = pipeline::run_fully_optimised(project, chapters, dir.path()).unwrap();
    assert_eq!(checked.len(), full.len());
    let mut problems = Vec::new();
    for (c, f) in checked.iter().zip(&full) {
        assert_eq!(c.chapter.name, f.chapter.name);
        assert_eq!(f.run.end, RunEnd::Completed, "{} at full optimisation", f.chapter.name);
        assert_eq!(c.run.end, RunEnd::Completed, "{} in the check", c.chapter.name);
        let full_side = Side { chapter: &f.chapter, run: &f.run, drawn: &f.drawn };
        let check_side = Side { chapter: &c.chapter, run: &c.run, drawn: &c.drawn };
        problems.extend(differences(&full_side, &check_side));

        // The comparison has teeth: one character more in the first cell, or one value
        // changed, is a difference.
        let mut tampered = c.run.clone();
        tampered.cells[0].stdout.push('!');
        let side = Side { run: &tampered, ..check_side };
        assert!(!differences(&full_side, &side).is_empty(), "{}: a changed output went unseen", c.chapter.name);
        let mut tampered = c.run.clone();
        if let Some(v) = tampered.values.iter_mut().find(|v| v.vary == "exact") {
            v.text.push('0');
            let side = Side { run: &tampered, ..check_side };
            assert!(!differences(&full_side, &side).is_empty(), "{}: a changed value went unseen", c.chapter.name);
        }
    }
    problems
}
