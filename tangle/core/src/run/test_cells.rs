//! The chapters' `// @test` cells, run: each chapter's test executable (`tests/cells.rs`, built
//! by [`crate::build`] with [`crate::build::Targets::TestCells`]) runs once under the same
//! process-group limits as a chapter program, and libtest's report is read back into one
//! [`TestCase`] per test function, located at the function in the chapter. A failure carries
//! the panic message with every generated path in it (`ch08/tests/cells.rs:10:5`) replaced by
//! the chapter line it came from (`book/src/ch08.md:42:5`).

use std::path::Path;

use anyhow::Context;

use super::DEFAULT_TIMEOUT;
use super::process::{self, ProcessEnd};
use crate::config::Layout;
use crate::diagnostic::Location;
use crate::generate::ChapterCrate;
use crate::model::{CellKind, Chapter};

/// One test function of a chapter's test cells and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCase {
    pub name: String,
    /// Where the function is defined in the chapter (the cell, when the name is not found).
    pub location: Location,
    pub outcome: TestOutcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestOutcome {
    Passed,
    Ignored,
    /// The test failed: what it printed, chapter-located, and where it panicked if it said.
    Failed {
        message: String,
        at: Option<Location>,
    },
}

/// Runs the test executable `exe` of `chapter` from the chapter workspace and reads its report.
/// An executable that could not run at all is one failed case; one that ended without its
/// report has its unreported tests run one by one, to name the test that ended it.
pub fn run(exe: &Path, layout: &Layout, chapter: &Chapter, krate: &ChapterCrate) -> anyhow::Result<Vec<TestCase>> {
    let timeout = chapter.directives.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let run_tests = |only: Option<&str>| {
        let mut cmd = std::process::Command::new(exe);
        cmd.current_dir(layout.abs(&layout.code)).args(["--color", "never"]).env("RUST_BACKTRACE", "0");
        if let Some(name) = only {
            cmd.args(["--exact", name]);
        }
        process::run_group(cmd, process::Options { timeout, ..Default::default() })
            .with_context(|| format!("cannot run {}", exe.display()))
    };
    let captured = run_tests(None)?;
    let stdout = String::from_utf8_lossy(&captured.stdout);
    let stderr = String::from_utf8_lossy(&captured.stderr);
    let mut cases = read_report(&stdout, chapter, krate);
    let reported_all = stdout.lines().any(|l| l.starts_with("test result: "));
    if !reported_all {
        // libtest prints a failure's message in its closing report, which a stopped program
        // never reaches: each test that failed is run again alone for it.
        for case in &mut cases {
            if let TestOutcome::Failed { message, at } = &mut case.outcome
                && message.is_empty()
                && let Ok(alone) = run_tests(Some(&case.name))
            {
                let report = String::from_utf8_lossy(&alone.stdout);
                if let Some(TestCase { outcome: TestOutcome::Failed { message: m, at: a }, .. }) =
                    read_report(&report, chapter, krate).into_iter().find(|c| c.name == case.name)
                {
                    (*message, *at) = (m, a);
                }
            }
        }
        let why = match captured.end {
            ProcessEnd::TimedOut => {
                format!("the tests were still running after {} s and were stopped", timeout.as_secs())
            }
            ProcessEnd::OverCap { .. } => "the tests printed too much and were stopped".to_string(),
            ProcessEnd::Stopped => "the tests were stopped: a file of the book was saved while they ran".to_string(),
            _ => "the test program ended without its report".to_string(),
        };
        let message = super::locate_generated_paths(&format!("{why}\n{}{}", stdout, stderr), krate, chapter);
        let unreported = |cases: &[TestCase]| -> Vec<String> {
            test_names(chapter).into_iter().filter(|n| !cases.iter().any(|c| c.name == *n)).collect()
        };
        if let ProcessEnd::Exited(_) = captured.end {
            // A test ended the whole program (`std::process::exit`, an abort) while libtest ran
            // the tests side by side: which one, and how the others end, only running each
            // alone tells. Its report names the others' verdicts, and the one that ends its
            // program again is the one to blame.
            for name in unreported(&cases) {
                let Ok(alone) = run_tests(Some(&name)) else { continue };
                let report = String::from_utf8_lossy(&alone.stdout);
                let case = read_report(&report, chapter, krate).into_iter().find(|c| c.name == name);
                cases.push(case.unwrap_or_else(|| {
                    let why = match alone.end {
                        ProcessEnd::TimedOut => format!("still running after {} s, and stopped", timeout.as_secs()),
                        _ => "this test ends the test program before libtest reports (`std::process::exit`? \
                              an abort?); the other tests were run one by one for their verdicts"
                            .to_string(),
                    };
                    // libtest's own lines say nothing more ("running 1 test"); stderr may.
                    let said = format!("{why}\n{}", String::from_utf8_lossy(&alone.stderr));
                    let message = super::locate_generated_paths(said.trim_end(), krate, chapter);
                    TestCase {
                        location: definition(chapter, &name),
                        name,
                        outcome: TestOutcome::Failed { message, at: None },
                    }
                }));
            }
            // Whatever ended it, a verdict says so; if none does, the program's end is the failure.
            if cases.iter().any(|c| matches!(c.outcome, TestOutcome::Failed { .. })) {
                return Ok(cases);
            }
        }
        // The tests libtest never reported are the ones still running (or never started):
        // named, at their definitions, when the program was stopped.
        let unreported: Vec<String> = match captured.end {
            ProcessEnd::TimedOut => unreported(&cases),
            _ => Vec::new(),
        };
        if unreported.is_empty() {
            cases.push(TestCase {
                name: "(the test program)".into(),
                location: first_test_cell(chapter),
                outcome: TestOutcome::Failed { message: message.clone(), at: None },
            });
        }
        for name in unreported {
            let location = definition(chapter, &name);
            cases.push(TestCase {
                name,
                location,
                outcome: TestOutcome::Failed { message: message.clone(), at: None },
            });
        }
    }
    Ok(cases)
}

