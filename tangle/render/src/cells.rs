//! How cells and outputs look in the book.
//!
//! Every cell carries a quiet label saying what it is (library, run, test) and an anchor
//! ([`anchors`]). A cell is open or folded under a one-line summary:
//!
//! - the author decides with `fold`, `fold="Summary"` or `open` on the fence;
//! - otherwise a library (`// @save`) cell longer than [`FOLD_LINES`] lines folds into
//!   "Library: `GptConfig`, `GptError`, 6 more" (the items it defines, found by syn); a test
//!   cell folds into "Tests (names)"; a run cell that draws a figure folds into "Code that draws
//!   Figure N"; other run cells and every output stay open, because they carry the argument.
//!
//! A folded run cell folds its output with it. Output blocks become preformatted program
//! output, escaped, with nothing in them that mdBook or tangle could expand: output is data.
//! Code is written as HTML too (the same `<pre><code class="language-rust">` mdBook would write,
//! so highlighting and the copy button work), because mdBook rewrites the text of a Markdown
//! code block: it expands `{{#include}}` and hides lines that start with `# `, and the book must
//! show the code that was compiled. (An examples chapter's fences are the exception: they are
//! left to mdBook, which hides their `# ` lines as rustdoc does; only their output blocks are
//! written here.)

use super::figures::drawn_figure;
use super::html::{escape_html, inert};
use super::labels::{Labels, Page};
use tangle_core::compare::visible;
use tangle_core::model::{Cell, CellKind, Presentation};

/// A library cell longer than this many lines (its marker line aside) folds unless its author
/// writes `open`. Forty lines of code fill a laptop screen (about 20 px a line at 1280×800):
/// a longer cell pushes every sentence about it out of view, and the reader scrolls through
/// plumbing to find the argument again. Shorter ones read as part of the text.
pub const FOLD_LINES: usize = 40;

/// What a cell is, as its label says.
fn kind_label(kind: CellKind) -> &'static str {
    match kind {
        CellKind::Save => "library",
        CellKind::Run => "run",
        CellKind::Test => "test",
    }
}

/// The code a reader sees: without the `// @save` / `// @test` marker line.
pub fn shown_code(cell: &Cell) -> &str {
    match cell.kind {
        CellKind::Save | CellKind::Test => cell.code.split_once('\n').map_or("", |(_, rest)| rest),
        CellKind::Run => cell.code.as_str(),
    }
}

/// The HTML id of every cell of a chapter, in order. Named after what the cell holds, so that
/// a link to a cell survives edits to the prose (and to other cells) above it:
/// `lib-gpt-config` (the first item a library cell defines), `test-adds` (its first test),
/// `code-loss-curve` (the figure a run cell draws), `run-2-3-1` (the first run cell of
/// section 2.3). A name taken twice gets `-2`, `-3`.
pub fn anchors(cells: &[Cell]) -> Vec<String> {
    let mut taken: Vec<String> = Vec::new();
    let mut runs_in_section: Vec<(String, usize)> = Vec::new();
    for cell in cells {
        let code = shown_code(cell);
        let base = match cell.kind {
            CellKind::Save => format!("lib-{}", defined_names(code).first().map_or("code".into(), |n| kebab(n))),
            CellKind::Test => format!("test-{}", test_names(code).first().map_or("cell".into(), |n| kebab(n))),
            CellKind::Run => match drawn_figure(code) {
                Some(figure) => format!("code-{}", kebab(&figure)),
                None => {
                    let section = section_key(&cell.section);
                    let n = match runs_in_section.iter_mut().find(|(s, _)| *s == section) {
                        Some((_, n)) => {
                            *n += 1;
                            *n
                        }
                        None => {
                            runs_in_section.push((section.clone(), 1));
                            1
                        }
                    };
                    format!("run-{section}-{n}")
                }
            },
        };
        let mut id = base.clone();
        let mut k = 1;
        while taken.contains(&id) {
            k += 1;
            id = format!("{base}-{k}");
        }
        taken.push(id);
    }
    taken
}

/// A section heading as part of an id: its number (`2.3 Attention` → `2-3`) or its first
/// words (`Exercises` → `exercises`).
fn section_key(heading: &str) -> String {
    let number: String = heading.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let number = number.trim_end_matches('.');
    if !number.is_empty() {
        return number.replace('.', "-");
    }
    let words: Vec<String> = heading.split_whitespace().take(3).map(kebab).filter(|w| !w.is_empty()).collect();
    if words.is_empty() { "top".into() } else { words.join("-") }
}

