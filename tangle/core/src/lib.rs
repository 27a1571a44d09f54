//! `tangle`: literate programming for a book whose code is Rust.
//!
//! The pipeline, one module per stage, data flowing one way through the [`model`]:
//!
//! 1. [`parse`]: `book/src/**.md` → [`model::Book`] (cells, output blocks, directives, quoted
//!    values, byte spans), read through [`markdown`], the one Markdown front end every stage
//!    uses; `parse::lint` warns about lines wider than the book's column
//! 2. [`generate`]: chapters → the files of `code/` (a workspace with one library crate and one
//!    run package per chapter, cells verbatim, a line map back to the chapter);
//!    [`generate::sync`] writes or checks them
//! 3. [`build`]: `cargo build` of the chapter workspace (libraries optimised, run programs at
//!    opt-level 0), rustc's diagnostics mapped back to chapter lines and columns
//! 4. [`run`]: one process group per chapter under a watchdog, stdout split into per-cell
//!    outputs, published values and drawn figures and calculators collected
//! 5. [`compare`]: outputs against the prose (redactions, tolerance), diffs numbered by chapter
//!    line; quoted values against the published ones; figures and calculator data against
//!    `figures/`; numbers in sentences typed by hand instead of quoted
//! 6. [`accept`]: actual outputs and values spliced into the prose by byte span; `accept::fmt`
//!    formats cells in place; [`untangle`] takes edits made in the generated crates back into
//!    the cells they came from
//! 7. [`render`]: the mdBook (preprocessor and driver), with figures, live calculators,
//!    numbered captions, math, diagrams, citations and a search index that ranks prose first;
//!    `render::serve` serves it with live reload, `render::pdf` prints it
//!
//! Around them: [`pipeline`] strings the stages together (the library's entry points),
//! [`cache`] skips build and run for chapters whose inputs did not change (and keeps each
//! cell's syn analysis by content hash), [`timing`] reports each phase's time under
//! `TANGLE_TIMINGS=1`, [`snapshot`] mirrors
//! every output block in `snapshots/`, [`diagnostic`] locates and renders every error with an
//! excerpt of the chapter, [`progress`] carries what a check reports while it works, and [`cli`]
//! is the command line. No module imports one that imports it back (a test checks the graph).

// The library's public face: the pipeline's entry points and the types they return, the
// renderer (for `mdbook` users and `serve`), diagnostics, and the command line.
pub mod compare;
pub mod config;
pub mod diagnostic;
pub mod messages;
pub mod model;
pub mod pipeline;
pub mod progress;
pub mod run;
pub mod snapshot;

// The stages and their helpers, used through the pipeline.
pub mod accept;
pub mod build;
pub mod cache;
pub mod fsutil;
pub mod generate;
pub mod lock;
pub mod markdown;
pub mod parse;
pub mod timing;
pub mod untangle;
