//! `mdbook-tangle`: tangle's command line, a thin shell over `tangle-core` (the pipeline) and
//! `tangle-render` (the book), with two binaries: `tangle`, the author's command, and
//! `mdbook-tangle`, the preprocessor a stock `mdbook` runs ([`preprocess`]).
//!
//! It parses the arguments, asks the pipeline, prints what it found ([`report`]; the live
//! status line in `status`) and turns it into an exit code: 0 clean, 1 drift or stale, 2 an
//! error in the input or the build. Diagnostics go to stderr with an excerpt of the chapter;
//! results go to stdout. Beside `check`, `accept`, `fmt`, `book` and `serve`: [`test`](mod@test), every
//! check CI should run in one report; `scaffold`, `tangle new` and `tangle init`; `examples`,
//! the chapters whose blocks are rustdoc-style examples.

// The maps above name the private modules too: they are for those who read the source or
// `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

mod examples;
pub mod preprocess;
mod refusals;
mod report;
mod scaffold;
mod status;
pub mod test;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use tangle_core::config::Config;
use tangle_core::diagnostic::{Diagnostic, Diagnostics, Sources, Style};
use tangle_core::generate::sync::Discard;
use tangle_core::lock::IfHeld;
use tangle_core::model::Chapter;
use tangle_core::pipeline::{self, CheckOptions, Project};
use tangle_render::RenderOptions;

/// The package's version, and the git commit it was built from when it was built in a checkout
/// (`build.rs`): builds between releases share a version number.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), env!("TANGLE_BUILD_COMMIT"));

