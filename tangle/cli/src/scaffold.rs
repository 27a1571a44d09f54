//! Starting a book: `tangle new PATH` writes a complete small book (mdBook's layout, one chapter
//! that shows every feature once, a bibliography, a `.gitignore`, a GitHub Actions workflow
//! and a README), then generates, builds and runs it once, so that the folder holds everything
//! CI needs to pass as it is: the generated crates and their lock file, the theme, the figure
//! and the snapshots. `tangle init` adopts an existing mdBook: it adds tangle's lines to
//! `book.toml` (editing it in place, comments and order kept) and to `.gitignore`, writes the
//! generated files and the snapshots of the output blocks, and touches no chapter.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use tangle_core::fsutil::write_atomic;
use tangle_core::messages;
use tangle_core::pipeline::{self, CheckOptions, Outcome, Writes};

use crate::report::{self, CLEAN, Results};

/// The template's files: path in the new book, contents.
const TEMPLATE: &[(&str, &str)] = &[
    ("book.toml", include_str!("../template/book.toml")),
    ("src/SUMMARY.md", include_str!("../template/src/SUMMARY.md")),
    ("src/introduction.md", include_str!("../template/src/introduction.md")),
    ("src/ch01.md", include_str!("../template/src/ch01.md")),
    ("references.yaml", include_str!("../template/references.yaml")),
    ("README.md", include_str!("../template/README.md")),
    (".gitignore", include_str!("../template/gitignore")),
    (".github/workflows/book.yml", include_str!("../template/github/book.yml")),
];

/// `tangle new PATH`: a new book in `path`, which must not exist or be empty.
pub fn new(path: &Path) -> anyhow::Result<u8> {
    if path.exists() && std::fs::read_dir(path).map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!(
            "{} exists and is not empty: `{}` makes a new folder (in an existing mdBook, run `{}` there)",
            path.display(),
            messages::command("new"),
            messages::command("init")
        );
    }
    // `tangle new .` (or `..`) names the folder it is in: its title comes from that name.
    let absolute = std::path::absolute(path).map(|p| tangle_core::config::normalize(&p)).ok();
    let title = absolute
        .as_deref()
        .unwrap_or(path)
        .file_name()
        .and_then(|n| n.to_str())
        .map(title_of)
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "My Book".into());
    let install = Install::of_this_binary();
    // GitHub runs only the workflows at the top of a repository: a book made inside one (a
    // project's `docs/`) gets its workflow there, told where the book is.
    let workflow = absolute.as_deref().and_then(repository_of);
    let workflow_file = match &workflow {
        Some((top, _)) => workflow_path(top, &title),
        None => path.join(".github/workflows/book.yml"),
    };
    let book_dir = workflow.as_ref().map_or(".".to_string(), |(_, dir)| dir.clone());
    // The workflow as the book's README names it: from the repository's top when it lies there.
    let shown_workflow = match &workflow {
        Some((top, _)) => {
            let rel = workflow_file.strip_prefix(top).unwrap_or(&workflow_file);
            format!("`{}` at the repository's top", tangle_core::fsutil::slashed(rel))
        }
        None => "`.github/workflows/book.yml`".to_string(),
    };
    for (rel, text) in TEMPLATE {
        let text = text
            .replace("title = \"My Book\"", &format!("title = {}", toml_string(&title)))
            .replace("# My Book\n", &format!("# {title}\n"))
            .replace("TANGLE_INSTALL_STEP", &install.workflow_step())
            .replace("TANGLE_BOOK_DIR", &toml_string(&book_dir))
            .replace("CI (`.github/workflows/book.yml`)", &format!("CI ({shown_workflow})"))
            .replace("TANGLE_README_INSTALL", &install.readme_line());
        let file = if rel.starts_with(".github/") { workflow_file.clone() } else { path.join(rel) };
        write_atomic(&file, text.as_bytes()).with_context(|| format!("cannot write {}", file.display()))?;
    }
    if workflow.is_some() {
        eprintln!("wrote {}: GitHub runs a repository's workflows from its top folder", workflow_file.display());
    }
    eprintln!("wrote a new book in {}", path.display());
    // Generate, build and run it once, writing what the code prints (the figure, the snapshots,
    // the lock file), so that the book passes `tangle test` on CI as it is. The book is new:
    // nothing the author wrote is rewritten, on CI or not.
    let project = crate::load_project(path)?;
    let chapters = project.select(&[])?;
    let options = CheckOptions { writes: Writes::Allow, ..CheckOptions::default() };
    let outcome = crate::check(&project, &chapters, options)?;
    let code = report::report(&project, &outcome, true, Results::Stderr)?;
    if let Outcome::Ran(results) = &outcome {
        pipeline::accept(&project, results, Writes::Allow)?;
    }
    if code != CLEAN {
        bail!(
            "the new book is written to {} but does not check yet (see above: a build that could not reach \
             crates.io, or a toolchain older than the template needs); fix that, then run `{}` there",
            path.display(),
            messages::command("check")
        );
    }
    if !install.reachable {
        eprintln!(
            "note: this tangle was installed from a local folder, so the README and the CI workflow install \
             mdbook-tangle {} from crates.io; if it is not published there, point them at its repository",
            env!("CARGO_PKG_VERSION")
        );
    }
    let shown = path.display();
    // No `cd` to take when the book is the folder the author is in.
    let here =
        absolute.is_some() && absolute == std::env::current_dir().ok().map(|p| tangle_core::config::normalize(&p));
    let cd = if here { String::new() } else { format!("    cd {shown}\n") };
    // A book made inside a repository (a project's docs) is committed there, not `git init`-ed.
    let git = match tangle_core::git::work_tree(path) {
        Some(top) => format!("Then commit it to the git repository at {}", top.display()),
        None => "Then put it under version control (git init)".to_string(),
    };
    println!(
        "created {shown}\n\nNext:\n{cd}    {}      # the HTML book, in book/index.html\n    {}      # everything CI checks\n\n\
         {git} with the generated code/, figures/, snapshots/\n\
         and theme/: CI checks that they are current.",
        messages::command("book"),
        messages::command("test")
    );
    Ok(CLEAN)
}

