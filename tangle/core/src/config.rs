//! The book's configuration and layout, read from one place: `book.toml`.
//!
//! A project is the folder holding `book.toml` (mdBook's default layout, chapters in `src/`),
//! or a folder above it that `root = ".."` names (this repository's layout: `book/book.toml`,
//! generated files beside `book/`). Nothing else moves the root, so what the generated files
//! say never depends on what a checkout's folders are called. The root says where messages
//! name files from, where chapter programs run and where tangle's folders sit by default;
//! every path `book.toml` gives is read relative to `book.toml`. tangle reads what mdBook
//! reads there (`[book] src`, `[build] build-dir`, `[rust] edition`) and its own table,
//! `[preprocessor.tangle]`, where mdBook users look for a preprocessor's settings:
//!
//! ```toml
//! [preprocessor.tangle]
//! root = ".."                # the project root, if above book.toml's folder
//! code = "code"              # the generated crates
//! figures = "figures"        # the figures the chapters draw
//! snapshots = "snapshots"    # one snapshot per output block
//! frozen = "frozen"          # the committed runs of frozen chapters
//! freeze = ["ch06"]          # chapters answered from their committed run (see `freeze`)
//! target-dir = "target"      # build output and tangle's cache (target-dir/tangle)
//! references = "references.yaml"
//! include-dirs = ["../listings"]  # folders outside book.toml's that `{{#include}}` may read
//! cells = "notebook"         # or "examples": every block a program of its own, as rustdoc
//! manifest = "Cargo.toml"    # optional: take the [dependencies] of an existing manifest
//! line-width = 100           # the style checks of `tangle test`; 0 turns the width check off
//! fmt = true
//! numbers = true
//!
//! [preprocessor.tangle.dependencies]   # Cargo's syntax; renamed packages too
//! rand_0_8 = { package = "rand", version = "0.8" }
//! ```
//!
//! A path given there is relative to the folder holding `book.toml` (as mdBook's `src` is);
//! the defaults put tangle's folders at the project root. [`Layout`] keeps every path relative
//! to the project root, where messages name files from.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, bail};

use crate::diagnostic::{Diagnostic, Location};
use crate::messages;

/// Where everything of a book lives. Paths are relative to [`Layout::root`] (they may start
/// with `..` when `book.toml` points outside it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The project root, absolute.
    pub root: PathBuf,
    /// The folder holding `book.toml`: `""` or `"book"`.
    pub book: PathBuf,
    /// The chapters: `[book] src` (mdBook's default `src`).
    pub src: PathBuf,
    /// The HTML book: `[build] build-dir` (mdBook's default `book`).
    pub build: PathBuf,
    /// The generated crates.
    pub code: PathBuf,
    pub figures: PathBuf,
    pub snapshots: PathBuf,
    /// The committed runs of frozen chapters, one file each (see [`crate::freeze`]).
    pub frozen: PathBuf,
    /// Build output; tangle keeps its cache, lock and chapter builds in `target/tangle`.
    pub target: PathBuf,
    /// The bibliography `[@key]` citations are looked up in (it need not exist).
    pub references: PathBuf,
    /// mdBook's theme folder (`[output.html] theme`, default `theme`), where tangle writes its
    /// stylesheet, script and math font.
    pub theme: PathBuf,
    /// Folders besides the book's own (the folder of `book.toml`) that mdBook's
    /// `{{#include}}`, `{{#rustdoc_include}}` and `{{#playground}}` may read from:
    /// `include-dirs`.
    pub include_dirs: Vec<PathBuf>,
}

impl Layout {
    /// `book.toml`, relative to the root.
    pub fn book_toml(&self) -> PathBuf {
        self.book.join("book.toml")
    }

    /// The crate versions the examples were checked with, beside `book.toml`, relative to the
    /// root (see [`crate::examples::pins`]).
    pub fn examples_lock(&self) -> PathBuf {
        self.book.join("examples.lock")
    }

    /// An absolute path for a path relative to the root.
    pub fn abs(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    /// The folders mdBook's `{{#include}}` may read from: the book's (the folder of
    /// `book.toml`) and those `include-dirs` lists, each as the author names it (`.` for the
    /// book's own) and resolved ([`crate::fsutil::resolved`]: links followed), so that a file
    /// is inside one when its resolved path starts with it.
    pub fn readable_dirs(&self) -> Vec<(String, PathBuf)> {
        std::iter::once(&self.book)
            .chain(&self.include_dirs)
            .map(|d| {
                let shown = if d.as_os_str().is_empty() { ".".to_string() } else { d.display().to_string() };
                (shown, crate::fsutil::resolved(&self.abs(d)))
            })
            .collect()
    }

    /// tangle's own working folder (cache, lock, chapter builds, staging), absolute.
    pub fn work_dir(&self) -> PathBuf {
        self.root.join(self.work_dir_relative())
    }

    /// [`Layout::work_dir`] relative to the root: `target/tangle`.
    pub(crate) fn work_dir_relative(&self) -> PathBuf {
        self.target.join("tangle")
    }

    /// Where `sync --discard` keeps a copy of every file of someone's it overwrites or removes
    /// (relative to the root): `target/tangle/discarded/SECONDS` (the time of the discard, so
    /// that a second discard of the same file keeps the first copy), each at its own path there.
    pub fn discarded_dir(&self) -> PathBuf {
        self.stamped_dir("discarded")
    }

    /// A folder `what` of tangle's working folder, named after the time this run started
    /// (relative to the root): `target/tangle/WHAT/SECONDS`.
    pub fn stamped_dir(&self, what: &str) -> PathBuf {
        // One time per run, so that what copies are written under and what is said of them
        // agree.
        static STARTED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        let seconds = STARTED.get_or_init(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs()
        });
        self.work_dir_relative().join(what).join(seconds.to_string())
    }

    /// The layout when `book.toml` is silent: mdBook's defaults for what mdBook reads (beside
    /// `book.toml`), and tangle's generated folders at the project root.
    fn defaults(root: &Path, book: &Path) -> Layout {
        let at = |p: &str| normalize(&book.join(p));
        Layout {
            root: root.to_path_buf(),
            book: book.to_path_buf(),
            src: at("src"),
            build: at("book"),
            code: PathBuf::from("code"),
            figures: PathBuf::from("figures"),
            snapshots: PathBuf::from("snapshots"),
            frozen: PathBuf::from("frozen"),
            target: PathBuf::from("target"),
            references: at("references.yaml"),
            theme: at("theme"),
            include_dirs: Vec::new(),
        }
    }
}

/// How a chapter's Rust blocks are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CellMode {
    /// `// @save` library cells, `// @test` cells, and run cells that form one program.
    #[default]
    Notebook,
    /// Every block a program of its own, as rustdoc and `mdbook test` treat them.
    Examples,
}

/// The style checks `tangle test` runs besides the book's claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checks {
    /// Cells formatted as rustfmt would.
    pub fmt: bool,
    /// The widest a cell line may be, in columns; `None` turns the check off.
    pub line_width: Option<usize>,
    /// Numbers in sentences that restate printed ones must be quoted (`{{#value}}`).
    pub numbers: bool,
}

