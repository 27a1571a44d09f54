//! Data-driven tests over fixture books: every `tests/fixtures/<case>/steps` is a script run
//! against a copy of `<case>/book` in a temporary project; the transcript (commands, exit
//! codes, filtered output, files shown) must equal `<case>/transcript.snap`.
//! Update with `INSTA_UPDATE=always cargo test -p tangle --test fixtures` (never on CI).
//!
//! Step syntax, one per line (`#` starts a comment):
//! - `tangle ARGS…`            run the tool, record its exit code and output
//! - `cat PATH`                record a file
//! - `replace PATH OLD => NEW` replace the only occurrence of OLD (`\n` allowed) in a file
//! - `append PATH TEXT`        append a line (`\n` allowed) to a file
//! - `remember PATH`           note a file's bytes and mtime
//! - `unchanged PATH`          record whether the file still has the remembered bytes and mtime
//! - `endings PATH`            record how many lines end in CRLF and in LF

use std::path::{Path, PathBuf};
use std::process::Command;

const CARGO_NOISE: &[&str] = &[
    "Compiling",
    "Finished",
    "Locking",
    "Adding",
    "Updating",
    "Blocking",
    "Downloaded",
    "Downloading",
    "Removing",
    "Checking",
    "Fresh",
    "Removed",
    "Unpacking",
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A fresh project around the fixture's book: the top-level manifest (naming the runtime for
/// the chapter workspace) and, so that cargo need not resolve afresh, the book's lock file.
fn make_project(case: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&case.join("book"), &dir.path().join("book"));
    if !dir.path().join("book/book.toml").exists() {
        std::fs::write(dir.path().join("book/book.toml"), "[book]\ntitle = \"fixture\"\n").unwrap();
    }
    let runtime = workspace_root().join("tangle/runtime");
    std::fs::write(
        dir.path().join("Cargo.toml"),
        format!(
            "[workspace]\nresolver = \"3\"\nmembers = []\nexclude = [\"code\"]\n\n[workspace.package]\nedition = \"2024\"\n\n\
             [workspace.metadata.tangle.dependencies]\ntangle-runtime = {{ path = {:?} }}\n",
            runtime.display().to_string()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("code")).unwrap();
    std::fs::copy(workspace_root().join("code/Cargo.lock"), dir.path().join("code/Cargo.lock")).unwrap();
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn filter_output(text: &str, root: &Path) -> String {
    let tid = regex::Regex::new(r"thread '([^']+)' \(\d+\)").unwrap();
    text.lines()
        .filter(|l| {
            let word = l.split_whitespace().next().unwrap_or("");
            !(l.starts_with(' ') && CARGO_NOISE.contains(&word))
        })
        .map(|l| tid.replace_all(&l.replace(&root.display().to_string(), "[ROOT]"), "thread '$1' [TID]").into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

fn run_steps(case: &Path) -> String {
    let project = make_project(case);
    let root = project.path();
    let target = workspace_root().join("target/tangle-fixtures");
    let mut transcript = String::new();
    let mut remembered: Option<(Vec<u8>, std::time::SystemTime)> = None;
    let steps = std::fs::read_to_string(case.join("steps")).unwrap();
    for line in steps.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        transcript += &format!("$ {line}\n");
        let words: Vec<&str> = line.splitn(2, ' ').collect();
        let rest = words.get(1).copied().unwrap_or("");
        match words[0] {
            "tangle" => {
                let out = Command::new(env!("CARGO_BIN_EXE_tangle"))
                    .arg("--root")
                    .arg(root)
                    .args(rest.split_whitespace())
                    .env("TANGLE_TARGET_DIR", &target)
                    .env_remove("CI")
                    .output()
                    .unwrap();
                let stdout = filter_output(&String::from_utf8_lossy(&out.stdout), root);
                let stderr = filter_output(&String::from_utf8_lossy(&out.stderr), root);
                transcript += &format!("exit: {}\n", out.status.code().unwrap_or(-1));
                if !stdout.is_empty() {
                    transcript += &format!("stdout:\n{stdout}\n");
                }
                if !stderr.is_empty() {
                    transcript += &format!("stderr:\n{stderr}\n");
                }
            }
            "cat" => transcript += &std::fs::read_to_string(root.join(rest)).unwrap_or_else(|e| format!("<{e}>\n")),
            "replace" => {
                let (path, change) = rest.split_once(' ').expect("replace PATH OLD => NEW");
                let (old, new) = change.split_once(" => ").expect("replace PATH OLD => NEW");
                let (old, new) = (old.replace("\\n", "\n"), new.replace("\\n", "\n"));
                let text = std::fs::read_to_string(root.join(path)).unwrap();
                assert_eq!(text.matches(&old).count(), 1, "{}: `{old}` must occur once in {path}", case.display());
                std::fs::write(root.join(path), text.replace(&old, &new)).unwrap();
            }
            "append" => {
                let (path, text) = rest.split_once(' ').unwrap();
                let mut old = std::fs::read_to_string(root.join(path)).unwrap();
                old += &format!("{}\n", text.replace("\\n", "\n"));
                std::fs::write(root.join(path), old).unwrap();
            }
            "remember" => {
                let p = root.join(rest);
                remembered = Some((std::fs::read(&p).unwrap(), std::fs::metadata(&p).unwrap().modified().unwrap()));
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            "unchanged" => {
                let p = root.join(rest);
                let (bytes, mtime) = remembered.clone().expect("`remember` before `unchanged`");
                let same_bytes = std::fs::read(&p).unwrap() == bytes;
                let same_mtime = std::fs::metadata(&p).unwrap().modified().unwrap() == mtime;
                transcript += &format!("same bytes: {same_bytes}, same mtime: {same_mtime}\n");
            }
            "endings" => {
                let text = std::fs::read(root.join(rest)).unwrap();
                let crlf = text.windows(2).filter(|w| w == b"\r\n").count();
                let lf = text.iter().filter(|&&b| b == b'\n').count() - crlf;
                transcript += &format!("line endings: {crlf} CRLF, {lf} LF\n");
            }
            other => panic!("{}: unknown step `{other}`", case.display()),
        }
    }
    transcript
}

#[test]
fn fixtures() {
    insta::glob!("fixtures/*/steps", |path| {
        let case = path.parent().unwrap();
        let transcript = run_steps(case);
        insta::with_settings!({
            snapshot_path => case,
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!("transcript", transcript);
        });
    });
}
