//! Stage 2, **generate**: [`Chapter`]s → the files of `code/chNN`.
//!
//! syn parses every cell (items for save and test cells, statements for run cells), so a syntax
//! error is reported at its chapter line before cargo runs. The same syntax trees give the
//! references to other chapters and to external crates, which become the crate's
//! dependencies, ordered topologically. prettyplease prints the files; a [`LineMap`] remembers
//! which generated line came from which chapter line, for the `build` stage.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::visit::Visit;

use crate::diagnostic::InputError;
use crate::model::{Book, CellKind, Chapter, Location};

/// Everything `sync` writes for one chapter.
#[derive(Debug)]
pub struct ChapterCrate {
    pub chapter: String,
    /// Chapters this one imports, each with where the first reference is.
    pub chapter_deps: BTreeMap<String, Location>,
    /// `(path relative to the project root, contents)`, in a fixed order.
    pub files: Vec<(PathBuf, String)>,
    pub line_map: LineMap,
}

impl ChapterCrate {
    pub fn dir(&self) -> PathBuf {
        Path::new("code").join(&self.chapter)
    }
}

/// The whole generated tree, chapters in dependency order (dependencies first).
#[derive(Debug)]
pub struct Generated {
    pub crates: Vec<ChapterCrate>,
}

impl Generated {
    pub fn get(&self, chapter: &str) -> Option<&ChapterCrate> {
        self.crates.iter().find(|c| c.chapter == chapter)
    }

    /// `chapter` and every chapter it depends on, transitively, dependencies first.
    pub fn closure(&self, chapter: &str) -> Vec<&ChapterCrate> {
        let mut wanted = BTreeSet::from([chapter.to_string()]);
        for c in self.crates.iter().rev() {
            if wanted.contains(&c.chapter) {
                wanted.extend(c.chapter_deps.keys().cloned());
            }
        }
        self.crates.iter().filter(|c| wanted.contains(&c.chapter)).collect()
    }
}

/// Where generated lines came from: per generated file, anchors sorted by generated line
/// (each item's and each run cell's first line), plus the texts on both sides, so that a line
/// inside an item that prettyplease reflowed can still be found by its content.
#[derive(Debug, Default)]
pub struct LineMap {
    anchors: BTreeMap<PathBuf, Vec<Anchor>>,
    chapter_lines: Vec<String>,
    generated_lines: BTreeMap<PathBuf, Vec<String>>,
}

#[derive(Debug, Clone)]
struct Anchor {
    generated: usize,
    chapter_first: usize,
    chapter_last: usize,
}

impl LineMap {
    fn add(&mut self, file: &Path, generated: usize, chapter_first: usize, chapter_last: usize) {
        self.anchors.entry(file.to_path_buf()).or_default().push(Anchor { generated, chapter_first, chapter_last });
    }

    /// The chapter line that generated line `line` of `file` came from. Within the item or
    /// cell that contains it, the chapter line with the same code (spaces aside) wins, the one
    /// nearest the line's offset from the anchor if several do; failing that, the offset itself.
    pub fn chapter_line(&self, file: &Path, line: usize) -> Option<usize> {
        let anchors = self.anchors.get(file)?;
        let anchor = anchors.iter().rev().find(|a| a.generated <= line).or(anchors.first())?;
        let offset = line.saturating_sub(anchor.generated);
        let estimate = (anchor.chapter_first + offset).min(anchor.chapter_last);
        let squeeze = |s: &str| s.split_whitespace().collect::<String>();
        let Some(wanted) = self.generated_lines.get(file).and_then(|l| l.get(line.wrapping_sub(1))).map(|l| squeeze(l))
        else {
            return Some(estimate);
        };
        if wanted.len() < 3 {
            return Some(estimate);
        }
        let candidates = (anchor.chapter_first..=anchor.chapter_last).filter(|&n| {
            let have = self.chapter_lines.get(n - 1).map(|l| squeeze(l)).unwrap_or_default();
            have.len() >= 3 && (have.contains(&wanted) || wanted.contains(&have))
        });
        Some(candidates.min_by_key(|&n| n.abs_diff(estimate)).unwrap_or(estimate))
    }