/// An edition `book.toml` names, with the line that names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedEdition {
    pub edition: String,
    pub at: Location,
}

/// Everything tangle reads from `book.toml`.
#[derive(Debug, Clone)]
pub struct Config {
    pub layout: Layout,
    /// The Rust edition `[rust] edition` names, if it does, and where; [`Config::edition`]
    /// gives the one a chapter's crates use.
    pub rust_edition: Option<NamedEdition>,
    pub cells: CellMode,
    /// Crates the cells may use: key → Cargo's specification, relative paths relative to the
    /// project root.
    pub dependencies: BTreeMap<String, toml::Value>,
    /// The manifest whose `[dependencies]` were taken (`manifest = "Cargo.toml"`), relative to
    /// the project root.
    pub manifest: Option<PathBuf>,
    pub checks: Checks,
    /// Chapters whose run is committed and reused rather than rerun (`freeze = ["ch06"]`),
    /// each with the line of `book.toml` that names it; a chapter's `<!-- tangle: freeze -->`
    /// does the same.
    pub freeze: Vec<(String, Location)>,
}

/// The keys of `[preprocessor.tangle]`: tangle's own, then mdBook's for any preprocessor.
const KEYS: &[&str] = &[
    "root",
    "code",
    "figures",
    "snapshots",
    "frozen",
    "freeze",
    "target-dir",
    "references",
    "include-dirs",
    "cells",
    "manifest",
    "dependencies",
    "line-width",
    "fmt",
    "numbers",
    "command",
    "renderers",
    "renderer",
    "before",
    "after",
    "optional",
];

/// The nearest folder at or above `start` that holds `book.toml` or `book/book.toml`.
pub fn find_root(start: &Path) -> anyhow::Result<PathBuf> {
    start
        .ancestors()
        .find(|d| d.join("book.toml").is_file() || d.join("book/book.toml").is_file())
        .map(Path::to_path_buf)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no book here: neither {dir}/book.toml nor {dir}/book/book.toml exists, nor in any folder above.\n\
                 Start a book with `{new}`, or run `{init}` in an existing mdBook.",
                dir = start.display(),
                new = messages::command("new PATH"),
                init = messages::command("init"),
            )
        })
}

/// The project root of the book found from `dir` as [`find_root`] finds it: book.toml's folder,
/// or the one `root` names above it. What paths in messages are relative to, known even when
/// the configuration is wrong in other ways.
pub fn project_root(dir: &Path) -> Option<PathBuf> {
    let book_dir = book_toml_folder(&find_root(dir).ok()?)?;
    let text = std::fs::read_to_string(book_dir.join("book.toml")).ok()?;
    let levels = root_setting(&text).ok()?;
    book_dir.ancestors().nth(levels).map(Path::to_path_buf)
}

/// The folder holding the book.toml of the project at `dir`: `dir`, or its `book/`.
fn book_toml_folder(dir: &Path) -> Option<PathBuf> {
    [dir.to_path_buf(), dir.join("book")].into_iter().find(|d| d.join("book.toml").is_file())
}

/// How many folders above `book.toml`'s the project root is: `[preprocessor.tangle] root`, a
/// path of `..` alone (`".."`, `"../.."`), 0 without it. Else why not.
fn root_setting(text: &str) -> Result<usize, String> {
    let Ok(doc) = toml::from_str::<toml::Table>(text) else { return Ok(0) };
    let value = doc.get("preprocessor").and_then(|p| p.get("tangle")).and_then(|t| t.get("root"));
    let Some(value) = value else { return Ok(0) };
    let wrong = || {
        format!(
            "`root = {value}`: the project root is book.toml's folder (`\".\"`, the default) or a folder above it \
             (`\"..\"`, `\"../..\"`), where tangle's folders sit and paths in messages start"
        )
    };
    let path = value.as_str().ok_or_else(wrong)?;
    let parts: Vec<&str> = path.split(['/', '\\']).filter(|p| !p.is_empty() && *p != ".").collect();
    match parts.iter().all(|p| *p == "..") {
        true => Ok(parts.len()),
        false => Err(wrong()),
    }
}

/// Whether `dir` holds crates tangle generated (its workspace manifest says so).
fn tangle_s_crates_in(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("Cargo.toml")).is_ok_and(|t| t.starts_with("# @generated by tangle"))
}

impl Config {
    /// The edition of the crates generated for a chapter in mode `cells`: `[rust] edition`
    /// when the book names one, else the mode's default.
    pub fn edition(&self, cells: CellMode) -> &str {
        self.rust_edition.as_ref().map_or(default_edition(cells), |e| e.edition.as_str())
    }

    /// Reads the configuration of the project at `dir` (a folder holding `book.toml` or
    /// `book/book.toml`).
    pub fn load(dir: &Path) -> anyhow::Result<Config> {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let Some(book_dir) = book_toml_folder(&dir) else {
            return Err(find_root(&dir).err().unwrap_or_else(|| anyhow::anyhow!("no book.toml in {}", dir.display())));
        };
        // Until the root is known, book.toml is named by its whole path.
        let toml_path = book_dir.join("book.toml");
        let bytes = std::fs::read(&toml_path).with_context(|| format!("cannot read {}", toml_path.display()))?;
        // Not UTF-8: an error at the line of the first byte that is not, as for a chapter.
        let text = crate::diagnostic::utf8_text(&toml_path, bytes).map_err(|d| anyhow::Error::from(*d))?;
        // The root is book.toml's folder, or as many folders above it as `root` says: what the
        // book's files contain never depends on what its checkout's folders are called.
        let levels = match root_setting(&text) {
            Ok(levels) => levels,
            Err(message) => bail!(Diagnostic::error(Location::new(&toml_path, key_line(&text, "root")), message)),
        };
        let mut root = book_dir.clone();
        let mut book = PathBuf::new();
        for _ in 0..levels {
            let (Some(parent), Some(name)) = (root.parent(), root.file_name()) else {
                bail!(Diagnostic::error(
                    Location::new(&toml_path, key_line(&text, "root")),
                    format!("`root` goes above the top of the file system from {}", book_dir.display()),
                ));
            };
            book = Path::new(name).join(book);
            root = parent.to_path_buf();
        }
        // (A folder above that is a book of its own holds its own crates: a book made inside
        // another is no old layout.)
        if levels == 0
            && let Some(parent) = book_dir.parent()
            && !parent.join("book.toml").is_file()
            && tangle_s_crates_in(&parent.join("code"))
        {
            bail!(
                Diagnostic::error(
                    Location::new(&toml_path, 1),
                    format!(
                        "{} holds tangle's crates, generated for a book whose project root is the folder above \
                         book.toml's; tangle now takes book.toml's own folder unless book.toml says otherwise",
                        parent.join("code").display()
                    ),
                )
                .with_help("add `root = \"..\"` under [preprocessor.tangle] in book.toml")
            );
        }
        let config = Config::parse(&root, &book, &text)?;
        config.refuse_what_would_mislead(&book_dir, &text)?;
        Ok(config)
    }

