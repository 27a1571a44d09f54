//! The real book as the last fixture: `code/` is in sync with `book/src`, every chapter builds
//! and runs, every output block and figure matches what the code produces, and `snapshots/`
//! holds exactly the prose's output blocks (insta never writes them when `CI=true`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use tangle::compare::Verdict;
use tangle::pipeline::{self, Outcome, Project};
use tangle::run::RunEnd;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

#[test]
fn book_outputs_match_prose_and_snapshots() {
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
        for (cell, name) in tangle::snapshot::names(chapter) {
            let block = cell.output.as_ref().expect("named cells have blocks");
            expected_files.insert(format!("{name}.snap"));
            insta::with_settings!({
                snapshot_path => &snapshots,
                prepend_module_to_snapshot => false,
                omit_expression => true,
            }, {
                insta::assert_snapshot!(name, tangle::compare::normalize(&block.text));
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
    // (chapter, number as written, why it stays typed)
    const ALLOWED: &[(&str, &str, &str)] = &[];
    let project = Project::load(&root()).unwrap();
    let mut found = Vec::new();
    for chapter in &project.book.chapters {
        for d in tangle::compare::hand_typed_numbers(chapter) {
            let number = d.message.split('`').nth(1).unwrap_or("").to_string();
            if !ALLOWED.iter().any(|(c, n, _)| *c == chapter.name && *n == number) {
                found.push(d.to_string());
            }
        }
    }
    assert!(found.is_empty(), "{} hand-typed number(s):\n{}", found.len(), found.join("\n"));
}
