//! The command line: parses arguments, calls the pipeline, prints what it found, and turns
//! it into an exit code (0 clean, 1 drift or stale, 2 error in the input or the build).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::compare::Verdict;
use crate::diagnostic::InputError;
use crate::pipeline::{self, Outcome, Project};
use crate::run::RunEnd;

#[derive(Parser)]
#[command(name = "tangle", version, about = "Markdown chapters → checked Rust crates → an mdBook")]
pub struct Cli {
    /// The project root (the folder with book/ and Cargo.toml); found from the current directory if omitted.
    #[arg(long, global = true)]
    root: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write code/ from book/src.
    Sync {
        /// Write nothing; fail naming each file of code/ that is stale or was edited by hand.
        #[arg(long)]
        check: bool,
    },
    /// Build and run the chapters; fail when an output or figure drifted from the prose.
    Check {
        /// Only this chapter (repeatable), e.g. `--chapter ch06`.
        #[arg(long)]
        chapter: Vec<String>,
    },
    /// Write the actual outputs into the prose, snapshots/ and figures/.
    Accept {
        #[arg(long)]
        chapter: Vec<String>,
    },
    /// Everything: sync, check (running what the cache cannot answer), then the HTML book.
    Book,
    /// Build the book, serve it on 127.0.0.1, and rebuild when a chapter, the theme or a figure changes.
    Serve {
        #[arg(long, default_value_t = 3000)]
        port: u16,
    },
    /// Run as an mdBook preprocessor (`[preprocessor.tangle]` in book.toml).
    Preprocess {
        #[command(subcommand)]
        supports: Option<Supports>,
    },
}

#[derive(Subcommand)]
enum Supports {
    /// Whether the preprocessor supports a renderer (mdBook's protocol).
    Supports { renderer: String },
}

/// Exit statuses.
pub const CLEAN: u8 = 0;
pub const DRIFT: u8 = 1;
pub const ERROR: u8 = 2;

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            match err.downcast_ref::<InputError>() {
                Some(input) => eprintln!("error: {input}"),
                None => eprintln!("error: {err:#}"),
            }
            ExitCode::from(ERROR)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    if let Command::Preprocess { supports } = &cli.command {
        return match supports {
            Some(Supports::Supports { renderer }) => Ok(if renderer == "html" { CLEAN } else { DRIFT }),
            None => crate::render::run_as_mdbook_preprocessor().map(|()| CLEAN),
        };
    }
    let root = match cli.root {
        Some(r) => r,
        None => find_root(&std::env::current_dir()?)?,
    };
    let project = Project::load(&root)?;
    match cli.command {
        Command::Sync { check: true } => {
            let stale = project.stale()?;
            for s in &stale {
                println!("stale: {s}");
            }
            if stale.is_empty() {
                Ok(CLEAN)
            } else {
                println!("code/ is out of date with book/src: run `cargo tangle sync` and commit the result");
                Ok(DRIFT)
            }
        }
        Command::Sync { check: false } => {
            for fixed in project.sync()? {
                println!("{} {}", fixed.fix_verb(), fixed.path().display());
            }
            Ok(CLEAN)
        }
        Command::Check { chapter } => {
            let chapters = project.select(&chapter)?;
            report(&project, pipeline::check(&project, &chapters)?, false)
        }
        Command::Accept { chapter } => {
            let chapters = project.select(&chapter)?;
            report(&project, pipeline::check(&project, &chapters)?, true)
        }
        Command::Book => {
            let chapters = project.select(&[])?;
            let code = report(&project, pipeline::check(&project, &chapters)?, false)?;
            if code == ERROR {
                return Ok(code);
            }
            crate::render::build_book(&root)?;
            println!("built {}", root.join("book/book/index.html").display());
            Ok(code)
        }
        Command::Serve { port } => crate::render::serve(&root, port).map(|()| CLEAN),
        Command::Preprocess { .. } => unreachable!("handled above"),
    }
}

/// Prints a check's findings (and accepts them when asked); returns the exit status.
fn report(project: &Project, outcome: Outcome, accept: bool) -> anyhow::Result<u8> {
    let results = match outcome {
        Outcome::Stale(stale) => {
            for s in &stale {
                println!("stale: {s}");
            }
            println!("code/ is out of date with book/src: run `cargo tangle sync` and commit the result");
            return Ok(DRIFT);
        }
        Outcome::CompileErrors(errors) => {
            for e in &errors {
                eprintln!("error: {e}\n");
            }
            eprintln!("error: {} compile error(s); fix the cells named above", errors.len());
            return Ok(ERROR);
        }
        Outcome::Ran(results) => results,
    };
    let mut code = CLEAN;
    for r in &results {
        let chapter = project.book.chapter(&r.chapter).expect("result of a chapter");
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
                    println!("drift: {}\n{diff}", v.location);
                }
            }
            for f in &r.figures {
                println!("drift: {f}");
            }
            for s in &r.snapshots {
                let p = s.path().strip_prefix(&project.root).unwrap_or(s.path());
                println!("drift: {}: {}", p.display(), s.reason());
            }
        }
        let drifted = r.drifted().count();
        let not_run = r.verdicts.iter().filter(|v| v.verdict == Verdict::NotRun).count();
        let same = r.verdicts.len() - drifted - not_run;
        if accept {
            let changes = [(drifted, "output"), (r.figures.len(), "figure"), (r.snapshots.len(), "snapshot")];
            let accepted: Vec<String> =
                changes.iter().filter(|(n, _)| *n > 0).map(|(n, what)| format!("{n} {what}(s)")).collect();
            match accepted.is_empty() {
                true => eprintln!("{}: up to date", r.chapter),
                false => eprintln!("{}: accepting {}", r.chapter, accepted.join(", ")),
            }
            continue;
        }
        let mut line = format!("{}: {same} cell(s) match", r.chapter);
        if drifted > 0 {
            line += &format!(", {drifted} drifted");
        }
        if !r.figures.is_empty() {
            line += &format!(", {} figure(s) drifted", r.figures.len());
        }
        if !r.snapshots.is_empty() {
            line += &format!(", {} snapshot(s) stale", r.snapshots.len());
        }
        if not_run > 0 {
            line += &format!(", {not_run} not run");
        }
        if r.cached {
            line += " (cached run)";
        }
        eprintln!("{line}");
        if drifted + r.figures.len() + r.snapshots.len() > 0 && code == CLEAN && !accept {
            code = DRIFT;
        }
    }
    if accept {
        let accepted = pipeline::accept(project, &results)?;
        for f in &accepted.files {
            println!("updated {}", f.display());
        }
    } else if code == DRIFT {
        println!(
            "outputs drifted from the prose: fix the code, or run `cargo tangle accept` if the new output is right"
        );
    }
    Ok(code)
}

/// `book/src/chNN.md:LINE` of run cell number `cell`, or just the file.
fn cell_location(chapter: &crate::model::Chapter, cell: Option<usize>) -> String {
    match cell.and_then(|i| chapter.run_cells().nth(i)) {
        Some(c) => chapter.location(c.code_line).to_string(),
        None => chapter.path.display().to_string(),
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}

/// The nearest ancestor of `start` with `book/book.toml`.
pub fn find_root(start: &Path) -> anyhow::Result<PathBuf> {
    start
        .ancestors()
        .find(|d| d.join("book/book.toml").is_file() && d.join("Cargo.toml").is_file())
        .map(Path::to_path_buf)
        .ok_or_else(|| {
            anyhow::anyhow!("no book/book.toml in {} or any parent: run tangle inside the project", start.display())
        })
}