/// `GptConfig` → `gpt-config`, `param_count` → `param-count`, `Model::forward` → `model-forward`.
fn kebab(name: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            if prev_lower {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
            prev_lower = false;
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
            prev_lower = true;
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
            prev_lower = false;
        }
    }
    out.trim_end_matches('-').to_string()
}

/// The Markdown that replaces a cell's fence (before container re-indentation), and whether a
/// `<details>` it opened must be closed after the cell's output block. `anchor` is the cell's
/// id (from [`anchors`]).
pub fn cell(cell: &Cell, anchor: &str, page: &Page, labels: &Labels) -> (String, bool) {
    let code = shown_code(cell);
    let block = code_html(code);
    let lines = code.trim_end_matches('\n').lines().count();
    let summary = match (&cell.presentation, cell.kind) {
        (Presentation::Open, _) => None,
        (Presentation::Folded(Some(text)), _) => Some(escape_html(text)),
        (Presentation::Folded(None), CellKind::Save) => Some(library_summary(code, lines)),
        (Presentation::Folded(None), CellKind::Run) => Some("Code".to_string()),
        (_, CellKind::Test) => Some(test_summary(&cell.code)),
        (Presentation::Default, CellKind::Run) => drawn_figure(code).map(|name| {
            let what = labels
                .figure(&page.stem, &name)
                .map_or_else(|| format!("figure <code>{name}</code>"), |l| format!("Figure {}", l.number));
            format!("Code that draws {what}")
        }),
        (Presentation::Default, CellKind::Save) if lines > FOLD_LINES => Some(library_summary(code, lines)),
        (Presentation::Default, CellKind::Save) => None,
    };
    let kind = kind_label(cell.kind);
    let how = match cell.presentation {
        Presentation::Default => "default",
        _ => "author",
    };
    // Kept apart from the older classes (`tangle-test`, `tangle-figure-code`, `tangle-fold`)
    // that stylesheets and tests already name.
    let class = match cell.kind {
        CellKind::Test => "tangle-test",
        CellKind::Run if drawn_figure(code).is_some() => "tangle-figure-code",
        _ => "tangle-fold",
    };
    match summary {
        None => {
            let label = format!(
                "<a class=\"tangle-cell-label\" href=\"#{anchor}\" data-label=\"{kind}\" aria-label=\"{kind} cell\" title=\"a {kind} cell: link to it\"></a>"
            );
            (
                format!(
                    "<div class=\"tangle-cell tangle-cell-{kind}\" id=\"{anchor}\" data-kind=\"{kind}\">\n{label}\n\n{block}\n\n</div>"
                ),
                false,
            )
        }
        Some(summary) => {
            let with_output = cell.kind == CellKind::Run && cell.output.is_some();
            let close = if with_output { "" } else { "\n</details>" };
            (
                format!(
                    "<details class=\"tangle-cell tangle-cell-{kind} {class}\" id=\"{anchor}\" data-kind=\"{kind}\" data-fold=\"{how}\">\n<summary>{summary}</summary>\n\n{block}\n{close}"
                ),
                with_output,
            )
        }
    }
}

/// "Library: `GptConfig`, `GptError`, `Gpt`, 6 more (97 lines)": what a folded library cell
/// defines, public items first.
fn library_summary(code: &str, lines: usize) -> String {
    const SHOWN: usize = 3;
    let names = defined_names(code);
    let lines = format!("<span class=\"tangle-fold-lines\">{lines} lines</span>");
    if names.is_empty() {
        return format!("Library code {lines}");
    }
    let shown: Vec<String> = names.iter().take(SHOWN).map(|n| format!("<code>{}</code>", escape_html(n))).collect();
    let more = match names.len().saturating_sub(SHOWN) {
        0 => String::new(),
        n => format!(", {n} more"),
    };
    format!("Library: {}{more} {lines}", shown.join(", "))
}

