//! What is wrong with the book while it is served: each rebuild checks the chapters as `book`
//! does (a compile error, a panic, a drifted output or quoted value, a mistake in a chapter, an
//! example that does not do what its fence claims) and
//! keeps what `book` refuses (a directive the validation rejects, an error mdBook logs). Each
//! problem is one message, `chNN.md:LINE` first, printed on the terminal and shown in a banner
//! at the top of every served page ([`banner`]) until a rebuild finds it fixed.

use crate::Parsed;
use tangle_core::compare::Verdict;
use tangle_core::config::Config;
use tangle_core::diagnostic::{Diagnostic, Diagnostics, Sources, Style};
use tangle_core::pipeline::{self, CheckOptions, Outcome, Project};
use tangle_core::progress::Plain;
use tangle_core::run::RunEnd;

/// What a rebuild's check found.
#[derive(Default)]
pub struct Checked {
    /// Each problem, plain, as the banner shows it.
    pub problems: Vec<String>,
    /// The pages the check parsed, for the build.
    pub parsed: Parsed,
    /// Whether generated files edited by hand are left under `code/` (the check stopped at
    /// them): until they are dropped, nothing this server does writes there.
    pub edits_left: bool,
    /// What the runs read outside the book's folders (absolute): declared data files and
    /// folders, and the crates used by path ([`tangle_core::cache::outside_inputs`]).
    pub outside_inputs: Vec<std::path::PathBuf>,
}

/// Checks the chapters (running what the cache cannot answer); prints their problems on the
/// terminal and returns them.
pub fn check(config: &Config) -> Checked {
    let mut checked = Checked::default();
    checked.problems = check_quietly(config, &mut checked);
    for p in &checked.problems {
        eprintln!("{p}\n");
    }
    checked
}

fn check_quietly(config: &Config, checked: &mut Checked) -> Vec<String> {
    let root = &config.layout.root;
    let sources = Sources::new(root);
    let plain = |d: &Diagnostic| d.render(&sources, Style::Plain);
    let project = match Project::load(root) {
        Ok(project) => project,
        Err(e) => {
            // The build that follows shows these pages as text: it need not warn of them again.
            if let Some(found) = e.downcast_ref::<Diagnostics>() {
                let files = found.iter().filter_map(|d| Some(d.location.as_ref()?.file.clone()));
                checked.parsed = Parsed::reported(&config.layout, files);
            }
            return from_error(&e, config);
        }
    };
    checked.parsed = Parsed::of(&project);
    checked.edits_left = project.stale().is_ok_and(|stale| stale.iter().any(|s| s.is_hand_made()));
    let layout = project.layout();
    checked.outside_inputs = tangle_core::cache::outside_inputs(
        layout,
        &project.config.dependencies,
        project.book.chapters.iter().map(|c| &**c),
    );
    let chapters = match project.select(&[]) {
        Ok(chapters) => chapters,
        Err(e) => return vec![format!("error: {e:#}")],
    };
    // As `check` does: the notebook chapters through the pipeline (not for a book of examples
    // alone, which gets no code folder), then the chapters of examples as rustdoc's doctests.
    let example_chapters = tangle_core::examples::chapters(&project, &[]);
    let mut out = Vec::new();
    if !chapters.is_empty() || example_chapters.is_empty() {
        let outcome = match pipeline::check(
            &project,
            &chapters,
            CheckOptions { writes: pipeline::Writes::Allow, ..CheckOptions::default() },
            &Plain,
        ) {
            Ok(outcome) => outcome,
            Err(e) => return from_error(&e, config),
        };
        match outcome {
            Outcome::Stale(stale) => return stale.iter().map(|s| format!("stale: {s}")).collect(),
            Outcome::CompileErrors(diagnostics) => {
                return diagnostics.iter().filter(|d| d.is_error()).map(plain).collect();
            }
            Outcome::Ran(results) => results_problems(&results, root, &plain, &mut out),
        }
    }
    if !example_chapters.is_empty() {
        match tangle_core::examples::test(&project, &example_chapters, false, pipeline::Writes::Allow, &Plain) {
            Ok(report) => {
                for result in &report.examples {
                    if let tangle_core::examples::ExampleVerdict::Failed(why) = &result.verdict {
                        out.extend(why.iter().map(&plain));
                    }
                }
                if let tangle_core::examples::pins::Recorded::Stale(d) = &report.pins {
                    out.push(plain(d));
                }
                results_problems(&report.chapters, root, &plain, &mut out);
            }
            Err(e) => out.extend(from_error(&e, config)),
        }
    }
    out
}

