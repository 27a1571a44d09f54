//! The examples of a book → one cargo workspace under `target/tangle/examples`, built by one
//! `cargo build`.
//!
//! Examples that can share a crate do, one merged crate per edition (as rustdoc merges the
//! doctests of edition 2024): each example a module with its own `main`, and a dispatcher
//! `main` that runs example N when given N. The rest get a crate of their own (standalone):
//! `compile_fail` examples (each must fail alone), examples with crate-level lines (`#![...]`,
//! `extern crate`) or that name the crate root, and, after a merged crate failed to build, its
//! examples that were not to blame. Every crate depends on what `book.toml` declares; a
//! [`LineMap`] per chapter maps every generated line back to its chapter line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::include;
use super::program::{self, Program};
use crate::config::{Config, Layout, relative_to};
use crate::diagnostic::Diagnostic;
use crate::generate::{ChapterCrate, Generated, LineMap, Segment, quoted};
use crate::model::{Cell, CellMode, Chapter, ExampleAttributes};

/// One example of the book, with its program.
#[derive(Debug, Clone)]
pub struct Example {
    /// The chapter it is in.
    pub chapter: Arc<Chapter>,
    /// Position among the chapter's cells (all run cells in an examples chapter).
    pub index: usize,
    pub attributes: ExampleAttributes,
    pub edition: String,
    pub program: Program,
    /// The chapter line of the example's first line, and its container prefix's width.
    pub code_line: usize,
    pub prefix: usize,
    /// How many chapter lines the example spans.
    pub lines: usize,
    /// An `{{#include}}` that cannot be expanded: the zero-based example line and why.
    pub include_error: Option<(usize, String)>,
}

impl Example {
    /// The examples of `chapter`, its includes read from its folder under the project root,
    /// and only from the folders `layout` lets the book read.
    pub(crate) fn of_chapter(chapter: &Arc<Chapter>, default_edition: &str, layout: &Layout) -> Vec<Example> {
        let dir = layout.abs(chapter.path.parent().unwrap_or(Path::new("")));
        let allowed = include::Allowed::of(layout);
        chapter
            .cells
            .iter()
            .enumerate()
            .filter_map(|(index, cell)| Example::new(chapter, index, cell, default_edition, (&dir, &allowed)))
            .collect()
    }

    fn new(
        chapter: &Arc<Chapter>,
        index: usize,
        cell: &Cell,
        default_edition: &str,
        (dir, allowed): (&Path, &include::Allowed),
    ) -> Option<Example> {
        let attributes = cell.example.clone()?;
        let edition = attributes.edition.clone().unwrap_or_else(|| default_edition.to_string());
        let (program, include_error) = match include::expand(&cell.code, dir, allowed) {
            Ok(lines) => (program::split_lines(lines), None),
            Err(why) => (program::split(&cell.code), Some(why)),
        };
        Some(Example {
            chapter: chapter.clone(),
            index,
            attributes,
            edition,
            program,
            code_line: cell.code_line,
            prefix: cell.prefix.chars().count(),
            lines: cell.code.lines().count(),
            include_error,
        })
    }

    /// A name unique in the book: `ch01_e3`.
    pub fn id(&self) -> String {
        format!("{}_e{}", self.chapter.name, self.index)
    }

    /// An error about what its fence claims (`should_panic`, `compile_fail`): at the attribute
    /// in the opening fence's line, where the claim is made and dropped; at the example's first
    /// line when the fence does not spell it out (an included file's attributes).
    pub(crate) fn claim_error(&self, attribute: &str, message: impl Into<String>) -> Diagnostic {
        let chapter = &self.chapter;
        let source = chapter.source();
        let start = chapter.cells[self.index].span.start;
        let fence = &source[start..source[start..].find('\n').map_or(source.len(), |end| start + end)];
        let Some(at) = fence.find(attribute).map(|i| start + i) else {
            return Diagnostic::error(chapter.location(self.code_line), message);
        };
        let (line, column) = chapter.doc.line_col(at);
        Diagnostic::error(chapter.location(line).with_column(column), message)
            .with_span(at..at + attribute.len(), "the fence says so here")
    }

    /// Whether it is compiled as rustdoc compiles a `no_run` or `compile_fail` doctest:
    /// checked (`cargo check`, rustdoc's `--emit=metadata`), never linked, so that an example
    /// calling a C library the reader must install (`#[link(name = "extlib")]`) still passes.
    pub(crate) fn checked_only(&self) -> bool {
        self.attributes.no_run || self.attributes.compile_fail
    }

    /// Whether it must have a crate of its own.
    pub(crate) fn standalone(&self) -> bool {
        self.attributes.compile_fail || self.attributes.standalone_crate || self.program.needs_own_crate(&self.edition)
    }
}

