//! Lints over parsed chapters: things that are not mistakes in the input but that a reader of
//! the book would notice. Each returns warnings located at `book/src/chNN.md:LINE`.
//!
//! - [`long_lines`]: a cell line wider than the book's `line-width` (100 columns unless
//!   `book.toml` says otherwise, [`crate::config::DEFAULT_LINE_WIDTH`]). mdBook's text column
//!   holds 100 columns of code at desktop width (the width `tangle fmt` formats to); a wider
//!   line makes its block scroll sideways, and most readers never see its end.
//! - [`unread_rust`]: a block tagged ```` ```rs ```` or ```` ```Rust ````, which mdBook colours as
//!   Rust but neither tangle nor rustdoc runs.
//! - [`uncalled_mains`]: a run cell that defines `fn main`, which nothing calls in a notebook
//!   chapter (its statements are what runs): a rustdoc-style example in a book whose chapters
//!   are not read as examples, which would otherwise pass without having run.

use crate::diagnostic::{Diagnostic, Location};
use crate::model::{CellKind, Chapter};

/// Width of a tab in columns, as rustfmt counts it.
const TAB: usize = 4;

/// Columns a line takes: characters, a tab counting [`TAB`].
fn columns(line: &str) -> usize {
    line.chars().map(|c| if c == '\t' { TAB } else { 1 }).sum()
}

/// One warning for every cell line of `chapter` wider than `max` columns.
pub fn long_lines(chapter: &Chapter, max: usize) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for cell in &chapter.cells {
        for (i, line) in cell.code.lines().enumerate() {
            // A line is at least as many bytes as characters: most lines are let through
            // without counting (the tool is unoptimised; this runs on every check).
            if line.len() <= max && !line.contains('\t') {
                continue;
            }
            let width = columns(line);
            if width <= max {
                continue;
            }
            let at = Location::new(&chapter.path, cell.code_line + i).with_column(max + 1);
            out.push(
                Diagnostic::warning(
                    at,
                    format!(
                        "this cell line is {width} columns wide; the book's column shows {max}, so it scrolls sideways"
                    ),
                )
                .with_help(format!(
                    "run `{}`; a string or comment rustfmt cannot break, break by hand",
                    crate::messages::command("fmt")
                )),
            );
        }
    }
    out
}

/// One warning for every run cell of a notebook chapter that defines `fn main`.
pub fn uncalled_mains(chapter: &Chapter) -> Vec<Diagnostic> {
    // Compiled once: this runs on every check.
    static MAIN: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"^(pub\s+)?(async\s+)?fn\s+main\s*\(").expect("valid"));
    let main = &*MAIN;
    let mut out = Vec::new();
    for cell in chapter.cells.iter().filter(|c| c.kind == CellKind::Run && c.example.is_none()) {
        let Some(i) = cell.code.lines().position(|l| main.is_match(l)) else { continue };
        out.push(
            Diagnostic::warning(
                Location::new(&chapter.path, cell.code_line + i),
                "this run cell defines `fn main`, which nothing calls: in a notebook chapter the cell's \
                 statements run, so this code never does",
            )
            .with_help(
                "write the body as the cell's statements; or, for a rustdoc-style example, read the chapter as \
                 examples (`cells = \"examples\"` in book.toml, or `<!-- tangle: cells examples -->` in it)",
            ),
        );
    }
    out
}

/// One warning for every block of `doc` tagged as Rust in a way neither tangle nor rustdoc
/// reads as Rust: ```` ```rs ````, ```` ```Rust ````. mdBook's highlighter colours them as
/// Rust, so the page looks right, and nothing says the code is never run or checked (a
/// misspelled `// @save` is an error; this is the one typo that went through unseen).
pub fn unread_rust(path: &std::path::Path, doc: &crate::markdown::Document) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for fence in &doc.fences {
        let lang = fence.lang();
        if lang == "rust" || !(lang.eq_ignore_ascii_case("rust") || lang.eq_ignore_ascii_case("rs")) {
            continue;
        }
        let after_marker = fence.span.start + fence.marker_len;
        let offset = doc.source()[after_marker..].find(lang).map_or(fence.span.start, |i| after_marker + i);
        let (line, column) = doc.line_col(offset);
        let at = Location::new(path, line).with_column(column);
        out.push(
            Diagnostic::warning(
                at,
                format!(
                    "this block is tagged `{lang}`: the page colours it as Rust, but it is no cell, so it never runs"
                ),
            )
            .with_help("tag it `rust` to run and check it (or `text`, if it is not meant to run)"),
        );
    }
    out
}

