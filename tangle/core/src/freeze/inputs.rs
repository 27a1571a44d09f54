//! What a frozen chapter's run depends on, each input digested on its own so that a stale
//! record can say which one changed:
//!
//! - `cells of chNN`: the chapter's save and run cells as Rust tokens (its test cells are never
//!   run while it is frozen), and `save cells of chMM` for each chapter it imports, directly or
//!   not;
//! - `data FILE`: each declared data file of those chapters (`<!-- tangle: data -->`), each file
//!   of a declared folder;
//! - `code/Cargo.lock`: the lock file's entries for the packages those crates build with;
//! - `code/Cargo.toml`: the workspace manifest as those crates see it (edition, the entries of
//!   `[workspace.dependencies]` they use, profiles);
//! - `tangle-runtime`: the runtime every chapter program links, as this tool writes it, its
//!   plain comments aside (so a tangle whose runtime differs only in those, or in the version
//!   its header names, leaves the records current);
//! - `rustc -V`: the compiler, as cargo would find it from `code/` (a `rust-toolchain.toml`
//!   applies).
//!
//! Everything is taken so that two checkouts on two machines agree: paths relative to the
//! project root with `/` between folders, no modification times, text with `\r\n` read as `\n`,
//! the workspace's other chapters left out (a new chapter makes no frozen record stale), and
//! the prose around the cells and the cells' layout and comments left out (where a cell
//! stands and how it is formatted is not what it computes).

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::cache::{Lock, feed, hex, packages, workspace_digest, workspace_keys};
use crate::config::{Config, Layout};
use crate::fsutil::slashed;
use crate::generate::{self, Generated};
use crate::model::{CellKind, Chapter};

/// How the hash is made. Its version goes into it, so that a record made under another recipe
/// reads as stale rather than as current; a record made under the one before still answers
/// while its inputs, read that way, are unchanged: a chapter that takes hours is not rerun for
/// an upgrade of tangle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recipe {
    /// `tangle-frozen-3`: the workspace manifest with the dependencies the chapter's crates use,
    /// the runtime's code without its plain comments.
    Current,
    /// `tangle-frozen-2`: the workspace manifest with every dependency of the book, so that
    /// declaring one made every record stale, and the runtime's files byte for byte.
    Before,
}

impl Recipe {
    fn version(self) -> &'static str {
        match self {
            Recipe::Current => "tangle-frozen-3",
            Recipe::Before => "tangle-frozen-2",
        }
    }
}

/// The inputs every chapter shares, taken once per command.
#[derive(Debug, Clone)]
pub struct Shared {
    rustc: String,
    runtime: String,
    /// The runtime's digest as [`Recipe::Before`] took it: its files byte for byte.
    runtime_before: String,
    /// `code/Cargo.lock`'s packages, none when there is none yet.
    lock: Lock,
    /// `code/Cargo.toml` as generated, parsed.
    workspace: toml::Table,
    /// The sources of the crates the book uses by path, when it uses any
    /// ([`crate::cache::local_crates`]).
    local: Option<String>,
}