/// How the book's README and CI install tangle: from where `cargo install` took this binary.
struct Install {
    command: String,
    /// Whether CI can reach that source (crates.io, a git repository); not a local folder.
    reachable: bool,
}

impl Install {
    /// The source cargo recorded for this binary in `$CARGO_HOME/.crates2.json`: crates.io at
    /// its version, or a git repository at its commit. Installed from a folder (or not
    /// installed), the crates.io line at this version, marked as a guess.
    fn of_this_binary() -> Install {
        let version = env!("CARGO_PKG_VERSION");
        let recorded = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::home_dir().map(|h| h.join(".cargo")))
            .and_then(|home| std::fs::read_to_string(home.join(".crates2.json")).ok())
            .and_then(|text| Install::recorded_source(&text, version));
        match recorded {
            Some(command) => Install { command, reachable: true },
            None => Install {
                command: format!("cargo install --locked mdbook-tangle --version {version}"),
                reachable: false,
            },
        }
    }

    /// `cargo install` for the `mdbook-tangle VERSION (SOURCE)` entry of cargo's install
    /// record, when SOURCE is one CI can reach.
    fn recorded_source(crates2: &str, version: &str) -> Option<String> {
        let record: serde_json::Value = serde_json::from_str(crates2).ok()?;
        let key = record.get("installs")?.as_object()?.keys().find(|k| k.starts_with("mdbook-tangle "))?;
        let (installed, source) = key.strip_prefix("mdbook-tangle ")?.split_once(' ')?;
        let source = source.strip_prefix('(')?.strip_suffix(')')?;
        if installed != version {
            return None;
        }
        if source.starts_with("registry+") || source.starts_with("sparse+") {
            return Some(format!("cargo install --locked mdbook-tangle --version {version}"));
        }
        let git = source.strip_prefix("git+")?;
        let (url, rev) = git.split_once('#')?;
        let url = url.split('?').next()?;
        Some(format!("cargo install --locked --git {url} --rev {rev} mdbook-tangle"))
    }

    /// The README's sentence, with the same caveat when the source is a guess.
    fn readme_line(&self) -> String {
        match self.reachable {
            true => format!("`{}`.", self.command),
            false => format!(
                "`{}`, or, if that version is not on crates.io, from the tool's repository \
                 (`cargo install --locked --git URL mdbook-tangle`).",
                self.command
            ),
        }
    }

    /// The workflow's step, with a warning in it when the source is a guess.
    fn workflow_step(&self) -> String {
        let warning = match self.reachable {
            true => String::new(),
            false => "      # The tangle that made this book was installed from a local folder, which CI cannot\n\
                      \x20     # reach: if this version is not on crates.io, install it from its repository\n\
                      \x20     # (`cargo install --locked --git URL mdbook-tangle`).\n"
                .to_string(),
        };
        format!("{warning}      - name: Install tangle\n        run: {}", self.command)
    }
}

