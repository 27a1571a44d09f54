//! What syn finds in a cell, without ever printing it back: syntax errors (at the chapter's
//! line and column), the crates it names, the inner attributes a file must hoist, where a run
//! cell's last expression needs a `;` to stand among statements, and which lines continue a
//! multi-line string literal (and so must not be indented when the cell goes inside `main`).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use proc_macro2::{TokenStream, TokenTree};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use syn::spanned::Spanned;
use syn::visit::Visit;

use crate::diagnostic::Diagnostic;
use crate::model::{Cell, CellKind, Chapter};

/// What the emitter and the dependency finder need to know about a cell. Lines are one-based
/// within the cell's code (line 1 is the marker line of a save or test cell).
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSyntax {
    /// First path segments (`ch02` in `ch02::TinyGpt`, `use gemm::...`), with their line and
    /// zero-based column.
    pub refs: Vec<(String, usize, usize)>,
    /// Modules the cell declares (`mod ch02 { ... }`): a path through one is the chapter's own,
    /// not a reference to the chapter of that name.
    #[serde(default)]
    pub modules: Vec<String>,
    /// Lines of inner attributes (`#![allow(...)]`), which must open the generated file.
    pub inner_attribute_lines: Vec<Range<usize>>,
    /// Lines inside a multi-line literal after its first line: indenting them would change
    /// the program.
    pub literal_lines: BTreeSet<usize>,
    /// `(line, column)` (column zero-based, in characters) just after a run cell's final
    /// expression that has no `;`, where one must go so that the next cell can follow.
    pub needs_semicolon: Option<(usize, usize)>,
}

/// The analyses of cells that parsed, by a hash of the cell's kind and code, kept from one
/// command to the next (`cache::load_analyses`): syn, which the tool runs unoptimised so that
/// it builds fast, takes most of a check that builds nothing, and an edit changes one cell.
/// A cell that does not parse is analysed again each time (its diagnostic names its chapter
/// line, which the cell does not determine).
#[derive(Debug, Default)]
pub struct Analyses {
    /// What the previous command left, not yet asked for.
    known: BTreeMap<String, CellSyntax>,
    /// What this command asked for: what is kept for the next.
    used: BTreeMap<String, CellSyntax>,
    /// Some cell was analysed afresh.
    analysed: bool,
}

impl Analyses {
    /// Analyses recorded by an earlier command (see [`Analyses::used`]).
    pub(crate) fn from_recorded(known: BTreeMap<String, CellSyntax>) -> Analyses {
        Analyses { known, ..Analyses::default() }
    }

    /// The analyses this command used, to record for the next one; `None` when they are the
    /// ones it was given (nothing to write).
    pub fn used(&self) -> Option<&BTreeMap<String, CellSyntax>> {
        (self.analysed || !self.known.is_empty()).then_some(&self.used)
    }

    /// [`cell`], answered from the recorded analyses when this code was analysed before.
    pub fn cell(&mut self, chapter: &Chapter, cell: &Cell) -> Result<CellSyntax, Box<Diagnostic>> {
        let key = cell_key(cell);
        if let Some(syntax) = self.used.get(&key) {
            return Ok(syntax.clone());
        }
        let syntax = match self.known.remove(&key) {
            Some(syntax) => syntax,
            None => {
                self.analysed = true;
                self::cell(chapter, cell)?
            }
        };
        self.used.insert(key, syntax.clone());
        Ok(syntax)
    }
}