    /// What the files this configuration points at show to be wrong before anything would
    /// mislead: generated files written for another root (a rewrite of every one, runs in
    /// another folder), a dependency's `path` that cargo would report against a generated
    /// manifest. `book_dir` holds book.toml, whose `text` places the errors.
    fn refuse_what_would_mislead(&self, book_dir: &Path, text: &str) -> anyhow::Result<()> {
        let layout = &self.layout;
        if let Some(levels) = self.written_for_a_root_above(book_dir) {
            let code = layout.root.join(&layout.code);
            bail!(
                // Named by whole paths: which folder is the root is the question.
                Diagnostic::error(
                    Location::new(book_dir.join("book.toml"), 1),
                    format!(
                        "the generated files in {} were written for a project root {levels} folder(s) above \
                         book.toml's, as tangle chose it for a book in a folder named `book`; tangle now takes \
                         book.toml's own folder unless book.toml says otherwise",
                        code.display()
                    ),
                )
                .with_help(format!(
                    "add `root = \"{}\"` under [preprocessor.tangle] in book.toml",
                    vec![".."; levels].join("/")
                ))
                .with_help(format!(
                    "or, to make book.toml's folder the root (paths in `tangle: data` are relative to it), delete \
                     {} and run `{}`",
                    code.join("Cargo.toml").display(),
                    crate::messages::command("sync")
                ))
            );
        }
        if let Some((key, problem)) = self.path_dependency_problem() {
            // Declared in book.toml, or taken from the `manifest`.
            let line = declared_line(text, &key).or_else(|| declared_line(text, "manifest")).unwrap_or(1);
            let at = Location::new(layout.book_toml(), line);
            bail!(Diagnostic::error(at, problem.message(&key)).with_help(problem.help(&key)));
        }
        Ok(())
    }

    /// How many folders above this configuration's root the generated workspace manifest was
    /// written from, when it was: its first line names book.toml by its path from the root it
    /// was written for (`book/book.toml`, where the root is book.toml's folder now). Until 0.1's
    /// later builds, a book in a folder named `book` had the folder above for its root.
    fn written_for_a_root_above(&self, book_dir: &Path) -> Option<usize> {
        let layout = &self.layout;
        let manifest = std::fs::read_to_string(layout.abs(layout.code.join("Cargo.toml"))).ok()?;
        let named = manifest.lines().next()?.strip_prefix("# @generated by tangle from ")?;
        let named = named.split_once(" and the chapters")?.0;
        let above = named.strip_suffix(&crate::fsutil::slashed(&layout.book_toml()))?.strip_suffix('/')?;
        let levels = above.split('/').count();
        (!above.is_empty() && book_dir.ends_with(above)).then_some(levels)
    }

    /// The first dependency whose `path` cargo would stop on, with an error about a generated
    /// manifest rather than book.toml: a folder without a `Cargo.toml`, a workspace's manifest
    /// without a package, or a package of another name.
    fn path_dependency_problem(&self) -> Option<(String, PathProblem)> {
        self.dependencies.iter().find_map(|(key, spec)| {
            let path = spec.get("path")?.as_str()?;
            let folder = normalize(&self.layout.root.join(path));
            let Ok(manifest) = std::fs::read_to_string(folder.join("Cargo.toml")) else {
                return Some((key.clone(), PathProblem::NoManifest(folder)));
            };
            // A manifest cargo cannot read is cargo's to report, with its own line numbers.
            let manifest = toml::from_str::<toml::Table>(&manifest).ok()?;
            let Some(package) = manifest.get("package") else {
                let workspace = manifest.contains_key("workspace");
                return workspace.then(|| (key.clone(), PathProblem::Workspace(folder)));
            };
            let found = package.get("name")?.as_str()?.to_string();
            let wanted = spec.get("package").and_then(|p| p.as_str()).unwrap_or(key);
            (found != wanted).then(|| (key.clone(), PathProblem::OtherName { folder, found }))
        })
    }