/// The top of the git repository a new book at `book` (absolute) goes into, and the book's
/// folder from there (`docs`, or `.` for the top itself), when its parent folder is in one.
fn repository_of(book: &Path) -> Option<(PathBuf, String)> {
    let parent = book.parent().filter(|p| p.is_dir())?.canonicalize().ok()?;
    let top = tangle_core::git::work_tree(&parent)?;
    let top = top.canonicalize().unwrap_or(top);
    let folder = parent.join(book.file_name()?);
    let rel = tangle_core::fsutil::slashed(folder.strip_prefix(&top).ok()?);
    Some((top, if rel.is_empty() { ".".to_string() } else { rel }))
}

/// Where a book's workflow goes at the top of an existing repository: `book.yml`, or a name
/// of its own beside a workflow of that name.
fn workflow_path(top: &Path, title: &str) -> PathBuf {
    let dir = top.join(".github/workflows");
    let plain = dir.join("book.yml");
    match plain.exists() {
        false => plain,
        true => {
            let slug: String = title.to_lowercase().split_whitespace().collect::<Vec<_>>().join("-");
            (1..)
                .map(|n| dir.join(if n == 1 { format!("{slug}-book.yml") } else { format!("{slug}-book-{n}.yml") }))
                .find(|p| !p.exists())
                .unwrap_or(plain)
        }
    }
}

