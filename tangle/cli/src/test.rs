//! `tangle test`: everything CI should run for a book, in one command and one report, so that a
//! passing `tangle test` means `tangle book` passes too:
//!
//! 1. the check: every run cell's output against its block, quoted values, figures and
//!    calculators' data, snapshots (one case per compared cell, per quoted value, and per
//!    figure or snapshot that drifted); a frozen chapter's from its committed record;
//! 2. the chapters' `// @test` cells, one case per test function, a failure reported at the
//!    failing line of the chapter with the panic message (a frozen chapter's, which are not
//!    built, each counted as ignored); in examples chapters, each example
//!    (compiled, run, panicking or failing to compile as its fence claims, and printing what
//!    its output block says) is one case;
//! 3. what the book would refuse (the renderer's validation pass, one case per finding: an
//!    unknown citation key, a figure nothing draws, an unknown or doubled calculator, an include
//!    that leaves the book, a missing SUMMARY entry), then the book rendered as `tangle book`
//!    renders it (into tangle's working folder), so that whatever else mdBook refuses fails
//!    here too;
//! 4. the style checks `book.toml` keeps on (`fmt`, `line-width`, `numbers`), one case per
//!    chapter and check.
//!
//! It ends with one line, `N passed, N failed, N ignored`. The exit status is 0 when nothing
//! failed and 1 otherwise.

use std::fmt::Write as _;

use tangle_core::compare::Verdict;
use tangle_core::config::CellMode;
use tangle_core::diagnostic::{Sources, Style};
use tangle_core::freeze;
use tangle_core::model::Chapter;
use tangle_core::pipeline::{self, CheckOptions, Outcome, Project, TestCellsOutcome};
use tangle_core::run::RunEnd;
use tangle_core::run::test_cells::TestOutcome;

use crate::report::{self, CLEAN, DRIFT, Results};

/// The cases of one `tangle test`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    pub passed: usize,
    pub failed: usize,
    pub ignored: usize,
    /// One line for each failure, as the summary lists them.
    pub failures: Vec<String>,
}

impl Tally {
    fn pass(&mut self, n: usize) {
        self.passed += n;
    }

    fn fail(&mut self, what: impl Into<String>) {
        self.failed += 1;
        self.failures.push(what.into());
    }

    /// `N passed, N failed, N ignored`.
    pub fn closing_line(&self) -> String {
        format!("{} passed, {} failed, {} ignored", self.passed, self.failed, self.ignored)
    }

    pub fn exit_code(&self) -> u8 {
        if self.failed == 0 { CLEAN } else { DRIFT }
    }
}

