//! Numbered figures: `{{#figure NAME | Caption text.}}` on a paragraph of its own places
//! `figures/chNN/NAME.svg` (drawn by a run cell through `tangle_runtime::figure::svg("NAME",
//! ...)`), or the diagram of a fenced diagram block named `fig=NAME`, as "Figure N.i" with its
//! caption. The caption stays Markdown: emphasis, math and references in it still render.

use std::path::Path;

use syn::visit::Visit;
use tangle_core::markdown::Document;

use super::html::escape_html;
use super::labels::figure_id;

/// The path a cell calls to draw a figure: `figure::svg`, however it is qualified before.
const DRAWS: [&str; 2] = ["figure", "svg"];

/// The figure a run cell draws, if it calls `figure::svg("NAME", ...)`.
pub fn drawn_figure(code: &str) -> Option<String> {
    drawn_figures(code).into_iter().next()
}

/// The names every `figure::svg("NAME", ...)` call in one cell's code draws.
pub fn drawn_figures(code: &str) -> Vec<String> {
    names_passed(code, DRAWS)
}

/// `Widget::new("NAME")`: a cell that computes calculator NAME.
const WRITES: [&str; 2] = ["Widget", "new"];

/// The names of the calculators a cell's `Widget::new("name")` calls compute.
pub fn computed_calculators(code: &str) -> Vec<String> {
    names_passed(code, WRITES)
}

/// The names every `figure::svg("name", ...)` call in a chapter's Rust blocks draws.
pub fn drawn_figure_names(chapter: &Document) -> Vec<String> {
    rust_blocks(chapter).flat_map(|code| names_passed(code, DRAWS)).collect()
}

/// The code of a chapter's Rust blocks, as the Markdown front end found them.
pub(crate) fn rust_blocks(chapter: &Document) -> impl Iterator<Item = &str> {
    chapter.fences.iter().filter(|f| f.lang() == "rust").map(|f| f.text.as_str())
}

/// The string literals passed first to calls of a path ending in `tail` (`figure::svg`,
/// `Widget::new`) in `code`, read as Rust: calls in comments, in strings and in macro
/// arguments do not count, and code that does not parse calls nothing (its syntax error is
/// the check's to report). Cells hold statements and items alike: they are read as a block
/// (an empty statement closes it, so that a `let` without its `;` still reads).
pub(crate) fn names_passed(code: &str, tail: [&str; 2]) -> Vec<String> {
    struct Calls<'t> {
        tail: [&'t str; 2],
        names: Vec<String>,
    }
    impl<'ast> Visit<'ast> for Calls<'_> {
        fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
            if let syn::Expr::Path(path) = &*call.func
                && path.path.segments.len() >= 2
                && path.path.segments.iter().rev().zip(self.tail.iter().rev()).all(|(s, t)| s.ident == t)
                && let Some(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(name), .. })) = call.args.first()
            {
                self.names.push(name.value());
            }
            syn::visit::visit_expr_call(self, call);
        }
    }
    // Both names are in the text of any call the visitor would find; most cells call
    // neither, and parsing them would be most of a no-op check's time.
    if !tail.iter().all(|name| code.contains(name)) {
        return Vec::new();
    }
    let mut calls = Calls { tail, names: Vec::new() };
    match syn::parse_str::<syn::Block>(&format!("{{\n{code}\n;}}")) {
        Ok(block) => calls.visit_block(&block),
        Err(_) => {
            if let Ok(file) = syn::parse_file(code) {
                calls.visit_file(&file);
            }
        }
    }
    calls.names
}

/// What goes before a figure's caption: the `<figure>` element, its picture and its number.
pub fn opening(name: &str, number: &str, body: &str) -> String {
    format!(
        "<figure class=\"tangle-figure\" id=\"{id}\">\n<div class=\"tangle-figure-body\">{body}</div>\n<figcaption>\n\n<span class=\"tangle-figure-label\">Figure {number}.</span> ",
        id = figure_id(name),
    )
}

/// What goes after a figure's caption.
pub const CLOSING: &str = "\n\n</figcaption>\n</figure>";

