//! `tangle-core`: tangle's pipeline without a renderer. Literate programming for a book whose
//! code is Rust: the Markdown chapters of an mdBook, their Rust cells tangled into crates,
//! built, run and checked against the outputs the prose shows. The renderer is `tangle-render`,
//! the command line `mdbook-tangle`; this crate builds without mdBook, KaTeX or a citation
//! engine.
//!
//! The book's settings and layout come from one place, [`config`] (`book.toml`'s
//! `[preprocessor.tangle]`). The pipeline, one module per stage, data flowing one way through
//! the [`model`]:
//!
//! 1. [`parse`]: the chapters under `[book] src` → [`model::Book`] (cells, output blocks,
//!    directives, quoted values, byte spans), read through [`markdown`], the one Markdown front
//!    end every stage uses; `parse::lint` finds cell lines wider than the book's column, and
//!    `parse::summary` reads `SUMMARY.md`'s reading order, in which commands report chapters
//! 2. [`generate`]: chapters → the files of `code/` (a workspace with one library crate and one
//!    run package per chapter, cells verbatim, a line map back to the chapter, and the runtime
//!    the programs link, copied from the tool); [`generate::sync`] writes or checks them
//! 3. [`build`]: `cargo build` of the chapter workspace (libraries optimised, run programs at
//!    opt-level 0) or of the chapters' test cells, rustc's diagnostics mapped back to chapter
//!    lines and columns
//! 4. [`run`]: one process group per chapter under a watchdog, stdout split into per-cell
//!    outputs, published values and drawn figures and calculators collected;
//!    [`run::test_cells`] runs the test cells and reads libtest's report back into the chapter
//! 5. [`compare`]: outputs against the prose (redactions, tolerance), diffs numbered by chapter
//!    line; quoted values against the published ones; figures and calculator data against
//!    `figures/`; numbers in sentences typed by hand instead of quoted (a style check of
//!    `tangle test`)
//! 6. [`accept`]: actual outputs and values spliced into the prose by byte span; `accept::fmt`
//!    formats cells in place; [`untangle`] takes edits made in the generated crates back into
//!    the cells they came from
//!
//! What a stage makes of a chapter (its generated crate, its run's result, an example, an
//! untangled edit) holds the chapter itself, shared from the [`model::Book`]. A chapter is
//! looked up by name only where the name comes from outside the pipeline: a person
//! (`--chapter ch06`, a `freeze` list), a path rustc names, cargo's list of built programs.
//!
//! Beside them, [`examples`]: chapters whose Rust blocks are each a program of their own, as
//! rustdoc's doctests (`cells = "examples"`), built in one cargo build and run in parallel.
//!
//! Around them: [`pipeline`] strings the stages together (the library's entry points: load,
//! check, test cells, accept, fmt), [`cache`] skips build and run for chapters whose inputs did
//! not change (and keeps each cell's syn analysis by content hash), [`freeze`] answers a frozen
//! chapter (one that needs hours or hardware CI lacks) from its run record committed beside
//! the book while what the run depends on hashes the same, [`lock`] lets one command
//! write a book at a time, [`timing`] reports each phase's time under `TANGLE_TIMINGS=1`,
//! [`snapshot`] mirrors every output block in `snapshots/`, [`diagnostic`] locates and renders
//! every error with an excerpt of the chapter, [`messages`] names the commands a user can run,
//! [`progress`] carries what a check reports while it works, and [`git`] asks git for the two
//! sides of a file a merge left conflicted. No module imports one that
//! imports it back (a test checks the graph).

// The maps above name the private modules too: they are for those who read the source or
// `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

pub mod compare;
pub mod config;
pub mod diagnostic;
pub mod examples;
pub mod messages;
pub mod model;
pub mod pipeline;
pub mod progress;
pub mod run;
pub mod snapshot;

// The stages and their helpers, used through the pipeline.
pub mod accept;
pub(crate) mod build;
pub mod cache;
pub mod freeze;
pub mod fsutil;
pub mod generate;
pub mod git;
pub mod lock;
pub mod markdown;
pub mod parse;
pub mod timing;
pub(crate) mod untangle;