    /// The configuration that `text`, the contents of `root/book/book.toml`, gives.
    pub fn parse(root: &Path, book: &Path, text: &str) -> anyhow::Result<Config> {
        let file = book.join("book.toml");
        let doc: toml::Table = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| line_of(text, s.start));
            Diagnostic::error(Location::new(&file, line), format!("book.toml does not parse: {}", e.message()))
        })?;
        let mut layout = Layout::defaults(root, book);
        let at = |v: &str| normalize(&book.join(v));
        let error = |key: &str, message: String| -> anyhow::Error {
            Diagnostic::error(Location::new(&file, key_line(text, key)), message).into()
        };
        if let Some(src) = doc.get("book").and_then(|b| b.get("src")) {
            layout.src = at(src.as_str().ok_or_else(|| error("src", "`[book] src` must be a string".into()))?);
        }
        if let Some(dir) = doc.get("build").and_then(|b| b.get("build-dir")) {
            layout.build =
                at(dir.as_str().ok_or_else(|| error("build-dir", "`[build] build-dir` must be a string".into()))?);
        }
        if let Some(theme) = doc.get("output").and_then(|o| o.get("html")).and_then(|h| h.get("theme")) {
            layout.theme =
                at(theme.as_str().ok_or_else(|| error("theme", "`[output.html] theme` must be a string".into()))?);
        }
        let tangle = doc.get("preprocessor").and_then(|p| p.get("tangle"));
        let empty = toml::Table::new();
        let tangle = match tangle {
            None => &empty,
            Some(toml::Value::Table(t)) => t,
            Some(_) => bail!(error("tangle", "`[preprocessor.tangle]` must be a table".into())),
        };
        if let Err(message) = root_setting(text) {
            bail!(error("root", message));
        }
        for key in tangle.keys() {
            if !KEYS.contains(&key.as_str()) {
                let known: Vec<&str> = KEYS.iter().copied().filter(|k| !["renderer", "optional"].contains(k)).collect();
                let hint = match messages::closest(key, known.iter().copied()) {
                    Some(near) => format!("did you mean `{near}`? "),
                    None => String::new(),
                };
                bail!(error(
                    key,
                    format!("`{key}` is not a setting of [preprocessor.tangle] ({hint}they are: {})", known.join(", "))
                ));
            }
        }
        let string = |key: &str| -> anyhow::Result<Option<&str>> {
            match tangle.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.as_str())),
                Some(toml::Value::Array(_)) if key == "frozen" => Err(error(
                    key,
                    "`frozen` is the folder of the frozen runs (a path); the chapters to freeze are \
                     `freeze = [\"ch06\"]`"
                        .into(),
                )),
                Some(_) => Err(error(key, format!("`{key}` in [preprocessor.tangle] must be a string (a path)"))),
            }
        };
        let boolean = |key: &str| -> anyhow::Result<bool> {
            match tangle.get(key) {
                None => Ok(true),
                Some(toml::Value::Boolean(b)) => Ok(*b),
                Some(_) => Err(error(key, format!("`{key}` in [preprocessor.tangle] must be true or false"))),
            }
        };
        for (key, field) in [
            ("code", &mut layout.code),
            ("figures", &mut layout.figures),
            ("snapshots", &mut layout.snapshots),
            ("frozen", &mut layout.frozen),
            ("target-dir", &mut layout.target),
            ("references", &mut layout.references),
        ] {
            if let Some(v) = string(key)? {
                *field = at(v);
            }
        }
        let written = |key: &str| tangle.get(key).and_then(|v| v.as_str()).map(str::to_string);
        if let Some((key, message)) = unsafe_folder(&layout, written) {
            bail!(error(key, message));
        }
        match tangle.get("include-dirs") {
            None => {}
            Some(toml::Value::Array(dirs)) => {
                for dir in dirs {
                    let dir = dir.as_str().ok_or_else(|| {
                        error("include-dirs", "`include-dirs` must be a list of folders (strings)".into())
                    })?;
                    layout.include_dirs.push(at(dir));
                }
            }
            Some(_) => {
                bail!(error("include-dirs", "`include-dirs` must be a list of folders, e.g. [\"../listings\"]".into()))
            }
        }
        let freeze = freeze_list(tangle.get("freeze"), &|key, message| error(key, message), &file, text)?;
        let cells = match string("cells")? {
            None | Some("notebook") => CellMode::Notebook,
            Some("examples") => CellMode::Examples,
            Some(other) => {
                bail!(error("cells", format!("`cells = \"{other}\"`: the modes are \"notebook\" and \"examples\"")))
            }
        };
        let rust_edition = match doc.get("rust").and_then(|r| r.get("edition")) {
            None => None,
            Some(toml::Value::String(e)) if ["2015", "2018", "2021", "2024"].contains(&e.as_str()) => {
                Some(NamedEdition { edition: e.clone(), at: Location::new(&file, key_line(text, "edition")) })
            }
            Some(other) => bail!(error("edition", format!("`[rust] edition = {other}` is not a Rust edition"))),
        };
        let line_width = match tangle.get("line-width") {
            None => Some(DEFAULT_LINE_WIDTH),
            Some(toml::Value::Integer(0)) => None,
            Some(toml::Value::Integer(n)) if *n > 0 => Some(*n as usize),
            Some(_) => bail!(error("line-width", "`line-width` must be a number of columns (0: no check)".into())),
        };
        // An examples book is judged on what its examples claim; style is opt-in there.
        let style_default = cells == CellMode::Notebook;
        let opt = |key: &str| -> anyhow::Result<bool> {
            if tangle.contains_key(key) { boolean(key) } else { Ok(style_default) }
        };
        let checks = Checks {
            fmt: opt("fmt")?,
            line_width: if tangle.contains_key("line-width") || style_default { line_width } else { None },
            numbers: opt("numbers")?,
        };

        let mut dependencies = BTreeMap::new();
        let mut manifest_path = None;
        if let Some(manifest) = string("manifest")? {
            let rel = at(manifest);
            manifest_path = Some(rel.clone());
            let text = std::fs::read_to_string(root.join(&rel)).map_err(|e| {
                error("manifest", format!("`manifest = \"{manifest}\"`: cannot read {}: {e}", rel.display()))
            })?;
            let parsed: toml::Table = toml::from_str(&text)
                .map_err(|e| error("manifest", format!("{} does not parse: {}", rel.display(), e.message())))?;
            let base = rel.parent().map(Path::to_path_buf).unwrap_or_default();
            let tables = [parsed.get("dependencies"), parsed.get("workspace").and_then(|w| w.get("dependencies"))];
            for table in tables.into_iter().flatten() {
                let table =
                    table.as_table().ok_or_else(|| error("manifest", "its [dependencies] is not a table".into()))?;
                for (k, v) in table {
                    let spec = match inherited(root, &base, k, v) {
                        Some(Ok(spec)) => spec,
                        Some(Err(message)) => bail!(error("manifest", message)),
                        None => rebase(v, &base),
                    };
                    dependencies.insert(k.clone(), spec);
                }
            }
        }
        match tangle.get("dependencies") {
            None => {}
            Some(toml::Value::Table(t)) => {
                for (k, v) in t {
                    check_dependency(k, v).map_err(|m| error(k, m))?;
                    dependencies.insert(k.clone(), rebase(v, book));
                }
            }
            Some(_) => bail!(error("dependencies", "[preprocessor.tangle.dependencies] must be a table".into())),
        }
        if dependencies.contains_key(RUNTIME) {
            bail!(error(
                RUNTIME,
                format!("`{RUNTIME}` is not a dependency to declare: tangle writes its own copy into the book")
            ));
        }
        Ok(Config { layout, rust_edition, cells, dependencies, manifest: manifest_path, checks, freeze })
    }
}

/// `freeze = ["ch06", ...]`: the chapters, each with the line that names it (the line of
/// `freeze` when the list is on one line).
fn freeze_list(
    value: Option<&toml::Value>,
    error: &dyn Fn(&str, String) -> anyhow::Error,
    file: &Path,
    text: &str,
) -> anyhow::Result<Vec<(String, Location)>> {
    let Some(value) = value else { return Ok(Vec::new()) };
    let list = value
        .as_array()
        .ok_or_else(|| error("freeze", "`freeze` must be a list of chapters, e.g. [\"ch06\"]".into()))?;
    let first = key_line(text, "freeze");
    let mut out = Vec::new();
    for item in list {
        let name = item.as_str().ok_or_else(|| {
            error("freeze", format!("`freeze` must be a list of chapter names (strings), not `{item}`"))
        })?;
        let quoted = format!("\"{name}\"");
        let line =
            text.lines().enumerate().skip(first - 1).find(|(_, l)| l.contains(&quoted)).map_or(first, |(i, _)| i + 1);
        out.push((name.to_string(), Location::new(file, line)));
    }
    Ok(out)
}

/// Why cargo could not use a dependency's `path`.
enum PathProblem {
    /// The folder holds no `Cargo.toml`.
    NoManifest(PathBuf),
    /// The folder's `Cargo.toml` is a workspace's, with no package of its own.
    Workspace(PathBuf),
    /// The crate there is a package of another name (cargo matches `path` crates by name).
    OtherName { folder: PathBuf, found: String },
}

impl PathProblem {
    fn message(&self, key: &str) -> String {
        match self {
            PathProblem::NoManifest(folder) if !folder.exists() => {
                format!("dependency `{key}` has `path` {}, which does not exist", folder.display())
            }
            PathProblem::NoManifest(folder) => {
                format!("dependency `{key}` has `path` {}, where there is no Cargo.toml", folder.display())
            }
            PathProblem::Workspace(folder) => {
                format!("dependency `{key}` has `path` {}, a workspace without a package", folder.display())
            }
            PathProblem::OtherName { folder, found } => {
                format!("dependency `{key}` has `path` {}, whose package is named `{found}`", folder.display())
            }
        }
    }

    fn help(&self, key: &str) -> String {
        match self {
            PathProblem::NoManifest(_) => {
                "a `path` in book.toml is relative to book.toml's folder, as mdBook's `src` is".to_string()
            }
            PathProblem::Workspace(_) => "name the folder of the workspace's member that the cells use".to_string(),
            PathProblem::OtherName { found, .. } => format!(
                "declare it under its package's name, `{found} = {{ path = ... }}`, or keep `{key}` as the name \
                 the cells use and add `package = \"{found}\"`"
            ),
        }
    }
}

/// The widest cell line the book's column shows without scrolling, unless `line-width` says.
pub const DEFAULT_LINE_WIDTH: usize = 100;