/// Reads what every frozen chapter's inputs share: the compiler's version, the runtime, the
/// lock file, the workspace manifest and the crates the book uses by path.
pub fn shared(config: &Config, generated: &Generated) -> anyhow::Result<Shared> {
    let layout = &config.layout;
    let code = layout.abs(&layout.code);
    let lock = match std::fs::read_to_string(code.join("Cargo.lock")) {
        Ok(text) => {
            packages(&text).map_err(|e| anyhow::anyhow!("{}/Cargo.lock does not parse: {e}", layout.code.display()))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => anyhow::bail!("cannot read {}/Cargo.lock: {e}", layout.code.display()),
    };
    let workspace = toml::from_str(&generated.workspace.1)?;
    let runtime_dir = generate::runtime::dir(&generated.code);
    // Its code without plain comments: a runtime that differs from the last only in what those
    // say (a tangle upgrade that reworded them) leaves the records current.
    let (mut h, mut before) = (Sha256::new(), Sha256::new());
    for (path, bytes) in generated.support.iter().filter(|(p, _)| p.starts_with(&runtime_dir)) {
        let rel = path.strip_prefix(&runtime_dir).unwrap_or(path);
        let bytes = crate::fsutil::lf(bytes);
        feed(&mut h, &slashed(rel), &crate::cache::code_of(path, &bytes));
        feed(&mut before, &slashed(rel), &bytes);
    }
    let by_path = config.dependencies.values().any(|spec| spec.get("path").is_some());
    let local = by_path.then(|| crate::cache::local_crates(layout, &config.dependencies));
    Ok(Shared {
        rustc: rustc_version(&code)?,
        runtime: hex(h),
        runtime_before: hex(before),
        lock: Lock::new(&lock),
        workspace,
        local,
    })
}

/// `rustc -V` as cargo would run it from `code/`.
fn rustc_version(code: &Path) -> anyhow::Result<String> {
    crate::build::compiler_version(code)
        .map_err(|e| anyhow::anyhow!("cannot tell whether the frozen records are current: {e}"))
}

/// Each input of `chapter`'s run, by name, with its digest (the compiler by its version).
pub fn of(
    shared: &Shared,
    layout: &Layout,
    generated: &Generated,
    chapter: &str,
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut inputs = BTreeMap::new();
    let closure = generated.closure(chapter);
    for krate in &closure {
        let ch = &krate.chapter;
        let own = ch.name == chapter;
        let label = if own { format!("cells of {}", ch.name) } else { format!("save cells of {}", ch.name) };
        inputs.insert(label, cells_digest(ch, own));
        for (data, bytes) in crate::cache::data_files(layout, ch)? {
            let mut h = Sha256::new();
            h.update(crate::fsutil::lf(&bytes));
            inputs.insert(format!("data {data}"), hex(h));
        }
    }
    let names: Vec<&str> = closure.iter().map(|k| k.name()).collect();
    inputs.insert(format!("{}/Cargo.lock", slashed(&layout.code)), shared.lock.digest(chapter, &names));
    // The test cells of a frozen chapter are never built.
    let used = workspace_keys(&closure, chapter, false);
    inputs.insert(manifest_input(layout), workspace_digest(&shared.workspace, chapter, Some(&used)));
    inputs.insert(crate::config::RUNTIME.to_string(), shared.runtime.clone());
    inputs.insert("rustc -V".to_string(), shared.rustc.clone());
    if let Some(local) = &shared.local {
        inputs.insert("crates used by path".to_string(), local.clone());
    }
    Ok(inputs)
}

/// The inputs of `chapter` (`now`, from [`of`]) as [`Recipe::Before`] read them.
pub fn as_before(
    shared: &Shared,
    layout: &Layout,
    chapter: &str,
    now: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut before = now.clone();
    before.insert(manifest_input(layout), workspace_digest(&shared.workspace, chapter, None));
    before.insert(crate::config::RUNTIME.to_string(), shared.runtime_before.clone());
    before
}

/// The name of the workspace manifest's input.
fn manifest_input(layout: &Layout) -> String {
    format!("{}/Cargo.toml", slashed(&layout.code))
}

/// The one hash of all the inputs, as `recipe` makes it.
pub fn hash(inputs: &BTreeMap<String, String>, recipe: Recipe) -> String {
    let mut h = Sha256::new();
    feed(&mut h, "format", recipe.version().as_bytes());
    for (name, digest) in inputs {
        feed(&mut h, name, digest.as_bytes());
    }
    hex(h)
}

/// The chapter's save cells, and its run cells when it is the frozen one, each with its kind
/// and read as Rust tokens ([`program_tokens`]), so that `tangle fmt` or a reworded comment
/// leaves the record current.
fn cells_digest(chapter: &Chapter, own: bool) -> String {
    let mut h = Sha256::new();
    for cell in &chapter.cells {
        let kind = match cell.kind {
            CellKind::Save => "save",
            CellKind::Run if own => "run",
            _ => continue,
        };
        let text = cell.code.replace("\r\n", "\n");
        // A cell that does not tokenize has not compiled either; its text stands for it.
        let tokens = text.parse::<proc_macro2::TokenStream>().map(program_tokens).unwrap_or(text);
        feed(&mut h, kind, tokens.as_bytes());
    }
    hex(h)
}

/// What of a cell can change what its program does: its tokens, without doc comments
/// (`#[doc = "..."]` once parsed) and without a comma that only closes a list (`f(a, b,)`),
/// which rustfmt adds or drops as it lays a list out over lines. The comma of a one-element
/// tuple (`(x,)`, not `(x)`) stays: it changes the type.
fn program_tokens(stream: proc_macro2::TokenStream) -> String {
    use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
    /// Whether the closing comma of `group`, which follows `before`, only closes a list.
    fn closing_comma_is_layout(group: &Group, before: Option<&TokenTree>) -> bool {
        let commas =
            group.stream().into_iter().filter(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ',')).count();
        // Arguments of a call (`f(x,)`, `Some(x,)`, `f::<T>(x,)`), not a tuple.
        let call = matches!(before, Some(TokenTree::Ident(_)))
            || matches!(before, Some(TokenTree::Punct(p)) if p.as_char() == '>')
            || matches!(before, Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis);
        group.delimiter() != Delimiter::Parenthesis || commas > 1 || call
    }
    fn strip(stream: TokenStream, keep_closing_comma: bool) -> TokenStream {
        let tokens: Vec<TokenTree> = stream.into_iter().collect();
        let mut out = Vec::with_capacity(tokens.len());
        let mut i = 0;
        while i < tokens.len() {
            let is_doc = |t: &TokenTree| {
                matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket
                    && g.stream().into_iter().next().is_some_and(|f| f.to_string() == "doc"))
            };
            match &tokens[i] {
                // `#[doc = ...]` and `#![doc = ...]`.
                TokenTree::Punct(p) if p.as_char() == '#' => {
                    let bang = matches!(tokens.get(i + 1), Some(TokenTree::Punct(b)) if b.as_char() == '!');
                    let at = i + 1 + usize::from(bang);
                    if tokens.get(at).is_some_and(is_doc) {
                        i = at + 1;
                        continue;
                    }
                    out.push(tokens[i].clone());
                }
                TokenTree::Punct(p) if p.as_char() == ',' && i + 1 == tokens.len() && !keep_closing_comma => {}
                TokenTree::Group(g) => {
                    let keep = !closing_comma_is_layout(g, i.checked_sub(1).map(|b| &tokens[b]));
                    let mut inner = Group::new(g.delimiter(), strip(g.stream(), keep));
                    inner.set_span(g.span());
                    out.push(TokenTree::Group(inner));
                }
                other => out.push(other.clone()),
            }
            i += 1;
        }
        out.into_iter().collect()
    }
    strip(stream, true).to_string()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    const LOCK: &str = r#"
