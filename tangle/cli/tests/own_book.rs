//! A stranger's book, with the built binary alone, in folders outside this repository:
//!
//! - `tangle new` makes a book that passes `tangle test` and `tangle book` as it is (on CI too,
//!   where nothing may be written and builds are `--locked`) and holds no path into this
//!   repository;
//! - a failing test cell fails `tangle test` at the chapter line of its assertion;
//! - `tangle init` adopts a plain mdBook (`book.toml`, `src/`, a chapter named `sums.md`)
//!   without changing a chapter, after which it checks;
//! - the workflow `tangle new` writes lists the chapters and finds tangle's folders as tangle
//!   does, in every layout (`book.toml` at the root or in `book/`, folders of its own);
//! - a stock `mdbook build`, with `mdbook-tangle` as its preprocessor, builds the book and
//!   fails when a chapter is wrong (skipped, saying so, where no `mdbook` is installed).
//!
//! The chapter builds share one target folder with the fixtures (`TANGLE_TARGET_DIR`), so
//! that the runtime's dependencies compile once.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

/// `tangle ARGS` in `dir`, as a user outside this repository runs it (`on_ci` keeps or drops
/// the CI variable the test command runs with).
fn tangle(dir: &Path, args: &[&str], on_ci: bool) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tangle"));
    cmd.current_dir(dir)
        .args(args)
        .env("TANGLE_TARGET_DIR", workspace_root().join("target/tangle-fixtures"))
        .env_remove("TANGLE_COMMAND");
    if on_ci {
        cmd.env("CI", "true");
    } else {
        cmd.env_remove("CI");
    }
    cmd.output().expect("tangle runs")
}

fn text(out: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn closing_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or("").to_string()
}

