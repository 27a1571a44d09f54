//! Printing what a check found: diagnostics and drift, one summary line per chapter, and
//! the exit status they add up to. It only prints: what to do about the findings (accept
//! them, render the book) is the command's business.

use tangle_core::compare::{FigureDrift, Verdict, involves_timings};
use tangle_core::diagnostic::{Sources, Style};
use tangle_core::messages;
use tangle_core::pipeline::{Outcome, Project};
use tangle_core::run::RunEnd;

/// Exit statuses.
pub const CLEAN: u8 = 0;
pub const DRIFT: u8 = 1;
pub const ERROR: u8 = 2;

/// Where the report's results go: stdout, or stderr when stdout is not ours (the mdBook
/// preprocessor's stdout carries the book).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Results {
    Stdout,
    Stderr,
}

impl Results {
    pub(crate) fn line(self, text: impl std::fmt::Display) {
        match self {
            Results::Stdout => println!("{text}"),
            Results::Stderr => eprintln!("{text}"),
        }
    }

    fn style(self) -> Style {
        match self {
            Results::Stdout => Style::for_stdout(),
            Results::Stderr => Style::for_stderr(),
        }
    }
}

/// The message for generated files that are out of date where they may not be written.
/// What to do about `stale` files: regenerate what is only out of date; for hand edits, take
/// those in `code/` into the chapters or drop them, and move the theme's into a file of one's own.
pub fn stale_advice(project: &Project, stale: &[tangle_core::generate::sync::Stale]) -> Vec<String> {
    let code = &project.layout().code;
    let hand_made = || stale.iter().filter(|s| s.is_hand_made());
    let mut out = Vec::new();
    if hand_made().any(|s| s.path().starts_with(code)) {
        // `untangle` is offered only where it would take the edits.
        out.push(match project.untangle_would_take(stale) {
            Ok(Ok(())) => format!(
                "{}/ holds edits made by hand: take them into the chapters with `{}`, or drop them with `{}`",
                code.display(),
                messages::command("untangle"),
                messages::command("sync --discard")
            ),
            Ok(Err(why)) => format!(
                "{}/ holds edits made by hand that `{}` cannot take ({why}): copy what you want to keep of that \
                 file's edits into the chapter's cells by hand, drop them with `{}`, then `{}` takes the edits of \
                 any other file",
                code.display(),
                messages::command("untangle"),
                messages::command("sync --discard FILE"),
                messages::command("untangle"),
            ),
            Err(e) => format!("{}/ holds edits made by hand, which cannot be read: {e:#}", code.display()),
        });
    }
    if hand_made().any(|s| !s.path().starts_with(code)) {
        out.push(format!(
            "{}/ holds edits made by hand: rules of your own go in a stylesheet or script listed after tangle's \
             in book.toml; `{}` drops the edits",
            project.layout().theme.display(),
            messages::command("sync --discard")
        ));
    }
    if out.is_empty() {
        out.push(format!(
            "the generated files are out of date with the chapters and book.toml, or were written by another \
             version of tangle: run `{}` and commit the result",
            messages::command("sync")
        ));
    }
    out
}