/// The picture of figure `name`: its SVG from `figures_dir/stem/name.svg`, inlined, or a
/// visible gap and the reason.
pub fn picture(
    figures_dir: &Path,
    stem: &str,
    name: &str,
    number: &str,
    drawn_here: bool,
) -> Result<String, (String, String)> {
    let file = figures_dir.join(stem).join(format!("{name}.svg"));
    match std::fs::read_to_string(&file) {
        Ok(svg) => Ok(inline_svg(&svg, &format!("Figure {number}"))),
        Err(_) => {
            // Either no cell draws this name (a typo, or the drawing cell is missing), or it is
            // drawn but was never accepted; the advice covers both.
            let advice = match drawn_here {
                true => format!("run `{}`", tangle_core::messages::command(&format!("accept --chapter {stem}"))),
                false => format!(
                    "no cell of this chapter draws `{name}`: fix the name, or draw it with `tangle_runtime::figure::svg(\"{name}\", ...)`"
                ),
            };
            let gap =
                format!("<div class=\"tangle-figure-missing\">figures/{stem}/{name}.svg has not been drawn yet</div>");
            Err((gap, format!("Figure {number} ({name}): {} is missing; {advice}", file.display())))
        }
    }
}

/// Prepares an SVG file for inlining into a Markdown HTML block: no XML prolog, no blank
/// lines (they would end the HTML block), one line, and an accessible name.
pub fn inline_svg(svg: &str, title: &str) -> String {
    let mut s = svg.trim();
    if s.starts_with("<?xml")
        && let Some(end) = s.find("?>")
    {
        s = s[end + 2..].trim_start();
    }
    let one_line: String = s.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    let one_line = one_line.replace(" xmlns=\"http://www.w3.org/2000/svg\"", "");
    one_line.replacen("<svg ", &format!("<svg role=\"img\" aria-label=\"{}\" ", escape_html(title)), 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_is_inlined_on_one_line_with_a_name() {
        let svg =
            inline_svg("<?xml version=\"1.0\"?>\n<svg width=\"10\" height=\"10\">\n\n<rect/>\n</svg>\n", "Figure 6.2");
        assert_eq!(svg, "<svg role=\"img\" aria-label=\"Figure 6.2\" width=\"10\" height=\"10\"> <rect/> </svg>");
    }

    #[test]
    fn cells_that_draw_a_figure_are_found() {
        assert_eq!(
            drawn_figure("let p = tangle_runtime::figure::svg(\"ledger\", (640, 360), |root| {})"),
            Some("ledger".into())
        );
        assert_eq!(drawn_figure("figure::svg(\n    \"spread\",\n    (1, 2),\n    draw,\n)?;"), Some("spread".into()));
        let inside_items =
            "#[derive(Debug)]\nstruct S;\nfn draw() { let _ = figure::svg(\"in-fn\", (1, 1), |_| Ok(())); }";
        assert_eq!(drawn_figure(inside_items), Some("in-fn".into()));
        // Read as Rust, not as text: a comment, a string and another `svg` draw nothing.
        assert_eq!(drawn_figure("// figure::svg(\"old\", ...)\nlet s = \"figure::svg(\\\"no\\\"\";"), None);
        assert_eq!(drawn_figure("other::svg(\"x\", (1, 1), f);"), None);
        assert_eq!(drawn_figure("let x = ;"), None, "code that does not parse");
    }

    #[test]
    fn a_chapter_draws_what_its_rust_blocks_draw() {
        let chapter = "Prose naming figure::svg(\"prose\") draws nothing.\n\n```rust\nfigure::svg(\"a\", (1, 1), f)?;\n```\n\n\
                       ```text\nfigure::svg(\"text\", (1, 1), f)?;\n```\n\n> ```rust\n> figure::svg(\"quoted\", (1, 1), f)?;\n> ```\n";
        assert_eq!(drawn_figure_names(&Document::parse(chapter)), vec!["a".to_string(), "quoted".to_string()]);
    }
}
