//! The real book as the last fixture: `code/` is in sync with `book/src`, every chapter builds
//! and runs, every output block and figure matches what the code produces, and `snapshots/`
//! holds exactly the prose's output blocks (insta never writes them when `CI=true`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use tangle_core::compare::Verdict;
use tangle_core::pipeline::{self, Outcome, Project};
use tangle_core::run::RunEnd;

/// The chapter programs time real work (chapter 7 measures a threaded pipeline against the
/// simulator): while they run, no other test of this file may load the two cores. The run
/// takes this lock for writing, every other test that does real work for reading.
static MACHINE: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn exclusive() -> std::sync::RwLockWriteGuard<'static, ()> {
    MACHINE.write().unwrap_or_else(|e| e.into_inner())
}

fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    MACHINE.read().unwrap_or_else(|e| e.into_inner())
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

#[test]
fn book_outputs_match_prose_and_snapshots() {
    let _machine = exclusive();
    let root = root();
    let project = Project::load(&root).unwrap_or_else(|e| panic!("the book does not load: {e:#}"));
    let stale = project.stale().unwrap();
    assert!(
        stale.is_empty(),
        "code/ is stale (run `cargo tangle sync` and commit):\n{}",
        stale.iter().map(|s| s.to_string()).collect::<Vec<_>>().join("\n")
    );

    let chapters = project.select(&[]).unwrap();
    let results = match pipeline::check(&project, &chapters).unwrap() {
        Outcome::Ran(results) => results,
        Outcome::CompileErrors(errors) => {
            panic!(
                "the book does not compile:\n{}",
                errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n")
            )
        }
        Outcome::Stale(stale) => panic!("code/ is stale: {stale:?}"),
    };
    let mut problems = Vec::new();
    for r in &results {
        if r.run.end != RunEnd::Completed {
            problems.push(format!("{}: the chapter program did not complete: {:?}", r.chapter, r.run.end));
        }
        for v in &r.verdicts {
            if let Verdict::Drift { diff } = &v.verdict {
                problems.push(format!(
                    "drift at {} (run `cargo tangle accept` if the new output is right):\n{diff}",
                    v.location
                ));
            }
        }
        problems.extend(r.figures.iter().map(|f| format!("{f} (run `cargo tangle accept`)")));
        problems.extend(
            r.snapshots.iter().map(|s| format!("{}: {} (run `cargo tangle accept`)", s.path().display(), s.reason())),
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    // Every output block has its snapshot, equal to the block.
    let names: BTreeSet<String> = chapters.iter().cloned().collect();
    let snapshots = root.join("snapshots");
    let mut expected_files = BTreeSet::new();
    for chapter in project.book.chapters.iter().filter(|c| names.contains(&c.name)) {
        for (cell, name) in tangle_core::snapshot::names(chapter) {
            let block = cell.output.as_ref().expect("named cells have blocks");
            expected_files.insert(format!("{name}.snap"));
            insta::with_settings!({
                snapshot_path => &snapshots,
                prepend_module_to_snapshot => false,
                omit_expression => true,
            }, {
                insta::assert_snapshot!(name, tangle_core::compare::normalize(&block.text));
            });
        }
    }
    let on_disk: BTreeSet<String> = std::fs::read_dir(&snapshots)
        .map(|rd| rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| n.ends_with(".snap")).collect())
        .unwrap_or_default();
    let orphans: Vec<&String> = on_disk.difference(&expected_files).collect();
    assert!(orphans.is_empty(), "snapshots with no output block (run `cargo tangle accept`): {orphans:?}");
}

/// Every chapter's `// @test` cells pass. The chapter crates are a workspace of their own
/// (`code/`), which the top-level `cargo test --workspace` does not include, so this runs it.
#[test]
fn chapter_test_cells_pass() {
    let _machine = shared();
    let root = root();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.current_dir(&root)
        .args(["test", "--release", "--manifest-path", "code/Cargo.toml", "--workspace"])
        .env("CARGO_TARGET_DIR", root.join("target/tangle"));
    if pipeline::on_ci() {
        cmd.arg("--locked");
    }
    let out = cmd.output().expect("cargo runs");
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let passed: usize = text
        .lines()
        .filter_map(|l| l.strip_prefix("test result: ok. ")?.split(' ').next()?.parse::<usize>().ok())
        .sum();
    assert!(out.status.success(), "chapter tests failed:\n{text}");
    assert!(passed > 0, "no chapter test ran:\n{text}");
}

/// The seeds' sentences must not carry over: no run of twelve words of a chapter's prose
/// (code, math and the reference list aside, which carry facts) may appear in a seed. The
/// seeds sit in `../shared/seeds` beside the repository, as on CI; elsewhere this is skipped.
#[test]
fn prose_shares_no_dozen_word_run_with_the_seeds() {
    let _machine = shared();
    const RUN: usize = 12;
    let seeds_dir = root().join("../shared/seeds");
    let Ok(entries) = std::fs::read_dir(&seeds_dir) else {
        eprintln!("skipped: no seeds at {}", seeds_dir.display());
        return;
    };
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
    };
    let mut seed_runs = std::collections::HashSet::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "README.md" {
            continue;
        }
        let w = words(&std::fs::read_to_string(entry.path()).unwrap_or_default());
        seed_runs.extend(w.windows(RUN).map(|run| run.join(" ")));
    }
    assert!(!seed_runs.is_empty(), "the seeds at {} hold no text", seeds_dir.display());
    let fenced = regex::Regex::new(r"(?s)```.*?```|\$\$.*?\$\$|\$[^$\n]+\$").unwrap();
    let mut copies = Vec::new();
    for chapter in Project::load(&root()).unwrap().book.chapters {
        let prose = chapter.source.split("\n## References").next().unwrap_or("");
        let prose = fenced.replace_all(prose, " ");
        for run in words(&prose).windows(RUN) {
            let run = run.join(" ");
            if seed_runs.contains(&run) {
                copies.push(format!("{}: \"{run}\"", chapter.path.display()));
            }
        }
    }
    assert!(copies.is_empty(), "prose copied from a seed (rewrite it in our own words):\n{}", copies.join("\n"));
}

