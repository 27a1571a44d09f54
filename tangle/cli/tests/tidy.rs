//! House rules for the tool's own source, checked rather than hoped for:
//!
//! - every module of every crate of the tool opens with a `//!` doc saying what it owns;
//! - no module imports one that imports it back: within each crate, the graph of `use` and
//!   path references between its modules (test modules aside) has no cycle, so the pipeline
//!   reads one way in the folder tree;
//! - the crate boundary holds: `tangle-core` builds without the renderer's dependencies
//!   (mdBook, KaTeX, hayagriva, elasticlunr), and no crate of the tool depends on one above it
//!   (core ← render ← mdbook-tangle; the runtime below them all).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The tool's crates, each with the folder of its sources.
const CRATES: [(&str, &str); 4] =
    [("tangle-core", "core"), ("tangle-render", "render"), ("mdbook-tangle", "cli"), ("tangle-runtime", "runtime")];

fn tool_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn src_of(krate: &str) -> PathBuf {
    tool_dir().join(krate).join("src")
}

/// `crate::render::chapter` for `src/render/chapter.rs`; `crate::render` for `src/render/mod.rs`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" && stem != "main" && !rel.starts_with("bin") {
        parts.push(stem.to_string());
    }
    parts
}

fn source_files(src: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(src)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    files
}

fn is_test_module(module: &[String]) -> bool {
    module.last().is_some_and(|m| m == "tests")
}

#[test]
fn every_module_opens_with_a_doc_comment() {
    let missing: Vec<String> = CRATES
        .iter()
        .map(|(_, dir)| src_of(dir))
        .flat_map(|src| source_files(&src).into_iter().map(move |f| (src.clone(), f)))
        .filter(|(src, f)| !is_test_module(&module_of(src, f)))
        .map(|(_, f)| f)
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            !text.trim_start().starts_with("//!")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(missing.is_empty(), "modules without a `//!` doc: {missing:#?}");
}