/// [`unread_rust`] of the pages of `chapters` (and, when `whole_book`, of every other page),
/// printed to stderr.
pub(crate) fn report_unread_rust(
    root: &std::path::Path,
    book: &crate::model::Book,
    chapters: &[String],
    whole_book: bool,
) {
    let sources = crate::diagnostic::Sources::new(root);
    let style = crate::diagnostic::Style::for_stderr();
    for (path, doc) in &book.documents {
        let chapter = book.chapters.iter().find(|c| &c.path == path);
        let asked = match chapter {
            Some(c) => chapters.contains(&c.name),
            None => whole_book,
        };
        if asked {
            for d in unread_rust(path, doc) {
                eprintln!("{}\n", d.render(&sources, style));
            }
        }
    }
}

/// [`uncalled_mains`] of the `chapters` named, printed to stderr.
pub(crate) fn report_uncalled_mains(root: &std::path::Path, book: &crate::model::Book, chapters: &[String]) {
    let sources = crate::diagnostic::Sources::new(root);
    let style = crate::diagnostic::Style::for_stderr();
    for chapter in book.chapters.iter().filter(|c| chapters.contains(&c.name)) {
        for d in uncalled_mains(chapter) {
            eprintln!("{}\n", d.render(&sources, style));
        }
    }
}

/// [`long_lines`] of the `chapters` named, printed to stderr: the first few of each chapter in
/// full, the rest counted, so that an unformatted chapter does not bury the check's results.
pub(crate) fn report_long_lines(
    root: &std::path::Path,
    book: &crate::model::Book,
    chapters: &[String],
    max: Option<usize>,
) {
    const SHOWN: usize = 3;
    let Some(max) = max else { return };
    let sources = crate::diagnostic::Sources::new(root);
    let style = crate::diagnostic::Style::for_stderr();
    for chapter in book.chapters.iter().filter(|c| chapters.contains(&c.name)) {
        let found = long_lines(chapter, max);
        for d in found.iter().take(SHOWN) {
            eprintln!("{}\n", d.render(&sources, style));
        }
        if found.len() > SHOWN {
            eprintln!(
                "warning: {} more cell lines of {} are wider than {max} columns (`{}`)\n",
                found.len() - SHOWN,
                chapter.path.display(),
                crate::messages::command("fmt")
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn blocks_coloured_as_rust_but_never_run_are_located() {
        let md = "# T\n\n```rs\nlet x = 1;\n```\n\n```rust\nlet y = 2;\n```\n\n> ~~~ Rust,ignore\n> z\n> ~~~\n\n```text\nrs\n```\n";
        let doc = crate::markdown::Document::parse(md);
        let found = unread_rust(Path::new("src/a.md"), &doc);
        let at: Vec<(usize, Option<usize>)> =
            found.iter().map(|d| d.location.as_ref().map(|l| (l.line, l.column)).unwrap()).collect();
        assert_eq!(at, [(3, Some(4)), (11, Some(7))], "{found:?}");
        assert!(found[1].message.contains("tagged `Rust`"), "{}", found[1].message);
    }

    #[test]
    fn a_run_cell_defining_main_is_located() {
        let md = "# 1 T\n\n```rust\n// @save\npub fn main() {}\n```\n\n```rust\nlet x = 1;\nfn main() {\n    panic!();\n}\n```\n";
        let chapter = super::super::parse_chapter("ch01", Path::new("src/ch01.md"), md.as_bytes().to_vec()).unwrap();
        let found = uncalled_mains(&chapter);
        assert_eq!(found.len(), 1, "a save cell's `main` is a library function: {found:?}");
        assert_eq!(found[0].location.as_ref().unwrap().line, 10);
    }

    #[test]
    fn lines_wider_than_the_column_are_located_in_the_chapter() {
        let long = format!("let s = \"{}\";", "x".repeat(95));
        let md = format!(
            "# 2 T\n\nText.\n\n```rust\nlet a = 1;\n{long}\n```\n\n> ```rust\n> // @save\n> pub const B: u8 = 2;\n> ```\n"
        );
        let chapter = super::super::parse_chapter("ch02", Path::new("book/src/ch02.md"), md.into_bytes()).unwrap();
        let found = long_lines(&chapter, crate::config::DEFAULT_LINE_WIDTH);
        assert_eq!(found.len(), 1, "{found:?}");
        let at = found[0].location.as_ref().unwrap();
        assert_eq!((at.file.as_path(), at.line, at.column), (Path::new("book/src/ch02.md"), 7, Some(101)));
        assert!(found[0].message.contains("106 columns"), "{}", found[0].message);
        // Exactly the limit is fine; a tab counts four.
        assert!(long_lines(&chapter, 106).is_empty());
        assert_eq!(columns("\tab"), 6);
    }
}