/// The names a library cell defines, found by syn, in the order written: its public items
/// (types, functions, constants, traits, modules, macros) if it has any, else all of them;
/// a cell of `impl` blocks only gives its methods (`Gpt::forward`), or the traits it
/// implements (`Display for GptError`). Empty when the cell does not parse on its own.
fn defined_names(code: &str) -> Vec<String> {
    let Ok(file) = syn::parse_str::<syn::File>(code) else { return Vec::new() };
    let public = |vis: &syn::Visibility| !matches!(vis, syn::Visibility::Inherited);
    let mut items: Vec<(bool, String)> = Vec::new();
    let mut methods: Vec<(bool, String)> = Vec::new();
    let mut trait_impls: Vec<String> = Vec::new();
    for item in &file.items {
        let named = match item {
            syn::Item::Fn(f) => Some((public(&f.vis), f.sig.ident.to_string())),
            syn::Item::Struct(s) => Some((public(&s.vis), s.ident.to_string())),
            syn::Item::Enum(e) => Some((public(&e.vis), e.ident.to_string())),
            syn::Item::Union(u) => Some((public(&u.vis), u.ident.to_string())),
            syn::Item::Trait(t) => Some((public(&t.vis), t.ident.to_string())),
            syn::Item::Type(t) => Some((public(&t.vis), t.ident.to_string())),
            syn::Item::Const(c) => Some((public(&c.vis), c.ident.to_string())),
            syn::Item::Static(s) => Some((public(&s.vis), s.ident.to_string())),
            syn::Item::Mod(m) => Some((public(&m.vis), m.ident.to_string())),
            syn::Item::Macro(m) => m.ident.as_ref().map(|i| (true, format!("{i}!"))),
            syn::Item::Impl(imp) => {
                let self_ty = type_name(&imp.self_ty);
                match &imp.trait_ {
                    Some((path, _)) => {
                        let name = path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
                        trait_impls.push(format!("{name} for {self_ty}"));
                    }
                    None => {
                        for inner in &imp.items {
                            if let syn::ImplItem::Fn(f) = inner {
                                methods.push((public(&f.vis), format!("{self_ty}::{}", f.sig.ident)));
                            }
                        }
                    }
                }
                None
            }
            _ => None,
        };
        items.extend(named);
    }
    let pick = |list: Vec<(bool, String)>| -> Vec<String> {
        let any_public = list.iter().any(|(p, _)| *p);
        list.into_iter().filter(|(p, _)| *p || !any_public).map(|(_, n)| n).collect()
    };
    let names = pick(items);
    if !names.is_empty() {
        return names;
    }
    let names = pick(methods);
    if !names.is_empty() {
        return names;
    }
    trait_impls
}

/// The last segment of a type's path (`crate::Gpt<T>` → `Gpt`), seen through references,
/// slices, arrays and pointers (`&[Gpt]` → `Gpt`); `_` for a type with no name of its own.
fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default(),
        syn::Type::Reference(r) => type_name(&r.elem),
        syn::Type::Slice(s) => type_name(&s.elem),
        syn::Type::Array(a) => type_name(&a.elem),
        syn::Type::Ptr(p) => type_name(&p.elem),
        syn::Type::Paren(p) => type_name(&p.elem),
        syn::Type::Group(g) => type_name(&g.elem),
        _ => "_".to_string(),
    }
}

/// A code block as HTML. The text sits in a `<span>`, so that mdBook's renderer, which only
/// rewrites a `<code>` whose single child is text, leaves it as it is.
fn code_html(code: &str) -> String {
    let text = inert(code.trim_end_matches('\n'));
    format!("<pre class=\"tangle-code\"><code class=\"language-rust\"><span>{text}</span></code></pre>")
}