/// The problems of chapters that ran: failed cells, drifted outputs, values, figures and
/// snapshots (`root` the project's, which snapshot paths are shown from).
fn results_problems(
    results: &[tangle_core::pipeline::ChapterResult],
    root: &std::path::Path,
    plain: &dyn Fn(&Diagnostic) -> String,
    out: &mut Vec<String>,
) {
    for r in results {
        let chapter = &r.chapter;
        out.extend(r.unanswered.iter().map(|u| plain(&u.why)));
        out.extend(r.values.diagnostics.iter().filter(|d| d.is_error()).map(plain));
        let at = |cell: Option<usize>| match cell.and_then(|i| chapter.run_cells().nth(i)) {
            Some(c) => chapter.location(c.code_line).to_string(),
            None => chapter.path.display().to_string(),
        };
        match &r.run.end {
            RunEnd::Completed => {}
            // A run a save stopped failed nothing: the rebuild that the save queued follows.
            RunEnd::Failed { cell, message } if message == tangle_core::run::STOPPED => {
                out.push(format!("note: {}: {message}", at(*cell)))
            }
            RunEnd::Failed { cell, message } => {
                out.push(format!("error: {}: this cell failed\n{}", at(*cell), message.trim_end()))
            }
            RunEnd::TimedOut { cell, seconds } => {
                out.push(format!("error: {}: this cell was still running after {seconds} s", at(*cell)))
            }
        }
        for v in &r.verdicts {
            if let Verdict::Drift { diff } = &v.verdict {
                let block = chapter.run_cells().nth(v.index).is_some_and(|c| c.output.is_some());
                let what = tangle_core::compare::drift_summary(block, chapter.mode);
                out.push(format!("drift: {}: {what}\n{}", v.location, diff.render(Style::Plain)));
            }
        }
        for v in &r.values.drifts {
            out.push(format!(
                "drift: {}: the quoted value `{}` is now `{}`\n{}",
                v.location,
                v.quote.name,
                v.actual,
                v.diff.render(Style::Plain)
            ));
        }
        out.extend(r.figures.iter().map(|f| format!("drift: {}", f.located(chapter))));
        for snapshot in &r.snapshots {
            let path = snapshot.path().strip_prefix(root).unwrap_or(snapshot.path());
            out.push(format!("drift: {}: {}", path.display(), snapshot.reason()));
        }
    }
}

/// The messages of a failed load, check or build: each diagnostic it carries, or its text.
pub fn from_error(e: &anyhow::Error, config: &Config) -> Vec<String> {
    let sources = Sources::new(&config.layout.root);
    let plain = |d: &Diagnostic| d.render(&sources, Style::Plain);
    if let Some(found) = e.downcast_ref::<Diagnostics>() {
        return found.iter().filter(|d| d.is_error()).map(plain).collect();
    }
    if let Some(refused) = e.downcast_ref::<crate::Refused>() {
        return refused.0.iter().filter(|d| d.is_error()).map(plain).collect();
    }
    if let Some(d) = e.downcast_ref::<Diagnostic>() {
        return vec![plain(d)];
    }
    vec![format!("error: {e:#}")]
}

/// The banner a served page shows above everything while `problems` is not empty.
pub fn banner(problems: &[String]) -> String {
    if problems.is_empty() {
        return String::new();
    }
    let mut html = String::from(
        "<div id=\"tangle-problems\" role=\"alert\" style=\"position:fixed;top:0;left:0;right:0;z-index:10000;\
         max-height:45vh;overflow:auto;margin:0;padding:0.6em 1em;background:#8b0000;color:#fff;\
         font:13px/1.45 ui-monospace,monospace;box-shadow:0 2px 8px rgba(0,0,0,.4)\">\n",
    );
    html.push_str(&format!(
        "<strong>{} problem(s) in the book</strong> (a page whose chapter could not be built shows its last good build)\n",
        problems.len()
    ));
    for p in problems {
        html.push_str(&format!(
            "<pre style=\"white-space:pre-wrap;margin:0.5em 0 0;color:inherit;background:none\">{}</pre>\n",
            super::super::html::escape_html(p)
        ));
    }
    html.push_str("</div>\n");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_shows_each_problem_escaped_and_nothing_when_all_is_well() {
        assert_eq!(banner(&[]), "");
        let html = banner(&["error: book/src/ch01.md:3:1: no figure is named `<b>`".to_string()]);
        assert!(html.contains("id=\"tangle-problems\"") && html.contains("role=\"alert\""));
        assert!(html.contains("book/src/ch01.md:3:1: no figure is named `&lt;b&gt;`"), "{html}");
    }
}
