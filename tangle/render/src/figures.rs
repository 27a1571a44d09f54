//! Numbered figures: `{{#figure NAME | Caption text.}}` on a paragraph of its own places
//! `figures/chNN/NAME.svg` (drawn by a run cell through `tangle_runtime::figure::svg("NAME",
//! ...)`), or the diagram of a fenced diagram block named `fig=NAME`, as "Figure N.i" with its
//! caption. The caption stays Markdown: emphasis, math and references in it still render.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::html::escape_html;
use super::labels::figure_id;

static DRAWS_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"figure::svg\(\s*"([A-Za-z0-9_.-]+)""#).expect("a valid regex"));

/// The figure a run cell draws, if it calls `figure::svg("NAME", ...)`.
pub fn drawn_figure(code: &str) -> Option<String> {
    DRAWS_RE.captures(code).map(|c| c[1].to_string())
}

/// The names every `figure::svg("name", ...)` call in a chapter draws.
pub fn drawn_figure_names(content: &str) -> Vec<String> {
    DRAWS_RE.captures_iter(content).map(|c| c[1].to_string()).collect()
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
                true => format!("run `cargo tangle accept --chapter {stem}`"),
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
    }
}