#[derive(Parser)]
#[command(name = "tangle", version = VERSION, about = "Markdown chapters → checked Rust crates → an mdBook")]
pub struct Cli {
    /// The book's folder (the one holding book.toml, or a book/ folder that does); found from the
    /// current directory if omitted.
    #[arg(long, global = true)]
    root: Option<PathBuf>,
    /// Say more: paths into the generated code/ beside chapter locations.
    #[arg(long, short, global = true)]
    verbose: bool,
    /// When another tangle run holds the repository, fail at once instead of waiting for it.
    #[arg(long, global = true)]
    no_wait: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write the chapters' crates (the code folder, `code/` by default) from the chapters.
    Sync {
        /// Write nothing; fail naming each file of code/ that is stale or was edited by hand.
        #[arg(long)]
        check: bool,
        /// Overwrite generated files edited since tangle wrote them, throwing their edits away
        /// (a copy of each is kept under target/tangle/discarded/); given files, only those.
        #[arg(long, conflicts_with = "check", num_args = 0.., value_name = "FILE")]
        discard: Option<Vec<PathBuf>>,
    },
    /// Take edits made in the generated crates under code/ back into the chapters' cells.
    Untangle {
        /// Only this chapter (repeatable), e.g. `--chapter ch06`.
        #[arg(long)]
        chapter: Vec<String>,
    },
    /// Build and run the chapters; fail when an output or figure drifted from the prose.
    Check {
        /// Only this chapter (repeatable), e.g. `--chapter ch06`.
        #[arg(long)]
        chapter: Vec<String>,
        /// Run the chapters afresh instead of answering from the cache (an output that depends
        /// on timings may have come out differently on a busy machine, or on a file the chapter
        /// reads without declaring it with `<!-- tangle: data FILE -->`), frozen chapters too.
        #[arg(long)]
        rerun: bool,
    },
    /// Write the actual outputs and values into the prose, snapshots/ and figures/.
    Accept {
        /// Only this chapter (repeatable), e.g. `--chapter ch06`.
        #[arg(long)]
        chapter: Vec<String>,
        /// Rerun every chapter and take this machine's measurements too: outputs and values
        /// that may vary (redactions, tolerances) are written as they came out now. A frozen
        /// chapter is run too, and its record under frozen/ rewritten.
        #[arg(long)]
        refresh: bool,
    },
    /// Format every cell with rustfmt, in place in the chapters.
    Fmt {
        /// Write nothing; fail naming each unformatted cell at its chapter line.
        #[arg(long)]
        check: bool,
        /// Only this chapter (repeatable), e.g. `--chapter ch06`.
        #[arg(long)]
        chapter: Vec<String>,
    },
    /// Everything CI should run: the check, the chapters' test cells, the book rendered, and
    /// the style checks book.toml keeps on. Ends with `N passed, N failed, N ignored`.
    Test {
        /// Only this chapter (repeatable).
        #[arg(long)]
        chapter: Vec<String>,
    },
    /// Everything: sync, check (running what the cache cannot answer), then the HTML book.
    Book,
    /// Everything `book` does, then print the book to PDF with headless Chromium.
    Pdf {
        /// Where to write the PDF (default: book.pdf in the HTML book's folder).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Build the book, serve it on 127.0.0.1, and rebuild when a chapter, the theme, a figure, a
    /// declared data file or a crate used by `path` changes. An edit saved in a generated file
    /// under code/ is untangled into its chapter first: reload the chapter in your editor
    /// before saving it there.
    Serve {
        #[arg(long, default_value_t = 3000)]
        port: u16,
    },
    /// Start a new book in PATH: book.toml, a chapter that shows every feature, a bibliography,
    /// .gitignore, a CI workflow and a README, generated and checked once, ready to commit.
    New { path: PathBuf },
    /// Adopt the mdBook in this folder (or --root): tangle's lines in book.toml and .gitignore,
    /// the generated files written; no chapter is changed.
    Init,
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

pub use report::{CLEAN, DRIFT, ERROR};

/// `mdbook-tangle [supports RENDERER]`: mdBook's preprocessor protocol, as
/// `tangle preprocess [supports RENDERER]`.
pub fn preprocessor_main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    // mdBook never passes a flag, but a person checking which build is installed does.
    if let [flag] = args.as_slice()
        && (flag == "--version" || flag == "-V")
    {
        println!("mdbook-tangle {VERSION}");
        return ExitCode::SUCCESS;
    }
    let argv = ["tangle".into(), "preprocess".into()].into_iter().chain(args);
    main_from(Cli::parse_from(argv))
}

pub fn main() -> ExitCode {
    main_from(Cli::parse())
}

fn main_from(cli: Cli) -> ExitCode {
    quiet_on_closed_pipe();
    show_mdbook_warnings();
    let root = cli.root.clone();
    // What a refused command did not do: `init` writes, the others run.
    let writes_only = matches!(cli.command, Command::Init | Command::Sync { .. } | Command::Untangle { .. });
    let not_done = if writes_only { "nothing was written" } else { "nothing was run" };
    let outcome = run(cli);
    tangle_core::timing::count("markdown parses", tangle_core::markdown::parses());
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            // Paths in messages are relative to the project root, wherever the command ran.
            let start = root.or_else(|| std::env::current_dir().ok());
            let root = start.as_deref().and_then(tangle_core::config::project_root);
            let sources = Sources::new(root.as_deref().unwrap_or(Path::new(".")));
            let style = Style::for_stderr();
            match err.downcast_ref::<Diagnostics>() {
                Some(found) => {
                    // A book adopted with the wrong settings can hold hundreds of one mistake (a
                    // book of rustdoc examples read as notebook cells): the first ones show it.
                    const SHOWN: usize = 20;
                    for d in found.iter().take(SHOWN) {
                        eprintln!("{}\n", d.render(&sources, style));
                    }
                    let rest: Vec<_> = found.iter().skip(SHOWN).collect();
                    if !rest.is_empty() {
                        let files: std::collections::BTreeSet<_> =
                            rest.iter().filter_map(|d| d.location.as_ref().map(|l| &l.file)).collect();
                        eprintln!(
                            "... and {} more in {} file(s), not shown: fix the ones above (often one setting) and run \
                             again\n",
                            rest.len(),
                            files.len()
                        );
                    }
                    let errors = found.iter().filter(|d| d.is_error()).count();
                    // Refused edits in generated files (untangle) are no mistakes of a chapter.
                    let in_chapters = found
                        .iter()
                        .all(|d| d.location.as_ref().is_none_or(|l| l.file.extension().is_some_and(|e| e == "md")));
                    let place = if in_chapters { "in the chapters" } else { "found" };
                    eprintln!("error: {errors} mistake(s) {place}; {not_done}");
                }
                None => match err.downcast_ref::<Diagnostic>() {
                    Some(d) => eprintln!("{}", d.render(&sources, style)),
                    None => eprintln!("error: {err:#}"),
                },
            }
            ExitCode::from(ERROR)
        }
    }
}

/// mdBook reports what it finds wrong in a book (unclosed HTML, a missing file) through
/// `tracing`; without a subscriber those reports vanish. Warnings and errors go to stderr
/// (`RUST_LOG=info` shows more).
fn show_mdbook_warnings() {
    let level = match std::env::var("RUST_LOG").ok().as_deref() {
        Some("trace") => tracing_subscriber::filter::LevelFilter::TRACE,
        Some("debug") => tracing_subscriber::filter::LevelFilter::DEBUG,
        Some("info") => tracing_subscriber::filter::LevelFilter::INFO,
        Some("error") => tracing_subscriber::filter::LevelFilter::ERROR,
        _ => tracing_subscriber::filter::LevelFilter::WARN,
    };
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(Style::for_stderr() == Style::Colored)
        .without_time()
        .with_target(false)
        .try_init();
}

