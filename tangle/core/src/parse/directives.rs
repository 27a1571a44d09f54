//! `<!-- tangle: WORD ARGS -->` comments: chapter-wide settings. Read from the HTML comments
//! the Markdown front end finds (block or inline, over several lines, in any container); the
//! word is matched without regard to case; a comment that starts with `tangle` but says
//! nothing tangle knows is an error rather than a setting silently ignored.
//!
//! - `data PATH...`: files the chapter's code reads (relative to the repository root); a change
//!   to one reruns the chapter.
//! - `timeout SECONDS`: how long the chapter program may run (default 600 s).
//! - `values PATH...`: files of values recorded outside the test command (a benchmark's
//!   results), which the prose may quote like the values the chapter's cells publish.
//! - `typed NUMBER REASON`: a number the prose states by hand on purpose although the code
//!   prints it too (a datasheet's rate, a name like "Llama 3.1"), with the reason; the check
//!   for hand-typed numbers lets it stand, and fails when nothing needs the entry any more.
//! - `cells examples` or `cells notebook`: how this chapter's Rust blocks are read, whatever
//!   `book.toml`'s `cells` says (one book may mix notebook and example chapters).
//! - `freeze`: the chapter's run is committed under `frozen/` and reused while what it depends
//!   on is unchanged, instead of being rerun (a chapter that needs hours or a GPU; see
//!   `crate::freeze`).

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use crate::diagnostic::{Diagnostic, Diagnostics, Location};
use crate::markdown::Document;
use crate::model::{CellMode, Directives};

pub fn read(path: &Path, doc: &Document, diagnostics: &mut Diagnostics) -> Directives {
    let mut directives = Directives::default();
    for comment in &doc.comments {
        let text = comment.inner.trim();
        let Some(rest) = strip_prefix_ignore_case(text, "tangle") else { continue };
        let at = Location::new(path, comment.line);
        if !comment.closed {
            // Everything after it is inside the comment: hidden from the page, and no directive.
            let first = text.lines().next().unwrap_or(text);
            diagnostics.push(
                Diagnostic::error(
                    at,
                    format!("`<!-- {first}` is never closed: everything after it is inside the comment"),
                )
                .with_help("end the directive with ` -->` on its line"),
            );
            continue;
        }
        let Some(rest) = rest.trim_start().strip_prefix(':') else {
            // `<!-- tangle timeout 3 -->`: almost certainly meant as a directive.
            if rest.starts_with(char::is_whitespace) {
                diagnostics.push(
                    Diagnostic::error(at, "a tangle directive needs a colon: `<!-- tangle: WORD ... -->`").with_help(
                        "known: `tangle: data PATH...`, `tangle: timeout SECONDS`, `tangle: values PATH...`, \
                         `tangle: typed NUMBER REASON`, `tangle: cells MODE`, `tangle: freeze`",
                    ),
                );
            }
            continue;
        };
        let mut words = rest.split_whitespace();
        let word = words.next().unwrap_or("").to_ascii_lowercase();
        let args: Vec<&str> = words.collect();
        match word.as_str() {
            "data" if args.is_empty() => diagnostics.push(
                Diagnostic::error(at, "`tangle: data` names no file")
                    .with_help("write `<!-- tangle: data book/data/FILE -->`"),
            ),
            "values" if args.is_empty() => diagnostics.push(
                Diagnostic::error(at, "`tangle: values` names no file")
                    .with_help("write `<!-- tangle: values bench/results/FILE.toml -->`"),
            ),
            "data" | "values" => {
                for arg in args {
                    let file = PathBuf::from(arg);
                    if !file.is_relative() || file.components().any(|c| c == Component::ParentDir) {
                        diagnostics.push(Diagnostic::error(
                            at.clone(),
                            format!("data file `{arg}` must be a path inside the repository, relative to its root"),
                        ));
                    } else if file.components().all(|c| c == Component::CurDir) {
                        // Every file of the repository, tangle's build folder included.
                        diagnostics.push(Diagnostic::error(
                            at.clone(),
                            format!("`{arg}` is the whole repository: name the files or folders the code reads"),
                        ));
                    } else if word == "data" {
                        directives.data.push((file, comment.line));
                    } else {
                        directives.values.push((file, comment.line));
                    }
                }
            }
            "typed" => match args.as_slice() {
                [number, reason @ ..] if !reason.is_empty() => directives.typed.push(crate::model::TypedNumber {
                    number: number.to_string(),
                    reason: reason.join(" "),
                    line: comment.line,
                }),
                _ => diagnostics.push(
                    Diagnostic::error(at, "`tangle: typed` takes a number and the reason it is typed by hand")
                        .with_help("write `<!-- tangle: typed 989.4 the H100 datasheet's dense bf16 rate -->`"),
                ),
            },
            "cells" => match args.as_slice() {
                [m] if m.eq_ignore_ascii_case("examples") => directives.cells = Some(CellMode::Examples),
                [m] if m.eq_ignore_ascii_case("notebook") => directives.cells = Some(CellMode::Notebook),
                _ => diagnostics.push(
                    Diagnostic::error(at, format!("`tangle: cells` takes `examples` or `notebook`, not `{}`", args.join(" ")))
                        .with_help("write `<!-- tangle: cells examples -->` (every block a program, as rustdoc) or `<!-- tangle: cells notebook -->`"),
                ),
            },
            "freeze" => match args.as_slice() {
                [] => directives.freeze = Some(comment.line),
                _ => diagnostics.push(
                    Diagnostic::error(at, format!("`tangle: freeze` takes nothing, not `{}`", args.join(" ")))
                        .with_help("write `<!-- tangle: freeze -->`"),
                ),
            },
            "timeout" => match args.as_slice() {
                [n] if n.parse::<u64>().is_ok_and(|s| s > 0) => {
                    directives.timeout = Some(Duration::from_secs(n.parse().expect("checked")));
                }
                _ => diagnostics.push(Diagnostic::error(
                    at,
                    format!("`tangle: timeout` takes a whole number of seconds above 0, not `{}`", args.join(" ")),
                )),
            },
            "" => diagnostics.push(
                Diagnostic::error(at, "this tangle directive is empty")
                    .with_help(
                        "known: `data PATH...`, `timeout SECONDS`, `values PATH...`, `typed NUMBER REASON`, `cells MODE`, \
                         `freeze`",
                    ),
            ),
            other => diagnostics.push(
                Diagnostic::error(at, format!("unknown tangle directive `{other}`"))
                    .with_help("known: `data`, `timeout`, `values`, `typed`, `cells`, `freeze`"),
            ),
        }
    }
    directives
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}
