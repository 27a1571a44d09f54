//! Property tests over generated chapters: random mixes of prose, headings, lists and
//! blockquotes (nested), fences of both kinds and several lengths, save and run cells with and
//! without output blocks, unicode, CRLF and a byte-order mark. What must hold for every one:
//!
//! - parsing never panics, and a generated chapter parses without errors to the cells written;
//! - `accept` on a clean chapter changes nothing;
//! - after the outputs drift, `accept` changes only output blocks (and the blank line before
//!   one it adds or removes), the result parses to the same cells with the new outputs, and a
//!   second `accept` changes nothing.
//!
//! `PROPTEST_CASES=5000 cargo test -p tangle --release proptests` runs more cases.

use std::path::Path;

use proptest::prelude::*;

use super::rewrite;
use crate::compare::{Judge, Verdict, compare_chapter, normalize};
use crate::model::{CellKind, Chapter};
use crate::parse::parse_chapter;
use crate::run::{CellOutput, RunEnd, RunOutput};

/// Where a group of blocks sits: the prefix of its first line and of the lines after it.
#[derive(Debug, Clone)]
enum Container {
    Top,
    Bullet,
    Numbered,
    Quote,
    QuoteInBullet,
    BulletInQuote,
}

impl Container {
    fn prefixes(&self) -> (&'static str, &'static str) {
        match self {
            Container::Top => ("", ""),
            Container::Bullet => ("- ", "  "),
            Container::Numbered => ("1. ", "   "),
            Container::Quote => ("> ", "> "),
            Container::QuoteInBullet => ("- > ", "  > "),
            Container::BulletInQuote => ("> - ", ">   "),
        }
    }
}

#[derive(Debug, Clone)]
enum Block {
    Prose(String),
    Heading(String),
    /// A save cell defining `fN`.
    Save(u32),
    /// A run cell printing `lines`, with an output block holding `shown` (or none).
    Run {
        lines: Vec<String>,
        shown: Option<Vec<String>>,
        tilde: bool,
        extra: usize,
    },
    /// Another fenced block (text, markdown), whose content may hold short fence lines.
    Other {
        lang: String,
        lines: Vec<String>,
        tilde: bool,
    },
}

fn word() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "alpha",
        "beta",
        "γάμμα",
        "数据",
        "🦀",
        "*em*",
        "`code`",
        "$x$",
        "{{#ref fig:a}}",
        "a_b",
        "1.5",
        "--",
        "&",
        "<b>",
    ])
    .prop_map(str::to_string)
}

fn sentence() -> impl Strategy<Value = String> {
    prop::collection::vec(word(), 1..8).prop_map(|w| w.join(" "))
}

/// A line of output: anything a program prints, fence characters and markup included.
fn output_line() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!["`", "~", ">", "#", "-", " ", "x", "é", "{", "}", "$", "1", "|", "\\", "<", "\t"]),
        0..12,
    )
    .prop_map(|c| c.concat())
}

fn block() -> impl Strategy<Value = Block> {
    prop_oneof![
        sentence().prop_map(Block::Prose),
        sentence().prop_map(Block::Heading),
        (0u32..1000).prop_map(Block::Save),
        (
            prop::collection::vec(output_line(), 0..4),
            prop::option::of(prop::collection::vec(output_line(), 0..4)),
            any::<bool>(),
            0usize..2
        )
            .prop_map(|(lines, shown, tilde, extra)| Block::Run { lines, shown, tilde, extra }),
        (
            prop::sample::select(vec!["text", "markdown", "toml", ""]),
            prop::collection::vec(prop::sample::select(vec!["plain", "```rust", "~~~", "# hash", "> quote"]), 0..3),
            any::<bool>()
        )
            .prop_map(|(lang, lines, tilde)| Block::Other {
                lang: lang.to_string(),
                lines: lines.into_iter().map(str::to_string).collect(),
                tilde
            }),
    ]
}

fn container() -> impl Strategy<Value = Container> {
    prop_oneof![
        3 => Just(Container::Top),
        1 => Just(Container::Bullet),
        1 => Just(Container::Numbered),
        1 => Just(Container::Quote),
        1 => Just(Container::QuoteInBullet),
        1 => Just(Container::BulletInQuote),
    ]
}

/// A fence for `lines`: longer than any run of its character that starts one of them.
fn fence_for(lines: &[String], tilde: bool, extra: usize) -> String {
    let ch = if tilde { '~' } else { '`' };
    let longest = lines.iter().map(|l| l.trim_start().chars().take_while(|&c| c == ch).count()).max().unwrap_or(0);
    std::iter::repeat_n(ch, 3.max(longest + 1) + extra).collect()
}

/// A Rust string literal printing `line`.
fn literal(line: &str) -> String {
    format!("{line:?}").replace('{', "{{").replace('}', "}}")
}