/// Every number in a sentence, caption or table cell that restates a number the code prints in
/// the same section is a quoted value (`{{#value}}`), so that it cannot go stale; numbers that
/// are also literals in the code are inputs and may stand as prose. The allow-list names the
/// few exceptions, each with its reason.
#[test]
fn prose_quotes_computed_numbers_instead_of_typing_them() {
    let _machine = shared();
    // (chapter, number as written, why it stays typed)
    const ALLOWED: &[(&str, &str, &str)] = &[
        ("ch07", "989.4", "the H100 datasheet's dense bf16 rate; the code stores it rounded, 990e12"),
        ("ch07", "3,584", "DeepSeek-V3's published latent width, a fact of its configuration"),
        ("ch07", "3.1", "part of a model's name, Llama 3.1"),
        // Llama 3's share of interruptions traced to hardware [@llama3], not a 78.0 GiB row.
        ("ch06", "78", "a fact from the literature, not a result of the code"),
        // The goodput example's 45 % MFU and the $45k device price, not the plan table's
        // 45.2 GiB.
        ("ch06", "45", "inputs stated in prose"),
        ("ch06", "22", "the made-up MFU of the slowdown example (41 % last week, 22 % today)"),
        ("ch06", "12", "the purchase's discount rate, an input (0.12 in the code)"),
    ];
    let project = Project::load(&root()).unwrap();
    let mut found = Vec::new();
    let mut used = BTreeSet::new();
    for chapter in &project.book.chapters {
        for d in tangle_core::compare::hand_typed_numbers(chapter) {
            let number = d.message.split('`').nth(1).unwrap_or("").to_string();
            match ALLOWED.iter().position(|(c, n, _)| *c == chapter.name && *n == number) {
                Some(i) => {
                    used.insert(i);
                }
                None => found.push(d.to_string()),
            }
        }
    }
    assert!(found.is_empty(), "{} hand-typed number(s):\n{}", found.len(), found.join("\n"));
    // An entry that nothing needs any more would hide the next hand-typed copy of its number.
    let stale: Vec<_> = (0..ALLOWED.len()).filter(|i| !used.contains(i)).map(|i| ALLOWED[i]).collect();
    assert!(stale.is_empty(), "allow-list entries that match nothing (remove them): {stale:?}");
}