/// `cargo tangle check | head` closes our stdout early; like other Unix tools, end quietly
/// instead of panicking in `println!`.
fn quiet_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    if let Command::Preprocess { supports } = &cli.command {
        return match supports {
            Some(Supports::Supports { renderer }) => Ok(preprocess::supports(renderer)),
            None => preprocess::run(),
        };
    }
    if let Command::New { path } = &cli.command {
        return scaffold::new(path);
    }
    if let Command::Init = &cli.command {
        let dir = match &cli.root {
            Some(r) => r.clone(),
            None => std::env::current_dir()?,
        };
        return scaffold::init(&dir);
    }
    let root = match cli.root {
        Some(r) => r,
        None => find_root(&std::env::current_dir()?)?,
    };
    if let Command::Serve { port } = cli.command {
        // serve takes the repository lock around each of its builds itself.
        return tangle_render::serve(&Config::load(&root)?, port).map(|()| CLEAN);
    }
    let _total = tangle_core::timing::Span::new("total (after the command line is read)");
    let refresh = matches!(cli.command, Command::Accept { refresh: true, .. });
    let rerun = matches!(cli.command, Command::Check { rerun: true, .. });
    // A frozen chapter reruns only when it is named: it was frozen because it cannot run here.
    let rerun_frozen = matches!(&cli.command, Command::Check { rerun: true, chapter, .. } if !chapter.is_empty());
    let options = CheckOptions { verbose: cli.verbose, refresh, rerun, rerun_frozen, ..CheckOptions::default() };
    // On CI the book is only checked (insta's rule): a command that rewrites chapters says so
    // before it builds or runs anything.
    let rewrites = match &cli.command {
        Command::Accept { .. } => Some("accept"),
        Command::Fmt { check: false, .. } => Some("fmt"),
        Command::Untangle { .. } => Some("untangle"),
        _ => None,
    };
    if let Some(command) = rewrites
        && pipeline::on_ci()
    {
        anyhow::bail!(
            "`{}` rewrites the chapters, and CI is set here, where the book is only checked: run it where you \
             edit the book and commit the result (or unset CI)",
            tangle_core::messages::command(command)
        );
    }
    // One writer at a time: a second accept, check or book waits (or, with --no-wait, stops).
    let _lock = match cli.command {
        Command::Sync { check: true, .. } | Command::Fmt { check: true, .. } => None,
        _ => {
            let what = match cli.command {
                Command::Sync { .. } => "sync",
                Command::Check { .. } => "check",
                Command::Accept { .. } => "accept",
                Command::Fmt { .. } => "fmt",
                Command::Test { .. } => "test",
                Command::Untangle { .. } => "untangle",
                _ => "book",
            };
            let if_held = if cli.no_wait { IfHeld::Refuse } else { IfHeld::Wait };
            let options = tangle_core::lock::Options { what, if_held, ..Default::default() };
            Some(tangle_core::lock::acquire_book(&Config::load(&root)?.layout, options)?)
        }
    };
    let project = load_project(&root)?;
    match cli.command {
        Command::Sync { check: true, .. } => {
            let stale = project.stale()?;
            for s in &stale {
                println!("stale: {s}");
            }
            if stale.is_empty() {
                Ok(CLEAN)
            } else {
                for line in report::stale_advice(&project, &stale) {
                    println!("{line}");
                }
                Ok(DRIFT)
            }
        }
        Command::Sync { check: false, discard } => {
            let discard = match discard {
                None => Discard::Nothing,
                Some(files) if files.is_empty() => Discard::All,
                Some(files) => Discard::Only(edited_files(&project, &files)?),
            };
            for (verb, what) in
                tangle_core::generate::sync::summary(&project.sync(&discard)?, &project.generated, project.layout())
            {
                println!("{verb} {what}");
            }
            Ok(CLEAN)
        }
        // The book's warnings; notebook chapters through the pipeline, examples chapters as
        // rustdoc's doctests; then whatever `book` would refuse.
        Command::Check { chapter, .. } => {
            let notebook = project.select(&chapter)?.into_iter().map(|s| &**s.chapter());
            let examples = tangle_core::examples::chapters(&project, &chapter).into_iter().map(|c| &**c);
            let checked: Vec<&Chapter> = notebook.chain(examples).collect();
            let found = refusals::Found::new(&project, &checked);
            found.warn();
            let code = examples::check(&project, &chapter, false, options, report::Results::Stdout)?;
            Ok(code.max(found.refuse()))
        }
        Command::Accept { chapter, .. } => examples::check(&project, &chapter, true, options, report::Results::Stdout),
        Command::Untangle { chapter } => {
            let chapters = project.select(&chapter)?;
            pipeline::untangle(&project, &chapters, options.writes)?
                .report()
                .iter()
                .for_each(|line| println!("{line}"));
            Ok(CLEAN)
        }
        Command::Fmt { check, chapter } => {
            let chapters: Vec<&Chapter> = project.select(&chapter)?.into_iter().map(|s| &**s.chapter()).collect();
            if chapters.is_empty() {
                println!(
                    "nothing to format: `{}` formats the cells of notebook chapters, and the examples of a chapter \
                     of examples stay as their author wrote them",
                    tangle_core::messages::command("fmt")
                );
                return Ok(CLEAN);
            }
            let changed = pipeline::fmt(&project, &chapters, !check)?;
            for unformatted in &changed {
                match check {
                    true => unformatted.cells.iter().for_each(|at| println!("unformatted: {at}")),
                    false => println!("formatted {}", unformatted.chapter.display()),
                }
            }
            if check && !changed.is_empty() {
                println!("cells are not formatted: run `{}`", tangle_core::messages::command("fmt"));
                return Ok(DRIFT);
            }
            Ok(CLEAN)
        }
        Command::Test { chapter } => Ok(test::run(&project, &chapter, options)?.exit_code()),
        Command::Book | Command::Pdf { .. } => {
            let code = examples::check(&project, &[], false, options, report::Results::Stdout)?;
            if code == ERROR {
                return Ok(code);
            }
            refuse_stale_theme(&project, options.writes)?;
            // The pages as the check parsed them: the build parses no chapter again.
            let parsed = std::sync::Arc::new(tangle_render::Parsed::of(&project));
            let rendered = tangle_render::build_book(&project.config, &RenderOptions { parsed, ..Default::default() })?;
            println!("built {}", rendered.site.join("index.html").display());
            if let Command::Pdf { output } = &cli.command {
                let pdf = output.clone().unwrap_or_else(|| rendered.site.join("book.pdf"));
                tangle_render::pdf::print_book(&rendered.site, &pdf)?;
                println!("printed {}", pdf.display());
            }
            Ok(code)
        }
        Command::Serve { .. } | Command::Preprocess { .. } | Command::New { .. } | Command::Init => {
            unreachable!("handled above")
        }
    }
}