#[test]
fn a_new_book_passes_its_tests_and_fails_at_a_broken_test_cell() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("my-book");
    let out = tangle(dir.path(), &["new", book.to_str().unwrap()], true);
    assert!(out.status.success(), "tangle new failed:\n{}", text(&out));
    // Outside any repository, the closing advice is to make one.
    assert!(String::from_utf8_lossy(&out.stdout).contains("(git init)"), "{}", text(&out));
    for file in ["book.toml", "src/SUMMARY.md", "src/ch01.md", "references.yaml", ".gitignore", "README.md"] {
        assert!(book.join(file).is_file(), "{file} is missing");
    }
    for generated in ["code/Cargo.lock", "code/ch01/src/lib.rs", "code/tangle-runtime/src/lib.rs", "theme/tangle.css"] {
        assert!(book.join(generated).is_file(), "{generated} was not generated");
    }
    assert!(book.join(".github/workflows/book.yml").is_file());
    // The code folder is what an IDE opens: its format-on-save (`cargo fmt`) changes nothing
    // tangle generated, the runtime's copy included, so nothing reads as a hand edit after it.
    let fmt = Command::new("cargo").args(["fmt", "--all", "--check"]).current_dir(book.join("code")).output().unwrap();
    match String::from_utf8_lossy(&fmt.stderr).contains("rustfmt") && !fmt.status.success() && fmt.stdout.is_empty() {
        true => eprintln!("skipped `cargo fmt --check` in code/: no rustfmt here"),
        false => assert!(fmt.status.success(), "cargo fmt would change generated files:\n{}", text(&fmt)),
    }
    assert!(std::fs::read_dir(book.join("figures/ch01")).unwrap().count() > 0, "the figure was drawn");
    assert!(std::fs::read_to_string(book.join("book.toml")).unwrap().contains("title = \"My Book\""));

    // As CI runs it: nothing written, builds locked.
    let out = tangle(&book, &["test"], true);
    assert!(out.status.success(), "tangle test failed on the new book:\n{}", text(&out));
    let closing = closing_line(&out);
    assert!(closing.ends_with("passed, 0 failed, 0 ignored") && !closing.starts_with("0 "), "{closing}");
    let out = tangle(&book, &["book"], true);
    assert!(out.status.success(), "tangle book failed on the new book:\n{}", text(&out));
    assert!(book.join("book/ch01.html").is_file());
    let page = std::fs::read_to_string(book.join("book/ch01.html")).unwrap();
    assert!(page.contains("tangle-output") && !page.contains("{{#value"), "outputs and values rendered");

    // No file of the book names this repository.
    let repo = workspace_root().display().to_string();
    for entry in walkdir::WalkDir::new(&book).into_iter().filter_entry(|e| e.file_name() != "target") {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            let bytes = std::fs::read(entry.path()).unwrap();
            let holds = bytes.windows(repo.len()).any(|w| w == repo.as_bytes());
            assert!(!holds, "{} holds a path into this repository", entry.path().display());
        }
    }

    // The workflow's jobs as they run: each chapter tested in a job of its own on a fresh
    // checkout, then the book job, on another, rendering from the runs they upload: it builds
    // and runs nothing again.
    let workflow = std::fs::read_to_string(book.join(".github/workflows/book.yml")).unwrap();
    // Run from the repository's top, which is the book's own folder here (`BOOK: "."`).
    assert!(workflow.contains("run: tangle --root \"$BOOK\" test --chapter ${{ matrix.chapter }}"), "{workflow}");
    assert!(workflow.contains("  BOOK: \".\"\n"), "{workflow}");
    chapter_list_names_crates_as_tangle_does(&workflow);
    // Uploaded from the cache folder the first job finds, which for this book is
    // `target/tangle/cache` (`workflow_folders_are_tangle_s`).
    let cache = "${{ needs.chapters.outputs.cache }}";
    for path in ["CACHE/CHAPTER.json", "CACHE/figures/CHAPTER/"] {
        let written = path.replace("CACHE", cache).replace("CHAPTER", "${{ matrix.chapter }}");
        assert!(workflow.contains(&written), "{written} is not uploaded");
    }
    let uploaded = ["target/tangle/cache/CHAPTER.json", "target/tangle/cache/figures/CHAPTER/"];
    let shard = dir.path().join("shard");
    copy_checkout(&book, &shard);
    let out = tangle(&shard, &["--root", ".", "test", "--chapter", "ch01"], true);
    assert!(out.status.success(), "the test job of ch01 failed:\n{}", text(&out));
    let book_job = dir.path().join("book-job");
    copy_checkout(&book, &book_job);
    for path in uploaded.map(|p| p.replace("CHAPTER", "ch01")) {
        let from = shard.join(path.trim_end_matches('/'));
        assert!(from.exists(), "the test job left no {path} to upload");
        copy_checkout(&from, &book_job.join(path.trim_end_matches('/')));
    }
    let out = tangle(&book_job, &["--root", ".", "book"], true);
    assert!(out.status.success(), "the book job failed:\n{}", text(&out));
    let report = text(&out);
    assert!(report.contains("ch01: ") && report.contains("(cached run)"), "{report}");
    assert!(!report.contains("building") && !report.contains("running"), "the book job ran again:\n{report}");

    // A test cell that fails is reported at the chapter line of its assertion.
    let chapter = book.join("src/ch01.md");
    let source = std::fs::read_to_string(&chapter).unwrap();
    let broken = source.replacen("Ok(250.0)", "Ok(251.0)", 1);
    assert_ne!(broken, source);
    std::fs::write(&chapter, &broken).unwrap();
    let line = broken.lines().position(|l| l.contains("Ok(251.0)")).unwrap() + 1;
    let out = tangle(&book, &["test"], false);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report = text(&out);
    assert!(report.contains(&format!("src/ch01.md:{line}")), "no chapter line {line} in:\n{report}");
    assert!(report.contains("zero_years_leave_the_principal_alone"), "{report}");
    assert!(closing_line(&out).contains(" 1 failed"), "{}", closing_line(&out));
}