/// Where an example is built and how it is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The cargo package that holds it.
    pub binary: String,
    /// The name of the package's binary target, rustc's `--crate-name`: the package's name,
    /// unless the example names its crate (`#![crate_name = "rary"]`).
    pub target: String,
    /// The number that selects it in a merged crate's dispatcher (passed in [`EXAMPLE_VAR`]), if any.
    pub number: Option<usize>,
    /// Whether its crate is only checked, never linked ([`Example::checked_only`]).
    pub checked_only: bool,
}

/// The generated workspace: files, line maps, and where each example went.
pub struct Workspace {
    /// The folder, relative to the project root.
    pub dir: PathBuf,
    pub files: Vec<(PathBuf, String)>,
    /// The generated tree as the build stage's diagnostic mapper reads it.
    pub generated: Generated,
    /// Example id → where it is built.
    pub placements: BTreeMap<String, Placement>,
    /// The edition of an example whose fence names none: book.toml's, else mdBook's 2015.
    pub edition: String,
    /// The crates book.toml declares, by the names examples use.
    pub declared: Vec<String>,
    /// The package of the manifest book.toml takes its dependencies from (`manifest = ...`), if
    /// it has one: its crate's name, and its folder as seen from book.toml's. Its dependencies
    /// come to the examples; it does not, unless declared.
    pub manifest_package: Option<(String, String)>,
}

/// The environment variable that tells a merged crate's dispatcher which example to run.
pub(crate) const EXAMPLE_VAR: &str = "TANGLE_EXAMPLE";

/// The workspace's folder, relative to the project root.
pub fn dir(config: &Config) -> PathBuf {
    config.layout.work_dir_relative().join("examples")
}

/// Generates the workspace for `examples`; `force_standalone` lists example ids to build on
/// their own whatever they are.
pub fn workspace(config: &Config, examples: &[&Example], force_standalone: &[String]) -> Workspace {
    let dir = dir(config);
    let mut files = Vec::new();
    let mut maps: BTreeMap<String, (Arc<Chapter>, LineMap)> = BTreeMap::new();
    let mut placements = BTreeMap::new();
    let mut members = Vec::new();
    // Merged per edition, and apart for examples that are only checked.
    let mut merged: BTreeMap<(&str, bool), Vec<&Example>> = BTreeMap::new();
    for example in examples {
        if example.standalone() || force_standalone.contains(&example.id()) {
            // Under the chapter's folder, where the build stage's mapper looks for its lines.
            let name = example.id();
            let member = format!("{}/{name}", example.chapter.name);
            let pkg = dir.join(&member);
            let (source, _) = example.program.source(true);
            let main = pkg.join("src/main.rs");
            add_segments(line_map(&mut maps, example), &main, example, true);
            files.push((main, source));
            let checked_only = example.checked_only();
            let target = example.program.crate_name().unwrap_or_else(|| name.clone());
            files.push((pkg.join("Cargo.toml"), package(&name, &target, &example.edition, config)));
            let placement = Placement { binary: name.clone(), target, number: None, checked_only };
            placements.insert(name.clone(), placement);
            members.push(member);
        } else {
            merged.entry((example.edition.as_str(), example.checked_only())).or_default().push(example);
        }
    }
    for ((edition, checked_only), group) in merged {
        let name = format!("examples_{edition}{}", if checked_only { "_checked" } else { "" });
        let pkg = dir.join(&name);
        let mut main =
            String::from("// The dispatcher: runs the example whose number it is given.\n#![allow(unused)]\n\n");
        for example in &group {
            // Each example's module lives in its chapter's folder (see the standalone ones).
            main +=
                &format!("#[path = \"../../{}/{}.rs\"]\nmod {};\n", example.chapter.name, example.id(), example.id());
        }
        // The number comes in an environment variable, taken away before the example runs: its
        // command line is its own, empty, as under rustdoc (a `clap` example parses it).
        main += &format!(
            "\nfn main() -> ::std::process::ExitCode {{\n    use ::std::process::Termination;\n    \
             let n: usize = ::std::env::var(\"{EXAMPLE_VAR}\").ok().and_then(|a| a.parse().ok()).expect(\"an example's number\");\n    \
             unsafe {{ ::std::env::remove_var(\"{EXAMPLE_VAR}\") }};\n    \
             match n {{\n"
        );
        for (n, example) in group.iter().enumerate() {
            let (source, _) = example.program.source(false);
            let file = dir.join(&example.chapter.name).join(format!("{}.rs", example.id()));
            add_segments(line_map(&mut maps, example), &file, example, false);
            files.push((file, source));
            main += &format!("        {n} => {}::__tangle_main().report(),\n", example.id());
            let (binary, target) = (name.clone(), name.clone());
            placements.insert(example.id(), Placement { binary, target, number: Some(n), checked_only });
        }
        main += "        _ => panic!(\"no example {n}\"),\n    }\n}\n";
        files.push((pkg.join("Cargo.toml"), package(&name, &name, edition, config)));
        files.push((pkg.join("src/main.rs"), main));
        members.push(name);
    }
    let manifest = workspace_manifest(config, &dir, &members);
    files.push((dir.join("Cargo.toml"), manifest.clone()));
    let crates = maps
        .into_values()
        .map(|(chapter, line_map)| ChapterCrate {
            chapter,
            dir: dir.clone(),
            chapter_deps: BTreeMap::new(),
            lib_chapters: std::collections::BTreeSet::new(),
            files: Vec::new(),
            line_map,
        })
        .collect();
    let generated =
        Generated { code: dir.clone(), crates, workspace: (dir.join("Cargo.toml"), manifest), support: Vec::new() };
    let edition = config.edition(CellMode::Examples).to_string();
    let declared = config.dependencies.keys().cloned().collect();
    let manifest_package = manifest_package(config);
    Workspace { dir, files, generated, placements, edition, declared, manifest_package }
}