/// A case recorded by an earlier run (it passed, or was ignored), located in the chapter as it is now.
pub fn recorded(chapter: &Chapter, name: String, passed: bool) -> TestCase {
    let location = definition(chapter, &name);
    TestCase { name, location, outcome: if passed { TestOutcome::Passed } else { TestOutcome::Ignored } }
}

/// libtest's plain report: `test NAME ... ok|FAILED|ignored` lines, then a `---- NAME stdout ----`
/// section for each failure.
fn read_report(stdout: &str, chapter: &Chapter, krate: &ChapterCrate) -> Vec<TestCase> {
    let mut cases = Vec::new();
    for line in stdout.lines() {
        let Some(rest) = line.strip_prefix("test ") else { continue };
        let Some((name, verdict)) = rest.rsplit_once(" ... ") else { continue };
        let outcome = match verdict.trim() {
            "ok" => TestOutcome::Passed,
            v if v.starts_with("ignored") => TestOutcome::Ignored,
            "FAILED" => {
                let raw = failure_section(stdout, name);
                let message = super::locate_generated_paths(raw.trim_end(), krate, chapter);
                let at = panic_location(&message, chapter);
                TestOutcome::Failed { message, at }
            }
            _ => continue,
        };
        cases.push(TestCase { name: name.to_string(), location: definition(chapter, name), outcome });
    }
    cases
}

/// What libtest printed for the failed test `name`.
fn failure_section(stdout: &str, name: &str) -> String {
    let header = format!("---- {name} stdout ----");
    let Some(start) = stdout.find(&header) else { return String::new() };
    let body = &stdout[start + header.len()..];
    let end = body.find("\n---- ").or_else(|| body.find("\nfailures:")).unwrap_or(body.len());
    body[..end].trim_start_matches('\n').to_string()
}

/// `panicked at book/src/ch08.md:42:5:` in a located message: where the test failed.
fn panic_location(message: &str, chapter: &Chapter) -> Option<Location> {
    let rest = &message[message.find("panicked at ")? + "panicked at ".len()..];
    let place = rest.split('\n').next()?.trim_end_matches(':');
    let path = chapter.path.display().to_string();
    let numbers = place.strip_prefix(&path)?.strip_prefix(':')?;
    let mut parts = numbers.split(':');
    let line = parts.next()?.parse().ok()?;
    let location = chapter.location(line);
    Some(match parts.next().and_then(|c| c.parse().ok()) {
        Some(column) => location.with_column(column),
        None => location,
    })
}