/// The workflow's first job lists the chapters for the matrix without tangle installed: run
/// its script in a book whose chapters are named in every way tangle accepts (a file name
/// that is no crate name, a subfolder, cells only in a block quote, a chapter whose only cell
/// is `ignore`d), and compare with the chapters tangle tests there.
fn chapter_list_names_crates_as_tangle_does(workflow: &str) {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped the workflow's chapter list: no `python3` on the PATH (GitHub's runners have it)");
        return;
    }
    let script = list_script(workflow);
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path();
    std::fs::create_dir_all(book.join("src/part1")).unwrap();
    std::fs::write(book.join("book.toml"), "[book]\ntitle = \"List\"\n").unwrap();
    let chapters = [
        ("ch01.md", "# One\n\n```rust\nprintln!(\"1\");\n```\n"),
        ("chapter-two.md", "# Two\n\n  ~~~~rust\nlet x = 1;\n~~~~\n"),
        ("part1/1 Intro.md", "# Intro\n\n> ```rust\n> println!(\"quoted\");\n> ```\n"),
        ("ign.md", "# Ignored\n\n```rust,ignore\nnot compiled\n```\n"),
        ("notes.md", "# Notes\n"),
    ];
    let mut summary = String::from("# Summary\n\n");
    for (file, body) in chapters {
        std::fs::write(book.join("src").join(file), body).unwrap();
        summary += &format!("- [{file}](<{file}>)\n");
    }
    std::fs::write(book.join("src/SUMMARY.md"), summary).unwrap();
    let out = tangle(book, &["sync"], false);
    assert!(out.status.success(), "{}", text(&out));
    let run = || list_step(&script, book);
    // The chapters tangle tests: `--chapter` accepts each listed name, and no other exists.
    let listed = run()["list"].clone();
    assert_eq!(listed, "[\"ch01\", \"ch1_intro\", \"chapter_two\"]");
    let out = tangle(book, &["check", "--chapter", "ign"], false);
    assert!(!out.status.success() && text(&out).contains("no chapter named `ign`"), "{}", text(&out));

    // A book that names another folder for its crates: they are listed from there.
    let toml = "[book]\ntitle = \"List\"\n\n[preprocessor.tangle]\ncode = \"crates\"\n";
    std::fs::write(book.join("book.toml"), toml).unwrap();
    std::fs::remove_dir_all(book.join("code")).unwrap();
    let out = tangle(book, &["sync"], false);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(run()["list"], listed, "the crates under crates/");

    // A book with no notebook chapter yet lists none; a matrix may not be empty, so the test
    // job is skipped on exactly that list, and the jobs after it run without it.
    std::fs::remove_dir_all(book.join("crates")).unwrap();
    let empty = run()["list"].clone();
    assert_eq!(job_condition(workflow, "test"), format!("needs.chapters.outputs.list != '{empty}'"));
    let after_tests = "${{ !cancelled() && !failure() }}";
    assert_eq!(job_condition(workflow, "book"), after_tests);
    // Nor are there runs to download then (nor when every chapter is frozen), which some
    // versions of the download action fail on: the book job goes on and runs them itself.
    let download = workflow.split("uses: actions/download-artifact@").nth(1).expect("the download step");
    assert_eq!(download.lines().nth(1), Some("        continue-on-error: true"), "{download}");
    let publish = job_condition(workflow, "publish");
    assert!(
        publish.starts_with(&after_tests[..after_tests.len() - 3]) && publish.contains("refs/heads/main"),
        "{publish}"
    );
}

/// The workflow's list step: its script, taken from `workflow`.
fn list_script(workflow: &str) -> String {
    let (_, script) = workflow.split_once("shell: python3 {0}\n        run: |\n").expect("the list step");
    script.lines().take_while(|l| !l.trim().is_empty()).map(|l| format!("{}\n", &l[10..])).collect()
}

/// What the list step writes to `GITHUB_OUTPUT` when run in `book`, by name.
fn list_step(script: &str, book: &Path) -> std::collections::BTreeMap<String, String> {
    list_step_in(script, book, ".")
}

/// What the list step writes when run at a repository's top `top`, with the workflow's `BOOK`.
fn list_step_in(script: &str, top: &Path, book: &str) -> std::collections::BTreeMap<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let (file, output) = (dir.path().join("list.py"), dir.path().join("output"));
    std::fs::write(&file, script).unwrap();
    let mut python = Command::new("python3");
    python.arg(&file).current_dir(top).env("GITHUB_OUTPUT", &output).env("BOOK", book);
    let out = python.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let written = std::fs::read_to_string(&output).unwrap();
    written.lines().map(|l| l.split_once('=').expect("name=value")).map(|(k, v)| (k.into(), v.into())).collect()
}

