//! `check` and `accept` over a book with examples chapters: the notebook chapters go through
//! the pipeline as before, the examples chapters through `tangle_core::examples::test`; each
//! failing example is reported at its chapter line, drifted output blocks as a notebook
//! cell's, and a closing line counts `N passed, N failed, N ignored`.

use tangle_core::diagnostic::{Sources, Style};
use tangle_core::examples::{self, ExampleVerdict};
use tangle_core::pipeline::{Outcome, Project};

use crate::report::{self, CLEAN, ERROR};
use crate::status;

/// Checks (or, with `accept`, accepts) the chapters `asked` names (all when empty):
/// `notebook` does the notebook chapters, given their names; it is skipped when only
/// examples chapters are asked for, so that a book of examples alone never gets a `code/`.
pub fn check(
    project: &Project,
    asked: &[String],
    accept: bool,
    notebook: impl FnOnce(&[String]) -> anyhow::Result<u8>,
) -> anyhow::Result<u8> {
    let example_chapters = examples::chapters(project, asked);
    let chapters = project.select(asked)?;
    let mut code = CLEAN;
    if !chapters.is_empty() || example_chapters.is_empty() {
        code = notebook(&chapters)?;
    }
    if example_chapters.is_empty() || code == ERROR {
        return Ok(code);
    }
    let found = status::with_status(|progress| examples::test(project, &example_chapters, progress))?;
    let sources = Sources::new(&project.root);
    for result in &found.examples {
        if let ExampleVerdict::Failed(why) = &result.verdict {
            for d in why {
                eprintln!("{}\n", d.render(&sources, Style::for_stderr()));
            }
        }
    }
    let counts = found.counts_with(!accept);
    let failed = found.examples.iter().any(|r| matches!(r.verdict, ExampleVerdict::Failed(_)));
    let outputs = report::report(project, Outcome::Ran(found.chapters), accept)?;
    println!("{counts}");
    if failed {
        eprintln!("error: {} example(s) do not do what their fences claim (see above)", counts.failed);
        return Ok(ERROR);
    }
    Ok(code.max(outputs))
}
