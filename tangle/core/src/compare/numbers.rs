//! Hand-typed copies of computed numbers: a number in a sentence, caption or table cell that
//! equals a number the code printed in an output block of the chapter (not only of its own
//! section: a summary restates results from far above), but is typed by hand instead of quoted
//! with `{{#value}}`, goes stale the moment the code changes.
//!
//! A rounded copy counts too ("97 GiB" for a printed 96.9 GiB): a prose number within half a
//! percent of a printed one restates it.
//!
//! The rule separates inputs from results: a number that also appears as a literal in the
//! code of the chapter (a datasheet bandwidth set as a constant, a batch size passed to a
//! function) is an input the prose may state; a number that only the code's output holds was
//! computed, and the prose must quote it.

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use crate::diagnostic::Diagnostic;
use crate::markdown::LeafKind;
use crate::model::{CellKind, Chapter};

/// A number as it is written: `2,475`, `40.6`, `0.114`; with an optional sign.
static NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?").expect("a valid regex"));

/// Words before a number that make it a reference, not a quantity ("Section 6.2", "Sections
/// 6.3–6.5", "equations 7.10 and 7.11"): the word, then any numbers of a list before this one.
static REFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(sections?|figures?|figs?\.|equations?|eqs?\.|chapters?|tables?|exercises?|steps?|parts?|§|ch)\s*(?:\d+(?:\.\d+)*\s*(?:,|and|or|to|–|-|&)\s*)*$",
    )
    .expect("a valid regex")
});

/// The digits of a number: commas dropped (`2,475` → `2475`),
/// and a decimal point's trailing zeros (`48000.0` → `48000`, `0.50` → `0.5`), so that the
/// prose's `48,000` and the code's `48_000.0` are the same number.
fn canonical(number: &str) -> String {
    let digits = number.replace(',', "");
    match digits.contains('.') {
        true => digits.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => digits,
    }
}

/// Whether a number is worth the check: single digits are everywhere ("2 cores", "8 GPUs").
fn significant(number: &str) -> bool {
    let digits = canonical(number);
    digits.len() > 1 && digits != "10" && digits != "100"
}

/// The numbers of `text`, with their byte ranges (relative to `text`).
fn numbers(text: &str) -> impl Iterator<Item = (Range<usize>, &str)> {
    NUMBER.find_iter(text).filter_map(move |m| {
        // Not part of a word or an identifier (`ch06`, `H100`, `x86_64`) or a version (`1.2.3`).
        let mut before = text[..m.start()].chars().rev();
        let mut after = text[m.end()..].chars();
        let (b1, b2) = (before.next(), before.next());
        let (a1, a2) = (after.next(), after.next());
        let in_word = b1.is_some_and(|c| c.is_alphabetic() || c == '_') || a1 == Some('_');
        let in_version = (b1 == Some('.') && b2.is_some_and(|c| c.is_ascii_digit()))
            || (a1 == Some('.') && a2.is_some_and(|c| c.is_ascii_digit()));
        if in_word || in_version {
            return None;
        }
        Some((m.range(), m.as_str()))
    })
}

/// The numbers of a cell's numeric literals (`1_024` → `1024`, `990e12` → `990`),
/// found by Rust's lexer so that comments and string literals do not count. A cell that does
/// not lex (it will not compile either) falls back to every number in its text.
fn numeric_literals(code: &str) -> Vec<String> {
    fn walk(tokens: proc_macro2::TokenStream, out: &mut Vec<String>) {
        for token in tokens {
            match token {
                proc_macro2::TokenTree::Group(g) => walk(g.stream(), out),
                proc_macro2::TokenTree::Literal(l) => {
                    let text = l.to_string();
                    if text.starts_with(|c: char| c.is_ascii_digit()) {
                        let digits = text.replace('_', "");
                        out.extend(numbers(&digits).map(|(_, n)| canonical(n)));
                    }
                }
                _ => {}
            }
        }
    }
    match code.parse::<proc_macro2::TokenStream>() {
        Ok(tokens) => {
            let mut out = Vec::new();
            walk(tokens, &mut out);
            out
        }
        Err(_) => numbers(code).map(|(_, n)| canonical(n)).collect(),
    }
}

