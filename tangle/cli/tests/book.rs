//! The real book as the last fixture: `tangle test` passes on it (code/ current, every chapter
//! builds and runs and matches its prose, every test cell passes, the book renders, the style
//! checks hold), `snapshots/` holds exactly the prose's output blocks (insta never writes them
//! when `CI=true`), the rendered book draws no warning, and the prose is our own words, not
//! the seeds'.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use tangle_core::pipeline::{self, Project};

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

/// `tangle test` on the book, as CI would run it for any book: code/ current, every output,
/// value, figure and snapshot as the prose has it, every test cell passing, the book rendering,
/// and the style checks (formatting, the 100-column width, numbers quoted rather than typed).
#[test]
fn the_book_passes_tangle_test() {
    let _machine = exclusive();
    let project = mdbook_tangle::load_project(&root()).unwrap_or_else(|e| panic!("the book does not load: {e:#}"));
    let chapters = project.select(&[]).unwrap();
    let tally = mdbook_tangle::test::run(&project, &[], pipeline::CheckOptions::default()).unwrap();
    assert!(tally.failed == 0, "tangle test failed:\n{}", tally.failures.join("\n"));
    // Every chapter has test cells, outputs and quoted values: far more than a few cases ran.
    assert!(tally.passed > 100, "only {} case(s) passed", tally.passed);

    // Every output block has its snapshot, equal to the block: insta's update story for them
    // (`INSTA_UPDATE=always`, never writing when `CI=true`).
    let snapshots = project.layout().abs(&project.layout().snapshots);
    let mut expected_files = BTreeSet::new();
    for chapter in chapters.iter().map(|s| s.chapter()) {
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

/// The seeds' sentences must not carry over: no run of twelve words of a chapter's prose
/// ([`prose_tokens`]: code, math and the reference list aside, which carry facts) may appear
/// in a seed. The
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
    let mut copies = Vec::new();
    for chapter in Project::load(&root()).unwrap().book.chapters {
        let prose: Vec<String> = prose_tokens(chapter.source()).into_iter().map(|t| t.text).collect();
        for run in words(&prose.join(" ")).windows(RUN) {
            let run = run.join(" ");
            if seed_runs.contains(&run) {
                copies.push(format!("{}: \"{run}\"", chapter.path.display()));
            }
        }
    }
    assert!(copies.is_empty(), "prose copied from a seed (rewrite it in our own words):\n{}", copies.join("\n"));
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

/// A word of prose (anything between spaces), the line it is on, and whether it ends its
/// block (paragraph, heading, table cell).
struct Token {
    line: usize,
    text: String,
    ends_block: bool,
}

/// The prose of a chapter as the Markdown front end reads it (`tangle_core::markdown`, the
/// rule every stage uses): the text-bearing blocks (paragraphs, headings, table cells) without
/// their protected spans (code, math, HTML, links, directives) and without the container
/// prefixes (`> `) of their lines, up to a `## References` heading (the reference list carries
/// facts, not our sentences).
fn prose_tokens(text: &str) -> Vec<Token> {
    use tangle_core::markdown::{Document, LeafKind};
    let doc = Document::parse(text);
    let references = doc.headings.iter().find(|h| h.level == 2 && h.text == "References").map(|h| h.span.start);
    let mut out: Vec<Token> = Vec::new();
    for leaf in doc.leaves.iter().filter(|l| references.is_none_or(|r| l.span.start < r)) {
        let before = out.len();
        if let LeafKind::Heading(_) = leaf.kind {
            // A heading's text as the front end reads it: no `#` marks, no `{#id}`.
            let heading = doc.headings.iter().find(|h| h.span == leaf.span).expect("a heading leaf is a heading");
            let line = doc.line_col(leaf.span.start).0;
            out.extend(heading.text.split_whitespace().map(|w| Token { line, text: w.into(), ends_block: false }));
        } else {
            let prefix = doc.block_prefix(leaf.span.start);
            for range in doc.prose_ranges(leaf) {
                for (at, word) in words_at(text, range) {
                    // A container's `>` at the start of a continuation line is no word.
                    let (line, column) = doc.line_col(at);
                    let first_line = doc.line_col(leaf.span.start).0;
                    if line > first_line && column <= prefix.chars().count() && word.chars().all(|c| c == '>') {
                        continue;
                    }
                    out.push(Token { line, text: word.into(), ends_block: false });
                }
            }
        }
        if out.len() > before {
            out.last_mut().expect("not empty").ends_block = true;
        }
    }
    out
}

/// The whitespace-separated words of `text[range]`, with their byte offsets.
fn words_at(text: &str, range: std::ops::Range<usize>) -> impl Iterator<Item = (usize, &str)> {
    let part = &text[range.clone()];
    part.split_whitespace().map(move |w| (range.start + (w.as_ptr() as usize - part.as_ptr() as usize), w))
}

/// Splits prose ([`prose_tokens`]) into sentences, keeping line numbers: every block ends a
/// sentence, and so does a word ending in `.`, `?` or `!` (before closing quotes, brackets or
/// emphasis), unless it closes a common abbreviation.
fn sentences(text: &str) -> Vec<Sentence> {
    const ABBREVIATIONS: [&str; 10] = ["e.g.", "i.e.", "al.", "cf.", "vs.", "fig.", "eq.", "no.", "approx.", "etc."];
    let mut out = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut start = 0;
    for token in prose_tokens(text) {
        if current.is_empty() {
            start = token.line;
        }
        let end = token.text.trim_end_matches(['"', '\'', ')', ']', '*', '_', '”', '’']);
        let closes = end.ends_with(['.', '?', '!']) && !ABBREVIATIONS.iter().any(|a| end.to_lowercase().ends_with(a));
        current.push(token.text);
        if closes || token.ends_block {
            out.push(Sentence { line: start, text: current.join(" ") });
            current.clear();
        }
    }
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
        let prose = chapter.source().split("\n## References").next().unwrap_or("");
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
    let text = "# Title {#top}\n\nFirst sentence, e.g. with an abbreviation. Second one\nruns on.\n\n```rust\nlet x = 1.0;\n```\nThird $x$ here: and `code` more\n$$\na = b.\n$$\n- item one\n> **Note.** A quoted sentence\n> runs on.\n\n~~~\nTilde fences. Are code too.\n~~~\n\nA price of \\$5 is prose.\n\n## References\n\nSmith, J. A book.\n";
    let got: Vec<(usize, String)> = sentences(text).into_iter().map(|s| (s.line, s.text)).collect();
    assert_eq!(
        got,
        vec![
            (1, "Title".to_string()),
            (3, "First sentence, e.g. with an abbreviation.".to_string()),
            (3, "Second one runs on.".to_string()),
            (9, "Third here: and more".to_string()),
            (13, "item one".to_string()),
            (14, "**Note.**".to_string()),
            (14, "A quoted sentence runs on.".to_string()),
            (21, "A price of \\$5 is prose.".to_string()),
        ]
    );
}

/// The rendered book draws no warning: every figure is placed and referred to, every mention
/// of a figure or equation exists, every citation key is in the bibliography, no display
/// equation is cut in two, no code line is wider than the page.
#[test]
fn the_book_renders_without_warnings() {
    let _machine = shared();
    let site = tempfile::tempdir().unwrap();
    let config = tangle_core::config::Config::load(&root()).expect("the book has a book.toml");
    let options = tangle_render::RenderOptions { dest: Some(site.path().to_path_buf()), ..Default::default() };
    let warnings = tangle_render::build_book(&config, &options).expect("the book builds").warnings;
    assert!(warnings.is_empty(), "{} warning(s):\n{}", warnings.len(), warnings.join("\n"));
}