/// The folders the workflow's jobs use, which its first job finds from `book.toml` without
/// tangle installed, are where tangle puts them: the crates (listed from, and the cache key of
/// the build), the runs the test jobs upload and the book job downloads, and the rendered
/// book that is published. In a book with book.toml at its root and with the defaults, in one
/// that names its own folders, and in this repository's layout (`book/book.toml` with
/// `root = ".."`: the project root is its parent).
#[test]
fn workflow_folders_are_tangle_s() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped the workflow's folders: no `python3` on the PATH (GitHub's runners have it)");
        return;
    }
    let workflow = include_str!("../template/github/book.yml");
    for used in [
        "workspaces: ${{ needs.chapters.outputs.code }} -> ${{ needs.chapters.outputs.code-to-work }}",
        "path: ${{ needs.chapters.outputs.cache }}\n",
        "path: ${{ needs.chapters.outputs.site }}\n",
    ] {
        assert!(workflow.contains(used), "the workflow does not use its first job's folders: {used}");
    }
    let script = list_script(workflow);
    let dir = tempfile::tempdir().unwrap();
    let chapter = "# One\n\n```rust\n// @save\npub const ONE: u8 = 1;\n```\n";
    let folders = |root: &Path, book_toml: &str| {
        let book = root.join(book_toml).parent().unwrap().to_path_buf();
        std::fs::create_dir_all(book.join("src")).unwrap();
        std::fs::write(book.join("src/SUMMARY.md"), "# Summary\n\n- [One](ch01.md)\n").unwrap();
        std::fs::write(book.join("src/ch01.md"), chapter).unwrap();
        let out = tangle(root, &["sync"], false);
        assert!(out.status.success(), "{}", text(&out));
        let found = list_step(&script, root);
        assert_eq!(found["list"], "[\"ch01\"]", "{book_toml}: {found:?}");
        // The crate was generated where the step looks, and the cache folder is inside the
        // target folder the build cache is keyed on.
        assert!(root.join(&found["code"]).join("ch01/src/lib.rs").is_file(), "{found:?}");
        let work = Path::new(&found["code"]).join(&found["code-to-work"]);
        assert_eq!(Path::new(&found["cache"]).parent(), Some(&*lexically(&work)), "{found:?}");
        (found["code"].clone(), found["cache"].clone(), found["site"].clone())
    };

    let root = dir.path().join("defaults");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("book.toml"), "[book]\ntitle = \"T\"\n").unwrap();
    let expected = ("code".into(), "target/tangle/cache".into(), "book".into());
    assert_eq!(folders(&root, "book.toml"), expected);

    let root = dir.path().join("own-folders");
    std::fs::create_dir_all(&root).unwrap();
    let toml = "[book]\ntitle = \"T\"\n\n[build]\nbuild-dir = \"site\"\n\n\
                [preprocessor.tangle]\ncode = \"crates\"\ntarget-dir = \"build\"\n";
    std::fs::write(root.join("book.toml"), toml).unwrap();
    let expected = ("crates".into(), "build/tangle/cache".into(), "site".into());
    assert_eq!(folders(&root, "book.toml"), expected);

    // book/book.toml, found from the folder above: the project is book.toml's folder, whatever
    // that folder is called, and everything of tangle's sits in it.
    let root = dir.path().join("in-a-folder-named-book");
    std::fs::create_dir_all(root.join("book")).unwrap();
    std::fs::write(root.join("book/book.toml"), "[book]\ntitle = \"T\"\n").unwrap();
    let expected = ("book/code".into(), "book/target/tangle/cache".into(), "book/book".into());
    assert_eq!(folders(&root, "book/book.toml"), expected);

    // root = "..": tangle's folders beside book/, the rendered book inside it.
    let root = dir.path().join("nested");
    std::fs::create_dir_all(root.join("book")).unwrap();
    std::fs::write(root.join("book/book.toml"), "[book]\ntitle = \"T\"\n\n[preprocessor.tangle]\nroot = \"..\"\n")
        .unwrap();
    let expected = ("code".into(), "target/tangle/cache".into(), "book/book".into());
    assert_eq!(folders(&root, "book/book.toml"), expected);
    // ... and a setting there is read from book/, as mdBook reads `src`.
    std::fs::write(
        root.join("book/book.toml"),
        "[book]\ntitle = \"T\"\n\n[preprocessor.tangle]\nroot = \"..\"\ncode = \"../crates\"\n",
    )
    .unwrap();
    std::fs::remove_dir_all(root.join("code")).unwrap();
    assert_eq!(folders(&root, "book/book.toml").0, "crates");
}

/// `path` with its `..` components taken out against the ones before them, as Python's
/// `os.path.normpath` does.
fn lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// The `if:` of one job of the workflow.
fn job_condition<'a>(workflow: &'a str, job: &str) -> &'a str {
    let (_, rest) = workflow.split_once(&format!("\n  {job}:\n")).unwrap_or_else(|| panic!("no job {job}"));
    rest.lines()
        .take_while(|l| l.starts_with("    ") || l.trim().is_empty() || l.trim_start().starts_with('#'))
        .find_map(|l| l.strip_prefix("    if: "))
        .unwrap_or_else(|| panic!("job {job} has no condition"))
}