/// Whether `value` is one of the `printed` numbers, or rounds one of them (within half a
/// percent, for numbers of two significant digits or more).
fn restates(value: &str, printed: &BTreeSet<String>) -> bool {
    if printed.contains(value) {
        return true;
    }
    let Ok(v) = value.parse::<f64>() else { return false };
    printed.iter().filter_map(|p| p.parse::<f64>().ok()).any(|p| p != 0.0 && (v - p).abs() <= 0.005 * p.abs())
}

/// The style check of hand-typed numbers: [`hand_typed_numbers`] less those the chapter
/// declares typed on purpose (`<!-- tangle: typed NUMBER REASON -->`), plus an error for each
/// declaration that no number needs (it would hide the next hand-typed copy of its number).
pub fn unquoted_numbers(chapter: &Chapter) -> Vec<Diagnostic> {
    let mut used = vec![false; chapter.directives.typed.len()];
    let mut found = Vec::new();
    for d in hand_typed_numbers(chapter) {
        let number = d.message.split('`').nth(1).unwrap_or("");
        match chapter.directives.typed.iter().position(|t| t.number == number) {
            Some(i) => used[i] = true,
            None => found.push(Diagnostic { severity: crate::diagnostic::Severity::Error, ..d }),
        }
    }
    for (typed, _) in chapter.directives.typed.iter().zip(&used).filter(|(_, used)| !**used) {
        found.push(
            Diagnostic::error(
                chapter.location(typed.line),
                format!("`tangle: typed {}` matches no number the prose restates", typed.number),
            )
            .with_help("remove the directive (the number is quoted now, or no longer written)"),
        );
    }
    found
}

