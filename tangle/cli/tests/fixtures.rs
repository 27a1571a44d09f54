//! Data-driven tests over fixture books: every `tests/fixtures/<case>/steps` is a script run
//! against a copy of `<case>/book` in a temporary project; the transcript (commands, exit
//! codes, filtered output, files shown) must equal `<case>/transcript.snap`.
//! Update with `INSTA_UPDATE=always cargo test -p tangle --test fixtures` (never on CI).
//!
//! Step syntax, one per line (`#` starts a comment):
//! - `tangle ARGS…`            run the tool, record its exit code and output
//! - `CI=true tangle ARGS…`    the same as CI runs it
//! - `RUSTC=PATH tangle ARGS…` the same with `RUSTC` set to PATH in the project
//! - `cat PATH`                record a file
//! - `replace PATH OLD => NEW` replace the only occurrence of OLD (`\n` allowed) in a file
//! - `append PATH TEXT`        append a line (`\n` allowed) to a file
//! - `remember PATH`           note a file's bytes and mtime
//! - `unchanged PATH`          record whether the file still has the remembered bytes and mtime
//! - `endings PATH`            record how many lines end in CRLF and in LF
//! - `write PATH TEXT`        create or overwrite a file with TEXT (`\n` allowed)
//! - `remove PATH`             remove a file or a folder
//! - `symlink PATH -> TARGET`  create a symbolic link at PATH to TARGET (which may not exist)
//! - `exists PATH`             record whether a file or folder exists
//! - `contains PATH TEXT`      record how many times a file contains TEXT
//! - `took-under SECONDS`      record whether the last `tangle` step took less than SECONDS
//! - `spawn tangle ARGS…`      start the tool in the background (its output is not recorded)
//! - `wait-for PATH`           wait (up to 5 min) until PATH exists and ends with a newline
//! - `signal TERM|INT|KILL`    send the signal to the spawned tool; record how it ended
//! - `dead PATH`               record whether every pid listed in PATH is gone (within 3 s)
//! - `cargo-target DIR`        record the target folder cargo builds in when run inside DIR
//! - `untracked DIR`           record the files under DIR that `git status` lists (after `git init`)

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

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
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

