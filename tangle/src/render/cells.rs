//! How cells and outputs look in the book. A save cell shows its code without the `// @save`
//! line; a test cell folds into "Tests (names)"; a run cell that draws a figure folds into
//! "Code that draws Figure N"; a cell the author marked `fold` folds under the author's summary,
//! its output with it. Output blocks become preformatted program output, escaped, with nothing
//! in them that mdBook or tangle could expand: output is data. Code is written as HTML too (the
//! same `<pre><code class="language-rust">` mdBook would write, so highlighting and the copy
//! button work), because mdBook rewrites the text of a Markdown code block: it expands
//! `{{#include}}` and hides lines that start with `# `, and the book must show the code that
//! was compiled.

use super::figures::drawn_figure;
use super::html::{escape_html, inert};
use super::labels::{Labels, Page};
use crate::compare::visible;
use crate::model::{Cell, CellKind, Presentation};

/// The Markdown that replaces a cell's fence (before container re-indentation), and whether a
/// `<details>` it opened must be closed after the cell's output block.
pub fn cell(cell: &Cell, page: &Page, labels: &Labels) -> (String, bool) {
    let code = match cell.kind {
        CellKind::Save | CellKind::Test => cell.code.split_once('\n').map_or("", |(_, rest)| rest),
        CellKind::Run => cell.code.as_str(),
    };
    let block = code_html(code);
    let summary = match (&cell.presentation, cell.kind) {
        (Presentation::Open, _) => None,
        (Presentation::Folded(Some(text)), _) => Some(escape_html(text)),
        (Presentation::Folded(None), CellKind::Save) => Some("Library code".to_string()),
        (Presentation::Folded(None), CellKind::Run) => Some("Code".to_string()),
        (_, CellKind::Test) => Some(test_summary(&cell.code)),
        (Presentation::Default, CellKind::Run) => drawn_figure(code).map(|name| {
            let what = labels
                .figure(&page.stem, &name)
                .map_or_else(|| format!("figure <code>{name}</code>"), |l| format!("Figure {}", l.number));
            format!("Code that draws {what}")
        }),
        (Presentation::Default, CellKind::Save) => None,
    };
    let class = match cell.kind {
        CellKind::Test => "tangle-test",
        CellKind::Run if drawn_figure(code).is_some() => "tangle-figure-code",
        _ => "tangle-fold",
    };
    match summary {
        None => (block, false),
        Some(summary) => {
            let with_output = cell.kind == CellKind::Run && cell.output.is_some();
            let close = if with_output { "" } else { "\n</details>" };
            (format!("<details class=\"{class}\">\n<summary>{summary}</summary>\n\n{block}\n{close}"), with_output)
        }
    }
}

/// A code block as HTML. The text sits in a `<span>`, so that mdBook's renderer, which only
/// rewrites a `<code>` whose single child is text, leaves it as it is.
fn code_html(code: &str) -> String {
    let text = inert(code.trim_end_matches('\n'));
    format!("<pre class=\"tangle-code\"><code class=\"language-rust\"><span>{text}</span></code></pre>")
}

/// "Tests (names of the #[test] functions)", the names found by syn.
fn test_summary(code: &str) -> String {
    let names: Vec<String> = syn::parse_str::<syn::File>(code)
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
        .unwrap_or_default();
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

    #[test]
    fn test_cells_are_summarised_by_their_test_names() {
        assert_eq!(
            test_summary("// @test\n#[test]\nfn adds() {}\nfn helper() {}\n#[test]\nfn subtracts() {}\n"),
            "Tests <span class=\"tangle-test-names\">(adds, subtracts)</span>"
        );
    }
}