/// A copy of `from` (a file, or a folder without its `target/`), as a fresh checkout has it.
fn copy_checkout(from: &Path, to: &Path) {
    if from.is_file() {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap();
        return;
    }
    for entry in walkdir::WalkDir::new(from).into_iter().filter_entry(|e| e.file_name() != "target") {
        let entry = entry.unwrap();
        let target = to.join(entry.path().strip_prefix(from).unwrap());
        match entry.file_type().is_dir() {
            true => std::fs::create_dir_all(&target).unwrap(),
            false => {
                std::fs::copy(entry.path(), &target).unwrap();
            }
        }
    }
}

/// A plain mdBook, as `mdbook init` leaves it plus one chapter with cells.
fn plain_mdbook(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("book.toml"), "[book]\ntitle = \"Plain\"\n").unwrap();
    std::fs::write(dir.join("src/SUMMARY.md"), "# Summary\n\n- [Sums](sums.md)\n").unwrap();
    std::fs::write(
        dir.join("src/sums.md"),
        "# Sums\n\n```rust\n// @save\npub fn tri(n: u64) -> u64 {\n    n * (n + 1) / 2\n}\n```\n\n\
         ```rust\nprintln!(\"tri(10) = {}\", tri(10));\n```\n\n```output\ntri(10) = 55\n```\n",
    )
    .unwrap();
}

#[test]
fn init_adopts_a_plain_mdbook_without_touching_its_chapters() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("plain");
    plain_mdbook(&book);
    let before = std::fs::read(book.join("src/sums.md")).unwrap();
    let out = tangle(&book, &["init"], false);
    assert!(out.status.success(), "tangle init failed:\n{}", text(&out));
    assert_eq!(std::fs::read(book.join("src/sums.md")).unwrap(), before, "init changed a chapter");
    let toml = std::fs::read_to_string(book.join("book.toml")).unwrap();
    assert!(toml.starts_with("[book]\ntitle = \"Plain\"\n"), "{toml}");
    assert!(toml.contains("[preprocessor.tangle]") && toml.contains("theme/tangle.css"), "{toml}");
    assert!(std::fs::read_to_string(book.join(".gitignore")).unwrap().contains("/target/"));
    let out = tangle(&book, &["check"], false);
    assert!(out.status.success(), "check after init failed:\n{}", text(&out));
    assert!(book.join("code/sums/src/lib.rs").is_file(), "the chapter's crate is `sums`");
    let out = tangle(&book, &["book"], false);
    assert!(out.status.success(), "book after init failed:\n{}", text(&out));
    // A second init changes nothing.
    let toml_before = std::fs::read(book.join("book.toml")).unwrap();
    assert!(tangle(&book, &["init"], false).status.success());
    assert_eq!(std::fs::read(book.join("book.toml")).unwrap(), toml_before);
}

#[test]
fn books_sharing_a_target_folder_each_run_their_own_chapter() {
    let dir = tempfile::tempdir().unwrap();
    // Two books with a chapter of the same name (so the same package names) in one target
    // folder, each printing its own name.
    let book = |name: &str| {
        let book = dir.path().join(name);
        std::fs::create_dir_all(book.join("src")).unwrap();
        std::fs::write(book.join("book.toml"), "[book]\ntitle = \"Twin\"\n").unwrap();
        std::fs::write(book.join("src/SUMMARY.md"), "# Summary\n\n- [Twin](twin.md)\n").unwrap();
        book
    };
    let say = |book: &Path, words: &str| {
        let chapter = format!("# Twin\n\n```rust\nprintln!(\"{words}\");\n```\n\n```output\n{words}\n```\n");
        std::fs::write(book.join("src/twin.md"), chapter).unwrap();
    };
    let check = |book: &Path, args: &[&str]| {
        let out = tangle(book, args, false);
        assert!(out.status.success(), "{} {args:?} ran another book's program?\n{}", book.display(), text(&out));
    };
    let (a, b) = (book("a"), book("b"));
    say(&a, "book a");
    say(&b, "book b");
    // accept writes what the program printed: another book's program would show in the prose.
    check(&a, &["accept"]);
    check(&b, &["accept"]);
    // An edit in the first book: cargo must not take the second book's build for it.
    say(&a, "book a, edited");
    check(&a, &["accept"]);
    let prose = std::fs::read_to_string(a.join("src/twin.md")).unwrap();
    assert!(prose.contains("```output\nbook a, edited\n```"), "{prose}");
    check(&a, &["check"]);
    // The second book, unchanged since it was built, run afresh after the first book's build.
    check(&b, &["check", "--rerun"]);
    // Both at once, a few times: neither may build or run while the other does (one would run
    // the other's program, which cargo names by the chapter alone, and cache its output).
    for round in 0..3 {
        let (a, b) = (a.clone(), b.clone());
        let other = std::thread::spawn(move || tangle(&b, &["check", "--rerun"], false));
        let mine = tangle(&a, &["check", "--rerun"], false);
        let theirs = other.join().unwrap();
        assert!(mine.status.success(), "round {round}: book a ran book b's program?\n{}", text(&mine));
        assert!(theirs.status.success(), "round {round}: book b ran book a's program?\n{}", text(&theirs));
    }
}