/// The chapter line of `fn NAME` in the chapter's test cells (`module::name` names too).
fn definition(chapter: &Chapter, name: &str) -> Location {
    let short = name.rsplit("::").next().unwrap_or(name);
    let pattern = format!("fn {short}(");
    for cell in chapter.cells.iter().filter(|c| c.kind == CellKind::Test) {
        if let Some(i) = cell.code.lines().position(|l| l.contains(&pattern)) {
            return chapter.location(cell.code_line + i);
        }
    }
    first_test_cell(chapter)
}

/// The `#[test]` functions of the chapter's test cells, by name.
fn test_names(chapter: &Chapter) -> Vec<String> {
    static TEST_FN: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"#\[test\](?:\s*#\[[^\]]*\])*\s*(?:pub\s+)?(?:async\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)")
            .expect("a valid regex")
    });
    let cells = chapter.cells.iter().filter(|c| c.kind == CellKind::Test);
    cells.flat_map(|c| TEST_FN.captures_iter(&c.code).map(|m| m[1].to_string()).collect::<Vec<_>>()).collect()
}

fn first_test_cell(chapter: &Chapter) -> Location {
    let line = chapter.cells.iter().find(|c| c.kind == CellKind::Test).map_or(1, |c| c.code_line);
    chapter.location(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_functions_are_found_by_their_attribute() {
        let md = "# 1 One\n\n```rust\n// @test\n#[test]\nfn plain() {}\n\n#[test]\n#[ignore = \"slow\"]\npub fn slow() {}\n\nfn helper() {}\n```\n";
        let chapter =
            crate::parse::parse_chapter("ch01", Path::new("book/src/ch01.md"), md.as_bytes().to_vec()).unwrap();
        assert_eq!(test_names(&chapter), ["plain", "slow"]);
    }

    const REPORT: &str = "\nrunning 3 tests\ntest adds ... ok\ntest halves ... FAILED\ntest slow ... ignored, takes a minute\n\n\
failures:\n\n---- halves stdout ----\n\nthread 'halves' (7) panicked at ch01/tests/cells.rs:12:5:\nassertion `left == right` failed\n  left: 3\n right: 2\n\n\
failures:\n    halves\n\ntest result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out\n";

    #[test]
    fn libtests_report_becomes_cases_located_in_the_chapter() {
        let md = "# 1 One\n\n```rust\n// @save\npub fn half(n: u32) -> u32 { n / 2 }\n```\n\n```rust\n// @test\n#[test]\nfn adds() { assert_eq!(1 + 1, 2); }\n\n#[test]\nfn halves() {\n    assert_eq!(half(5), 2);\n    assert_eq!(half(6), 2);\n}\n```\n";
        let chapter =
            crate::parse::parse_chapter("ch01", Path::new("book/src/ch01.md"), md.as_bytes().to_vec()).unwrap();
        let config = crate::config::Config::parse(Path::new("/r"), Path::new("book"), "").unwrap();
        let book = crate::model::Book::from_chapters(vec![chapter]);
        let generated = crate::generate::generate(&book, &config, &mut crate::generate::Analyses::default()).unwrap();
        let krate = generated.get("ch01").unwrap();
        // Where the generated test file puts line 16 of the chapter (`assert_eq!(half(6), 2)`).
        let file = krate.files.iter().find(|(p, _)| p.ends_with("tests/cells.rs")).unwrap();
        let line = file.1.lines().position(|l| l.contains("half(6)")).unwrap() + 1;
        let report = REPORT.replace("cells.rs:12:5", &format!("cells.rs:{line}:5"));
        let cases = read_report(&report, &book.chapters[0], krate);
        assert_eq!(cases.len(), 3);
        assert_eq!((cases[0].name.as_str(), cases[0].location.line), ("adds", 11));
        assert_eq!(cases[0].outcome, TestOutcome::Passed);
        assert_eq!(cases[2].outcome, TestOutcome::Ignored);
        let TestOutcome::Failed { message, at } = &cases[1].outcome else { panic!("{:?}", cases[1]) };
        assert_eq!(cases[1].location.line, 14, "the function's line");
        assert!(message.contains("panicked at book/src/ch01.md:16:5"), "{message}");
        assert!(message.contains("left: 3"), "{message}");
        assert_eq!(at.as_ref().map(|l| (l.line, l.column)), Some((16, Some(5))));
    }
}