/// The chapter's Markdown, and the output each run cell prints (in order).
fn render(groups: &[(Container, Vec<Block>)], crlf: bool, bom: bool) -> (String, Vec<String>) {
    let mut md = String::from("# 1 Generated\n\n");
    let mut printed = Vec::new();
    for (container, blocks) in groups {
        let (first, rest) = container.prefixes();
        let mut lines: Vec<String> = Vec::new();
        for (i, block) in blocks.iter().enumerate() {
            if i > 0 {
                lines.push(String::new());
            }
            match block {
                Block::Prose(s) => lines.push(s.clone()),
                Block::Heading(s) if matches!(container, Container::Top) => lines.push(format!("## {s}")),
                Block::Heading(s) => lines.push(s.clone()),
                Block::Save(n) => {
                    lines.extend([
                        "```rust".into(),
                        "// @save".into(),
                        format!("pub fn f{n}() -> u32 {{"),
                        format!("    {n}"),
                        "}".into(),
                        "```".into(),
                    ]);
                }
                Block::Run { lines: out, shown, tilde, extra } => {
                    lines.push("```rust".into());
                    lines.extend(out.iter().map(|l| format!("println!({});", literal(l))));
                    lines.push("```".into());
                    printed.push(out.iter().map(|l| format!("{l}\n")).collect());
                    if let Some(shown) = shown {
                        let fence = fence_for(shown, *tilde, *extra);
                        lines.push(String::new());
                        lines.push(format!("{fence}output"));
                        lines.extend(shown.iter().cloned());
                        lines.push(fence);
                    }
                }
                Block::Other { lang, lines: body, tilde } => {
                    let fence = fence_for(body, *tilde, 1);
                    lines.push(format!("{fence}{lang}"));
                    lines.extend(body.iter().cloned());
                    lines.push(fence);
                }
            }
        }
        for (i, line) in lines.iter().enumerate() {
            let prefix = if i == 0 { first } else { rest };
            md.push_str(if line.is_empty() { prefix.trim_end() } else { prefix });
            md.push_str(line);
            md.push('\n');
        }
        // A paragraph at the top level ends any list or quote before the next group.
        md.push_str("\nBetween groups.\n\n");
    }
    if crlf {
        md = md.replace('\n', "\r\n");
    }
    if bom {
        md.insert(0, '\u{feff}');
    }
    (md, printed)
}

fn chapter(md: &str) -> Chapter {
    match parse_chapter("ch01", Path::new("book/src/ch01.md"), md.as_bytes().to_vec()) {
        Ok(c) => c,
        Err(e) => panic!("a generated chapter does not parse: {e}\n---\n{md}"),
    }
}

fn run_of(outputs: &[String]) -> RunOutput {
    RunOutput {
        cells: outputs.iter().enumerate().map(|(index, s)| CellOutput { index, stdout: s.clone() }).collect(),
        end: RunEnd::Completed,
        values: Vec::new(),
    }
}

/// The chapter's text outside its output blocks: each output block, with the gap between it
/// and its cell, cut out and marked by the cell's ordinal.
fn outside_outputs(ch: &Chapter) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut at = 0;
    for cell in ch.run_cells() {
        let end = cell.output.as_ref().map_or(cell.end(), |b| b.span.end);
        pieces.push(ch.source()[at..cell.end()].to_string());
        at = end;
    }
    pieces.push(ch.source()[at..].to_string());
    pieces
}

fn groups() -> impl Strategy<Value = Vec<(Container, Vec<Block>)>> {
    prop::collection::vec((container(), prop::collection::vec(block(), 1..5)), 1..6)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_front_end_never_panics(text in "(?s)[ -~\\n\\r\\t>`~#*_$\\[\\]{}|é🦀-]{0,400}") {
        let _ = crate::markdown::Document::parse(text.as_str());
        let _ = parse_chapter("ch01", Path::new("book/src/ch01.md"), text.into_bytes());
    }

    #[test]
    fn accept_changes_only_output_blocks(
        groups in groups(),
        crlf in any::<bool>(),
        bom in any::<bool>(),
        drift in prop::collection::vec(prop::option::of(prop::collection::vec(output_line(), 0..4)), 0..30),
    ) {
        let (md, printed) = render(&groups, crlf, bom);
        let original = chapter(&md);
        let runs: Vec<_> = original.run_cells().collect();
        prop_assert_eq!(runs.len(), printed.len());

        // A clean chapter: outputs as its blocks say (a block-less cell printing nothing).
        let clean: Vec<String> = runs.iter().map(|c| c.output.as_ref().map_or(String::new(), |b| b.text.clone())).collect();
        let clean_run = run_of(&clean);
        prop_assert_eq!(rewrite(&original, &clean_run, &compare_chapter(&original, &clean_run, Judge::AsDeclared), &[]), None);

        // Drifted outputs.
        let new: Vec<String> = (0..runs.len())
            .map(|i| match drift.get(i).cloned().flatten() {
                Some(lines) => lines.iter().map(|l| format!("{l}\n")).collect(),
                None => printed[i].clone(),
            })
            .collect();
        let run = run_of(&new);
        let text = rewrite(&original, &run, &compare_chapter(&original, &run, Judge::AsDeclared), &[]).unwrap_or_else(|| md.clone());
        let after = chapter(&text);

        // The same cells, now matching their outputs.
        prop_assert_eq!(after.cells.len(), original.cells.len());
        for (a, b) in after.cells.iter().zip(&original.cells) {
            prop_assert_eq!(a.kind, b.kind);
            prop_assert_eq!(&a.code, &b.code);
        }
        prop_assert!(compare_chapter(&after, &run, Judge::AsDeclared).iter().all(|v| v.verdict == Verdict::Same));
        for (cell, out) in after.run_cells().zip(&new) {
            let shown = cell.output.as_ref().map_or(String::new(), |b| normalize(&b.text));
            prop_assert_eq!(shown, normalize(out));
        }
        // Nothing else moved, line endings included.
        prop_assert_eq!(outside_outputs(&after), outside_outputs(&original));
        prop_assert_eq!(text.matches("\r\n").count() == text.matches('\n').count(), crlf || !text.contains('\n'));
        // And a second accept has nothing to do.
        prop_assert_eq!(rewrite(&after, &run, &compare_chapter(&after, &run, Judge::AsDeclared), &[]), None);
        prop_assert!(after.cells.iter().all(|c| c.kind != CellKind::Test));
    }
}
