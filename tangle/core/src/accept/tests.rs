use std::path::Path;

use super::*;
use crate::compare::{Judge, compare_chapter};
use crate::parse::parse_chapter;
use crate::run::{CellOutput, RunEnd};

/// Accepts `outputs` (one per run cell) into `md` and checks the result still parses to the
/// same cells.
fn accept(md: &str, outputs: &[&str]) -> String {
    let chapter = parse_chapter("ch01", Path::new("book/src/ch01.md"), md.as_bytes().to_vec()).unwrap();
    let run = RunOutput {
        cells: outputs.iter().enumerate().map(|(index, s)| CellOutput { index, stdout: s.to_string() }).collect(),
        end: RunEnd::Completed,
        values: Vec::new(),
    };
    let verdicts = compare_chapter(&chapter, &run, Judge::AsDeclared);
    let text = rewrite(&chapter, &run, &verdicts, &[]).unwrap_or_else(|| md.to_string());
    let again = parse_chapter("ch01", Path::new("book/src/ch01.md"), text.as_bytes().to_vec())
        .unwrap_or_else(|e| panic!("accepted text does not parse: {e}\n{text}"));
    assert_eq!(again.cells.len(), chapter.cells.len());
    let run_again = compare_chapter(&again, &run, Judge::AsDeclared);
    assert!(run_again.iter().all(|v| v.verdict == Verdict::Same), "still drifting after accept:\n{text}");
    text
}

#[test]
fn a_block_inside_a_numbered_list_keeps_its_indentation() {
    let md = "1. Step:\n\n   ```rust\n   println!(\"a\");\n   ```\n\n   ```output\n   old\n   ```\n2. Next\n";
    assert_eq!(
        accept(md, &["new\n\nlines\n"]),
        "1. Step:\n\n   ```rust\n   println!(\"a\");\n   ```\n\n   ```output\n   new\n\n   lines\n   ```\n2. Next\n"
    );
}

#[test]
fn a_new_block_inside_a_blockquote_carries_the_marker() {
    let md = "> ```rust\n> println!(\"b\");\n> ```\n\nafter\n";
    assert_eq!(
        accept(md, &["b\n\nc\n"]),
        "> ```rust\n> println!(\"b\");\n> ```\n>\n> ```output\n> b\n>\n> c\n> ```\n\nafter\n"
    );
}

#[test]
fn a_block_that_is_no_longer_printed_goes_with_its_blank_line() {
    let md = "```rust\nlet a = 1;\n```\n\n```output\nold\n```\n\nafter\n";
    assert_eq!(accept(md, &[""]), "```rust\nlet a = 1;\n```\n\nafter\n");
}

#[test]
fn crlf_files_stay_crlf() {
    let md = "```rust\r\nprintln!(\"x\");\r\n```\r\n\r\n```output\r\nold\r\n```\r\n";
    assert_eq!(accept(md, &["a\nb\n"]), "```rust\r\nprintln!(\"x\");\r\n```\r\n\r\n```output\r\na\r\nb\r\n```\r\n");
}

#[test]
fn output_with_a_fence_line_gets_a_longer_fence() {
    let md = "```rust\nprintln!(\"x\");\n```\n\n```output X=\"\\d+\"\nold\n```\n";
    assert_eq!(accept(md, &["```\n1\n"]), "```rust\nprintln!(\"x\");\n```\n\n````output X=\"\\d+\"\n```\n1\n````\n");
}

#[test]
fn nothing_changes_when_nothing_drifted() {
    let md = "- item\n\n  ```rust\n  println!(\"a\");\n  ```\n\n  ```output\n  a\n  ```\n";
    let chapter = parse_chapter("ch01", Path::new("book/src/ch01.md"), md.as_bytes().to_vec()).unwrap();
    let run = RunOutput {
        cells: vec![CellOutput { index: 0, stdout: "a\n".into() }],
        end: RunEnd::Completed,
        values: Vec::new(),
    };
    assert_eq!(rewrite(&chapter, &run, &compare_chapter(&chapter, &run, Judge::AsDeclared), &[]), None);
}