/// A book made with mdBook 0.4, whose `mdbook init` wrote `multilingual = false`, a key mdBook
/// 0.5 refuses: `check` says so at its line, and `init` upgrades it, after which it builds.
#[test]
fn a_book_of_mdbook_0_4_is_pointed_at_its_old_keys_and_init_upgrades_them() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("old");
    plain_mdbook(&book);
    let old = "[book]\nauthors = [\"Me\"]\nlanguage = \"en\"\nmultilingual = false\nsrc = \"src\"\ntitle = \"Old\"\n";
    std::fs::write(book.join("book.toml"), old).unwrap();
    let out = tangle(&book, &["check"], false);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let report = text(&out);
    assert!(report.contains("mdBook cannot read book.toml: unknown field `multilingual`"), "{report}");
    assert!(report.contains("--> book.toml:4:1") && report.contains("delete the line"), "{report}");
    let out = tangle(&book, &["init"], false);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("for mdBook 0.5, removed `[book] multilingual`"), "{}", text(&out));
    let toml = std::fs::read_to_string(book.join("book.toml")).unwrap();
    assert!(
        toml.starts_with("[book]\nauthors = [\"Me\"]\nlanguage = \"en\"\nsrc = \"src\"\ntitle = \"Old\"\n"),
        "{toml}"
    );
    let out = tangle(&book, &["book"], false);
    assert!(out.status.success(), "book after init failed:\n{}", text(&out));
}

#[test]
fn init_on_a_book_it_refuses_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("plain");
    plain_mdbook(&book);
    // rustdoc's `should_panic` in a book of notebook chapters (no `cells = "examples"`).
    std::fs::write(book.join("src/sums.md"), "# Sums\n\n```rust,should_panic\npanic!(\"no\");\n```\n").unwrap();
    let list = |dir: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        let mut files: Vec<_> = walkdir::WalkDir::new(dir)
            .into_iter()
            .map(Result::unwrap)
            .filter(|e| e.file_type().is_file())
            .map(|e| (e.path().to_path_buf(), std::fs::read(e.path()).unwrap()))
            .collect();
        files.sort();
        files
    };
    let before = list(dir.path());
    let out = tangle(&book, &["init"], false);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("src/sums.md:3"), "the refusal names the chapter line:\n{}", text(&out));
    assert!(text(&out).contains("1 mistake(s) in the chapters; nothing was written"), "{}", text(&out));
    assert_eq!(list(dir.path()), before, "a refused init changed or added files");

    // A whole book of rustdoc examples read as notebook cells: the first mistakes show the
    // pattern, the rest are counted, not printed.
    let mut summary = std::fs::read_to_string(book.join("src/SUMMARY.md")).unwrap();
    for n in 0..24 {
        std::fs::write(book.join(format!("src/ex{n}.md")), "# Ex\n\n```rust,should_panic\npanic!(\"no\");\n```\n")
            .unwrap();
        summary += &format!("- [Ex](ex{n}.md)\n");
    }
    std::fs::write(book.join("src/SUMMARY.md"), summary).unwrap();
    let before = list(dir.path());
    let out = tangle(&book, &["init"], false);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let report = text(&out);
    assert_eq!(report.matches("unknown attribute `should_panic`").count(), 20, "{report}");
    assert!(report.contains("... and 5 more in 5 file(s), not shown"), "{report}");
    assert!(report.contains("25 mistake(s) in the chapters; nothing was written"), "{report}");
    assert_eq!(list(dir.path()), before, "a refused init changed or added files");
    for n in 0..24 {
        std::fs::remove_file(book.join(format!("src/ex{n}.md"))).unwrap();
    }

    // A book that keeps listings of its own in `code/`, where tangle would put its crates: init
    // says how to give tangle another folder, and does so once told.
    let listing = book.join("code/add.rs");
    std::fs::remove_file(book.join("src/sums.md")).unwrap();
    plain_mdbook(&book);
    std::fs::create_dir_all(book.join("code")).unwrap();
    std::fs::write(&listing, "fn add(a: i32, b: i32) -> i32 { a + b }\n").unwrap();
    // (Its cache under target/, the build output, aside.)
    let book_files = || -> Vec<(PathBuf, Vec<u8>)> {
        list(dir.path()).into_iter().filter(|(p, _)| !p.starts_with(book.join("target"))).collect()
    };
    let before = book_files();
    let out = tangle(&book, &["init"], false);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let report = text(&out);
    assert!(report.contains("code/ already holds files that are not tangle's (code/add.rs)"), "{report}");
    assert!(report.contains("code = \"crates\"") && report.contains("nothing of the book was changed"), "{report}");
    assert_eq!(book_files(), before, "a refused init changed or added files");
    let toml = std::fs::read_to_string(book.join("book.toml")).unwrap();
    std::fs::write(book.join("book.toml"), toml + "\n[preprocessor.tangle]\ncode = \"crates\"\n").unwrap();
    let out = tangle(&book, &["init"], false);
    assert!(out.status.success(), "{}", text(&out));
    assert!(book.join("crates/sums/src/lib.rs").is_file());
    assert_eq!(std::fs::read_to_string(&listing).unwrap(), "fn add(a: i32, b: i32) -> i32 { a + b }\n");
}