/// `my-first_book` → `My First Book`.
fn title_of(name: &str) -> String {
    name.split(['-', '_', ' '])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut chars = w.chars();
            chars.next().map(|c| c.to_uppercase().chain(chars).collect::<String>()).unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A TOML basic string, quoted and escaped by toml's own writer.
fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// `tangle init` in the folder holding an mdBook's `book.toml`.
pub fn init(dir: &Path) -> anyhow::Result<u8> {
    let book_toml = dir.join("book.toml");
    if !book_toml.is_file() {
        bail!(
            "no book.toml in {}: `{}` adopts an existing mdBook (run it where book.toml is); to start a book, run `{}`",
            dir.display(),
            messages::command("init"),
            messages::command("new PATH")
        );
    }
    let text = std::fs::read_to_string(&book_toml).context("cannot read book.toml")?;
    // Everything that can refuse the book (its configuration, a chapter tangle cannot read,
    // cells that do not generate) does so before anything is written.
    let project = crate::load_project(dir)?;
    let config = &project.config;
    refuse_someone_s_code_folder(&project)?;
    let (css, js) = tangle_render::theme::entries(&config.layout);
    let (edited, upgraded) = edit_book_toml(&text, &css, &js)?;
    let mut changed = Vec::new();
    if edited != text {
        tangle_core::fsutil::replace_if_unchanged(&book_toml, text.as_bytes(), edited.as_bytes())?;
        changed.push("updated book.toml ([preprocessor.tangle], tangle's stylesheet and script)".to_string());
        changed.extend(upgraded.iter().map(|what| format!("  and, for mdBook 0.5, {what}")));
    }
    // At the project root, where the layout's paths start (book.toml's folder, or the one
    // above it that `root` names, and target/ sits there then).
    let layout = &config.layout;
    let ignore = [
        format!("/{}/", layout.target.display()),
        format!("/{}/", layout.build.display()),
        ".tangle-tmp-*".to_string(),
        "*.tangle-new".to_string(),
    ];
    let gitignore = layout.root.join(".gitignore");
    let verb = if gitignore.exists() { "updated" } else { "wrote" };
    if add_ignore_lines(&gitignore, &ignore)? {
        let shown = if layout.root == dir { ".gitignore".to_string() } else { gitignore.display().to_string() };
        changed.push(format!("{verb} {shown} (build output)"));
    }
    let fixed = project.sync(&tangle_core::generate::sync::Discard::Nothing)?;
    for (verb, what) in tangle_core::generate::sync::summary(&fixed, &project.generated, project.layout()) {
        eprintln!("{verb} {what}");
    }
    // The snapshots mirror the output blocks as the chapters have them now.
    let snapshots = project.layout().abs(&project.layout().snapshots);
    let mut written = 0;
    // Only notebook chapters are mirrored there (an examples chapter's outputs stay in its prose).
    let notebook = project.book.chapters.iter().filter(|c| c.mode == tangle_core::model::CellMode::Notebook);
    for chapter in notebook {
        written += tangle_core::snapshot::write(&snapshots, chapter)?;
    }
    if written > 0 {
        eprintln!("wrote {} ({written} output block(s))", project.layout().snapshots.display());
    }
    for c in &changed {
        println!("{c}");
    }
    let chapters: Vec<String> = project.book.chapters.iter().map(|c| c.path.display().to_string()).collect();
    // A book of rustdoc-style examples (`cells = "examples"`) has examples, not notebook cells.
    let examples = project.book.chapters.iter().all(|c| c.mode == tangle_core::model::CellMode::Examples)
        && (!chapters.is_empty() || config.cells == tangle_core::model::CellMode::Examples);
    let cells = if examples { "examples" } else { "cells" };
    let run = format!("build and run the {cells}, compare with the prose");
    let next = [
        (messages::command("check"), run.as_str()),
        (messages::command("test"), "everything CI checks"),
        (messages::command("book"), "the HTML book"),
    ];
    let width = next.iter().map(|(command, _)| command.len()).max().unwrap_or(0);
    let next: Vec<String> = next.iter().map(|(command, what)| format!("    {command:width$}    # {what}")).collect();
    println!(
        "tangle adopted this book: {} chapter(s) with Rust {cells} ({}); no chapter was changed.\n\nNext:\n{}",
        chapters.len(),
        if chapters.is_empty() { "none yet".to_string() } else { chapters.join(", ") },
        next.join("\n"),
    );
    Ok(CLEAN)
}

/// Refuses, before anything is written, a book whose folder for tangle's crates (`code/`, unless
/// `book.toml` names another) already holds files of the author's: many books keep their
/// listings in a `code/` folder, and tangle would refuse them at every command after (and its
/// `--discard` would delete them).
fn refuse_someone_s_code_folder(project: &tangle_core::pipeline::Project) -> anyhow::Result<()> {
    use tangle_core::generate::sync::Stale;
    let foreign: Vec<String> = project
        .stale()?
        .into_iter()
        .filter_map(|s| match s {
            Stale::Foreign(path) => Some(path.display().to_string()),
            _ => None,
        })
        .collect();
    if foreign.is_empty() {
        return Ok(());
    }
    let code = project.layout().code.display().to_string();
    const SHOWN: usize = 3;
    let more = match foreign.len() > SHOWN {
        true => format!(" and {} more", foreign.len() - SHOWN),
        false => String::new(),
    };
    bail!(
        "{code}/ already holds files that are not tangle's ({}{more}), and tangle generates the chapters' crates \
         there: give it a folder of its own by adding\n\n    [preprocessor.tangle]\n    code = \"crates\"\n\n\
         to book.toml, then run `{}` again (nothing of the book was changed)",
        foreign.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", "),
        messages::command("init")
    )
}

/// `book.toml` with `[preprocessor.tangle]` and the theme's stylesheet and script added where
/// they are missing, and the keys of mdBook 0.4 that mdBook 0.5 refuses upgraded ([`upgrade`]:
/// what was done to each); everything else (comments, order, formatting, line endings) as it was.
fn edit_book_toml(text: &str, css: &str, js: &str) -> anyhow::Result<(String, Vec<String>)> {
    // toml_edit writes `\n`: a file of `\r\n` lines is edited as `\n` and given its own back.
    let crlf = text.contains("\r\n");
    let (edited, upgraded) = edit_book_toml_lf(&text.replace("\r\n", "\n"), css, js)?;
    Ok((if crlf { edited.replace('\n', "\r\n") } else { edited }, upgraded))
}