/// The runtime crate every chapter program links; tangle generates it into the code folder.
pub const RUNTIME: &str = "tangle-runtime";

/// The edition when `[rust] edition` is absent: mdBook's (2015) for examples, which it tests
/// that way; 2021 for notebook chapters, whose generated crates need a 2018-or-later edition
/// (`use ch01::*` names another crate). Per chapter, so that a book mixing the modes gets both.
fn default_edition(cells: CellMode) -> &'static str {
    match cells {
        CellMode::Notebook => "2021",
        CellMode::Examples => "2015",
    }
}

/// A dependency as Cargo would take it: a version string, or a table with a source.
fn check_dependency(key: &str, spec: &toml::Value) -> Result<(), String> {
    match spec {
        toml::Value::String(_) => Ok(()),
        toml::Value::Table(t) if ["version", "path", "git", "workspace"].iter().any(|k| t.contains_key(*k)) => Ok(()),
        toml::Value::Table(_) => Err(format!("dependency `{key}` names no version, path or git source")),
        _ => Err(format!("dependency `{key}` must be a version string or a table, as in Cargo.toml")),
    }
}

/// A dependency's relative `path`, taken relative to `base` (relative to the project root).
/// A dependency `key = { workspace = true, ... }` of the manifest in `base` (relative to
/// `root`), as cargo reads it: the entry of `[workspace.dependencies]` in the workspace's manifest
/// (the nearest folder above holding one), its path seen from the root, with the member's
/// `features` added. `None` for a dependency that inherits nothing; an error when there is no
/// such workspace entry.
fn inherited(root: &Path, base: &Path, key: &str, spec: &toml::Value) -> Option<Result<toml::Value, String>> {
    let member = spec.as_table().filter(|t| t.get("workspace").and_then(|w| w.as_bool()) == Some(true))?;
    let found = base.ancestors().skip(1).find_map(|dir| {
        let text = std::fs::read_to_string(root.join(dir).join("Cargo.toml")).ok()?;
        let doc: toml::Table = toml::from_str(&text).ok()?;
        let entry = doc.get("workspace")?.get("dependencies")?.get(key)?.clone();
        Some((dir.to_path_buf(), entry))
    });
    let Some((dir, entry)) = found else {
        return Some(Err(format!(
            "{}/Cargo.toml takes `{key}` from its workspace (`workspace = true`), and no Cargo.toml above it \
             has `{key}` under [workspace.dependencies]",
            base.display()
        )));
    };
    let mut out = match rebase(&entry, &dir) {
        toml::Value::Table(t) => t,
        version => toml::Table::from_iter([("version".to_string(), version)]),
    };
    if let Some(toml::Value::Array(features)) = member.get("features") {
        let mut all = out.get("features").and_then(|f| f.as_array()).cloned().unwrap_or_default();
        all.extend(features.iter().filter(|f| !all.contains(f)).cloned().collect::<Vec<_>>());
        out.insert("features".to_string(), toml::Value::Array(all));
    }
    Some(Ok(toml::Value::Table(out)))
}

fn rebase(spec: &toml::Value, base: &Path) -> toml::Value {
    with_dependency_path(spec, |path| normalize(&base.join(path)))
}

/// `spec`, a dependency in Cargo's syntax, with its relative `path` (if it has one) replaced by
/// what `f` makes of it: how each generated manifest sees a path from its own folder.
pub(crate) fn with_dependency_path(spec: &toml::Value, f: impl Fn(&Path) -> PathBuf) -> toml::Value {
    let mut spec = spec.clone();
    if let Some(table) = spec.as_table_mut()
        && let Some(toml::Value::String(path)) = table.get_mut("path")
        && Path::new(path.as_str()).is_relative()
    {
        *path = f(Path::new(path.as_str())).to_string_lossy().into_owned();
    }
    spec
}

/// `book/../code` → `code`, without touching the file system; leading `..` are kept.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out: Vec<Component> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out.iter().collect()
}