#[test]
fn a_folder_that_is_no_book_says_how_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = tangle(dir.path(), &["check"], false);
    assert_eq!(out.status.code(), Some(2));
    let said = text(&out);
    assert!(said.contains("book.toml") && said.contains("tangle new") && said.contains("tangle init"), "{said}");
    let out = tangle(dir.path(), &["init"], false);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("no book.toml"), "{}", text(&out));
}

#[test]
fn a_stock_mdbook_build_runs_tangle_and_fails_with_its_message() {
    let Ok(version) = Command::new("mdbook").arg("--version").output() else {
        eprintln!("skipped: no `mdbook` binary on the PATH (`cargo install mdbook` installs the stock one)");
        return;
    };
    eprintln!("with {}", String::from_utf8_lossy(&version.stdout).trim());
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("plain");
    plain_mdbook(&book);
    assert!(tangle(&book, &["init"], false).status.success());
    // `[preprocessor.tangle]` names no command: mdBook runs `mdbook-tangle` from the PATH.
    let bin = Path::new(env!("CARGO_BIN_EXE_mdbook-tangle")).parent().unwrap().to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let mdbook = |dir: &Path| {
        Command::new("mdbook")
            .arg("build")
            .current_dir(dir)
            .env("PATH", &path)
            .env("TANGLE_TARGET_DIR", workspace_root().join("target/tangle-fixtures"))
            .env_remove("CI")
            .output()
            .expect("mdbook runs")
    };
    let out = mdbook(&book);
    assert!(out.status.success(), "mdbook build failed:\n{}", text(&out));
    let page = std::fs::read_to_string(book.join("book/sums.html")).unwrap();
    assert!(page.contains("tangle-output"), "the preprocessor rendered the output block");

    // A drifted output: mdBook stops with tangle's message instead of publishing the page.
    let chapter = book.join("src/sums.md");
    let source = std::fs::read_to_string(&chapter).unwrap();
    std::fs::write(&chapter, source.replace("tri(10) = 55", "tri(10) = 56")).unwrap();
    let out = mdbook(&book);
    assert!(!out.status.success(), "mdbook build passed a drifted chapter:\n{}", text(&out));
    let said = text(&out);
    assert!(said.contains("src/sums.md") && said.contains("drift"), "{said}");
    // What `tangle book` refuses to render stops mdBook too: a reference to no figure would be
    // published as its directive's text.
    std::fs::write(&chapter, format!("{source}\nAs {{{{#ref fig:nosuch}}}} shows.\n")).unwrap();
    let out = mdbook(&book);
    assert!(!out.status.success(), "mdbook build published a broken reference:\n{}", text(&out));
    let said = text(&out);
    assert!(said.contains("src/sums.md") && said.contains("fig:nosuch"), "{said}");
    std::fs::write(&chapter, &source).unwrap();

    // A book of examples, as `mdbook test` reads them: checked by the same preprocessor.
    let examples = dir.path().join("examples");
    std::fs::create_dir_all(examples.join("src")).unwrap();
    std::fs::write(
        examples.join("book.toml"),
        "[book]\ntitle = \"Ex\"\n\n[preprocessor.tangle]\ncells = \"examples\"\n",
    )
    .unwrap();
    std::fs::write(examples.join("src/SUMMARY.md"), "# Summary\n\n- [Ex](ex.md)\n").unwrap();
    let chapter = examples.join("src/ex.md");
    std::fs::write(
        &chapter,
        "# Ex\n\n```rust\nprintln!(\"{}\", 6 * 7);\n```\n\n```output\n42\n```\n\n```rust,should_panic\nlet v: Vec<u8> = Vec::new();\nlet _ = v[1];\n```\n",
    )
    .unwrap();
    let out = tangle(&examples, &["init"], false);
    assert!(out.status.success(), "{}", text(&out));
    // It speaks of examples, not of notebook cells.
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("1 chapter(s) with Rust examples") && !said.contains("cells"), "{said}");
    let out = mdbook(&examples);
    assert!(out.status.success(), "mdbook build failed on a clean book of examples:\n{}", text(&out));
    let source = std::fs::read_to_string(&chapter).unwrap();
    for (broken, says) in [
        (source.replace("```output\n42\n", "```output\n43\n"), "drift"),
        (source.replace("let _ = v[1];", "let _ = v.len();"), "should_panic"),
    ] {
        std::fs::write(&chapter, &broken).unwrap();
        let out = mdbook(&examples);
        assert!(!out.status.success(), "mdbook build published a failing example ({says}):\n{}", text(&out));
        let said = text(&out);
        assert!(said.contains("src/ex.md") && said.contains(says), "{said}");
    }
}