/// Warnings for the hand-typed copies of computed numbers in `chapter`.
pub(crate) fn hand_typed_numbers(chapter: &Chapter) -> Vec<Diagnostic> {
    let doc = &chapter.doc;
    // Numbers written in the code are inputs the prose may state: numeric literals of library
    // and run cells, not a number in a comment, a string or a test's assertion (a test that
    // asserts 13.69 checks a result, it does not set an input).
    let literals: BTreeSet<String> =
        chapter.cells.iter().filter(|c| c.kind != CellKind::Test).flat_map(|c| numeric_literals(&c.code)).collect();
    let printed: BTreeSet<String> = chapter
        .cells
        .iter()
        .filter_map(|c| c.output.as_ref())
        // What the block masks varies by machine: prose that matches it matches by chance.
        .flat_map(|b| numbers(&super::text::redact(&b.text, &b.spec)).map(|(_, n)| canonical(n)).collect::<Vec<_>>())
        .collect();
    let mut found = Vec::new();
    for leaf in doc.leaves.iter().filter(|l| matches!(l.kind, LeafKind::Paragraph | LeafKind::TableCell)) {
        let mut ranges = doc.prose_ranges(leaf);
        // A figure's or a calculator's caption is prose too (its quotes and references aside).
        let captioned = doc.directives.iter().filter(|d| d.name == "figure" || d.name == "widget");
        for d in captioned.filter(|d| leaf.span.start <= d.span.start && d.span.end <= leaf.span.end) {
            let caption = match doc.text(d.args.clone()).find('|') {
                Some(bar) => d.args.start + bar + 1..d.args.end,
                None => continue,
            };
            let nested: Vec<Range<usize>> = doc
                .directives
                .iter()
                .filter(|n| n.span.start > d.span.start && n.span.end < d.span.end)
                .map(|n| n.span.clone())
                .collect();
            let mut at = caption.start;
            for n in nested.iter().chain(std::iter::once(&(caption.end..caption.end))) {
                if n.start > at {
                    ranges.push(at..n.start);
                }
                at = at.max(n.end);
            }
        }
        for range in ranges {
            let text = doc.text(range.clone());
            for (span, number) in numbers(text) {
                let value = canonical(number);
                if !significant(number) || literals.contains(&value) || REFERENCE.is_match(&text[..span.start]) {
                    continue;
                }
                let start = range.start + span.start;
                if restates(&value, &printed) {
                    let (line, column) = doc.line_col(start);
                    found.push(
                        Diagnostic::warning(
                            chapter.location(line).with_column(column),
                            format!("`{number}` restates a number this chapter's code prints: quote it as a value"),
                        )
                        .with_span(start..range.start + span.end, "")
                        .with_help("publish it from the cell (`tangle_runtime::value(\"NAME\", text)`) and write `{{#value NAME ...}}`"),
                    );
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(md: &str) -> Vec<String> {
        let chapter =
            crate::parse::parse_chapter("ch01", std::path::Path::new("book/src/ch01.md"), md.as_bytes().to_vec())
                .unwrap();
        hand_typed_numbers(&chapter).iter().map(|d| d.to_string()).collect()
    }

    #[test]
    fn computed_numbers_typed_by_hand_are_found_inputs_are_not() {
        let md = "# 1 T\n\n## 1.1 A\n\n```rust\nlet b = 4096;\nprintln!(\"{} GiB at {b}\", 389.0 / 4.0);\n```\n\n```output\n97.25 GiB at 4096\n```\n\nAt 4,096 tokens it needs 97.25 GiB, see Section 1.1 and {{#value x 97.25}}.\n\n## 1.2 B\n\nRounded: 97.3, and 12.5 is unrelated.\n";
        let found = check(md);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].starts_with("book/src/ch01.md:14:26: `97.25` restates a number this chapter's code prints"));
        assert!(found[1].starts_with("book/src/ch01.md:18:10: `97.3` restates"));
    }

    #[test]
    fn references_and_lists_of_them_are_not_quantities() {
        for before in ["see Sections 6.3–", "Equations 7.10, ", "Eq. 7.6 and ", "in §", "Figure "] {
            assert!(REFERENCE.is_match(before), "{before}");
        }
        for before in ["it takes ", "at 6.3 GiB and ", "the 12 "] {
            assert!(!REFERENCE.is_match(before), "{before}");
        }
    }

    #[test]
    fn identifiers_and_versions_are_not_numbers() {
        let found: Vec<&str> = numbers("ch06 H100 x86_64 1.2.3 2,475 and 40.6M").map(|(_, n)| n).collect();
        assert_eq!(found, vec!["2,475", "40.6"]);
    }

    #[test]
    fn only_numeric_literals_of_library_and_run_cells_are_inputs() {
        assert_eq!(
            numeric_literals("let n = 1_024u64; // 2,475 tokens\nlet s = \"13.69\"; f(990e12)"),
            vec!["1024", "990"]
        );
        let md = "# 1 T\n\n```rust\n/// Prints 2,475 tokens.\nprintln!(\"{}\", 99 * 25);\n```\n\n```output\n2475\n```\n\n```rust\n// @test\n#[test]\nfn t() { assert_eq!(99 * 25, 2475); }\n```\n\nIt is 2,475.\n";
        let found = check(md);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].starts_with("book/src/ch01.md:18:7: `2,475` restates"), "{found:#?}");
    }

    #[test]
    fn a_masked_number_is_not_a_result_the_prose_restates() {
        let md = "# 1 T\n\n```rust\nprintln!(\"{} at {}\", 4 * 11, t());\n```\n\n```output MS=\"([0-9.]+) ms\"\n44 at 55.2 ms\n```\n\nIt is 44, and a paper reports 55.2.\n";
        let found = check(md);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].contains("`44` restates"), "{found:#?}");
    }

    #[test]
    fn captions_of_figures_and_calculators_are_prose() {
        let md = "# 1 T\n\n```rust\nprintln!(\"{}\", 4 * 11);\n```\n\n```output\n44\n```\n\n{{#figure f | Drawn at 44.}}\n\n{{#widget w | Starts at 44.}}\n";
        let found = check(md);
        assert_eq!(found.len(), 2, "{found:#?}");
    }
}