/// How close a chapter sentence may come to a seed sentence: the word-level sequence ratio
/// `2·M / (|a| + |b|)` (difflib's `ratio`, with `M` the words of a longest common subsequence)
/// of two lower-cased word sequences. At this value or above, a sentence is a paraphrase that
/// kept the seed's words in the seed's order, even when no twelve of them are consecutive.
const PARAPHRASE: f64 = 0.75;
/// Sentences shorter than this are too short to be judged (the same length as the run test).
const SENTENCE_WORDS: usize = 12;

/// Lower-cased words: runs of letters and digits, as the dozen-word test splits them.
fn words_of(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// The exact word-level ratio `2·M / (|a| + |b|)`, `M` from a shortest edit script (an LCS).
fn sequence_ratio<T: Eq + std::hash::Hash>(a: &[T], b: &[T]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let matched: usize = similar::capture_diff_slices(similar::Algorithm::RawMyers, a, b)
        .iter()
        .map(|op| if let similar::DiffOp::Equal { len, .. } = *op { len } else { 0 })
        .sum();
    2.0 * matched as f64 / (a.len() + b.len()) as f64
}

/// A cheap upper bound on [`sequence_ratio`]: a common subsequence cannot hold more words than
/// the two sentences share as multisets. Both inputs are sorted word ids.
fn overlap_bound(a_sorted: &[u32], b_sorted: &[u32]) -> f64 {
    let (mut i, mut j, mut shared) = (0, 0, 0usize);
    while i < a_sorted.len() && j < b_sorted.len() {
        match a_sorted[i].cmp(&b_sorted[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * shared as f64 / (a_sorted.len() + b_sorted.len()).max(1) as f64
}

/// Whether two texts are too close: the threshold logic the book test applies to each pair.
fn is_paraphrase(a: &str, b: &str) -> bool {
    sequence_ratio(&words_of(a), &words_of(b)) >= PARAPHRASE
}

/// One sentence of prose and the 1-based line it starts on.
struct Sentence {
    line: usize,
    text: String,
}

/// Splits prose into sentences, keeping line numbers. Code fences and math are blanked out
/// first (newlines kept, so lines still count right); blank lines, headings, list items, table
/// rows, the start of a quote and directives end a sentence, and so does `.`, `?` or `!` before a space,
/// unless it closes a common abbreviation.
fn sentences(text: &str) -> Vec<Sentence> {
    let fenced = regex::Regex::new(r"(?s)```.*?```|\$\$.*?\$\$|\$[^$\n]+\$").unwrap();
    // An escaped `\$` is a dollar sign, never the start of math.
    let text = text.replace("\\$", " ");
    let blanked = fenced.replace_all(&text, |c: &regex::Captures| {
        let n = c[0].matches('\n').count();
        if n == 0 { " ".to_string() } else { "\n".repeat(n) }
    });
    let starts_block = regex::Regex::new(r"^\s*(#|\||<!--|\{\{#|[-*+]\s|\d+[.)]\s)").unwrap();
    // A quote's `>` markers are not text; a quote's first line starts a block.
    let quote = regex::Regex::new(r"^\s*(>\s?)+").unwrap();
    const ABBREVIATIONS: [&str; 10] = ["e.g.", "i.e.", "al.", "cf.", "vs.", "fig.", "eq.", "no.", "approx.", "etc."];
    let mut out = Vec::new();
    let mut current = String::new();
    let mut start = 0;
    let flush = |current: &mut String, start: usize, out: &mut Vec<Sentence>| {
        let text = current.trim();
        if !text.is_empty() {
            out.push(Sentence { line: start, text: text.to_string() });
        }
        current.clear();
    };
    let mut in_quote = false;
    for (index, raw) in blanked.lines().enumerate() {
        let number = index + 1;
        let quoted = quote.find(raw);
        let line = quoted.map_or(raw, |m| &raw[m.end()..]);
        let opens_quote = quoted.is_some() && !in_quote;
        in_quote = quoted.is_some();
        if line.trim().is_empty() || opens_quote || starts_block.is_match(line) {
            flush(&mut current, start, &mut out);
        }
        for token in line.split_whitespace() {
            if current.is_empty() {
                start = number;
            } else {
                current.push(' ');
            }
            current.push_str(token);
            let end = token.trim_end_matches(['"', '\'', ')', ']', '*', '_', '”', '’']);
            if end.ends_with(['.', '?', '!']) && !ABBREVIATIONS.iter().any(|a| end.to_lowercase().ends_with(a)) {
                flush(&mut current, start, &mut out);
            }
        }
        if line.trim_start().starts_with(['#', '|']) {
            flush(&mut current, start, &mut out);
        }
    }
    flush(&mut current, start, &mut out);
    out
}

/// Sentences of the seeds that a chapter sentence must stay away from.
struct SeedSentence {
    words: Vec<u32>,
    sorted: Vec<u32>,
    text: String,
}

/// No sentence of twelve words or more may be a close paraphrase of a seed sentence: a
/// word-level ratio of [`PARAPHRASE`] or more fails, listing every such pair. A multiset bound
/// skips almost every pair before the exact ratio is computed.
#[test]
fn prose_paraphrases_no_seed_sentence() {
    let _machine = shared();
    let seeds_dir = root().join("../shared/seeds");
    let Ok(entries) = std::fs::read_dir(&seeds_dir) else {
        eprintln!("skipped: no seeds at {}", seeds_dir.display());
        return;
    };
    let mut ids: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    let mut intern = |words: Vec<String>| -> Vec<u32> {
        words
            .into_iter()
            .map(|w| {
                let next = ids.len() as u32;
                *ids.entry(w).or_insert(next)
            })
            .collect()
    };
    let mut seeds = Vec::new();
    for entry in entries.flatten() {
        if entry.file_name() == "README.md" {
            continue;
        }
        for s in sentences(&std::fs::read_to_string(entry.path()).unwrap_or_default()) {
            let words = intern(words_of(&s.text));
            if words.is_empty() {
                continue;
            }
            let mut sorted = words.clone();
            sorted.sort_unstable();
            seeds.push(SeedSentence { words, sorted, text: s.text });
        }
    }
    assert!(!seeds.is_empty(), "the seeds at {} hold no text", seeds_dir.display());

    let mut close = Vec::new();
    for chapter in Project::load(&root()).unwrap().book.chapters {
        let prose = chapter.source.split("\n## References").next().unwrap_or("");
        for s in sentences(prose) {
            let words = intern(words_of(&s.text));
            if words.len() < SENTENCE_WORDS {
                continue;
            }
            let mut sorted = words.clone();
            sorted.sort_unstable();
            let mut worst: Option<(f64, &SeedSentence)> = None;
            for seed in &seeds {
                let (a, b) = (words.len(), seed.words.len());
                // Even a full match of the shorter one: 2·min / (a + b) < 3/4.
                if 8 * a.min(b) < 3 * (a + b) {
                    continue;
                }
                if overlap_bound(&sorted, &seed.sorted) < PARAPHRASE {
                    continue;
                }
                let ratio = sequence_ratio(&words, &seed.words);
                if ratio >= PARAPHRASE && worst.is_none_or(|(r, _)| ratio > r) {
                    worst = Some((ratio, seed));
                }
            }
            if let Some((ratio, seed)) = worst {
                close.push(format!(
                    "{}:{}: {ratio:.2}: {}\n    seed: {}",
                    chapter.path.display(),
                    s.line,
                    s.text,
                    seed.text
                ));
            }
        }
    }
    assert!(
        close.is_empty(),
        "{} sentences paraphrase a seed sentence (ratio >= {PARAPHRASE}; say it in the book's own words):\n{}",
        close.len(),
        close.join("\n")
    );
}

#[test]
fn the_paraphrase_threshold_separates_a_reworded_sentence_from_an_unrelated_one() {
    let seed = "Both totals land on the published sizes from shapes alone, which is our license to trust the rest of the ledger.";
    let paraphrase =
        "Both totals land on the published sizes from the shapes alone, which lets us trust the rest of the ledger.";
    let unrelated =
        "A pipeline of four stages idles for three of every eleven microbatch slots before the first gradient arrives.";
    let reordered = "The rest of the ledger can be trusted because the shapes alone reproduce both published totals.";
    assert!(sequence_ratio(&words_of(seed), &words_of(paraphrase)) >= PARAPHRASE);
    assert!(is_paraphrase(seed, paraphrase));
    assert!(!is_paraphrase(seed, unrelated));
    assert!(!is_paraphrase(seed, reordered), "same facts, own order and words: not a paraphrase");
    // The bound never undercuts the exact ratio, so skipping on it loses nothing.
    let mut table = std::collections::HashMap::new();
    let mut ids = |t: &str| -> Vec<u32> {
        let mut v: Vec<u32> = words_of(t)
            .into_iter()
            .map(|w| {
                let next = table.len() as u32;
                *table.entry(w).or_insert(next)
            })
            .collect();
        v.sort_unstable();
        v
    };
    let seed_ids = ids(seed);
    for other in [paraphrase, unrelated, reordered] {
        let bound = overlap_bound(&seed_ids, &ids(other));
        assert!(bound >= sequence_ratio(&words_of(seed), &words_of(other)));
    }
    assert!(overlap_bound(&seed_ids, &ids(reordered)) > sequence_ratio(&words_of(seed), &words_of(reordered)));
    // Identical texts score 1, disjoint ones 0.
    assert_eq!(sequence_ratio(&words_of(seed), &words_of(seed)), 1.0);
    assert_eq!(sequence_ratio(&["a", "b"], &["c", "d"]), 0.0);
}

#[test]
fn sentences_keep_their_lines_and_skip_code_and_math() {
    let text = "# Title\n\nFirst sentence, e.g. with an abbreviation. Second one\nruns on.\n\n```rust\nlet x = 1.0;\n```\nThird $x$ here: and more\n$$\na = b.\n$$\n- item one\n> **Note.** A quoted sentence\n> runs on.\n";
    let got: Vec<(usize, String)> = sentences(text).into_iter().map(|s| (s.line, s.text)).collect();
    assert_eq!(
        got,
        vec![
            (1, "# Title".to_string()),
            (3, "First sentence, e.g. with an abbreviation.".to_string()),
            (3, "Second one runs on.".to_string()),
            (9, "Third here: and more".to_string()),
            (13, "- item one".to_string()),
            (14, "**Note.**".to_string()),
            (14, "A quoted sentence runs on.".to_string()),
        ]
    );
}

/// The book's cells are formatted as `cargo tangle fmt` leaves them (so the generated crates
/// pass `rustfmt --check`) and fit the book's 100-column code blocks, so no listing scrolls
/// sideways on a wide screen.
#[test]
fn cells_are_formatted_and_fit_the_column() {
    let _machine = shared();
    const COLUMNS: usize = 100;
    let project = Project::load(&root()).unwrap();
    let chapters = project.select(&[]).unwrap();
    let have_rustfmt =
        std::process::Command::new("rustfmt").arg("--version").output().is_ok_and(|o| o.status.success());
    if have_rustfmt {
        let unformatted = pipeline::fmt(&project, &chapters, false).unwrap();
        assert!(unformatted.is_empty(), "cells not formatted (run `cargo tangle fmt` and commit): {unformatted:?}");
    } else {
        eprintln!("formatting not checked: rustfmt is not installed (`rustup component add rustfmt`)");
    }
    let mut wide = Vec::new();
    for chapter in &project.book.chapters {
        for cell in &chapter.cells {
            for (i, line) in cell.code.lines().enumerate() {
                let width = line.chars().count();
                if width > COLUMNS {
                    wide.push(format!("{}:{}: {width} columns", chapter.path.display(), cell.code_line + i));
                }
            }
        }
    }
    assert!(wide.is_empty(), "{} cell line(s) wider than {COLUMNS} columns:\n{}", wide.len(), wide.join("\n"));
}

/// The rendered book draws no warning: every figure is placed and referred to, every mention
/// of a figure or equation exists, every citation key is in the bibliography, no display
/// equation is cut in two, no code line is wider than the page.
#[test]
fn the_book_renders_without_warnings() {
    let _machine = shared();
    let site = tempfile::tempdir().unwrap();
    let config = tangle_core::config::Config::load(&root()).expect("the book has a book.toml");
    let options = tangle_render::RenderOptions { dest: Some(site.path().to_path_buf()) };
    let warnings = tangle_render::build_book(&config, &options).expect("the book builds").warnings;
    assert!(warnings.is_empty(), "{} warning(s):\n{}", warnings.len(), warnings.join("\n"));
}
