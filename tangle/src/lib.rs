//! `tangle`: literate programming for a book whose code is Rust.
//!
//! The pipeline, one module per stage, data flowing one way through the [`model`]:
//!
//! 1. [`parse`]: `book/src/chNN.md` → [`model::Chapter`] (cells, output blocks, byte spans)
//! 2. [`generate`]: chapters → the files of `code/chNN` ([`sync`] writes or checks them)
//! 3. [`build`]: `cargo build --release`, diagnostics mapped back to chapter lines
//! 4. [`run`]: one process per chapter, stdout split into per-cell outputs
//! 5. [`compare`]: outputs against the prose (redactions, tolerance), unified diffs
//! 6. [`accept`]: actual outputs spliced into the prose by byte span
//! 7. [`render`]: the mdBook, with figures, numbered captions and math
//!
//! [`pipeline`] strings the stages together, [`cache`] skips build and run for chapters whose
//! inputs did not change, and [`snapshot`] mirrors every output block in `snapshots/`.

pub mod accept;
pub mod build;
pub mod cache;
pub mod cli;
pub mod compare;
pub mod diagnostic;
pub mod fsutil;
pub mod generate;
pub mod lock;
pub mod model;
pub mod parse;
pub mod pipeline;
pub mod render;
pub mod run;
pub mod snapshot;
pub mod sync;