/// The package `manifest = ...` names: its name (code calls its crate so, `-` read as `_`),
/// and its folder relative to book.toml's.
fn manifest_package(config: &Config) -> Option<(String, String)> {
    let manifest = config.manifest.as_ref()?;
    let text = std::fs::read_to_string(config.layout.abs(manifest)).ok()?;
    let doc: toml::Table = toml::from_str(&text).ok()?;
    let name = doc.get("package")?.get("name")?.as_str()?.to_string();
    let layout = &config.layout;
    let dir = relative_to(manifest.parent().unwrap_or(Path::new("")), &layout.book, &layout.root);
    Some((name, dir.to_string_lossy().replace('\\', "/")))
}

/// The example's lines in `file`, as runs of lines that follow each other in both files.
fn add_segments(map: &mut LineMap, file: &Path, example: &Example, standalone: bool) {
    let p = &example.program;
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for (k, origin) in p.origin.iter().enumerate() {
        let (g, c) = (p.generated_line(standalone, k), example.code_line + origin);
        match runs.last_mut() {
            Some((g0, c0, len)) if *g0 + *len == g && *c0 + *len == c => *len += 1,
            _ => runs.push((g, c, 1)),
        }
    }
    for (generated, chapter, len) in runs {
        let unindented = Default::default();
        map.add(file, Segment { generated, chapter, len, indent: 0, prefix: example.prefix, unindented });
    }
    for (k, from) in p.included.iter().enumerate() {
        if let Some(from) = from {
            map.add_included(file, p.generated_line(standalone, k), from.clone());
        }
    }
}

/// The manifest of package `name`, whose binary target is `target`.
fn package(name: &str, target: &str, edition: &str, config: &Config) -> String {
    let (name, target, edition) = (quoted(name), quoted(target), quoted(edition));
    let mut out = format!(
        "# @generated by tangle from the book's examples: do not edit.\n[package]\nname = {name}\n\
         version = \"0.0.0\"\nedition = {edition}\npublish = false\n\n[[bin]]\nname = {target}\npath = \"src/main.rs\"\n\n\
         [dependencies]\n"
    );
    for key in config.dependencies.keys() {
        out += &format!("{key} = {{ workspace = true }}\n");
    }
    out
}

fn workspace_manifest(config: &Config, dir: &Path, members: &[String]) -> String {
    let members: Vec<String> = members.iter().map(|m| quoted(m)).collect();
    let mut out = format!(
        "# @generated by tangle from {}: do not edit.\n[workspace]\nresolver = \"2\"\nmembers = [{}]\n\n\
         [workspace.dependencies]\n",
        config.layout.book_toml().display(),
        members.join(", ")
    );
    for (key, spec) in &config.dependencies {
        let spec = crate::config::with_dependency_path(spec, |path| relative_to(path, dir, &config.layout.root));
        out += &format!("{key} = {spec}\n");
    }
    // Examples are compiled as rustdoc compiles doctests: unoptimised, debug assertions on.
    out += "\n[profile.dev]\ndebug = false\n";
    out
}

/// The line map of `example`'s chapter in `maps`, a new one for its first example.
fn line_map<'m>(maps: &'m mut BTreeMap<String, (Arc<Chapter>, LineMap)>, example: &Example) -> &'m mut LineMap {
    let chapter = &example.chapter;
    &mut maps.entry(chapter.name.clone()).or_insert_with(|| (chapter.clone(), LineMap::default())).1
}

/// Every example of the chapters named, in book order.
pub fn examples(config: &Config, chapters: &[&Arc<Chapter>]) -> Vec<Example> {
    chapters.iter().flat_map(|c| Example::of_chapter(c, config.edition(CellMode::Examples), &config.layout)).collect()
}