/// Builds between releases share a version number: built in a checkout of tangle, `--version`
/// also names the commit, so that two machines' tangles can be told apart.
#[test]
fn the_version_names_the_commit_a_build_in_a_checkout_comes_from() {
    let out = tangle(&workspace_root(), &["--version"], false);
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(said.starts_with(&format!("tangle {}", env!("CARGO_PKG_VERSION"))), "{said}");
    // The preprocessor binary names the same build, under its own name.
    let preprocessor = Command::new(env!("CARGO_BIN_EXE_mdbook-tangle")).arg("--version").output().unwrap();
    assert!(preprocessor.status.success(), "{}", text(&preprocessor));
    assert_eq!(String::from_utf8_lossy(&preprocessor.stdout).trim(), said.replacen("tangle", "mdbook-tangle", 1));
    let git = |args: &[&str]| Command::new("git").args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().ok();
    let tracked = git(&["ls-files", "--error-unmatch", "build.rs"]).is_some_and(|o| o.status.success());
    match git(&["rev-parse", "--short=9", "HEAD"]).filter(|o| o.status.success() && tracked) {
        Some(head) => {
            let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
            assert!(said.ends_with(&format!("(commit {head})")), "{said} is not HEAD {head}");
        }
        None => {
            eprintln!("not a git checkout of tangle (or no git): the version is the package's alone");
            assert_eq!(said, format!("tangle {}", env!("CARGO_PKG_VERSION")));
        }
    }
}

/// GitHub runs only the workflows at the top of a repository: a book made in a folder of one
/// (a project's `docs/`) gets its workflow there, told where the book is, and says so.
#[test]
fn a_new_book_inside_a_repository_gets_its_workflow_at_the_top() {
    let git = |dir: &Path, args: &[&str]| Command::new("git").args(args).current_dir(dir).output();
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().join("project");
    std::fs::create_dir_all(&top).unwrap();
    if !git(&top, &["init", "-q"]).is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: git is not installed");
        return;
    }
    let out = tangle(&top, &["new", "docs"], true);
    assert!(out.status.success(), "tangle new failed:\n{}", text(&out));
    let said = text(&out);
    assert!(said.contains("commit it to the git repository at") && !said.contains("(git init)"), "{said}");
    assert!(!top.join("docs/.github").exists(), "a workflow GitHub never runs");
    let workflow = std::fs::read_to_string(top.join(".github/workflows/book.yml")).unwrap();
    assert!(workflow.contains("BOOK: \"docs\""), "{workflow}");
    assert!(workflow.contains("tangle --root \"$BOOK\" test --chapter"), "{workflow}");
    if Command::new("python3").arg("--version").output().is_ok() {
        let found = list_step_in(&list_script(&workflow), &top, "docs");
        assert_eq!(found["list"], "[\"ch01\"]", "{found:?}");
        assert!(top.join(&found["code"]).join("ch01/src/lib.rs").is_file(), "{found:?}");
    }
    let readme = std::fs::read_to_string(top.join("docs/README.md")).unwrap();
    assert!(readme.contains("`.github/workflows/book.yml` at the repository's top"), "{readme}");
}
