//! `tangle preprocess` and the `mdbook-tangle` binary: tangle as an mdBook preprocessor, for
//! books built with a separately installed `mdbook build` or `mdbook serve`.
//!
//! mdBook asks `supports RENDERER` first: the answer is yes for every renderer, so that no
//! renderer (a link checker, a PDF backend) ever receives raw `{{#value}}`, `{{#figure}}` or
//! `{{#widget}}` directives. Then it sends the book as JSON on stdin. Before rendering, the
//! preprocessor does what `tangle book` does: the cached check of every chapter, notebook
//! chapters and chapters of examples alike (building and running only what changed). A
//! stale, failing or drifted chapter makes it exit non-zero with tangle's own messages on
//! stderr, and mdBook stops instead of publishing the page. Stdout carries the book back, so
//! every message goes to stderr.

use std::io::Write;

use anyhow::Context;
use tangle_core::config::Config;
use tangle_core::pipeline::{CheckOptions, Project};
use tangle_render::TanglePreprocessor;

use crate::report::{CLEAN, ERROR, Results};

/// Prints what the renderer's validation refuses in `project`; [`ERROR`] when it refuses
/// anything.
fn refused(project: &Project) -> u8 {
    let sources = tangle_core::diagnostic::Sources::new(&project.root);
    let refused: Vec<_> = tangle_render::validate(project).into_iter().filter(|d| d.is_error()).collect();
    for d in &refused {
        eprintln!("{}\n", d.render(&sources, tangle_core::diagnostic::Style::for_stderr()));
    }
    if refused.is_empty() { CLEAN } else { ERROR }
}

/// `supports RENDERER`: every renderer gets the processed book.
pub fn supports(_renderer: &str) -> u8 {
    CLEAN
}

/// Reads `[context, book]` from stdin, checks the chapters, and writes the processed book on
/// stdout. An error (exit 2) when the chapters do not check.
pub fn run() -> anyhow::Result<u8> {
    let (ctx, book) = mdbook_preprocessor::parse_input(std::io::stdin().lock())
        .context("reading the [context, book] JSON that mdBook sends on stdin")?;
    warn_on_version_mismatch(&ctx.mdbook_version);
    let config = Config::load(&ctx.root)?;
    let (code, preprocessor) = {
        let _lock = tangle_core::lock::acquire_book(
            &config.layout,
            tangle_core::lock::Options { what: "mdbook (preprocessor)", ..Default::default() },
        )?;
        let project = crate::project_with_theme(Project::from_config(config.clone())?)?;
        // Notebook chapters and chapters of examples alike, as `tangle book` checks them.
        let mut code = crate::examples::check(&project, &[], false, CheckOptions::default(), Results::Stderr)?;
        // And what `tangle book` refuses to render (a `{{#ref}}` to no figure, a calculator no
        // cell computes): mdBook would publish the page with the directive as text.
        if code == CLEAN {
            code = refused(&project);
        }
        (code, TanglePreprocessor::with_project(&project))
    };
    if code != CLEAN {
        // `mdbook test` runs the preprocessors too, and renders nothing.
        let stopped = match ctx.renderer.as_str() {
            "test" => "`mdbook test` stops before testing anything (whatever chapter `-c` names)",
            _ => "the book is not rendered",
        };
        anyhow::bail!(
            "the chapters do not check (see above), so {stopped}; fix them, or run `{}` to see the same report",
            tangle_core::messages::command("check")
        );
    }
    let processed = mdbook_preprocessor::Preprocessor::run(&preprocessor, &ctx, book)?;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &processed)?;
    out.flush()?;
    Ok(CLEAN)
}

/// mdBook's JSON can change between minor versions: say so when the caller is not the mdBook
/// this tool was built with.
fn warn_on_version_mismatch(caller: &str) {
    let built = semver::Version::parse(mdbook_preprocessor::MDBOOK_VERSION).ok();
    let caller = semver::Version::parse(caller).ok();
    if let (Some(built), Some(caller)) = (built, caller)
        && !semver::VersionReq::parse(&format!("~{}.{}", built.major, built.minor))
            .is_ok_and(|req| req.matches(&caller))
    {
        eprintln!("tangle preprocess: warning: built against mdBook {built}, called by mdBook {caller}");
    }
}