/// `to` as seen from the folder `from`, both relative to `root` (absolute): what a file in
/// `from` writes to name `to`. Lexical, as cargo joins such paths: `a/../b` is `b`. The root
/// is needed when `from` lies outside it (`../code`): the way back in names the root's folder.
pub fn relative_to(to: &Path, from: &Path, root: &Path) -> PathBuf {
    let (to, from) = (normalize(&root.join(to)), normalize(&root.join(from)));
    let common = to.components().zip(from.components()).take_while(|(a, b)| a == b).count();
    // A `..` left in an absolute path after normalizing climbs above `/`, which is `/` again.
    let up = from.components().skip(common).filter(|c| matches!(c, Component::Normal(_))).count();
    let path: PathBuf = std::iter::repeat_n(Component::ParentDir, up).chain(to.components().skip(common)).collect();
    if path.as_os_str().is_empty() { PathBuf::from(".") } else { path }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// A folder setting that would let tangle write over, or remove, the author's own files: the
/// key and why. tangle removes from the code folder every file no chapter generates, once told
/// to discard (`sync --discard`), and writes into the others; so none of them may be the
/// project's folder, `book.toml`'s or the chapters' (or hold one of those), and the code folder
/// may not lie outside the project, inside the chapters' folder (mdBook would publish it) or
/// share a folder with another of tangle's. Only settings the book makes (`written`, the
/// value as written) are judged: the defaults are safe.
fn unsafe_folder(layout: &Layout, written: impl Fn(&str) -> Option<String>) -> Option<(&'static str, String)> {
    let inside = |path: &Path, folder: &Path| folder.as_os_str().is_empty() || path.starts_with(folder);
    let outside_root = |path: &Path| path.is_absolute() || path.starts_with("..");
    let defaults = Layout::defaults(&layout.root, &layout.book);
    let tangle_folders = [
        ("code", &layout.code, &defaults.code),
        ("figures", &layout.figures, &defaults.figures),
        ("snapshots", &layout.snapshots, &defaults.snapshots),
        ("frozen", &layout.frozen, &defaults.frozen),
        ("target-dir", &layout.target, &defaults.target),
    ];
    let own = [
        ("the project's folder".to_string(), Path::new("")),
        ("book.toml's folder".to_string(), &layout.book),
        (format!("the chapters' folder ({})", layout.src.display()), &layout.src),
    ];
    for (key, folder, default) in tangle_folders {
        let Some(value) = written(key) else { continue };
        if outside_root(folder) && key != "code" {
            continue;
        }
        if let Some((whose, theirs)) = own.iter().find(|(_, theirs)| inside(theirs, folder)) {
            let above = if theirs == folder { "" } else { ", or a folder above it" };
            return Some((
                key,
                format!(
                    "`{key} = \"{value}\"` names {whose}{above}: tangle writes its own files there and removes the \
                     ones it no longer needs; give it a folder of its own (the default is `{}`)",
                    default.display(),
                ),
            ));
        }
        // mdBook empties its output folder on every build (target-dir may hold it: its own
        // files are under target-dir/tangle).
        if inside(folder, &layout.build) || (key != "target-dir" && inside(&layout.build, folder)) {
            return Some((
                key,
                format!(
                    "`{key} = \"{value}\"` shares a folder with mdBook's output ({}), which mdBook empties on \
                     every build; give it a folder of its own (the default is `{}`)",
                    layout.build.display(),
                    default.display(),
                ),
            ));
        }
    }
    let value = written("code")?;
    let code = &layout.code;
    let why = if outside_root(code) {
        Some("names a folder outside the project's".to_string())
    } else if code.components().any(|c| c.as_os_str().to_string_lossy().starts_with('.')) {
        Some("lies in a hidden folder, a tool's (`.github` holds the book's workflow)".to_string())
    } else if inside(code, &layout.theme) || inside(&layout.theme, code) {
        Some(format!("shares a folder with the book's theme ({})", layout.theme.display()))
    } else if inside(code, &layout.src) {
        Some(format!("lies inside the chapters' folder ({}), which mdBook publishes", layout.src.display()))
    } else {
        let shared = tangle_folders.iter().skip(1).find(|(_, other, _)| inside(code, other) || inside(other, code));
        shared.map(|(other, _, _)| format!("shares a folder with `{other}`"))
    };
    why.map(|why| {
        (
            "code",
            format!(
                "`code = \"{value}\"` {why}: the crates need a folder of their own inside the project, beside \
                 the chapters (the default is `code`), since tangle removes from it every file no chapter generates \
                 when told to discard them"
            ),
        )
    })
}

/// The line where `key` is set (`key =` at a line's start), else 1.
fn key_line(text: &str, key: &str) -> usize {
    declared_line(text, key).unwrap_or(1)
}

/// The line that sets `key` in book.toml, if one does.
fn declared_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.strip_prefix(key).is_some_and(|r| r.trim_start().starts_with('=') || r.trim_start().starts_with('.'))
                || l.starts_with(&format!("[preprocessor.tangle.{key}"))
        })
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(book: &str, text: &str) -> anyhow::Result<Config> {
        Config::parse(Path::new("/r"), Path::new(book), text)
    }

    #[test]
    fn the_root_is_book_toml_s_folder_whatever_its_name_unless_root_names_one_above() {
        let dir = tempfile::tempdir().unwrap();
        let book = dir.path().join("project/book");
        std::fs::create_dir_all(&book).unwrap();
        // A folder named `book` is a book's own root (a clone, `tangle new book`).
        std::fs::write(book.join("book.toml"), "[book]\ntitle = \"T\"\n").unwrap();
        for start in [&book, &dir.path().join("project")] {
            let c = Config::load(start).unwrap();
            assert_eq!((c.layout.root.as_path(), c.layout.book.as_path()), (book.as_path(), Path::new("")));
            assert_eq!(c.layout.src, Path::new("src"));
        }
        // `root = ".."`: the folder above, tangle's folders beside `book/`.
        std::fs::write(book.join("book.toml"), "[book]\ntitle = \"T\"\n\n[preprocessor.tangle]\nroot = \"..\"\n")
            .unwrap();
        let c = Config::load(&book).unwrap();
        assert_eq!((c.layout.root.as_path(), c.layout.book.as_path()), (book.parent().unwrap(), Path::new("book")));
        assert_eq!((c.layout.src.as_path(), c.layout.code.as_path()), (Path::new("book/src"), Path::new("code")));
        // Two levels up, and the book's folder named otherwise.
        let docs = dir.path().join("project/docs/guide");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::write(docs.join("book.toml"), "[preprocessor.tangle]\nroot = \"../..\"\n").unwrap();
        let c = Config::load(&docs).unwrap();
        assert_eq!(
            (c.layout.root.as_path(), c.layout.book.as_path()),
            (book.parent().unwrap(), Path::new("docs/guide"))
        );
        // Anything but `..` is refused at its line.
        for wrong in ["\"../x\"", "\"sub\"", "2"] {
            std::fs::write(book.join("book.toml"), format!("[book]\n\n[preprocessor.tangle]\nroot = {wrong}\n"))
                .unwrap();
            let err = Config::load(&book).unwrap_err().to_string();
            assert!(err.contains("book.toml:4") && err.contains("the project root is book.toml's folder"), "{err}");
        }
        // A book that relied on the old rule (its crates in the folder above) is told the fix.
        std::fs::write(book.join("book.toml"), "[book]\ntitle = \"T\"\n").unwrap();
        std::fs::create_dir_all(dir.path().join("project/code")).unwrap();
        std::fs::write(dir.path().join("project/code/Cargo.toml"), "# @generated by tangle from book.toml\n").unwrap();
        let err = format!("{:#}", Config::load(&book).unwrap_err());
        assert!(err.contains("holds tangle's crates") && err.contains("root = \"..\""), "{err}");
        // Unless the folder above is a book of its own: this one was made inside it.
        std::fs::write(dir.path().join("project/book.toml"), "[book]\ntitle = \"Outer\"\n").unwrap();
        let c = Config::load(&book).unwrap();
        assert_eq!(c.layout.root, book, "the inner book's own folder");
    }

    #[test]
    fn a_manifest_s_dependencies_taken_from_its_workspace_are_read_as_cargo_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("ws/m")).unwrap();
        std::fs::write(
            root.join("ws/Cargo.toml"),
            "[workspace]\nmembers = [\"m\"]\n\n[workspace.dependencies]\nitoa = \"1\"\n\
             serde = { version = \"1\", features = [\"derive\"] }\nlocal = { path = \"local\" }\n",
        )
        .unwrap();
        std::fs::write(
            root.join("ws/m/Cargo.toml"),
            "[package]\nname = \"m\"\n\n[dependencies]\nitoa = { workspace = true }\n\
             serde = { workspace = true, features = [\"rc\"] }\nlocal.workspace = true\nplain = \"2\"\n",
        )
        .unwrap();
        let text = "[preprocessor.tangle]\nmanifest = \"ws/m/Cargo.toml\"\n";
        let c = Config::parse(root, Path::new(""), text).unwrap();
        let dep = |k: &str| toml::Value::try_from(&c.dependencies[k]).unwrap().to_string();
        assert_eq!(dep("itoa"), "{ version = \"1\" }");
        assert_eq!(dep("serde"), "{ features = [\"derive\", \"rc\"], version = \"1\" }");
        assert_eq!(dep("local"), "{ path = \"ws/local\" }");
        assert_eq!(dep("plain"), "\"2\"");
        // An entry the workspace lacks is an error at `manifest`.
        std::fs::write(
            root.join("ws/m/Cargo.toml"),
            "[package]\nname = \"m\"\n\n[dependencies]\nrand.workspace = true\n",
        )
        .unwrap();
        let err = Config::parse(root, Path::new(""), text).unwrap_err().to_string();
        assert!(err.contains("book.toml:2") && err.contains("no Cargo.toml above it has `rand`"), "{err}");
    }

    #[test]
    fn mdbook_default_layout_without_a_tangle_table() {
        let c = parse("", "[book]\ntitle = \"Plain\"\n").unwrap();
        assert_eq!(c.layout.src, Path::new("src"));
        assert_eq!(c.layout.code, Path::new("code"));
        assert_eq!(c.layout.build, Path::new("book"));
        assert_eq!(c.layout.work_dir(), Path::new("/r/target/tangle"));
        assert_eq!(c.edition(CellMode::Notebook), "2021");
        assert_eq!(c.edition(CellMode::Examples), "2015", "mdBook's, for a chapter of examples");
        assert_eq!(c.cells, CellMode::Notebook);
        assert!(c.checks.fmt && c.checks.numbers && c.checks.line_width == Some(100));
    }

    #[test]
    fn paths_are_relative_to_book_toml_and_kept_relative_to_the_root() {
        let c = parse(
            "book",
            "[book]\nsrc = \"src\"\n[rust]\nedition = \"2024\"\n[preprocessor.tangle]\ncode = \"../code\"\n\
             figures = \"../figures\"\ntarget-dir = \"../target\"\n\
             [preprocessor.tangle.dependencies]\nlocal = { path = \"../crates/local\" }\n\
             rand_0_8 = { package = \"rand\", version = \"0.8\" }\n",
        )
        .unwrap();
        assert_eq!(c.layout.src, Path::new("book/src"));
        assert_eq!(c.layout.code, Path::new("code"));
        assert_eq!(c.layout.figures, Path::new("figures"));
        assert_eq!(c.layout.snapshots, Path::new("snapshots"), "the default: at the project root");
        assert_eq!(c.layout.references, Path::new("book/references.yaml"));
        assert_eq!(c.edition(CellMode::Notebook), "2024");
        assert_eq!(c.edition(CellMode::Examples), "2024", "a named edition holds for every chapter");
        assert_eq!(c.dependencies["local"]["path"].as_str(), Some("crates/local"));
        assert_eq!(c.dependencies["rand_0_8"]["package"].as_str(), Some("rand"));
    }

    /// A book in a folder named `book`, generated when tangle took the folder above for its root,
    /// is stopped before anything is rewritten, and told the setting that keeps its root.
    #[test]
    fn generated_files_written_for_the_folder_above_name_the_root_setting() {
        let dir = tempfile::tempdir().unwrap();
        let book = dir.path().join("repo/book");
        std::fs::create_dir_all(book.join("code")).unwrap();
        let toml = "[book]\ntitle = \"T\"\n[preprocessor.tangle]\ncode = \"code\"\n";
        std::fs::write(book.join("book.toml"), toml).unwrap();
        let manifest = |from: &str| format!("# @generated by tangle from {from} and the chapters: do not edit.\n");
        std::fs::write(book.join("code/Cargo.toml"), manifest("book/book.toml")).unwrap();
        let err = Config::load(&book).unwrap_err();
        let d = err.downcast_ref::<Diagnostic>().expect("a diagnostic");
        assert!(d.message.contains("1 folder(s) above"), "{}", d.message);
        assert!(d.notes.iter().any(|(_, n)| n.contains("root = \"..\"")), "{:?}", d.notes);
        // With the setting, or once written for book.toml's folder, it loads.
        std::fs::write(book.join("book.toml"), format!("{toml}root = \"..\"\n")).unwrap();
        Config::load(&book).unwrap();
        std::fs::write(book.join("book.toml"), toml).unwrap();
        std::fs::write(book.join("code/Cargo.toml"), manifest("book.toml")).unwrap();
        Config::load(&book).unwrap();
        // A name that is not the folders above is no such sign.
        std::fs::write(book.join("code/Cargo.toml"), manifest("other/book.toml")).unwrap();
        Config::load(&book).unwrap();
    }

    /// A `path` that names no crate is an error at its line of book.toml, before cargo reports it
    /// against a generated manifest the author never wrote.
    #[test]
    fn a_path_dependency_without_a_crate_is_refused_at_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let book = dir.path().join("proj/book");
        std::fs::create_dir_all(book.join("../lib/src")).unwrap();
        let toml = |path: &str| {
            format!(
                "[book]\ntitle = \"T\"\n[preprocessor.tangle]\nroot = \"..\"\n\n[preprocessor.tangle.dependencies]\nrand = \"0.9\"\nmylib = {{ path = \"{path}\" }}\n"
            )
        };
        std::fs::write(book.join("book.toml"), toml("../nope")).unwrap();
        let err = Config::load(&book).unwrap_err();
        let d = err.downcast_ref::<Diagnostic>().expect("a diagnostic");
        let at = d.location.as_ref().unwrap();
        assert_eq!((at.file.as_path(), at.line), (Path::new("book/book.toml"), 8));
        assert!(d.message.contains("dependency `mylib`") && d.message.contains("does not exist"), "{}", d.message);
        assert!(d.message.contains(&dir.path().join("proj/nope").display().to_string()), "{}", d.message);
        // A folder without a manifest is refused as well; with one, the configuration loads.
        std::fs::write(book.join("book.toml"), toml("../lib")).unwrap();
        let err = Config::load(&book).unwrap_err();
        assert!(err.to_string().contains("where there is no Cargo.toml"), "{err}");
        // A crate of another name is named, with the two ways to declare it.
        std::fs::write(book.join("../lib/Cargo.toml"), "[package]\nname = \"my-lib\"\n").unwrap();
        let err = Config::load(&book).unwrap_err();
        let d = err.downcast_ref::<Diagnostic>().expect("a diagnostic");
        assert_eq!(d.location.as_ref().unwrap().line, 8);
        assert!(d.message.contains("whose package is named `my-lib`"), "{}", d.message);
        assert!(d.notes.iter().any(|(_, h)| h.contains("package = \"my-lib\"")), "{:?}", d.notes);
        std::fs::write(book.join("book.toml"), toml("../lib\", package = \"my-lib")).unwrap();
        Config::load(&book).unwrap();
        std::fs::write(book.join("book.toml"), toml("../lib")).unwrap();
        std::fs::write(book.join("../lib/Cargo.toml"), "[workspace]\nmembers = [\"a\"]\n").unwrap();
        let err = Config::load(&book).unwrap_err();
        assert!(err.to_string().contains("a workspace without a package"), "{err}");
        std::fs::write(book.join("../lib/Cargo.toml"), "[package]\nname = \"mylib\"\n").unwrap();
        let c = Config::load(&book).unwrap();
        assert_eq!(c.dependencies["mylib"]["path"].as_str(), Some("lib"));
    }

    #[test]
    fn include_dirs_are_relative_to_book_toml() {
        let c = parse("book", "[preprocessor.tangle]\ninclude-dirs = [\"../listings\", \"extra\"]\n").unwrap();
        assert_eq!(c.layout.include_dirs, vec![PathBuf::from("listings"), PathBuf::from("book/extra")]);
        assert!(parse("", "").unwrap().layout.include_dirs.is_empty());
        let err = parse("", "[preprocessor.tangle]\ninclude-dirs = \"listings\"\n").unwrap_err();
        let d = err.downcast_ref::<Diagnostic>().unwrap();
        assert_eq!(d.location.as_ref().unwrap().line, 2);
        assert!(d.message.contains("list of folders"), "{}", d.message);
        assert!(parse("", "[preprocessor.tangle]\ninclude-dirs = [1]\n").is_err());
    }

    #[test]
    fn mistakes_name_the_line_of_book_toml() {
        let err = parse("", "[book]\n[preprocessor.tangle]\ncdoe = \"x\"\n").unwrap_err();
        let d = err.downcast_ref::<Diagnostic>().unwrap();
        let at = d.location.as_ref().unwrap();
        assert_eq!((at.file.as_path(), at.line), (Path::new("book.toml"), 3));
        assert!(d.message.contains("`cdoe` is not a setting"), "{}", d.message);
        assert!(d.message.contains("did you mean `code`?"), "{}", d.message);
        let err = parse("", "[preprocessor.tangle]\ncells = \"cells\"\n").unwrap_err();
        assert!(err.to_string().contains("\"notebook\" and \"examples\""), "{err}");
        let err = parse("", "[preprocessor.tangle.dependencies]\nrand = { features = [\"x\"] }\n").unwrap_err();
        assert!(err.to_string().contains("names no version"), "{err}");
        let err = parse("", "[preprocessor.tangle.dependencies]\ntangle-runtime = \"1\"\n").unwrap_err();
        assert!(err.to_string().contains("not a dependency to declare"), "{err}");
        assert!(parse("", "[book\n").is_err());
    }

    /// A folder setting that would have tangle write over, or remove, the book's own files is
    /// refused at its line, before anything is written: `sync --discard` removed every chapter
    /// of a book told `code = "."`, and files outside it told `code = "../elsewhere"`.
    #[test]
    fn folders_that_hold_the_author_s_files_are_refused() {
        let refused = |book: &str, setting: &str, why: &str| {
            let text = format!("[book]\ntitle = \"t\"\n\n[preprocessor.tangle]\n{setting}\n");
            let err = parse(book, &text).expect_err(setting);
            let d = err.downcast_ref::<Diagnostic>().unwrap();
            assert_eq!(d.location.as_ref().unwrap().line, 5, "{setting}: {}", d.message);
            assert!(d.message.contains(why), "{setting}: {}", d.message);
        };
        refused("", "code = \".\"", "names the project's folder");
        refused("", "code = \"\"", "names the project's folder");
        refused("", "code = \"code/..\"", "names the project's folder");
        refused("", "code = \"src\"", "names the chapters' folder (src)");
        refused("", "code = \"src/code\"", "inside the chapters' folder");
        refused("", "code = \"../victim\"", "names a folder outside the project's");
        refused("", "code = \"/tmp/elsewhere\"", "names a folder outside the project's");
        refused("", "code = \"figures\"", "shares a folder with `figures`");
        refused("", "code = \"target/crates\"", "shares a folder with `target-dir`");
        refused("book", "code = \"..\"", "names the project's folder");
        refused("book", "code = \".\"", "names book.toml's folder:");
        refused("", "figures = \"src\"", "names the chapters' folder (src)");
        refused("", "snapshots = \".\"", "names the project's folder");
        refused("book", "frozen = \"..\"", "names the project's folder");
        refused("", "target-dir = \"\"", "names the project's folder");
        refused("", "code = \".github\"", "lies in a hidden folder");
        refused("", "code = \"theme\"", "shares a folder with the book's theme (theme)");
        // mdBook's output folder, which it empties on every build.
        refused("", "code = \"book\"", "shares a folder with mdBook's output (book)");
        refused("", "figures = \"book/figures\"", "shares a folder with mdBook's output (book)");
        refused("book", "snapshots = \"book\"", "shares a folder with mdBook's output (book/book)");
        refused("", "target-dir = \"book\"", "shares a folder with mdBook's output (book)");
        // mdBook's output inside the build folder is mdBook's business, not a clash.
        parse("", "[book]\ntitle = \"t\"\n[build]\nbuild-dir = \"target/book\"\n[preprocessor.tangle]\ntarget-dir = \"target\"\n")
            .unwrap();
        let err = parse("", "[book]\nsrc = \"pages/src\"\n[preprocessor.tangle]\ncode = \"pages\"\n").unwrap_err();
        assert!(
            err.to_string().contains("`code = \"pages\"` names the chapters' folder (pages/src), or a folder above it")
        );
        // Folders of their own, wherever they are, pass; so do the defaults.
        for (book, setting) in [
            ("", "code = \"crates\""),
            ("", "code = \"generated/code\""),
            ("book", "code = \"../crates\""),
            ("", "figures = \"src/figures\""),
            ("", "target-dir = \"../target\""),
            ("", "snapshots = \"tests/snapshots\""),
        ] {
            let text = format!("[book]\ntitle = \"t\"\n\n[preprocessor.tangle]\n{setting}\n");
            parse(book, &text).unwrap_or_else(|e| panic!("{setting}: {e}"));
        }
        parse("", "[book]\ntitle = \"t\"\n").unwrap();
        parse("book", "[book]\ntitle = \"t\"\n").unwrap();
    }

    #[test]
    fn a_book_toml_that_is_not_utf8_is_refused_at_its_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("book.toml"), b"[book]\ntitle = \"caf\xe9\"\n").unwrap();
        let err = Config::load(dir.path()).unwrap_err();
        let d = err.downcast_ref::<Diagnostic>().expect("a located error");
        // Named by its whole path: what the root is, book.toml itself would have said.
        assert_eq!(d.location, Some(Location::new(dir.path().join("book.toml"), 2)));
        assert!(d.message.contains("not valid UTF-8"), "{}", d.message);
    }

    #[test]
    fn examples_books_have_style_checks_off_unless_asked() {
        let c = parse("", "[preprocessor.tangle]\ncells = \"examples\"\n").unwrap();
        assert_eq!(c.edition(CellMode::Examples), "2015");
        assert_eq!(c.edition(CellMode::Notebook), "2021", "a notebook chapter of this book still imports crates");
        assert_eq!(c.checks, Checks { fmt: false, line_width: None, numbers: false });
        let c = parse("", "[preprocessor.tangle]\ncells = \"examples\"\nfmt = true\nline-width = 80\n").unwrap();
        assert_eq!(c.checks, Checks { fmt: true, line_width: Some(80), numbers: false });
        let c = parse("", "[preprocessor.tangle]\nline-width = 0\nnumbers = false\n").unwrap();
        assert_eq!(c.checks, Checks { fmt: true, line_width: None, numbers: false });
    }

    #[test]
    fn relative_paths_between_folders() {
        let root = Path::new("/home/me/project");
        let rel = |to: &str, from: &str| relative_to(Path::new(to), Path::new(from), root);
        assert_eq!(rel("crates/local", "code"), Path::new("../crates/local"));
        assert_eq!(rel("../x", "code"), Path::new("../../x"));
        assert_eq!(rel("target/tangle", "code/examples"), Path::new("../../target/tangle"));
        // `from` with `..` in it: a folder up is a folder fewer to climb, not one more.
        assert_eq!(rel("target", "book/../code"), Path::new("../target"));
        assert_eq!(rel("crates/local", "book/src/../../code"), Path::new("../crates/local"));
        // `from` outside the root: the way back names the root's folder.
        assert_eq!(rel("target/tangle", "../code"), Path::new("../project/target/tangle"));
        assert_eq!(rel("../code/x", "../code"), Path::new("x"));
        assert_eq!(rel("code", "code"), Path::new("."));
        assert_eq!(normalize(Path::new("book/../code")), Path::new("code"));
    }
}