/// Takes out (or renames) the keys mdBook 0.5 removed, which make it refuse the whole file: a
/// book made with mdBook 0.4 has some (its `mdbook init` wrote `multilingual = false`). Returns
/// what was done to each, for the author to read.
fn upgrade(doc: &mut toml_edit::DocumentMut) -> Vec<String> {
    let mut done = Vec::new();
    for removed in &tangle_render::MDBOOK_05_REMOVED {
        let (table, key) = (removed.table, removed.key);
        let mut path = table.split('.');
        let first = path.next().and_then(|t| doc.get_mut(t));
        let Some(found) = path.fold(first, |item, t| item?.get_mut(t)).and_then(|t| t.as_table_like_mut()) else {
            continue;
        };
        let Some(value) = found.remove(key) else { continue };
        done.push(match removed.renamed_to {
            // The author's own setting of the new key stands.
            Some(new) if found.contains_key(new) => format!("removed `[{table}] {key}` (`{new}` says the same)"),
            Some(new) => {
                found.insert(new, value);
                format!("renamed `[{table}] {key}` to `{new}`")
            }
            None => format!("removed `[{table}] {key}` ({})", removed.why),
        });
    }
    done
}

fn edit_book_toml_lf(text: &str, css: &str, js: &str) -> anyhow::Result<(String, Vec<String>)> {
    let mut doc: toml_edit::DocumentMut = text.parse().context("book.toml does not parse")?;
    let upgraded = upgrade(&mut doc);
    let preprocessor = doc.entry("preprocessor").or_insert_with(|| {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        toml_edit::Item::Table(t)
    });
    let preprocessor = preprocessor.as_table_mut().context("[preprocessor] in book.toml is not a table")?;
    let before = || toml_edit::value(toml_edit::Array::from_iter(["links"]));
    match preprocessor.get_mut("tangle").and_then(|t| t.as_table_like_mut()) {
        // The author's own table (with tangle's settings, say): it runs before `links` too.
        Some(tangle) => {
            if !tangle.contains_key("before") {
                tangle.insert("before", before());
            }
        }
        None => {
            let mut tangle = toml_edit::Table::new();
            tangle.insert("before", before());
            tangle.decor_mut().set_prefix(
                "\n# tangle checks the chapters' Rust cells against the outputs in the prose (`tangle check`).\n",
            );
            preprocessor.insert("tangle", toml_edit::Item::Table(tangle));
        }
    }
    let output = doc.entry("output").or_insert_with(|| {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        toml_edit::Item::Table(t)
    });
    let output = output.as_table_mut().context("[output] in book.toml is not a table")?;
    let html = output.entry("html").or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
    let html = html.as_table_like_mut().context("[output.html] in book.toml is not a table")?;
    for (key, entry) in [("additional-css", css), ("additional-js", js)] {
        let item = html.entry(key).or_insert(toml_edit::value(toml_edit::Array::new()));
        let array = item.as_array_mut().with_context(|| format!("`{key}` in book.toml is not an array"))?;
        let listed: Vec<PathBuf> = array.iter().filter_map(|v| v.as_str()).map(PathBuf::from).collect();
        if tangle_render::theme::missing(&listed, entry).is_some() {
            // First, so that a stylesheet of the author's, listed after it, overrides it; laid
            // out as the list is (one entry a line, or `, ` between them).
            let layout = array.get(0).and_then(|v| v.decor().prefix()).and_then(|p| p.as_str()).map(str::to_string);
            array.insert(0, entry);
            if let Some(prefix) = layout {
                if let Some(ours) = array.get_mut(0) {
                    ours.decor_mut().set_prefix(prefix.clone());
                }
                if !prefix.contains('\n')
                    && let Some(theirs) = array.get_mut(1)
                {
                    theirs.decor_mut().set_prefix(" ");
                }
            }
        }
    }
    Ok((doc.to_string(), upgraded))
}