/// Every path a file mentions that starts with `crate`, `super` or `self`, outside test modules.
struct Paths {
    found: Vec<Vec<String>>,
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        // `#[cfg(test)]` only: a module behind another `cfg` (`unix`) is part of the build.
        let cfg_test =
            |a: &syn::Attribute| a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test");
        let is_test = m.ident == "tests" || m.attrs.iter().any(cfg_test);
        if !is_test {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        match segs.first().map(String::as_str) {
            Some("crate" | "super" | "self") => self.found.push(segs),
            // `chapter::render(...)`: relative to this module (kept when a child of ours).
            _ if segs.len() > 1 => self.found.push(std::iter::once("self".to_string()).chain(segs).collect()),
            _ => {}
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        fn walk(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
            match tree {
                syn::UseTree::Path(p) => {
                    prefix.push(p.ident.to_string());
                    walk(&p.tree, prefix, out);
                    prefix.pop();
                }
                syn::UseTree::Name(n) => out.push(prefix.iter().cloned().chain([n.ident.to_string()]).collect()),
                syn::UseTree::Rename(r) => out.push(prefix.iter().cloned().chain([r.ident.to_string()]).collect()),
                syn::UseTree::Glob(_) => out.push(prefix.clone()),
                syn::UseTree::Group(g) => g.items.iter().for_each(|t| walk(t, prefix, out)),
            }
        }
        let mut all = Vec::new();
        walk(&u.tree, &mut Vec::new(), &mut all);
        // `use foo::bar` inside a module refers to a child module `foo` when it exists.
        self.found.extend(all.into_iter().map(|p| match p.first().map(String::as_str) {
            Some("crate" | "super" | "self") => p,
            _ => std::iter::once("self".to_string()).chain(p).collect(),
        }));
    }
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    for (name, dir) in CRATES {
        let cycles = cycles_in(&src_of(dir));
        assert!(cycles.is_empty(), "modules of {name} that import each other:\n{}", cycles.join("\n"));
    }
}

fn cycles_in(src: &Path) -> Vec<String> {
    let files: Vec<PathBuf> = source_files(src).into_iter().filter(|f| !is_test_module(&module_of(src, f))).collect();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for file in &files {
        let from = module_of(src, file);
        let ast = syn::parse_file(&std::fs::read_to_string(file).unwrap()).unwrap();
        let mut paths = Paths { found: Vec::new() };
        paths.visit_file(&ast);
        for path in paths.found {
            // Resolve `crate`, `super` and `self` to an absolute module path, then keep its
            // longest prefix that is a module of ours.
            let mut abs: Vec<String> = Vec::new();
            let mut rest = path.as_slice();
            match rest.first().map(String::as_str) {
                Some("crate") => rest = &rest[1..],
                Some("self") => {
                    abs = from.clone();
                    rest = &rest[1..];
                }
                _ => abs = from.clone(),
            }
            while rest.first().is_some_and(|s| s == "super") {
                abs.pop();
                rest = &rest[1..];
            }
            abs.extend(rest.iter().cloned());
            let relative = path.first().is_some_and(|s| s == "self");
            let target = (0..=abs.len()).rev().map(|n| abs[..n].to_vec()).find(|m| modules.contains(m));
            // A relative path names one of ours only through a child module (`chapter::f`).
            let target = target.filter(|t| !relative || t.len() > from.len());
            if let Some(target) = target
                && target != from
                && !target.is_empty()
            {
                edges.entry(from.clone()).or_default().insert(target);
            }
        }
    }
    // Any cycle? Depth-first search with colours.
    fn visit(
        m: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
        cycles: &mut Vec<String>,
    ) {
        state.insert(m.clone(), 1);
        stack.push(m.clone());
        for next in edges.get(m).into_iter().flatten() {
            match state.get(next).copied().unwrap_or(0) {
                0 => visit(next, edges, state, stack, cycles),
                1 => {
                    let start = stack.iter().position(|s| s == next).unwrap();
                    let names: Vec<String> =
                        stack[start..].iter().chain([next]).map(|m| format!("crate::{}", m.join("::"))).collect();
                    cycles.push(names.join(" -> "));
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(m.clone(), 2);
    }
    let mut state = BTreeMap::new();
    let mut cycles = Vec::new();
    for m in &modules {
        if state.get(m).copied().unwrap_or(0) == 0 {
            visit(m, &edges, &mut state, &mut Vec::new(), &mut cycles);
        }
    }
    cycles
}

/// Every package `package` depends on, transitively (normal dependencies; build scripts and
/// dev-dependencies aside), by name.
fn dependencies_of(package: &str) -> BTreeSet<String> {
    let rustc = std::process::Command::new("rustc").arg("-vV").output().expect("rustc runs");
    let host = String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .expect("rustc -vV names the host");
    let out = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["metadata", "--format-version", "1", "--locked", "--filter-platform", &host])
        .arg("--manifest-path")
        .arg(tool_dir().parent().unwrap().join("Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let nodes = meta["resolve"]["nodes"].as_array().unwrap();
    let name_of = |id: &str| -> String {
        meta["packages"].as_array().unwrap().iter().find(|p| p["id"] == id).unwrap()["name"].as_str().unwrap().into()
    };
    let start = meta["packages"].as_array().unwrap().iter().find(|p| p["name"] == package).unwrap()["id"].clone();
    let mut seen = BTreeSet::new();
    let mut todo = vec![start.as_str().unwrap().to_string()];
    while let Some(id) = todo.pop() {
        let node = nodes.iter().find(|n| n["id"] == id.as_str()).unwrap();
        for dep in node["deps"].as_array().unwrap() {
            let normal = dep["dep_kinds"].as_array().unwrap().iter().any(|k| k["kind"].is_null());
            let dep_id = dep["pkg"].as_str().unwrap().to_string();
            if normal && seen.insert(dep_id.clone()) {
                todo.push(dep_id);
            }
        }
    }
    seen.iter().map(|id| name_of(id)).collect()
}

#[test]
fn the_core_builds_without_the_renderer_and_no_crate_depends_on_one_above_it() {
    let core = dependencies_of("tangle-core");
    for heavy in ["mdbook-driver", "mdbook-html", "quick-js", "hayagriva", "elasticlunr-rs", "tangle-render"] {
        assert!(!core.contains(heavy), "tangle-core depends on {heavy}");
    }
    let render = dependencies_of("tangle-render");
    // The walk finds what is there (the renderer does use these), so the absence above means something.
    assert!(render.contains("tangle-core") && render.contains("quick-js") && render.contains("mdbook-driver"));
    assert!(!render.contains("mdbook-tangle"));
    let runtime = dependencies_of("tangle-runtime");
    for above in ["tangle-core", "tangle-render", "mdbook-tangle"] {
        assert!(!runtime.contains(above), "the runtime depends on {above}");
    }
}