    fn set_texts(&mut self, chapter: &str, files: &[(PathBuf, String)]) {
        self.chapter_lines = chapter.lines().map(str::to_string).collect();
        self.generated_lines = files.iter().map(|(p, t)| (p.clone(), t.lines().map(str::to_string).collect())).collect();
    }
}

/// The crates cells may name besides chapters: keys of `[workspace.dependencies]`.
#[derive(Debug, Default, Clone)]
pub struct ExternalCrates {
    /// Crate name as written in code (`tangle_runtime`) → dependency key (`tangle-runtime`).
    by_ident: BTreeMap<String, String>,
}

impl ExternalCrates {
    pub fn from_workspace_manifest(text: &str) -> anyhow::Result<Self> {
        let manifest: toml::Table = toml::from_str(text)?;
        let deps = manifest
            .get("workspace")
            .and_then(|w| w.get("dependencies"))
            .and_then(|d| d.as_table())
            .cloned()
            .unwrap_or_default();
        let by_ident = deps.keys().map(|k| (k.replace('-', "_"), k.clone())).collect();
        Ok(ExternalCrates { by_ident })
    }
}

pub const HEADER_NOTE: &str = "Change the chapter and run `cargo tangle sync`.";

/// The first line of every generated file (with `//` or `#` before it).
pub fn header_line(chapter: &Chapter) -> String {
    format!("@generated by tangle from {}: do not edit.", chapter.path.display())
}

/// Generates every chapter's crate, in dependency order.
pub fn generate(book: &Book, external: &ExternalCrates) -> Result<Generated, InputError> {
    let names: BTreeSet<&str> = book.chapters.iter().map(|c| c.name.as_str()).collect();
    let mut crates = Vec::new();
    for chapter in &book.chapters {
        crates.push(generate_chapter(chapter, &names, external)?);
    }
    let crates = topological_order(crates)?;
    Ok(Generated { crates })
}

/// A parsed cell: its syntax and where it sits.
struct ParsedCell<'a> {
    cell: &'a crate::model::Cell,
    items: Vec<syn::Item>,
    stmts: Vec<syn::Stmt>,
    inner_attrs: Vec<syn::Attribute>,
}

fn generate_chapter(
    chapter: &Chapter,
    chapters: &BTreeSet<&str>,
    external: &ExternalCrates,
) -> Result<ChapterCrate, InputError> {
    let mut parsed = Vec::new();
    let mut refs: Vec<(CellKind, String, Location)> = Vec::new();
    for cell in &chapter.cells {
        let p = parse_cell(chapter, cell)?;
        let mut visitor = RefVisitor { refs: Vec::new() };
        for item in &p.items {
            visitor.visit_item(item);
        }
        for stmt in &p.stmts {
            visitor.visit_stmt(stmt);
        }
        for (name, line) in visitor.refs {
            let loc = chapter.location(cell.code_line + line - 1);
            refs.push((cell.kind, name, loc));
        }
        parsed.push(p);
    }

    let mut chapter_deps = BTreeMap::new();
    let mut deps = BTreeMap::new();
    let mut dev_deps = BTreeMap::new();
    for (kind, name, loc) in refs {
        if name == chapter.name {
            continue;
        }
        let entry = if chapters.contains(name.as_str()) {
            chapter_deps.entry(name.clone()).or_insert_with(|| loc.clone());
            format!("{name} = {{ path = \"../{name}\" }}")
        } else if crate::parse::is_chapter_name(&name) {
            return Err(InputError::new(loc, format!("`{name}` names no chapter: there is no book/src/{name}.md")));
        } else if let Some(key) = external.by_ident.get(&name) {
            format!("{key}.workspace = true")
        } else {
            continue;
        };
        if kind == CellKind::Test {
            dev_deps.insert(name, entry);
        } else {
            deps.insert(name, entry);
        }
    }
    deps.insert("tangle_runtime".into(), "tangle-runtime.workspace = true".into());
    dev_deps.retain(|k, _| !deps.contains_key(k));

    let dir = Path::new("code").join(&chapter.name);
    let mut line_map = LineMap::default();
    let mut files = vec![(dir.join("Cargo.toml"), manifest(chapter, &deps, &dev_deps))];
    let lib = items_file(chapter, &parsed, CellKind::Save, &dir.join("src/lib.rs"), &mut line_map, "");
    files.push((dir.join("src/lib.rs"), lib));
    files.push((dir.join("src/main.rs"), main_file(chapter, &parsed, &dir.join("src/main.rs"), &mut line_map)));
    if parsed.iter().any(|p| p.cell.kind == CellKind::Test) {
        let prelude = format!("use {}::*;\n\n", chapter.name);
        let tests = items_file(chapter, &parsed, CellKind::Test, &dir.join("tests/cells.rs"), &mut line_map, &prelude);
        files.push((dir.join("tests/cells.rs"), tests));
    }
    line_map.set_texts(&chapter.source, &files);
    Ok(ChapterCrate { chapter: chapter.name.clone(), chapter_deps, files, line_map })
}