/// The names of a test cell's `#[test]` functions, found by syn.
fn test_names(code: &str) -> Vec<String> {
    syn::parse_str::<syn::File>(code)
        .map(|file| {
            file.items
                .iter()
                .filter_map(|item| match item {
                    syn::Item::Fn(f) if f.attrs.iter().any(|a| a.path().is_ident("test")) => {
                        Some(f.sig.ident.to_string())
                    }
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// "Tests (names of the #[test] functions)".
fn test_summary(code: &str) -> String {
    let names = test_names(code);
    match names.is_empty() {
        true => "Tests".to_string(),
        false => format!("Tests <span class=\"tangle-test-names\">({})</span>", names.join(", ")),
    }
}

/// Program output: shown verbatim (without its redaction and tolerance attributes), escaped
/// for HTML, with `{` and control characters made inert.
pub fn output(text: &str, closes_details: bool) -> String {
    let body = inert(&visible(text.trim_end_matches('\n')));
    let close = if closes_details { "\n</details>" } else { "" };
    format!("<pre class=\"tangle-output\"><samp>{body}</samp></pre>{close}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell_of(kind: CellKind, code: &str, section: &str) -> Cell {
        Cell {
            kind,
            code_line: 1,
            code: code.to_string(),
            span: 0..0,
            content: 0..0,
            prefix: String::new(),
            section: section.to_string(),
            presentation: Presentation::Default,
            output: None,
            example: None,
        }
    }

    #[test]
    fn a_library_cell_is_summarised_by_the_public_items_it_defines() {
        let code = "use std::fmt;\npub struct GptConfig;\nfn helper() {}\npub enum GptError {}\n\
                    impl GptConfig { pub fn new() {} }\npub const A: u8 = 1;\npub fn param_count() {}\n";
        assert_eq!(defined_names(code), ["GptConfig", "GptError", "A", "param_count"]);
        assert_eq!(
            library_summary(code, 97),
            "Library: <code>GptConfig</code>, <code>GptError</code>, <code>A</code>, 1 more \
             <span class=\"tangle-fold-lines\">97 lines</span>"
        );
        // Only impl blocks: their methods; only trait impls: the traits.
        assert_eq!(defined_names("impl Gpt { pub fn forward() {} fn inner() {} }"), ["Gpt::forward"]);
        assert_eq!(defined_names("impl fmt::Display for GptError {}"), ["Display for GptError"]);
        assert!(defined_names("this is not rust {").is_empty());
    }

    #[test]
    fn long_library_cells_fold_unless_the_author_says_open() {
        let pages = [Page::new(std::path::Path::new("ch02.md"), "# 2 T\n")];
        let labels = Labels::collect(&pages);
        let long: String = std::iter::once("// @save\npub fn f() {}\n".to_string())
            .chain((0..FOLD_LINES).map(|i| format!("// line {i}\n")))
            .collect();
        let mut cell = cell_of(CellKind::Save, &long, "2.1 Shape");
        let (html, closes_after_output) = super::cell(&cell, "lib-f", &pages[0], &labels);
        assert!(html.starts_with("<details class=\"tangle-cell tangle-cell-library"), "{html}");
        assert!(html.contains("id=\"lib-f\"") && html.contains("<summary>Library: <code>f</code> "));
        assert!(!closes_after_output);
        cell.presentation = Presentation::Open;
        let (html, _) = super::cell(&cell, "lib-f", &pages[0], &labels);
        assert!(html.starts_with("<div class=\"tangle-cell tangle-cell-library\" id=\"lib-f\""), "{html}");
        assert!(html.contains("data-label=\"library\"") && !html.contains("<details"));
        // A short library cell and a long run cell stay open.
        let short = cell_of(CellKind::Save, "// @save\npub fn g() {}\n", "2.1 Shape");
        assert!(super::cell(&short, "lib-g", &pages[0], &labels).0.starts_with("<div"));
        let run = cell_of(CellKind::Run, &long.replace("// @save\n", ""), "2.1 Shape");
        assert!(super::cell(&run, "run-2-1-1", &pages[0], &labels).0.contains("data-label=\"run\""));
    }

    #[test]
    fn cell_anchors_are_named_after_what_the_cell_holds() {
        let cells = [
            cell_of(CellKind::Save, "// @save\npub struct GptConfig;\n", "2.1 Shape"),
            cell_of(CellKind::Run, "let a = 1;\n", "2.1 Shape"),
            cell_of(CellKind::Run, "let b = 2;\n", "2.1 Shape"),
            cell_of(CellKind::Run, "tangle_runtime::figure::svg(\"loss-curve\", (1, 1), |r| Ok(()))?;\n", "2.2 Loss"),
            cell_of(CellKind::Test, "// @test\n#[test]\nfn adds_up() {}\n", "Exercises and answers"),
            cell_of(CellKind::Run, "let c = 3;\n", "Exercises and answers"),
            cell_of(CellKind::Save, "// @save\npub struct GptConfig;\n", "2.3 Again"),
        ];
        assert_eq!(
            anchors(&cells),
            [
                "lib-gpt-config",
                "run-2-1-1",
                "run-2-1-2",
                "code-loss-curve",
                "test-adds-up",
                "run-exercises-and-answers-1",
                "lib-gpt-config-2"
            ]
        );
    }

    #[test]
    fn test_cells_are_summarised_by_their_test_names() {
        assert_eq!(
            test_summary("// @test\n#[test]\nfn adds() {}\nfn helper() {}\n#[test]\nfn subtracts() {}\n"),
            "Tests <span class=\"tangle-test-names\">(adds, subtracts)</span>"
        );
    }
}