/// A fresh project around the fixture's book (a `book.toml` and a `SUMMARY.md` if the fixture
/// has none) and, so
/// that cargo need not resolve afresh, this repository's lock file for the chapter workspace.
fn make_project(case: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&case.join("book"), &dir.path().join("book"));
    if !dir.path().join("book/book.toml").exists() {
        std::fs::write(
            dir.path().join("book/book.toml"),
            "[book]\ntitle = \"fixture\"\n\n[rust]\nedition = \"2024\"\n\n[preprocessor.tangle]\nroot = \"..\"\n",
        )
        .unwrap();
    }
    // mdBook needs a SUMMARY.md (and `check` refuses a book without one): a fixture that has
    // none gets one listing its pages in path order, as `mdbook init` would have started it.
    let src = dir.path().join("book/src");
    if !src.join("SUMMARY.md").exists() && src.is_dir() {
        let mut pages: Vec<PathBuf> = walkdir::WalkDir::new(&src)
            .into_iter()
            .map(|e| e.unwrap().path().strip_prefix(&src).unwrap().to_path_buf())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        pages.sort();
        let entries: String = pages.iter().map(|p| format!("- [{}](<{}>)\n", p.display(), p.display())).collect();
        std::fs::write(src.join("SUMMARY.md"), format!("# Summary\n\n{entries}")).unwrap();
    }
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
    let pid = regex::Regex::new(r"\bpid \d+").unwrap();
    let discarded = regex::Regex::new(r"/discarded/\d+/").unwrap();
    text.lines()
        .filter(|l| {
            let word = l.split_whitespace().next().unwrap_or("");
            !(l.starts_with(' ') && CARGO_NOISE.contains(&word))
        })
        .map(|l| l.replace(&workspace_root().display().to_string(), "[WORKSPACE]"))
        .map(|l| tid.replace_all(&l.replace(&root.display().to_string(), "[ROOT]"), "thread '$1' [TID]").into_owned())
        .map(|l| pid.replace_all(&l, "pid [PID]").into_owned())
        .map(|l| discarded.replace_all(&l, "/discarded/[TIME]/").into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

fn run_steps(case: &Path) -> String {
    let project = make_project(case);
    let root = project.path();
    let target = workspace_root().join("target/tangle-fixtures");
    let mut transcript = String::new();
    let mut remembered: Option<(Vec<u8>, std::time::SystemTime)> = None;
    let mut last_took = Duration::ZERO;
    let mut spawned: Option<std::process::Child> = None;
    let steps = std::fs::read_to_string(case.join("steps")).unwrap();
    for line in steps.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        transcript += &format!("$ {line}\n");
        let words: Vec<&str> = line.splitn(2, ' ').collect();
        let rest = words.get(1).copied().unwrap_or("");
        match words[0] {
            first if first == "tangle" || first == "CI=true" || first.starts_with("RUSTC=") => {
                let start = Instant::now();
                let mut command = Command::new(env!("CARGO_BIN_EXE_tangle"));
                command.env_remove("CI");
                let args = match words[0] {
                    "CI=true" => {
                        command.env("CI", "true");
                        rest.strip_prefix("tangle ").expect("CI=true tangle ARGS")
                    }
                    _ if let Some(path) = words[0].strip_prefix("RUSTC=") => {
                        command.env("RUSTC", root.join(path));
                        rest.strip_prefix("tangle ").expect("RUSTC=PATH tangle ARGS")
                    }
                    _ => rest,
                };
                let out = command
                    .arg("--root")
                    .arg(root)
                    .args(args.split_whitespace())
                    .env("TANGLE_TARGET_DIR", &target)
                    .env_remove(tangle_core::messages::COMMAND_VAR)
                    .output()
                    .unwrap();
                last_took = start.elapsed();
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
            "cat" => {
                let text = std::fs::read_to_string(root.join(rest)).unwrap_or_else(|e| format!("<{e}>\n"));
                transcript += &text.replace(&workspace_root().display().to_string(), "[WORKSPACE]");
            }
            "replace" => {
                let (path, change) = rest.split_once(' ').expect("replace PATH OLD => NEW");
                let (old, new) = change
                    .split_once(" => ")
                    .or_else(|| change.strip_suffix(" =>").map(|old| (old, "")))
                    .expect("replace PATH OLD => NEW");
                let (old, new) = (old.replace("\\n", "\n"), new.replace("\\n", "\n"));
                let text = std::fs::read_to_string(root.join(path)).unwrap();
                assert_eq!(text.matches(&old).count(), 1, "{}: `{old}` must occur once in {path}", case.display());
                std::fs::write(root.join(path), text.replace(&old, &new)).unwrap();
            }
            "write" => {
                let (path, text) = rest.split_once(' ').expect("write PATH TEXT");
                let path = root.join(path);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text.replace("\\n", "\n")).unwrap();
            }
            "symlink" => {
                let (path, target) = rest.split_once(" -> ").expect("symlink PATH -> TARGET");
                std::os::unix::fs::symlink(target, root.join(path)).unwrap();
            }
            "remove" => {
                let path = root.join(rest);
                match path.is_dir() {
                    true => std::fs::remove_dir_all(path).unwrap(),
                    false => std::fs::remove_file(path).unwrap(),
                }
            }
            "exists" => transcript += &format!("exists: {}\n", root.join(rest).exists()),
            "contains" => {
                let (path, text) = rest.split_once(' ').expect("contains PATH TEXT");
                let body = std::fs::read_to_string(root.join(path)).unwrap_or_default();
                transcript += &format!("contains `{text}`: {} time(s)\n", body.matches(text).count());
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
            "to-crlf" => {
                // What a checkout with git's `core.autocrlf` does: every text file's `\n` becomes `\r\n`.
                for file in walk(&root.join(rest)) {
                    if let Ok(text) = std::fs::read_to_string(&file) {
                        std::fs::write(&file, text.replace("\r\n", "\n").replace('\n', "\r\n")).unwrap();
                    }
                }
            }
            "git" => {
                // Two authors' work meeting in a merge; git's own configuration left out.
                let out = Command::new("git")
                    .args(rest.split_whitespace())
                    .current_dir(root)
                    .env("GIT_CONFIG_GLOBAL", "/dev/null")
                    .env("GIT_CONFIG_NOSYSTEM", "1")
                    .envs([("GIT_AUTHOR_NAME", "A"), ("GIT_COMMITTER_NAME", "A")])
                    .envs([("GIT_AUTHOR_EMAIL", "a@example.org"), ("GIT_COMMITTER_EMAIL", "a@example.org")])
                    .output()
                    .unwrap();
                transcript += &format!("git: exit {}\n", out.status.code().unwrap_or(-1));
            }
            "took-under" => {
                let limit: f64 = rest.parse().expect("took-under SECONDS");
                transcript += &format!("took under {limit} s: {}\n", last_took.as_secs_f64() < limit);
            }
            "spawn" => {
                let args = rest.strip_prefix("tangle ").expect("spawn tangle ARGS");
                let child = Command::new(env!("CARGO_BIN_EXE_tangle"))
                    .arg("--root")
                    .arg(root)
                    .args(args.split_whitespace())
                    .env("TANGLE_TARGET_DIR", &target)
                    .env_remove("CI")
                    .env_remove(tangle_core::messages::COMMAND_VAR)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .unwrap();
                spawned = Some(child);
            }
            "wait-for" => {
                let start = Instant::now();
                while !std::fs::read(root.join(rest)).is_ok_and(|b| b.ends_with(b"\n")) {
                    assert!(start.elapsed() < Duration::from_secs(300), "{}: {rest} never appeared", case.display());
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            "signal" => {
                let mut child = spawned.take().expect("`spawn` before `signal`");
                let signal = match rest {
                    "TERM" => libc::SIGTERM,
                    "INT" => libc::SIGINT,
                    "KILL" => libc::SIGKILL,
                    other => panic!("unknown signal {other}"),
                };
                // SAFETY: kill only sends a signal, to the tool this test started.
                unsafe { libc::kill(child.id() as i32, signal) };
                let start = Instant::now();
                let status = loop {
                    if let Some(status) = child.try_wait().unwrap() {
                        break status;
                    }
                    assert!(start.elapsed() < Duration::from_secs(10), "tangle did not stop on SIG{rest}");
                    std::thread::sleep(Duration::from_millis(20));
                };
                use std::os::unix::process::ExitStatusExt;
                transcript += &match (status.code(), status.signal()) {
                    (Some(code), _) => format!("exit: {code}\n"),
                    (None, Some(sig)) => format!("killed by signal {sig}\n"),
                    _ => format!("ended: {status}\n"),
                };
            }
            "dead" => {
                let text = std::fs::read_to_string(root.join(rest)).unwrap();
                let pids: Vec<i32> = text.split_whitespace().map(|p| p.parse().unwrap()).collect();
                let start = Instant::now();
                let alive = loop {
                    let alive = pids.iter().filter(|&&p| process_runs(p)).count();
                    if alive == 0 || start.elapsed() > Duration::from_secs(3) {
                        break alive;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                };
                transcript += &format!("processes still running: {alive} of {}\n", pids.len());
                // Never leave one behind, whatever the transcript says.
                for &p in pids.iter().filter(|&&p| process_runs(p)) {
                    // SAFETY: kill only sends a signal, to a process this test's book started.
                    unsafe { libc::kill(p, libc::SIGKILL) };
                }
            }
            "cargo-target" => {
                let out = Command::new(env!("CARGO"))
                    .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
                    .current_dir(root.join(rest))
                    .env_remove("CARGO_TARGET_DIR")
                    .output()
                    .unwrap();
                let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
                let dir = meta["target_directory"].as_str().unwrap_or("<none>");
                let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| PathBuf::from(dir));
                let root = std::fs::canonicalize(root).unwrap();
                let shown = dir.strip_prefix(&root).map_or(dir.display().to_string(), |p| p.display().to_string());
                transcript += &format!("cargo builds in: {shown}\n");
            }
            "untracked" => {
                let git = |args: &[&str]| Command::new("git").args(args).current_dir(root).output().unwrap();
                if !root.join(".git").exists() {
                    git(&["init", "-q"]);
                }
                let out = git(&["status", "--porcelain", "--untracked-files=all", "--", rest]);
                let listed: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
                transcript += &format!("untracked ({}):\n{}\n", listed.len(), listed.join("\n"));
            }
            other => panic!("{}: unknown step `{other}`", case.display()),
        }
    }
    transcript
}

/// `path` if it is a file, else every file below it.
fn walk(path: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(path) {
        Ok(entries) => entries.flatten().flat_map(|e| walk(&e.path())).collect(),
        Err(_) => vec![path.to_path_buf()],
    }
}

/// Whether `pid` runs (a zombie that no reaper collected does not).
fn process_runs(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
        Err(_) => false,
    }
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

/// `tangle book` parses each Markdown file of the book once: the check's parse is what the
/// style checks, the validation and the renderer work from. `accept` parses again only the
/// chapters it rewrote. Counted by the front end
/// (`tangle_core::markdown::parses`), reported under `TANGLE_TIMINGS`.
#[test]
fn tangle_book_parses_each_file_once() {
    let case = workspace_root().join("tangle/cli/tests/fixtures/widgets");
    let project = make_project(&case);
    let root = project.path();
    // A page without cells (a fence of text) and one SUMMARY.md leaves out, beside the chapter.
    let src = root.join("book/src");
    std::fs::write(src.join("intro.md"), "# Introduction\n\nSee [the chapter](ch01.md).\n\n```text\nnot a cell\n```\n")
        .unwrap();
    std::fs::write(src.join("notes.md"), "# Notes\n\nNot in the book.\n").unwrap();
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    std::fs::write(src.join("SUMMARY.md"), summary.replace("# Summary\n", "# Summary\n\n[Introduction](intro.md)\n"))
        .unwrap();
    let files = std::fs::read_dir(&src)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "md") && e.file_name() != "SUMMARY.md")
        .count();
    assert_eq!(files, 3);
    let tangle = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tangle"))
            .arg("--root")
            .arg(root)
            .args(args)
            // Not the fixtures' target: their books' crates are named ch01 too, and run beside.
            .env("TANGLE_TARGET_DIR", workspace_root().join("target/tangle-parse-count"))
            .env("TANGLE_TIMINGS", "1")
            .env_remove("CI")
            .output()
            .unwrap()
    };
    let parses = |stderr: &str| -> Vec<usize> {
        stderr.lines().filter_map(|l| l.strip_prefix("timing: markdown parses ")?.parse().ok()).collect()
    };
    // The widget's data file is the chapter's output: accepted first, as an author would.
    // accept parses what it rewrote once more (to snapshot it and generate code/ from it), and
    // nothing else again.
    let chapter_before = std::fs::read(src.join("ch01.md")).unwrap();
    let accepted = tangle(&["accept"]);
    let stderr = String::from_utf8_lossy(&accepted.stderr);
    assert!(accepted.status.success(), "{stderr}");
    let rewritten = usize::from(std::fs::read(src.join("ch01.md")).unwrap() != chapter_before);
    assert_eq!(parses(&stderr), vec![files + rewritten], "accept parses each file once, and what it wrote:\n{stderr}");
    let built = tangle(&["book"]);
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(built.status.success(), "{stderr}");
    assert!(root.join("book/book/intro.html").is_file() && root.join("book/book/ch01.html").is_file());
    assert_eq!(parses(&stderr), vec![files], "one parse per Markdown file of the book:\n{stderr}");
}