/// Prints a check's findings; `accept` words the summary for `accept`, which writes them
/// next. Returns the exit status.
pub fn report(project: &Project, outcome: &Outcome, accept: bool, out: Results) -> anyhow::Result<u8> {
    let results = match outcome {
        Outcome::Stale(stale) => {
            for s in stale {
                out.line(format!("stale: {s}"));
            }
            for line in stale_advice(project, stale) {
                out.line(line);
            }
            return Ok(DRIFT);
        }
        Outcome::CompileErrors(diagnostics) => {
            let sources = Sources::new(&project.root);
            let style = Style::for_stderr();
            for d in diagnostics {
                eprintln!("{}\n", d.render(&sources, style));
            }
            let errors: Vec<_> = diagnostics.iter().filter(|d| d.is_error()).collect();
            let code_dir = &project.layout().code;
            let in_cells = |d: &&&tangle_core::diagnostic::Diagnostic| {
                d.location.as_ref().is_some_and(|l| !l.file.starts_with(code_dir))
            };
            match errors.iter().filter(in_cells).count() {
                0 => eprintln!(
                    "error: the build failed outside the chapters' cells (see above): in code tangle generated, \
                     a dependency, or the build folder"
                ),
                n => eprintln!("error: {n} compile error(s); fix the cells named above"),
            }
            return Ok(ERROR);
        }
        Outcome::Ran(results) => results,
    };
    let mut code = CLEAN;
    // Whether any output, value, figure or snapshot drifted (what `accept` takes).
    let mut outputs_drifted = false;
    // Whether an output, a quoted value or a figure changed (not only files missing or left over).
    let mut prose_drifted = false;
    // Each chapter that drifted: where its first drift is, and what drifted in it.
    let mut by_chapter: Vec<(String, String)> = Vec::new();
    // Frozen chapters whose committed figures differ from their records', and whether any other
    // drift is one `accept` takes.
    let (mut frozen_figures, mut accept_takes) = (Vec::new(), false);
    let sources = Sources::new(&project.root);
    for r in results {
        let chapter = &r.chapter;
        if let Some(unanswered) = &r.unanswered {
            eprintln!("{}\n", unanswered.why.render(&sources, Style::for_stderr()));
            eprintln!("{}: not checked: its frozen record cannot answer for it (see above)", chapter.name);
            // A record out of date is drift (as a stale snapshot is); one that cannot be read is
            // an error in the input, and so is any that `accept` cannot take.
            code = code.max(if unanswered.outdated && !accept { DRIFT } else { ERROR });
            continue;
        }
        // Quotes of unknown values, values published twice, values nothing quotes.
        for d in &r.values.diagnostics {
            eprintln!("{}\n", d.render(&sources, Style::for_stderr()));
            if d.is_error() {
                code = ERROR;
            }
        }
        match &r.run.end {
            RunEnd::Completed => {}
            RunEnd::Failed { cell, message } => {
                let at = cell_location(chapter, *cell);
                eprintln!("error: {at}: this cell failed\n{}\n", indent(message));
                code = ERROR;
            }
            RunEnd::TimedOut { cell, seconds } => {
                let at = cell_location(chapter, *cell);
                eprintln!(
                    "error: {at}: this cell was still running after {seconds} s and was stopped \
                     (raise the limit with `<!-- tangle: timeout N -->` if it is meant to run that long)\n"
                );
                code = ERROR;
            }
        }
        if !accept {
            for v in r.drifted() {
                if let Verdict::Drift { diff } = &v.verdict {
                    let block = chapter.run_cells().nth(v.index).is_some_and(|c| c.output.is_some());
                    let what = tangle_core::compare::drift_summary(block, chapter.mode);
                    out.line(format!("drift: {}: {what}\n{}", v.location, diff.render(out.style())));
                    if chapter.run_cells().nth(v.index).is_some_and(|c| involves_timings(chapter, c)) {
                        out.line(timing_note(&r.chapter.name, r.cached));
                    }
                    let printed = r.run.cells.iter().find(|c| c.index == v.index).map_or("", |c| c.stdout.as_str());
                    if let Some(block) = chapter.run_cells().nth(v.index).and_then(|c| c.output.as_ref()) {
                        for name in tangle_core::compare::unmatched_redactions(&block.spec, &block.text, printed) {
                            out.line(format!(
                                "  note: the redaction `{name}` matches nothing in the block or in what the cell \
                                 printed: its pattern may not say what was meant"
                            ));
                        }
                    }
                }
            }
            for v in &r.values.drifts {
                out.line(format!(
                    "drift: {}: the quoted value `{}` is now `{}`\n{}",
                    v.location,
                    v.quote.name,
                    v.actual,
                    v.diff.render(out.style())
                ));
            }
            for f in &r.figures {
                out.line(format!("drift: {}", f.located(&r.chapter)));
            }
            for s in &r.snapshots {
                let p = s.path().strip_prefix(&project.root).unwrap_or(s.path());
                out.line(format!("drift: {}: {}", p.display(), s.reason()));
            }
        }
        let drifted = r.drifted().count();
        let not_run = r.verdicts.iter().filter(|v| v.verdict == Verdict::NotRun).count();
        // The cell that failed is no match, whatever it printed before it failed.
        let stopped = r.run.end.stopped_at();
        let failed = r.verdicts.iter().filter(|v| Some(v.index) == stopped && v.verdict == Verdict::Same).count();
        let same = r.verdicts.len() - drifted - not_run - failed;
        if accept {
            let changes = [
                (drifted, "output"),
                (r.values.drifts.len(), "quoted value"),
                (r.acceptable_figures(), "figure"),
                (r.snapshots.len(), "snapshot"),
            ];
            let accepted: Vec<String> =
                changes.iter().filter(|(n, _)| *n > 0).map(|(n, what)| format!("{n} {what}(s)")).collect();
            let name = &r.chapter.name;
            match (accepted.is_empty(), r.run.completed()) {
                (true, true) if r.acceptable_figures() < r.figures.len() => {
                    eprintln!("{name}: nothing to accept: its figures can only come from a run (see below)")
                }
                (true, true) => eprintln!("{name}: up to date"),
                (false, true) => eprintln!("{name}: accepting {}", accepted.join(", ")),
                // What ran before the failure is accepted; what did not run keeps its prose.
                (true, false) => eprintln!("{name}: nothing to accept before the cell that failed (see above)"),
                // (A snapshot may be accepted for its header alone, a renamed chapter's: not
                // only what the cells before the failure printed.)
                (false, false) => eprintln!(
                    "{name}: accepting {}; the cell that failed and the ones after it keep their outputs (see above)",
                    accepted.join(", ")
                ),
            }
            continue;
        }
        // A chapter of examples with no output block has nothing to count here: its examples
        // are counted in the closing line (a book like Rust by Example has hundreds).
        let examples = r.chapter.mode == tangle_core::model::CellMode::Examples;
        if examples && r.verdicts.is_empty() && r.values.drifts.is_empty() && r.figures.is_empty() {
            continue;
        }
        // An examples chapter's counts are of output blocks (its examples are counted apart).
        let counted = if examples { "output block(s)" } else { "cell(s)" };
        let mut counts = format!("{same} {counted} match");
        if drifted > 0 {
            counts += &format!(", {drifted} drifted");
        }
        if !r.run.completed() {
            counts += ", 1 failed";
        }
        if !r.values.drifts.is_empty() {
            counts += &format!(", {} quoted value(s) drifted", r.values.drifts.len());
        }
        if !r.figures.is_empty() {
            counts += &format!(", {} figure(s) drifted", r.figures.len());
        }
        if !r.snapshots.is_empty() {
            counts += &format!(", {} snapshot(s) stale", r.snapshots.len());
        }
        if not_run > 0 {
            counts += &format!(", {not_run} not run");
        }
        if r.cached {
            counts += " (cached run)";
        }
        if r.frozen {
            counts += " (frozen run: nothing built or run)";
        }
        eprintln!("{}: {counts}", r.chapter.name);
        if drifted + r.values.drifts.len() + r.figures.len() + r.snapshots.len() > 0 && !accept {
            outputs_drifted = true;
            let first = r.drifted().next().map(|v| v.location.to_string());
            let first = first.or_else(|| r.values.drifts.first().map(|v| v.location.to_string()));
            let first = first.or_else(|| r.figures.iter().find_map(|f| f.shown_at(&r.chapter)).map(|l| l.to_string()));
            let first = first.unwrap_or_else(|| r.chapter.path.display().to_string());
            by_chapter.push((first, counts));
            let redrawn = r.figures.iter().filter(|f| matches!(f, FigureDrift::Changed(_))).count();
            prose_drifted |= drifted + r.values.drifts.len() + redrawn > 0;
            code = code.max(DRIFT);
            if r.acceptable_figures() < r.figures.len() {
                frozen_figures.push(r.chapter.name.clone());
            }
            accept_takes |= drifted + r.values.drifts.len() + r.acceptable_figures() + r.snapshots.len() > 0;
        }
    }
    for name in &frozen_figures {
        out.line(format!(
            "the figures of {name} are not those its frozen run drew, and `accept` cannot redraw them: undo the \
             change to {}, or rerun {name} where it can run (`{}`)",
            project.layout().figures.join(name).display(),
            messages::command(&format!("accept --refresh --chapter {name}"))
        ));
    }
    // One upstream change can drift dozens of chapters, their diffs scrolling far past the first
    // ones: the chapters again, one line each, where the report ends.
    if by_chapter.len() > 1 {
        let width = by_chapter.iter().map(|(at, _)| at.len()).max().unwrap_or(0);
        let lines: Vec<String> = by_chapter.iter().map(|(at, what)| format!("  {at:width$}  {what}")).collect();
        out.line(format!("drift in {} chapters (each at its first drift):\n{}", by_chapter.len(), lines.join("\n")));
    }
    if outputs_drifted && accept_takes && code == DRIFT {
        out.line(match prose_drifted {
            true => format!(
                "outputs drifted from the prose: fix the code, or run `{}` if the new output is right",
                messages::command("accept")
            ),
            // Snapshot and figure files are named after the chapter (and heading): nothing in
            // the code to fix.
            false => format!(
                "the outputs match the prose; only snapshot or figure files are missing or left over (a new or \
                 renamed chapter, heading or figure): run `{}` to write them",
                messages::command("accept")
            ),
        });
    }
    Ok(code)
}

/// What a drift in a cell that measures time adds: it may be the machine, and how to find out.
fn timing_note(chapter: &str, cached: bool) -> String {
    let run = if cached { "a cached run, made when the machine was perhaps busy" } else { "this run" };
    format!(
        "  note: this cell's output involves timings (its code reads a clock), and it came from {run}: \
         see whether it holds on a fresh run with `{}` before changing the prose",
        tangle_core::messages::command(&format!("check --rerun --chapter {chapter}"))
    )
}

/// `book/src/chNN.md:LINE` of run cell number `cell`, or just the file.
pub(crate) fn cell_location(chapter: &tangle_core::model::Chapter, cell: Option<usize>) -> String {
    match cell.and_then(|i| chapter.run_cells().nth(i)) {
        Some(c) => chapter.location(c.code_line).to_string(),
        None => chapter.path.display().to_string(),
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}