/// Runs every check of the chapters `asked` names (all when empty) and prints the report; the
/// last line on stdout is [`Tally::closing_line`].
pub fn run(project: &Project, asked: &[String], options: CheckOptions) -> anyhow::Result<Tally> {
    let mut tally = Tally::default();
    let sources = Sources::new(&project.root);
    let example_chapters = tangle_core::examples::chapters(project, asked);
    let chapters = &project.select(asked)?;
    // Every chapter asked for, in the book's order.
    let asked_for =
        |c: &Chapter| chapters.iter().any(|s| s.name() == c.name) || example_chapters.iter().any(|e| e.name == c.name);
    let all_chapters: Vec<&Chapter> = project.book.chapters.iter().map(|c| &**c).filter(|c| asked_for(c)).collect();

    eprintln!("outputs, values and figures");
    let built = if chapters.is_empty() && !example_chapters.is_empty() {
        true
    } else {
        let outcome = crate::check(project, chapters, options)?;
        report::report(project, &outcome, false, Results::Stdout)?;
        count_check(project, &outcome, &mut tally)
    };

    if !example_chapters.is_empty() {
        eprintln!("examples");
        // Examples that cannot be built at all (a dependency cargo cannot fetch) are one failure,
        // and the run goes on to its closing line, as CI reads it.
        let found = match crate::examples::run(project, &example_chapters, options) {
            Ok(found) => Some(found),
            Err(e) => {
                let (shown, message) = match e.downcast_ref::<tangle_core::diagnostic::Diagnostic>() {
                    Some(d) => (d.render(&Sources::new(&project.root), Style::for_stderr()), d.message.clone()),
                    None => (format!("error: {e:#}"), e.to_string()),
                };
                eprintln!("{shown}\n");
                // Its first line: cargo's whole report is printed above (and so not announced here).
                let first = message.lines().next().unwrap_or_default().trim_end_matches(':');
                tally.fail(format!("the examples could not be built: {first}"));
                None
            }
        };
        if let Some(found) = found {
            let counts = found.counts(tangle_core::examples::Drift::Fails);
            tally.pass(counts.passed);
            tally.ignored += counts.ignored;
            tally.failed += counts.failed;
            for e in &found.examples {
                if let tangle_core::examples::ExampleVerdict::Failed(why) = &e.verdict {
                    // Where the report above puts it: the first error's line (in an included file,
                    // that file's), else the example's.
                    let first = why.iter().find(|d| d.is_error()).or(why.first());
                    let at = first.and_then(|d| d.location.as_ref()).unwrap_or(&e.location);
                    let message = first.map_or(String::new(), |d| format!(": {}", d.message));
                    tally.failures.push(format!("{at}: example{message}"));
                }
            }
            // An example that did what its fence claims but printed something else (counted above).
            for r in &found.chapters {
                tally.failures.extend(r.drifted().map(|v| format!("{}: output drifted", v.location)));
            }
            if let tangle_core::examples::pins::Recorded::Stale(d) = &found.pins {
                tally.fail(match &d.location {
                    Some(at) => format!("{at}: {}", d.message),
                    None => d.message.clone(),
                });
            }
            report::report(project, &Outcome::Ran(found.chapters), false, Results::Stdout)?;
            eprintln!("  {counts} (of the examples)");
        }
    }

    eprintln!("test cells");
    if built {
        match crate::status::with_status(|progress| pipeline::test_cells(project, chapters, progress))? {
            TestCellsOutcome::CompileErrors(diagnostics) => {
                for d in &diagnostics {
                    eprintln!("{}\n", d.render(&sources, Style::for_stderr()));
                }
                let first = diagnostics.iter().find(|d| d.is_error()).and_then(|d| d.location.clone());
                let at = first.map_or_else(String::new, |l| format!("{l}: "));
                tally.fail(format!("{at}the test cells do not compile"));
            }
            TestCellsOutcome::Ran(chapters) => {
                for (chapter, cases, cached) in chapters {
                    let (mut passed, mut ignored, mut failed) = (0, 0, 0);
                    for case in cases {
                        match case.outcome {
                            TestOutcome::Passed => passed += 1,
                            TestOutcome::Ignored => ignored += 1,
                            TestOutcome::Failed { message, at } => {
                                failed += 1;
                                let at = at.unwrap_or(case.location);
                                println!("FAILED {at}: test `{}`\n{}\n", case.name, indent(&message));
                                tally.fail(format!("{at}: test `{}`", case.name));
                            }
                        }
                    }
                    tally.pass(passed);
                    tally.ignored += ignored;
                    let frozen = freeze::is_frozen(&project.config, &chapter);
                    let why = match (frozen, cached) {
                        (true, _) => " (frozen: not built)",
                        (false, true) => " (cached)",
                        (false, false) => "",
                    };
                    eprintln!("{}: {passed} test(s) passed, {failed} failed, {ignored} ignored{why}", chapter.name);
                }
            }
        }
    } else {
        eprintln!("  not run: the chapters do not build");
    }

    eprintln!("what the book would refuse");
    let refused: Vec<_> = tangle_render::validate(project).into_iter().filter(|d| d.is_error()).collect();
    // An example that cannot read its include failed above, at the same line: one failure.
    for d in refused.iter().filter(|d| !crate::refusals::reported_by_an_example(project, d)) {
        println!("{}\n", d.render(&sources, Style::for_stdout()));
        let at = d.location.as_ref().map_or_else(String::new, |l| format!("{l}: "));
        tally.fail(format!("{at}{}", d.message));
    }

    eprintln!("the rendered book");
    let site = project.layout().work_dir().join("test-site");
    let render = tangle_render::RenderOptions {
        dest: Some(site),
        parsed: std::sync::Arc::new(tangle_render::Parsed::of(project)),
    };
    match crate::refuse_stale_theme(project, options.writes)
        .and_then(|()| tangle_render::build_book(&project.config, &render))
    {
        Ok(_) => {
            eprintln!("  renders");
            tally.pass(1);
        }
        Err(e) => {
            eprintln!("error: the book does not render: {e:#}");
            tally.fail(format!("the book does not render ({e})"));
        }
    }

    style_checks(project, &all_chapters, &sources, &mut tally)?;

    if !tally.failures.is_empty() {
        let mut list = String::from("failures:\n");
        for f in &tally.failures {
            // A message of several lines (an assertion's `left` and `right`) stays inside its entry.
            let _ = writeln!(list, "    {}", f.trim_end().replace('\n', "\n        "));
        }
        println!("{list}");
    }
    println!("{}", tally.closing_line());
    Ok(tally)
}