version = 4

[[package]]
name = "ch01"
version = "0.0.0"
dependencies = ["tangle-runtime"]

[[package]]
name = "ch01-run"
version = "0.0.0"
dependencies = ["ch01", "tangle-runtime"]

[[package]]
name = "ch02"
version = "0.0.0"
dependencies = ["rand 0.8.5", "tangle-runtime"]

[[package]]
name = "rand"
version = "0.8.5"
source = "registry+https://github.com/rust-lang/crates.io-index"

[[package]]
name = "rand"
version = "0.9.0"
source = "registry+https://github.com/rust-lang/crates.io-index"

[[package]]
name = "tangle-runtime"
version = "0.1.0"
dependencies = ["libc"]

[[package]]
name = "libc"
version = "0.2.1"
"#;

    #[test]
    fn the_lock_digest_covers_what_the_chapter_builds_with_and_nothing_else() {
        let lock = packages(LOCK).unwrap();
        let before = Lock::new(&lock).digest("ch01", &["ch01"]);
        // Another chapter's dependency moving on changes nothing for ch01.
        let other = packages(&LOCK.replace("\"rand 0.8.5\"", "\"rand 0.9.0\"")).unwrap();
        assert_eq!(Lock::new(&other).digest("ch01", &["ch01"]), before);
        // A new chapter in the lock file neither.
        let grown = packages(&format!("{LOCK}\n[[package]]\nname = \"ch03\"\nversion = \"0.0.0\"\n")).unwrap();
        assert_eq!(Lock::new(&grown).digest("ch01", &["ch01"]), before);
        // The runtime's dependency does.
        let libc = packages(&LOCK.replace("version = \"0.2.1\"", "version = \"0.2.2\"")).unwrap();
        assert_ne!(Lock::new(&libc).digest("ch01", &["ch01"]), before);
        // A chapter that imports ch02 builds with ch02's rand 0.8.
        let with = Lock::new(&lock).digest("ch01", &["ch02", "ch01"]);
        let newer_rand = packages(&LOCK.replace("\"rand 0.8.5\"", "\"rand 0.9.0\"")).unwrap();
        assert_ne!(Lock::new(&newer_rand).digest("ch01", &["ch02", "ch01"]), with);
    }

    #[test]
    fn inputs_read_the_way_before_take_the_manifest_and_the_runtime_whole() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Config::parse(dir.path(), Path::new(""), "").unwrap().layout;
        let workspace: toml::Table = toml::from_str("[workspace.dependencies]\nrand = \"0.8\"\n").unwrap();
        let shared = Shared {
            rustc: "rustc 1.95.0".into(),
            runtime: "without comments".into(),
            runtime_before: "byte for byte".into(),
            lock: Lock::new(&[]),
            workspace: workspace.clone(),
            local: None,
        };
        let now = BTreeMap::from([
            ("cells of ch01".to_string(), "c".to_string()),
            ("code/Cargo.toml".to_string(), workspace_digest(&workspace, "ch01", Some(&BTreeSet::new()))),
            (crate::config::RUNTIME.to_string(), shared.runtime.clone()),
        ]);
        let before = as_before(&shared, &layout, "ch01", &now);
        assert_eq!(before["cells of ch01"], "c");
        assert_eq!(before["code/Cargo.toml"], workspace_digest(&workspace, "ch01", None));
        assert_ne!(before["code/Cargo.toml"], now["code/Cargo.toml"], "every dependency, used or not");
        assert_eq!(before[crate::config::RUNTIME], "byte for byte");
        assert_ne!(hash(&before, Recipe::Before), hash(&before, Recipe::Current), "the recipe is in the hash");
    }

    #[test]
    fn the_workspace_digest_leaves_other_chapters_out() {
        let manifest = |members: &str, more: &str| -> toml::Table {
            toml::from_str(&format!(
                "[workspace]\nmembers = [{members}]\n[workspace.dependencies]\nrand = \"0.8\"\n\
                 [profile.release.package.ch01-run]\nopt-level = 0\n{more}"
            ))
            .unwrap()
        };
        let used = BTreeSet::from(["rand".to_string()]);
        let one = workspace_digest(&manifest("\"ch01\"", ""), "ch01", Some(&used));
        let two = workspace_digest(
            &manifest("\"ch01\", \"ch02\"", "[profile.release.package.ch02-run]\nopt-level = 0\n"),
            "ch01",
            Some(&used),
        );
        assert_eq!(one, two, "a new chapter leaves ch01's inputs alone");
        let mut newer = manifest("\"ch01\"", "");
        newer["workspace"]["dependencies"]["rand"] = toml::Value::String("0.9".into());
        assert_ne!(one, workspace_digest(&newer, "ch01", Some(&used)), "a dependency's version is an input");
        // A dependency another chapter declares leaves ch01 alone, but not under the old recipe.
        let mut more = manifest("\"ch01\"", "");
        let deps = more["workspace"]["dependencies"].as_table_mut().unwrap();
        deps.insert("fastrand".into(), toml::Value::String("2".into()));
        assert_eq!(one, workspace_digest(&more, "ch01", Some(&used)), "a dependency ch01 does not use");
        let before = workspace_digest(&manifest("\"ch01\"", ""), "ch01", None);
        assert_ne!(before, workspace_digest(&more, "ch01", None));
    }

    #[test]
    fn cells_are_read_as_tokens_so_formatting_and_comments_change_nothing() {
        let digest = |code: &str| {
            let text = format!("# One\n\n```rust\n// @save\n{code}\n```\n\n```rust\nprintln!(\"{{}}\", f());\n```\n");
            let chapter = crate::parse::parse_chapter_as(
                "ch01",
                Path::new("src/ch01.md"),
                text.into_bytes(),
                crate::model::CellMode::Notebook,
            )
            .unwrap();
            (cells_digest(&chapter, true), cells_digest(&chapter, false))
        };
        let plain = digest("pub fn f() -> u32 { 1 }");
        assert_eq!(digest("pub fn f() -> u32 {\n    // one\n    1\n}"), plain);
        assert_eq!(digest("pub fn f() -> u32 {\r\n    1\r\n}"), plain);
        assert_ne!(digest("pub fn f() -> u32 { 2 }"), plain);
        // Doc comments are tokens, but change nothing the program does.
        assert_eq!(digest("/// One.\npub fn f() -> u32 { 1 }"), plain);
        assert_eq!(digest("//! A module.\npub fn f() -> u32 { 1 }"), plain);
        // A closing comma rustfmt adds when it lays a call out over lines.
        let call = digest("pub fn f() -> u32 { g(1, 2) }\nfn g(a: u32, b: u32) -> u32 { a + b }");
        assert_eq!(
            digest(
                "pub fn f() -> u32 {\n    g(\n        1,\n        2,\n    )\n}\nfn g(a: u32, b: u32,) -> u32 { a + b }"
            ),
            call
        );
        // A one-element tuple's comma is its type, not layout.
        let tuple = digest("pub fn f() -> u32 { let _t = (1,); 0 }");
        assert_ne!(digest("pub fn f() -> u32 { let _t = (1); 0 }"), tuple);
        // An attribute that is not documentation still counts, and so does a comma between items.
        assert_ne!(digest("#[inline(never)]\npub fn f() -> u32 { 1 }"), plain);
        assert_ne!(digest("pub fn f() -> u32 { g(1, 2) }\nfn g(a: u32, b: u32) -> u32 { a - b }"), call);
        assert_ne!(plain.0, plain.1, "the run cells count for the frozen chapter alone");
    }

    #[test]
    fn paths_are_written_with_slashes() {
        assert_eq!(slashed(Path::new("book/data/x.bin")), "book/data/x.bin");
    }
}
