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
            panic!("the book does not compile:\n{}", errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))
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
                problems.push(format!("drift at {} (run `cargo tangle accept` if the new output is right):\n{diff}", v.location));
            }
        }
        problems.extend(r.figures.iter().map(|f| f.to_string()));
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
