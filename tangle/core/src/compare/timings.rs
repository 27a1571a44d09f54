//! Outputs that may depend on this machine's speed: a run cell whose code measures time
//! (`Instant`, `SystemTime`, `.elapsed()`), or calls a function of a library cell that does
//! (directly or through another library function). A drift in such a cell may be a busy
//! machine rather than a change in the code; the report says so and suggests a fresh run
//! (`check --rerun`), since the cache would otherwise answer with the same run again.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

use crate::model::{Cell, CellKind, Chapter};

/// Code that reads a clock.
static CLOCK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(Instant|SystemTime|UNIX_EPOCH)\b|\.elapsed\(").expect("a valid regex"));

/// Functions a piece of code defines.
static DEFINES: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)").expect("a valid regex"));

/// Whether `cell`'s output may depend on how fast this machine ran it.
pub fn involves_timings(chapter: &Chapter, cell: &Cell) -> bool {
    if CLOCK.is_match(&cell.code) {
        return true;
    }
    // Each library function with its text (up to the next function), as a rough item split.
    let mut functions: Vec<(String, &str)> = Vec::new();
    for c in chapter.cells.iter().filter(|c| c.kind == CellKind::Save) {
        let starts: Vec<(usize, String)> =
            DEFINES.captures_iter(&c.code).map(|m| (m.get(0).expect("match").start(), m[1].to_string())).collect();
        for (i, (at, name)) in starts.iter().enumerate() {
            let end = starts.get(i + 1).map_or(c.code.len(), |(next, _)| *next);
            functions.push((name.clone(), &c.code[*at..end]));
        }
    }
    // The library functions that read a clock, directly or by calling one that does.
    let mut timed: BTreeSet<String> = BTreeSet::new();
    loop {
        let before = timed.len();
        for (name, text) in &functions {
            if !timed.contains(name) && (CLOCK.is_match(text) || timed.iter().any(|t| calls(text, t))) {
                timed.insert(name.clone());
            }
        }
        if timed.len() == before {
            break;
        }
    }
    timed.iter().any(|name| calls(&cell.code, name))
}

/// Whether `code` mentions `name` followed by `(` (a call, or a method call).
fn calls(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + name.len()..].trim_start();
        before.is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
            && (after.starts_with('(') || after.starts_with("::<"))
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn chapter(text: &str) -> Chapter {
        crate::parse::parse_chapter("ch01", Path::new("ch01.md"), text.as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn a_cell_that_reads_a_clock_or_calls_a_function_that_does_involves_timings() {
        let ch = chapter(
            "# 1\n\n```rust\n// @save\nfn step() -> f64 {\n    let t = std::time::Instant::now();\n    t.elapsed().as_secs_f64()\n}\n\
             pub fn idle() -> bool {\n    step() < 1.0\n}\npub fn plain() -> u32 {\n    1\n}\n```\n\n\
             ```rust\nprintln!(\"{}\", idle());\n```\n\n```rust\nprintln!(\"{}\", plain());\n```\n\n\
             ```rust\nlet t = std::time::Instant::now();\nprintln!(\"{:?}\", t);\n```\n\n```rust\nlet midle = 1;\nprintln!(\"{midle}\");\n```\n",
        );
        let runs: Vec<bool> = ch.run_cells().map(|c| involves_timings(&ch, c)).collect();
        assert_eq!(runs, [true, false, true, false]);
    }
}
