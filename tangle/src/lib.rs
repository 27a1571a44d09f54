//! `tangle`: literate programming for a book whose code is Rust.
//!
//! The pipeline, one module per stage, data flowing one way through the [`model`]:
//!
//! 1. [`parse`]: `book/src/**.md` → [`model::Book`] (cells, output blocks, directives, byte spans),
//!    read through [`markdown`], the one Markdown front end every stage uses
//! 2. [`generate`]: chapters → the files of `code/` (one crate per chapter, cells verbatim, a
//!    line map back to the chapter); [`generate::sync`] writes or checks them
//! 3. [`build`]: `cargo build --release` of the chapter workspace, rustc's diagnostics mapped
//!    back to chapter lines and columns
//! 4. [`run`]: one process per chapter, stdout split into per-cell outputs
//! 5. [`compare`]: outputs against the prose (redactions, tolerance), diffs numbered by chapter
//!    line; figures against `figures/`
//! 6. [`accept`]: actual outputs spliced into the prose by byte span
//! 7. [`render`]: the mdBook, with figures, numbered captions, math and diagrams
//!
//! Around them: [`pipeline`] strings the stages together (the library's entry points),
//! [`cache`] skips build and run for chapters whose inputs did not change, [`snapshot`] mirrors
//! every output block in `snapshots/`, [`diagnostic`] locates and renders every error with an
//! excerpt of the chapter, [`progress`] carries what a check reports while it works, and [`cli`]
//! is the command line. No module imports one that imports it back (a test checks the graph).

// The library's public face: the pipeline's entry points and the types they return, the
// renderer (for `mdbook` users and `serve`), diagnostics, and the command line.
pub mod cli;
pub mod compare;
pub mod diagnostic;
pub mod model;
pub mod pipeline;
pub mod progress;
pub mod render;
pub mod run;
pub mod snapshot;

// The stages and their helpers, used through the pipeline.
pub(crate) mod accept;
pub(crate) mod build;
pub(crate) mod cache;
pub(crate) mod fsutil;
pub(crate) mod generate;
pub(crate) mod lock;
pub(crate) mod markdown;
pub(crate) mod parse;