/// Appends the `lines` missing from the `.gitignore` at `path` (creating it); true if it changed.
/// A folder's line counts as present when the file has it in any of the forms that ignore it
/// (`/target/`, `/target`, `target/`, `target`): an unanchored name ignores the folder at the
/// root too, and a path with a `/` inside is anchored with or without the leading one.
fn add_ignore_lines(path: &Path, lines: &[String]) -> anyhow::Result<bool> {
    let old = std::fs::read_to_string(path).unwrap_or_default();
    let bare = |l: &str| l.trim().trim_start_matches('/').trim_end_matches('/').to_string();
    let present: Vec<String> = old.lines().map(bare).collect();
    let missing: Vec<&String> = lines.iter().filter(|l| !present.contains(&bare(l))).collect();
    if missing.is_empty() {
        return Ok(false);
    }
    // In the file's own line endings.
    let nl = if old.contains("\r\n") { "\r\n" } else { "\n" };
    let mut new = old.clone();
    if !new.is_empty() && !new.ends_with('\n') {
        new.push_str(nl);
    }
    new.push_str("# tangle: build output and its cache, the HTML book, half-written temporary files");
    new.push_str(nl);
    for l in missing {
        new.push_str(l);
        new.push_str(nl);
    }
    write_atomic(path, new.as_bytes())?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_installs_tangle_from_where_cargo_installed_it() {
        let record = |source: &str| {
            format!(
                r#"{{"installs":{{"ripgrep 14.1.0 (registry+https://github.com/rust-lang/crates.io-index)":{{}},"mdbook-tangle 0.1.0 ({source})":{{}}}}}}"#
            )
        };
        let from = |source: &str| Install::recorded_source(&record(source), "0.1.0");
        assert_eq!(
            from("registry+https://github.com/rust-lang/crates.io-index").as_deref(),
            Some("cargo install --locked mdbook-tangle --version 0.1.0")
        );
        assert_eq!(
            from("git+https://example.org/tangle.git?branch=main#0123abc").as_deref(),
            Some("cargo install --locked --git https://example.org/tangle.git --rev 0123abc mdbook-tangle")
        );
        assert_eq!(from("path+file:///home/me/tangle/tangle/cli"), None, "a local folder CI cannot reach");
        assert_eq!(Install::recorded_source(&record("registry+x"), "0.2.0"), None, "another version than this");
        assert_eq!(Install::recorded_source("not json", "0.1.0"), None);
        let guess = Install { command: "cargo install x".into(), reachable: false };
        assert!(
            guess.workflow_step().contains("# reach: if this version is not on crates.io"),
            "{}",
            guess.workflow_step()
        );
        let known = Install { command: "cargo install x".into(), reachable: true };
        assert_eq!(known.workflow_step(), "      - name: Install tangle\n        run: cargo install x");
        assert_eq!(known.readme_line(), "`cargo install x`.");
        assert!(guess.readme_line().contains("if that version is not on crates.io"), "{}", guess.readme_line());
    }

    #[test]
    fn book_toml_gains_tangle_and_keeps_the_authors_lines() {
        let text = "# My notes\n[book]\ntitle = \"T\" # the title\n\n[output.html]\nadditional-css = [\"mine.css\"]\n";
        let (out, upgraded) = edit_book_toml(text, "theme/tangle.css", "theme/tangle.js").unwrap();
        assert!(upgraded.is_empty());
        assert!(out.starts_with("# My notes\n[book]\ntitle = \"T\" # the title\n"), "{out}");
        let parsed: toml::Table = toml::from_str(&out).unwrap();
        assert_eq!(parsed["preprocessor"]["tangle"]["before"][0].as_str(), Some("links"));
        let css: Vec<&str> =
            parsed["output"]["html"]["additional-css"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
        assert_eq!(css, ["theme/tangle.css", "mine.css"], "ours first, so the author's overrides it");
        assert_eq!(parsed["output"]["html"]["additional-js"][0].as_str(), Some("theme/tangle.js"));
        // A second run changes nothing.
        assert_eq!(edit_book_toml(&out, "theme/tangle.css", "theme/tangle.js").unwrap(), (out.clone(), vec![]));
        assert!(out.contains("additional-css = [\"theme/tangle.css\", \"mine.css\"]"), "{out}");
    }

    #[test]
    fn an_authors_own_tangle_table_keeps_its_settings_and_runs_before_links() {
        let text = "[book]\ntitle = \"T\"\n\n[preprocessor.tangle]\ncode = \"crates\"\n";
        let (out, _) = edit_book_toml(text, "theme/tangle.css", "theme/tangle.js").unwrap();
        let parsed: toml::Table = toml::from_str(&out).unwrap();
        assert_eq!(parsed["preprocessor"]["tangle"]["code"].as_str(), Some("crates"), "{out}");
        assert_eq!(parsed["preprocessor"]["tangle"]["before"][0].as_str(), Some("links"), "{out}");
        assert_eq!(edit_book_toml(&out, "theme/tangle.css", "theme/tangle.js").unwrap().0, out);
    }

    #[test]
    fn book_toml_keeps_its_line_endings_and_its_lists_layout() {
        let text = "[book]\r\ntitle = \"T\"\r\n\r\n[output.html]\r\nadditional-css = [\r\n    \"a.css\",\r\n    \"b.css\",\r\n]\r\n";
        let (out, _) = edit_book_toml(text, "theme/tangle.css", "theme/tangle.js").unwrap();
        assert_eq!(out.matches('\n').count(), out.matches("\r\n").count(), "every line ends in CRLF:\n{out:?}");
        assert!(out.starts_with("[book]\r\ntitle = \"T\"\r\n"), "{out:?}");
        assert!(
            out.contains("additional-css = [\r\n    \"theme/tangle.css\",\r\n    \"a.css\",\r\n    \"b.css\",\r\n]"),
            "one entry a line, as the list was:\n{out}"
        );
    }

    #[test]
    fn the_keys_mdbook_0_5_refuses_are_upgraded_and_mdbook_reads_the_result() {
        let text = "[book]\ntitle = \"T\"\nmultilingual = false\nsrc = \"src\"\n\n[output.html]\ncurly-quotes = true\n\
                    copy-fonts = true\ngoogle-analytics = \"UA-1\"\ngit-repository-url = \"https://example.org\"\n";
        assert!(tangle_render::mdbook_reads(text).is_err(), "mdBook 0.5 refuses it as it is");
        let (out, upgraded) = edit_book_toml(text, "theme/tangle.css", "theme/tangle.js").unwrap();
        tangle_render::mdbook_reads(&out).expect("mdBook 0.5 reads the upgraded file");
        let parsed: toml::Table = toml::from_str(&out).unwrap();
        assert_eq!(parsed["book"]["title"].as_str(), Some("T"));
        assert_eq!(parsed["output"]["html"]["smart-punctuation"].as_bool(), Some(true), "{out}");
        assert_eq!(parsed["output"]["html"]["git-repository-url"].as_str(), Some("https://example.org"));
        assert_eq!(upgraded.len(), 4, "{upgraded:?}");
        assert!(upgraded[0].contains("multilingual") && upgraded[1].contains("renamed"), "{upgraded:?}");
        // Where the book says it already, curly-quotes goes and the author's choice stays.
        let text = "[book]\ntitle = \"T\"\n[output.html]\nsmart-punctuation = false\ncurly-quotes = true\n";
        let (out, _) = edit_book_toml(text, "theme/tangle.css", "theme/tangle.js").unwrap();
        let parsed: toml::Table = toml::from_str(&out).unwrap();
        assert_eq!(parsed["output"]["html"]["smart-punctuation"].as_bool(), Some(false), "{out}");
        assert!(!out.contains("curly-quotes"), "{out}");
    }

    #[test]
    fn ignore_lines_are_added_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".gitignore");
        std::fs::write(&path, "*.log").unwrap();
        let lines = ["/target/".to_string(), "/book/".to_string()];
        assert!(add_ignore_lines(&path, &lines).unwrap());
        assert!(!add_ignore_lines(&path, &lines).unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("*.log\n") && text.contains("/target/\n/book/\n"), "{text}");
        // A file of CRLF lines gets CRLF lines.
        std::fs::write(&path, "*.log\r\n").unwrap();
        assert!(add_ignore_lines(&path, &lines).unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches('\n').count(), text.matches("\r\n").count(), "{text:?}");
        // A folder already ignored in another form (`cargo new` writes `/target`) is not added again.
        for form in ["/target", "target", "target/", " /target/ "] {
            std::fs::write(&path, format!("{form}\n/book\n")).unwrap();
            assert!(!add_ignore_lines(&path, &lines).unwrap(), "{form}");
        }
        std::fs::write(&path, "/target/debug/\n").unwrap();
        assert!(add_ignore_lines(&path, &lines).unwrap(), "a folder inside target/ is not target/");
    }

    #[test]
    fn titles_from_folder_names() {
        assert_eq!(title_of("my-first_book"), "My First Book");
        for title in ["A \"quoted\" title", "It's \\ odd", "plain"] {
            let parsed: toml::Table = toml::from_str(&format!("title = {}", toml_string(title))).unwrap();
            assert_eq!(parsed["title"].as_str(), Some(title), "{title} survives TOML quoting");
        }
    }
}