/// Counts the check's cases; false when the chapters did not build (nothing else can run).
fn count_check(project: &Project, outcome: &Outcome, tally: &mut Tally) -> bool {
    let results = match outcome {
        Outcome::Stale(stale) => {
            tally.fail(format!("{} file(s) of {} are stale", stale.len(), project.layout().code.display()));
            return false;
        }
        Outcome::CompileErrors(diagnostics) => {
            let first = diagnostics.iter().find(|d| d.is_error()).and_then(|d| d.location.clone());
            let at = first.map_or_else(String::new, |l| format!("{l}: "));
            tally.fail(format!("{at}the chapters do not compile"));
            return false;
        }
        Outcome::Ran(results) => results,
    };
    for r in results {
        let chapter = &r.chapter;
        if let Some(tangle_core::freeze::Unanswered { why: d, .. }) = &r.unanswered {
            let at = d.location.as_ref().map_or_else(|| chapter.path.display().to_string(), |l| l.to_string());
            tally.fail(format!("{at}: {}", d.message));
            continue;
        }
        // At the cell that failed; a program that failed before its first cell, at the chapter.
        let what = |cell: &Option<usize>| if cell.is_some() { "this cell" } else { "the chapter program" };
        match &r.run.end {
            RunEnd::Completed => {}
            RunEnd::Failed { cell, .. } => {
                tally.fail(format!("{}: {} failed", report::cell_location(chapter, *cell), what(cell)))
            }
            RunEnd::TimedOut { cell, seconds } => tally.fail(format!(
                "{}: {} was still running after {seconds} s",
                report::cell_location(chapter, *cell),
                what(cell)
            )),
        }
        // The cell that failed is counted once, as failed, not by what it printed first.
        let stopped = r.run.end.stopped_at();
        for v in r.verdicts.iter().filter(|v| Some(v.index) != stopped) {
            match &v.verdict {
                Verdict::Same => tally.pass(1),
                Verdict::Drift { .. } => tally.fail(format!("{}: output drifted", v.location)),
                Verdict::NotRun => tally.fail(format!("{}: not run (an earlier cell failed)", v.location)),
            }
        }
        tally.pass(chapter.quotes.len().saturating_sub(r.values.drifts.len()));
        for v in &r.values.drifts {
            tally.fail(format!("{}: quoted value `{}` drifted", v.location, v.quote.name));
        }
        for d in r.values.diagnostics.iter().filter(|d| d.is_error()) {
            let at = d.location.as_ref().map_or_else(|| chapter.path.display().to_string(), |l| l.to_string());
            tally.fail(format!("{at}: {}", d.message));
        }
        for f in &r.figures {
            tally.fail(f.located(&r.chapter));
        }
        for s in &r.snapshots {
            let path = s.path().strip_prefix(&project.root).unwrap_or(s.path());
            tally.fail(format!("{}: {}", path.display(), s.reason()));
        }
    }
    true
}

/// The style checks `book.toml` keeps on, one case per chapter and check.
fn style_checks(project: &Project, chapters: &[&Chapter], sources: &Sources, tally: &mut Tally) -> anyhow::Result<()> {
    let checks = &project.config.checks;
    eprintln!("style");
    let have_rustfmt = tangle_core::accept::fmt::rustfmt_version().is_some();
    // rustfmt formats cells; rustdoc's examples have hidden `# ` lines it cannot read, and
    // `tangle fmt` leaves them alone, so `fmt = true` judges notebook chapters only.
    let examples = chapters.iter().filter(|c| c.mode == CellMode::Examples).count();
    if checks.fmt && examples > 0 {
        eprintln!("  formatting not checked in the {examples} chapter(s) of examples: `tangle fmt` formats cells only");
    }
    // Every notebook chapter's cells in one go (rustfmt's answers about cells it saw before are
    // remembered across them), then judged chapter by chapter.
    let notebook: Vec<&Chapter> = chapters.iter().copied().filter(|c| c.mode == CellMode::Notebook).collect();
    let unformatted = match checks.fmt && have_rustfmt && !notebook.is_empty() {
        true => pipeline::fmt(project, &notebook, false)?,
        false => Vec::new(),
    };
    for &chapter in chapters {
        let name = &chapter.name;
        let path = chapter.path.display();
        if checks.fmt && chapter.mode == CellMode::Notebook {
            if !have_rustfmt {
                eprintln!(
                    "  {path}: formatting not checked: rustfmt is not installed (`rustup component add rustfmt`)"
                );
                tally.ignored += 1;
            } else {
                let mine = unformatted.iter().filter(|u| u.chapter == chapter.path);
                let cells: Vec<_> = mine.flat_map(|u| &u.cells).collect();
                if cells.is_empty() {
                    tally.pass(1);
                } else {
                    let fix = tangle_core::messages::command(&format!("fmt --chapter {name}"));
                    for at in &cells {
                        println!("unformatted: {at} (run `{fix}`)");
                    }
                    tally.fail(format!("{}: cells not formatted", cells[0]));
                }
            }
        }
        if let Some(max) = checks.line_width {
            let wide = tangle_core::parse::lint::long_lines(chapter, max);
            for d in wide.iter().take(3) {
                println!("{}\n", d.render(sources, Style::for_stdout()));
            }
            match wide.len() {
                0 => tally.pass(1),
                n => tally.fail(format!("{path}: {n} cell line(s) wider than {max} columns")),
            }
        }
        if checks.numbers {
            let found = tangle_core::compare::unquoted_numbers(chapter);
            for d in &found {
                println!("{}\n", d.render(sources, Style::for_stdout()));
            }
            match found.len() {
                0 => tally.pass(1),
                n => tally.fail(format!("{path}: {n} number(s) typed by hand")),
            }
        }
    }
    Ok(())
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}
