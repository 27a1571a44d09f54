//! House rules for the tool's own source, checked rather than hoped for:
//!
//! - every module opens with a `//!` doc saying what it owns;
//! - no module imports one that imports it back: the graph of `use` and path references
//!   between the modules of `tangle/src` (test modules aside) has no cycle, so the pipeline
//!   reads one way in the folder tree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `crate::render::chapter` for `src/render/chapter.rs`; `crate::render` for `src/render/mod.rs`.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap();
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" && stem != "main" {
        parts.push(stem.to_string());
    }
    parts
}

fn source_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(src())
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
    let missing: Vec<String> = source_files()
        .into_iter()
        .filter(|f| !is_test_module(&module_of(f)))
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
        let is_test = m.ident == "tests" || m.attrs.iter().any(|a| a.path().is_ident("cfg"));
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
    let files: Vec<PathBuf> = source_files().into_iter().filter(|f| !is_test_module(&module_of(f))).collect();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(f)).collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for file in &files {
        let from = module_of(file);
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
    assert!(cycles.is_empty(), "modules that import each other:\n{}", cycles.join("\n"));
}