fn parse_cell<'a>(chapter: &Chapter, cell: &'a crate::model::Cell) -> Result<ParsedCell<'a>, InputError> {
    let syntax_error = |e: syn::Error| {
        let line = e.span().start().line.max(1);
        let why = match e.to_string().as_str() {
            "cannot parse string into token stream" => "its brackets, quotes or comments do not balance".to_string(),
            other => other.to_string(),
        };
        InputError::new(chapter.location(cell.code_line + line - 1), format!("this cell does not parse as Rust: {why}"))
    };
    let mut parsed = ParsedCell { cell, items: Vec::new(), stmts: Vec::new(), inner_attrs: Vec::new() };
    match cell.kind {
        CellKind::Save | CellKind::Test => {
            let file: syn::File = syn::parse_str(&cell.code).map_err(syntax_error)?;
            parsed.items = file.items;
            parsed.inner_attrs = file.attrs;
        }
        CellKind::Run => {
            let stmts = syn::parse::Parser::parse_str(syn::Block::parse_within, &cell.code).map_err(syntax_error)?;
            parsed.stmts = stmts
                .into_iter()
                .map(|s| match s {
                    syn::Stmt::Expr(e, None) => syn::Stmt::Expr(e, Some(Default::default())),
                    s => s,
                })
                .collect();
        }
    }
    Ok(parsed)
}

fn manifest(chapter: &Chapter, deps: &BTreeMap<String, String>, dev_deps: &BTreeMap<String, String>) -> String {
    let mut out = format!("# {}\n# {HEADER_NOTE}\n\n", header_line(chapter));
    out += &format!(
        "[package]\nname = \"{}\"\nversion = \"0.0.0\"\nedition.workspace = true\npublish = false\n\n[dependencies]\n",
        chapter.name
    );
    let mut sorted: Vec<&String> = deps.values().collect();
    sorted.sort();
    for d in sorted {
        out += d;
        out.push('\n');
    }
    if !dev_deps.is_empty() {
        out += "\n[dev-dependencies]\n";
        for d in dev_deps.values() {
            out += d;
            out.push('\n');
        }
    }
    out
}