/// What an analysis depends on: the cell's kind and its code, nothing else.
fn cell_key(cell: &Cell) -> String {
    let mut h = Sha256::new();
    let kind: &[u8] = match cell.kind {
        CellKind::Save => b"save",
        CellKind::Test => b"test",
        CellKind::Run => b"run",
    };
    h.update(kind);
    // What an analysis holds: a recorded one of an earlier kind (before `modules`) is not used.
    h.update(b"\0analysis 2");
    h.update([0]);
    h.update(cell.code.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses and analyses one cell.
pub fn cell(chapter: &Chapter, cell: &Cell) -> Result<CellSyntax, Box<Diagnostic>> {
    let syntax_error = |e: syn::Error| Box::new(error_at(chapter, cell, e));
    let mut out = CellSyntax::default();
    let mut visitor = RefVisitor { refs: Vec::new(), modules: Vec::new() };
    match cell.kind {
        CellKind::Save | CellKind::Test => {
            let file: syn::File = syn::parse_str(&cell.code).map_err(syntax_error)?;
            for attr in &file.attrs {
                let span = attr.span();
                out.inner_attribute_lines.push(span.start().line..span.end().line + 1);
            }
            visitor.visit_file(&file);
        }
        CellKind::Run => {
            let stmts = syn::parse::Parser::parse_str(syn::Block::parse_within, &cell.code).map_err(syntax_error)?;
            if let Some(syn::Stmt::Expr(expr, None)) = stmts.last()
                && !is_block_like(expr)
            {
                let end = expr.span().end();
                out.needs_semicolon = Some((end.line, end.column));
            }
            for stmt in &stmts {
                visitor.visit_stmt(stmt);
            }
        }
    }
    out.refs = visitor.refs;
    out.modules = visitor.modules;
    out.literal_lines = literal_continuation_lines(&cell.code);
    Ok(out)
}

/// An expression that may stand as a statement without `;` (when it is `()`).
fn is_block_like(expr: &syn::Expr) -> bool {
    matches!(
        expr,
        syn::Expr::Block(_)
            | syn::Expr::If(_)
            | syn::Expr::Match(_)
            | syn::Expr::Loop(_)
            | syn::Expr::While(_)
            | syn::Expr::ForLoop(_)
            | syn::Expr::Unsafe(_)
            | syn::Expr::Const(_)
            | syn::Expr::TryBlock(_)
    )
}

/// A syntax error as a diagnostic at the chapter's line and column, underlining the token.
fn error_at(chapter: &Chapter, cell: &Cell, e: syn::Error) -> Diagnostic {
    let start = e.span().start();
    let end = e.span().end();
    let line = start.line.max(1);
    let why = match e.to_string().as_str() {
        "cannot parse string into token stream" => "its brackets, quotes or comments do not balance".to_string(),
        other => other.to_string(),
    };
    let (offset, column) = chapter_offset(chapter, cell, line, start.column);
    let len = if end.line == start.line {
        let (end_offset, _) = chapter_offset(chapter, cell, line, end.column);
        end_offset.saturating_sub(offset)
    } else {
        0
    };
    let location = chapter.location(cell.code_line + line - 1).with_column(column);
    let d = Diagnostic::error(location, format!("this cell does not parse as Rust: {why}"))
        .with_span(offset..offset + len, "");
    // mdBook's directives in a cell's code are mdBook's to expand, in the page: tangle builds a
    // notebook cell's code as the chapter writes it.
    match cell.code.lines().nth(line - 1).is_some_and(|l| l.trim_start().starts_with("{{#")) {
        true => d.with_help(
            "mdBook's `{{#include}}` is expanded in the page, not in a notebook cell's code, which tangle builds \
             as the chapter writes it: put the code in the cell, or set `cells = \"examples\"` under \
             [preprocessor.tangle] in book.toml, where every block is an example and includes are expanded as \
             `mdbook test` expands them",
        ),
        false => d,
    }
}

/// The byte offset in the chapter file, and the one-based column there, of a zero-based
/// character column on one-based `line` of a cell.
pub(crate) fn chapter_offset(chapter: &Chapter, cell: &Cell, line: usize, column: usize) -> (usize, usize) {
    let code_line = cell.code.lines().nth(line - 1).unwrap_or("");
    let byte = code_line.char_indices().nth(column).map_or(code_line.len(), |(i, _)| i);
    let start = line_start(chapter.source(), cell.code_line + line - 1).min(chapter.source().len());
    let source_line = chapter.source()[start..].split(['\n', '\r']).next().unwrap_or("");
    // The container prefix (`> `, a list item's indentation) as it stands on this line.
    let prefix = match source_line.strip_suffix(code_line) {
        Some(prefix) => prefix,
        None => &source_line[..cell.prefix.len().min(source_line.len())],
    };
    let offset = (start + prefix.len() + byte).min(chapter.source().len());
    (offset, prefix.chars().count() + column + 1)
}

fn line_start(text: &str, line: usize) -> usize {
    text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum()
}

/// The one-based lines of `code` that continue a multi-line literal (empty if it does not
/// tokenize).
pub(crate) fn literal_continuation_lines(code: &str) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    if let Ok(tokens) = code.parse::<TokenStream>() {
        literal_lines(tokens, &mut out);
    }
    out
}

/// Lines strictly after the first line of every literal that spans several lines.
fn literal_lines(tokens: TokenStream, out: &mut BTreeSet<usize>) {
    for tree in tokens {
        match tree {
            TokenTree::Literal(lit) => {
                let span = lit.span();
                out.extend(span.start().line + 1..=span.end().line);
            }
            TokenTree::Group(g) => literal_lines(g.stream(), out),
            _ => {}
        }
    }
}

/// Collects the first segment of every path and `use` tree, and of `name::` inside macro
/// bodies (which syn leaves as tokens), with its line within the cell.
struct RefVisitor {
    refs: Vec<(String, usize, usize)>,
    modules: Vec<String>,
}

impl<'ast> Visit<'ast> for RefVisitor {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if let Some(first) = path.segments.first()
            && (path.segments.len() > 1 || path.leading_colon.is_some())
        {
            self.refs.push((
                first.ident.to_string(),
                first.ident.span().start().line,
                first.ident.span().start().column,
            ));
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        collect_use_roots(&item.tree, &mut self.refs);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        self.modules.push(item.ident.to_string());
        syn::visit::visit_item_mod(self, item);
    }

    fn visit_item_extern_crate(&mut self, item: &'ast syn::ItemExternCrate) {
        self.refs.push((item.ident.to_string(), item.ident.span().start().line, item.ident.span().start().column));
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        syn::visit::visit_macro(self, mac);
        scan_tokens(mac.tokens.clone(), &mut self.refs);
    }
}

fn collect_use_roots(tree: &syn::UseTree, refs: &mut Vec<(String, usize, usize)>) {
    match tree {
        syn::UseTree::Path(p) => {
            refs.push((p.ident.to_string(), p.ident.span().start().line, p.ident.span().start().column))
        }
        syn::UseTree::Name(n) => {
            refs.push((n.ident.to_string(), n.ident.span().start().line, n.ident.span().start().column))
        }
        syn::UseTree::Rename(r) => {
            refs.push((r.ident.to_string(), r.ident.span().start().line, r.ident.span().start().column))
        }
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| collect_use_roots(t, refs)),
        _ => {}
    }
}