/// The project at `root`, with the renderer's theme among the generated files that `sync`
/// writes and `sync --check` guards.
/// The files `sync --discard FILE…` names (relative to the current folder, or else to the
/// project's), as paths from the project root; each must be a file of `code/` edited by hand.
fn edited_files(project: &Project, files: &[PathBuf]) -> anyhow::Result<std::collections::BTreeSet<PathBuf>> {
    let edited: Vec<PathBuf> =
        project.stale()?.iter().filter(|s| s.is_hand_made()).map(|s| s.path().to_path_buf()).collect();
    let here = std::env::current_dir()?;
    let root = tangle_core::fsutil::resolved(&here.join(&project.root));
    files
        .iter()
        .map(|f| {
            let candidates = [here.join(f), root.join(f)];
            let rel = candidates.iter().find_map(|path| {
                let rel = tangle_core::fsutil::resolved(path).strip_prefix(&root).ok()?.to_path_buf();
                edited.contains(&rel).then_some(rel)
            });
            match rel {
                Some(rel) => Ok(rel),
                None => {
                    let list: Vec<String> = edited.iter().map(|p| p.display().to_string()).collect();
                    anyhow::bail!(
                        "{}: not a file of {} edited by hand, so there is nothing of it to discard ({})",
                        f.display(),
                        project.layout().code.display(),
                        match list.is_empty() {
                            true => "none is".to_string(),
                            false => format!("these are: {}", list.join(", ")),
                        }
                    )
                }
            }
        })
        .collect()
}

pub fn load_project(root: &Path) -> anyhow::Result<Project> {
    project_with_theme(Project::load(root)?)
}

/// Before the book is rendered (which writes the theme where it is missing or out of date): where
/// writes are refused, a stale theme is an error naming the file. A book of examples alone has
/// no notebook check whose sync would have said so.
pub(crate) fn refuse_stale_theme(project: &Project, writes: pipeline::Writes) -> anyhow::Result<()> {
    if writes == pipeline::Writes::Refuse
        && let Some((path, _)) = tangle_render::theme::stale(project.layout()).first()
    {
        anyhow::bail!(
            "{} is not what this tangle generates: run `{}` and commit the result",
            path.display(),
            tangle_core::messages::command("sync")
        );
    }
    Ok(())
}

fn project_with_theme(mut project: Project) -> anyhow::Result<Project> {
    let theme = tangle_render::theme::files(project.layout());
    project.generated.support.extend(theme);
    Ok(project)
}

/// A check with its progress on stderr (a live status line on a terminal).
pub(crate) fn check(
    project: &Project,
    chapters: &[pipeline::Selected<'_>],
    options: CheckOptions,
) -> anyhow::Result<pipeline::Outcome> {
    status::with_status(|progress| pipeline::check(project, chapters, options, progress))
}

pub use tangle_core::config::find_root;