/// lib.rs or tests/cells.rs: the items of every cell of `kind`, each under a comment naming
/// its chapter line.
fn items_file(
    chapter: &Chapter,
    parsed: &[ParsedCell],
    kind: CellKind,
    path: &Path,
    line_map: &mut LineMap,
    prelude: &str,
) -> String {
    let mut out = format!("// {}\n// {HEADER_NOTE}\n\n", header_line(chapter));
    let attrs: Vec<&syn::Attribute> =
        parsed.iter().filter(|p| p.cell.kind == kind).flat_map(|p| &p.inner_attrs).collect();
    if !attrs.is_empty() {
        let file =
            syn::File { shebang: None, frontmatter: None, attrs: attrs.into_iter().cloned().collect(), items: vec![] };
        out += &prettyplease::unparse(&file);
        out.push('\n');
    }
    out += prelude;
    for p in parsed.iter().filter(|p| p.cell.kind == kind) {
        for item in &p.items {
            let span = item.span();
            let first = p.cell.code_line + span.start().line - 1;
            let last = p.cell.code_line + span.end().line - 1;
            out += &format!("// {}\n", chapter.location(first));
            let generated_line = out.lines().count() + 1;
            line_map.add(path, generated_line, first, last);
            let file = syn::File { shebang: None, frontmatter: None, attrs: vec![], items: vec![item.clone()] };
            out += &prettyplease::unparse(&file);
            out.push('\n');
        }
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// main.rs: every run cell's statements in order, each cell announced by a runtime marker.
fn main_file(chapter: &Chapter, parsed: &[ParsedCell], path: &Path, line_map: &mut LineMap) -> String {
    let krate = syn::Ident::new(&chapter.name, proc_macro2::Span::call_site());
    let name = &chapter.name;
    let mut body = Vec::new();
    let run_cells: Vec<&ParsedCell> = parsed.iter().filter(|p| p.cell.kind == CellKind::Run).collect();
    for (index, p) in run_cells.iter().enumerate() {
        let index = proc_macro2::Literal::usize_unsuffixed(index);
        body.push(quote::quote! { tangle_runtime::cell(#index); });
        let stmts = &p.stmts;
        body.push(quote::quote! { #(#stmts)* });
    }
    let file: syn::File = syn::parse_quote! {
        #![allow(unused)]
        use #krate::*;

        fn main() {
            tangle_runtime::init(#name);
            if let Err(error) = cells() {
                tangle_runtime::exit_with(&*error);
            }
        }

        /// The chapter's run cells, in order; `?` in a cell ends the program with its error.
        fn cells() -> Result<(), Box<dyn std::error::Error>> {
            #(#body)*
            Ok(())
        }
    };
    // prettyplease drops comments, so each cell's location goes in after formatting, above
    // its marker; the same lines anchor the line map.
    let mut out = format!("// {}\n// {HEADER_NOTE}\n\n", header_line(chapter));
    for line in prettyplease::unparse(&file).lines() {
        let marker = line.trim_start().strip_prefix("tangle_runtime::cell(").and_then(|r| r.strip_suffix(");"));
        if let Some(cell) = marker.and_then(|n| n.parse::<usize>().ok()).and_then(|i| run_cells.get(i)) {
            let indent = &line[..line.len() - line.trim_start().len()];
            out += &format!("{indent}// {}\n", chapter.location(cell.cell.code_line));
            let first = cell.cell.code_line;
            let last = first + cell.cell.code.lines().count().saturating_sub(1);
            line_map.add(path, out.lines().count() + 2, first, last);
        }
        out += line;
        out.push('\n');
    }
    out
}

/// Whether a generated line only records where code came from (`// book/src/ch06.md:42`).
/// The cache ignores these lines, so that prose edits that move cells rebuild nothing.
pub fn is_location_comment(line: &str) -> bool {
    line.trim_start().strip_prefix("// book/src/").is_some_and(|rest| rest.contains(".md:"))
}

/// Collects the first segment of every path and `use` tree, and of `name::` inside macro
/// bodies (which syn leaves as tokens), with its line within the cell.
struct RefVisitor {
    refs: Vec<(String, usize)>,
}

impl<'ast> Visit<'ast> for RefVisitor {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if let Some(first) = path.segments.first()
            && (path.segments.len() > 1 || path.leading_colon.is_some())
        {
            self.refs.push((first.ident.to_string(), first.ident.span().start().line));
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        collect_use_roots(&item.tree, &mut self.refs);
    }

    fn visit_item_extern_crate(&mut self, item: &'ast syn::ItemExternCrate) {
        self.refs.push((item.ident.to_string(), item.ident.span().start().line));
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        syn::visit::visit_macro(self, mac);
        scan_tokens(mac.tokens.clone(), &mut self.refs);
    }
}

fn collect_use_roots(tree: &syn::UseTree, refs: &mut Vec<(String, usize)>) {
    match tree {
        syn::UseTree::Path(p) => refs.push((p.ident.to_string(), p.ident.span().start().line)),
        syn::UseTree::Name(n) => refs.push((n.ident.to_string(), n.ident.span().start().line)),
        syn::UseTree::Rename(r) => refs.push((r.ident.to_string(), r.ident.span().start().line)),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| collect_use_roots(t, refs)),
        _ => {}
    }
}

fn scan_tokens(tokens: TokenStream, refs: &mut Vec<(String, usize)>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        match tree {
            TokenTree::Ident(ident) => {
                let preceded_by_colons = i >= 1 && matches!(&trees[i - 1], TokenTree::Punct(p) if p.as_char() == ':');
                let followed_by_colons = matches!(trees.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':')
                    && matches!(trees.get(i + 2), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                if followed_by_colons && !preceded_by_colons {
                    refs.push((ident.to_string(), ident.span().start().line));
                }
            }
            TokenTree::Group(g) => scan_tokens(g.stream(), refs),
            _ => {}
        }
    }
}

/// Orders crates so that every chapter comes after the chapters it imports; a cycle is an
/// error that lists the `use`s that close it.
fn topological_order(crates: Vec<ChapterCrate>) -> Result<Vec<ChapterCrate>, InputError> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Active,
        Done,
    }
    let index: BTreeMap<String, usize> = crates.iter().enumerate().map(|(i, c)| (c.chapter.clone(), i)).collect();
    let mut marks = vec![Mark::New; crates.len()];
    let mut order = Vec::new();
    let mut stack: Vec<usize> = Vec::new();

    fn visit(
        i: usize,
        crates: &[ChapterCrate],
        index: &BTreeMap<String, usize>,
        marks: &mut [Mark],
        stack: &mut Vec<usize>,
        order: &mut Vec<usize>,
    ) -> Result<(), InputError> {
        match marks[i] {
            Mark::Done => return Ok(()),
            Mark::Active => {
                let start = stack.iter().position(|&s| s == i).unwrap_or(0);
                let cycle: Vec<usize> = stack[start..].to_vec();
                let mut steps = Vec::new();
                for (k, &from) in cycle.iter().enumerate() {
                    let to = &crates[cycle[(k + 1) % cycle.len()]].chapter;
                    let loc = &crates[from].chapter_deps[to];
                    steps.push(format!("{loc} uses {to}"));
                }
                let first = crates[cycle[0]].chapter_deps[&crates[cycle[1 % cycle.len()]].chapter].clone();
                return Err(InputError::new(
                    first,
                    format!("chapters import each other in a cycle: {}", steps.join(", ")),
                ));
            }
            Mark::New => {}
        }
        marks[i] = Mark::Active;
        stack.push(i);
        for dep in crates[i].chapter_deps.keys() {
            visit(index[dep], crates, index, marks, stack, order)?;
        }
        stack.pop();
        marks[i] = Mark::Done;
        order.push(i);
        Ok(())
    }

    for i in 0..crates.len() {
        visit(i, &crates, &index, &mut marks, &mut stack, &mut order)?;
    }
    let mut slots: Vec<Option<ChapterCrate>> = crates.into_iter().map(Some).collect();
    Ok(order.into_iter().map(|i| slots[i].take().unwrap()).collect())
}