fn scan_tokens(tokens: TokenStream, refs: &mut Vec<(String, usize, usize)>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        match tree {
            TokenTree::Ident(ident) => {
                let preceded_by_colons = i >= 1 && matches!(&trees[i - 1], TokenTree::Punct(p) if p.as_char() == ':');
                let followed_by_colons = matches!(trees.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':')
                    && matches!(trees.get(i + 2), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                if followed_by_colons && !preceded_by_colons {
                    refs.push((ident.to_string(), ident.span().start().line, ident.span().start().column));
                }
            }
            TokenTree::Group(g) => scan_tokens(g.stream(), refs),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn chapter(md: &str) -> Chapter {
        crate::parse::parse_chapter("ch03", Path::new("book/src/ch03.md"), md.as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn recorded_analyses_answer_for_the_same_code_only() {
        let md = "```rust\n// @save\npub fn f() -> u8 { ch02::g() }\n```\n\n```rust\nlet x = 1;\nch02::h(x)\n```\n";
        let ch = chapter(md);
        let mut first = Analyses::default();
        let fresh: Vec<CellSyntax> = ch.cells.iter().map(|c| first.cell(&ch, c).unwrap()).collect();
        assert_eq!(fresh, ch.cells.iter().map(|c| cell(&ch, c).unwrap()).collect::<Vec<_>>());
        assert!(fresh[1].needs_semicolon.is_some());
        let recorded = first.used().expect("analysed afresh, so there is something to record").clone();
        assert_eq!(recorded.len(), 2);

        // The next command, same chapter: every cell from the record, nothing to write back.
        let mut second = Analyses::from_recorded(recorded.clone());
        let again: Vec<CellSyntax> = ch.cells.iter().map(|c| second.cell(&ch, c).unwrap()).collect();
        assert_eq!(again, fresh);
        assert!(second.used().is_none());

        // A run cell edited: analysed again (and its record replaces the old one), the other
        // cell answered from the record; the same code as a save cell is a different cell.
        let edited = chapter(&md.replace("ch02::h(x)", "ch04::h(x);"));
        let mut third = Analyses::from_recorded(recorded);
        let syntax = third.cell(&edited, &edited.cells[1]).unwrap();
        assert_eq!(syntax.refs, vec![("ch04".to_string(), 2, 0)]);
        assert_eq!(syntax.needs_semicolon, None);
        assert_eq!(third.cell(&edited, &edited.cells[0]).unwrap(), fresh[0]);
        assert_eq!(third.used().map(BTreeMap::len), Some(2));
        let mut run = edited.cells[0].clone();
        run.kind = CellKind::Run;
        assert_ne!(cell_key(&run), cell_key(&edited.cells[0]));

        // A cell that does not parse is reported every time, never recorded.
        let broken = chapter("```rust\nlet x = (;\n```\n");
        let mut fourth = Analyses::default();
        assert!(fourth.cell(&broken, &broken.cells[0]).is_err());
        assert!(fourth.cell(&broken, &broken.cells[0]).is_err());
        assert_eq!(fourth.used().map(BTreeMap::len), Some(0));
    }

    #[test]
    fn an_include_in_a_notebook_cell_is_explained() {
        let ch = chapter("# 3\n\n```rust\n{{#include add.rs}}\nprintln!(\"{}\", add(1, 2));\n```\n");
        let d = cell(&ch, &ch.cells[0]).unwrap_err();
        assert_eq!(d.location.as_ref().map(|l| l.line), Some(4));
        let help = d.notes.iter().map(|(_, n)| n.as_str()).collect::<String>();
        assert!(help.contains("not in a notebook cell's code") && help.contains("cells = \"examples\""), "{help}");
        // Any other syntax error is only that.
        let ch = chapter("```rust\nlet x = (;\n```\n");
        assert!(cell(&ch, &ch.cells[0]).unwrap_err().notes.is_empty());
    }
}
