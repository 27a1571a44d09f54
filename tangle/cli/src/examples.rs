//! `check` and `accept` over a book with examples chapters: the notebook chapters go through
//! the pipeline as before, the examples chapters through `tangle_core::examples::test`; each
//! failing example is reported at its chapter line, drifted output blocks as a notebook
//! cell's, and a closing line counts `N passed, N failed, N ignored`.

use std::sync::Arc;

use tangle_core::diagnostic::{Sources, Style};
use tangle_core::examples::pins::Recorded;
use tangle_core::examples::{self, Drift, ExampleVerdict, ExamplesReport};
use tangle_core::model::Chapter;
use tangle_core::pipeline::{self, CheckOptions, Outcome, Project};

use crate::report::{self, CLEAN, ERROR, Results};
use crate::status;

/// Checks (or, with `accepting`, accepts) the chapters `asked` names (all when empty). The
/// notebook pipeline is skipped when only examples chapters are asked for, so that a book of
/// examples alone never gets a `code/`.
pub fn check(
    project: &Project,
    asked: &[String],
    accepting: bool,
    options: CheckOptions,
    out: Results,
) -> anyhow::Result<u8> {
    let example_chapters = examples::chapters(project, asked);
    let chapters = project.select(asked)?;
    let mut code = CLEAN;
    if !chapters.is_empty() || example_chapters.is_empty() {
        let outcome = crate::check(project, &chapters, options)?;
        code = report::report(project, &outcome, accepting, out)?;
        if accepting && let Outcome::Ran(results) = &outcome {
            for line in pipeline::accept(project, results, options.writes)?.report() {
                out.line(line);
            }
        }
    }
    if example_chapters.is_empty() || code == ERROR {
        return Ok(code);
    }
    let found = run(project, &example_chapters, options)?;
    let counts = found.counts(if accepting { Drift::Accepted } else { Drift::Fails });
    let failed = found.examples.iter().any(|r| matches!(r.verdict, ExampleVerdict::Failed(_)));
    let outcome = Outcome::Ran(found.chapters);
    let outputs = report::report(project, &outcome, accepting, out)?;
    if accepting && let Outcome::Ran(results) = &outcome {
        for line in pipeline::accept(project, results, options.writes)?.report() {
            out.line(line);
        }
    }
    // Beside notebook chapters (whose cells the lines above count), say what this count counts.
    match chapters.is_empty() {
        true => out.line(counts),
        false => out.line(format!("examples: {counts}")),
    }
    if failed {
        eprintln!("error: {} example(s) failed (see above)", counts.failed);
        return Ok(ERROR);
    }
    if matches!(found.pins, Recorded::Stale(_)) {
        eprintln!("error: the examples passed with crate versions that are not committed (see above)");
        return Ok(ERROR);
    }
    Ok(code.max(outputs))
}

/// Builds and runs the examples of `chapters`, printing each failure at its chapter line.
pub fn run(project: &Project, chapters: &[&Arc<Chapter>], options: CheckOptions) -> anyhow::Result<ExamplesReport> {
    let afresh = options.rerun || options.refresh;
    let found = status::with_status(|progress| examples::test(project, chapters, afresh, options.writes, progress))?;
    let sources = Sources::new(&project.root);
    // What the counts do not say: an example counted as ignored for want of support, and an
    // output block nothing compares (its example never runs).
    for chapter in chapters {
        for cell in &chapter.cells {
            let Some(example) = &cell.example else { continue };
            let fence = chapter.location(cell.code_line.saturating_sub(1));
            if example.test_harness {
                eprintln!(
                    "note: {fence}: a `test_harness` example: rustdoc runs its `#[test]` functions, tangle does not \
                     yet, so it is counted as ignored"
                );
            }
            let never_runs =
                [(example.ignore, "ignore"), (example.no_run, "no_run"), (example.compile_fail, "compile_fail")];
            if let (Some(block), Some((_, why))) = (&cell.output, never_runs.iter().find(|(set, _)| *set)) {
                eprintln!(
                    "warning: {}: this output block follows an example that never runs (`{why}`): nothing checks it",
                    chapter.location(block.line)
                );
            }
        }
    }
    for result in &found.examples {
        if let ExampleVerdict::Failed(why) = &result.verdict {
            for d in why {
                eprintln!("{}\n", d.render(&sources, Style::for_stderr()));
            }
        }
    }
    if !found.left_behind.is_empty() {
        let names: Vec<String> = found.left_behind.iter().map(|p| p.display().to_string()).collect();
        eprintln!(
            "warning: running the examples left new files in the project's folder: {} (examples run there, as \
             under `mdbook test`; have them clean up, or list the files in .gitignore)",
            names.join(", ")
        );
    }
    match &found.pins {
        Recorded::Unchanged => {}
        Recorded::Written(what) => eprintln!("note: {what}"),
        Recorded::Stale(d) => eprintln!("{}\n", d.render(&sources, Style::for_stderr())),
    }
    Ok(found)
}
