//! One chapter, rendered: the Markdown mdBook will see, made by replacing byte ranges of the
//! chapter (through [`Edits`]) at the places the shared front end found: cells and outputs
//! ([`cells`]), diagram fences ([`diagrams`]), math ([`math`]), `{{#figure}}`, `{{#widget}}`
//! and `{{#ref}}` directives ([`figures`], [`widgets`], [`refs`]), plain mentions of figures and
//! equations, figure placeholders and callouts ([`callouts`]), `[@key]` citations and the
//! reference list ([`citations`]). Everything else is left byte for byte. Text put inside a list
//! item or blockquote carries the container's prefix on every line.

use std::collections::HashMap;
use std::path::Path;

use super::citations::{self, Bibliography};
use super::html::{escape_html, inert, literal};
use super::labels::{Labels, Page, figure_name};
use super::{callouts, cells, diagrams, figures, math, refs, widgets};
use tangle_core::diagnostic::{Diagnostic, Location};
use tangle_core::markdown::{Edits, InlineKind, LeafKind, MDBOOK_DIRECTIVES, reindent};
use tangle_core::model::{CellMode, Chapter};

/// The result of rendering one chapter.
#[derive(Debug, Default)]
pub struct Rendered {
    pub markdown: String,
    pub warnings: Vec<Diagnostic>,
}

struct Renderer<'a> {
    page: &'a Page,
    labels: &'a Labels,
    /// The chapter file relative to the repository root, for warnings.
    file: &'a Path,
    edits: Edits,
    warnings: Vec<Diagnostic>,
}

impl Renderer<'_> {
    fn warn(&mut self, offset: usize, message: impl Into<String>) {
        let (line, column) = self.page.doc.line_col(offset);
        self.warnings.push(Diagnostic::warning(Location::new(self.file, line).with_column(column), message));
    }

    /// Replaces `range` by `text`, re-indented for the containers of the block at `range.start`.
    fn replace(&mut self, range: std::ops::Range<usize>, text: &str) {
        let prefix = self.page.doc.block_prefix(range.start);
        self.edits.replace(range, reindent(text, &prefix));
    }
}

/// Renders `page`. `chapter` is the same file as tangle's parse saw it (its cells), when it
/// has any; `figures_dir` is where the committed SVGs are; `bibliography` is the book's
/// (its `[@key]` citations that name no entry come back as errors among the warnings).
pub fn render(
    page: &Page,
    chapter: Option<&Chapter>,
    labels: &Labels,
    figures_dir: &Path,
    file: &Path,
    bibliography: Option<&Bibliography>,
) -> Rendered {
    let mut r = Renderer { page, labels, file, edits: Edits::new(), warnings: Vec::new() };
    let references = render_citations(&mut r, bibliography);
    let diagrams = draw_diagrams(&mut r);
    match chapter {
        Some(chapter) => render_cells(&mut r, chapter),
        // tangle could not read the chapter's cells (it warned why): show its output blocks
        // as output all the same, never as raw fences.
        None => {
            for fence in page.doc.fences.iter().filter(|f| f.lang() == "output") {
                r.replace(fence.span.clone(), &cells::output(&fence.text, false));
            }
        }
    }
    render_placeholders(&mut r);
    render_math(&mut r);
    let placed = render_directives(&mut r, figures_dir, &diagrams, chapter, references.as_deref());
    if let (Some(list), false) = (&references, placed) {
        let end = page.doc.source().len();
        r.edits.replace(end..end, format!("\n\n## References\n\n{list}"));
    }
    render_mentions(&mut r);
    render_callouts(&mut r);
    let Renderer { edits, warnings, .. } = r;
    Rendered { markdown: edits.apply(page.doc.source()), warnings }
}

/// Draws every diagram fence. A named one (`fig=NAME`) is placed by its `{{#figure}}` and its
/// fence disappears; an unnamed one is drawn where it stands.
fn draw_diagrams(r: &mut Renderer) -> HashMap<String, String> {
    let mut named = HashMap::new();
    for fence in &r.page.doc.fences {
        let Some(kind) = diagrams::find(fence.lang()) else { continue };
        let name = fence.info.as_ref().ok().and_then(|i| i.value("fig")).map(str::to_string);
        match kind.draw(&fence.text) {
            Ok(svg) => match name {
                Some(name) => {
                    named.insert(name, svg);
                    r.edits.replace(fence.span.clone(), "");
                }
                None => r.replace(fence.span.clone(), &format!("<div class=\"tangle-diagram\">{svg}</div>")),
            },
            Err(why) => r.warn(fence.span.start, format!("{} diagram: {why}", kind.lang())),
        }
    }
    named
}

fn render_cells(r: &mut Renderer, chapter: &Chapter) {
    if chapter.mode == CellMode::Examples {
        // An example stays the fence its author wrote: mdBook's HTML renderer hides its `# `
        // lines behind its own toggle and turns its attributes into classes, never text.
        for block in chapter.cells.iter().filter_map(|c| c.output.as_ref()) {
            r.replace(block.span.clone(), &cells::output(&block.text, false));
        }
        return;
    }
    let anchors = cells::anchors(&chapter.cells);
    for (cell, anchor) in chapter.cells.iter().zip(&anchors) {
        let (text, open) = cells::cell(cell, anchor, r.page, r.labels);
        r.replace(cell.span.clone(), &text);
        if let Some(block) = &cell.output {
            r.replace(block.span.clone(), &cells::output(&block.text, open));
        }
    }
}

/// `<!-- figure: what is to come -->` becomes a visible box, and a warning; tangle's own
/// directives (`<!-- tangle: ... -->`) go.
fn render_placeholders(r: &mut Renderer) {
    let comments: Vec<_> = r.page.doc.comments.iter().filter(|c| c.alone).cloned().collect();
    for comment in comments {
        if comment.inner.trim_start().get(..7).is_some_and(|w| w.eq_ignore_ascii_case("tangle:")) {
            r.edits.replace(comment.span.clone(), "");
            continue;
        }
        let Some(desc) = comment.inner.trim().strip_prefix("figure:") else { continue };
        let desc = desc.trim();
        r.warn(comment.span.start, format!("figure placeholder not yet drawn: {desc}"));
        let html = format!("<div class=\"tangle-figure-missing\">Figure to come: {}</div>\n", escape_html(desc));
        r.replace(comment.span.clone(), &html);
    }
}

fn render_math(r: &mut Renderer) {
    // A line inside `$$ ... $$` that Markdown reads as a block of its own (`+ x` is a list item,
    // `# x` a heading) cuts the equation in two before any math is seen.
    let cut: Vec<usize> = r
        .page
        .doc
        .leaves
        .iter()
        .filter(|l| l.kind == LeafKind::Paragraph && r.page.doc.text(l.span.clone()).starts_with("$$"))
        .filter(|l| {
            !r.page
                .doc
                .inlines
                .iter()
                .any(|i| matches!(i.kind, InlineKind::DisplayMath(_)) && i.span.start == l.span.start)
        })
        .map(|l| l.span.start)
        .collect();
    for at in cut {
        r.warn(at, "this display equation is cut in two: one of its lines starts like a list item, quote or heading (`+ `, `- `, `> `, `# `); move that sign to the end of the line before");
    }
    let inlines = r.page.doc.inlines.clone();
    for inline in inlines {
        let (result, display) = match &inline.kind {
            InlineKind::InlineMath(tex) => (math::inline(tex), None),
            InlineKind::DisplayMath(tex) => (math::display(tex, r.page, r.labels), Some(tex.clone())),
            _ => continue,
        };
        let html = match result {
            Ok(html) => html,
            Err((html, why)) => {
                let tex = display.as_deref().unwrap_or(r.page.doc.text(inline.span.clone()));
                r.warn(inline.span.start, format!("cannot typeset `{}`: {why}", tex.trim()));
                html
            }
        };
        match display {
            // A display equation is an HTML block of its own.
            Some(_) => r.replace(inline.span.clone(), &format!("\n\n{html}\n\n")),
            None => r.edits.replace(inline.span.clone(), html),
        }
    }
}

/// `[@key]` citations become the style's in-text citations; returns the chapter's reference
/// list, if it cites anything.
fn render_citations(r: &mut Renderer, bibliography: Option<&Bibliography>) -> Option<String> {
    let cited = citations::cite(r.page, bibliography, r.file);
    for (span, html) in cited.edits {
        r.edits.replace(span, html);
    }
    // Unknown keys are errors of the validation pass (`crate::validate`), which `check` runs too.
    cited.list
}

/// Expands tangle's directives; returns whether a `{{#bibliography}}` placed `references`.
fn render_directives(
    r: &mut Renderer,
    figures_dir: &Path,
    diagrams: &HashMap<String, String>,
    chapter: Option<&Chapter>,
    references: Option<&str>,
) -> bool {
    let mut placed = false;
    let directives = r.page.doc.directives.clone();
    let drawn = chapter.map(|c| figures::drawn_figure_names(&c.doc)).unwrap_or_default();
    // Values recorded by runs outside the test command (a benchmark) say so in their tooltip.
    // The values files are data beside the book, not chapters: read here, because a stock
    // `mdbook build` runs this renderer with no check before it to hand them over.
    let root = figures_dir.parent().unwrap_or(figures_dir);
    let recorded = chapter.and_then(|c| tangle_core::compare::load_recorded(root, c).ok()).unwrap_or_default();
    for d in directives {
        let args = r.page.doc.text(d.args.clone());
        match d.name.as_str() {
            "figure" => {
                let name = figure_name(args).to_string();
                let number = r.labels.figure(&r.page.stem, &name).map(|l| l.number.clone()).unwrap_or_default();
                let body = match diagrams.get(&name) {
                    Some(svg) => svg.clone(),
                    None => match figures::picture(figures_dir, &r.page.figures, &name, &number, drawn.contains(&name))
                    {
                        Ok(svg) => svg,
                        Err((gap, why)) => {
                            // A figure nothing draws is an error of the validation pass; one
                            // drawn but not yet accepted is a warning here.
                            if drawn.contains(&name) {
                                r.warn(d.span.start, why);
                            }
                            gap
                        }
                    },
                };
                let caption = caption_range(r, &d, args);
                r.replace(d.span.start..caption.start, &figures::opening(&name, &number, &body));
                r.replace(caption.end..d.span.end, figures::CLOSING);
            }
            "widget" => {
                let name = figure_name(args).to_string();
                let number = r.labels.figure(&r.page.stem, &name).map(|l| l.number.clone()).unwrap_or_default();
                let opening =
                    widgets::opening(figures_dir, &r.page.figures, &name, &number).unwrap_or_else(|(gap, why)| {
                        // A calculator nothing computes is an error of the validation pass.
                        let file = figures_dir.join(&r.page.figures).join(format!("{name}.widget.json"));
                        if file.exists() || crate::validate::writes_calculator(&r.page.doc, &name) {
                            r.warn(d.span.start, why);
                        }
                        gap
                    });
                let caption = caption_range(r, &d, args);
                r.replace(d.span.start..caption.start, &opening);
                r.replace(caption.end..d.span.end, widgets::CLOSING);
            }
            "ref" => match refs::resolve(args, r.page, r.labels) {
                Ok(link) => r.edits.replace(d.span.clone(), link),
                Err((html, why)) => {
                    r.warn(d.span.start, why);
                    r.edits.replace(d.span.clone(), html);
                }
            },
            "value" => {
                // The sentence shows the value as text; the name stays in the source.
                let args = args.trim();
                let (name, shown) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
                let shown =
                    tangle_core::markdown::escape::unquote(&shown.split_whitespace().collect::<Vec<_>>().join(" "));
                let source = match recorded.iter().find(|f| f.values.contains_key(name)) {
                    Some(f) => format!("recorded in {}", f.file.display()),
                    None => "printed by this chapter's code".to_string(),
                };
                let html = format!(
                    "<span class=\"tangle-value\" title=\"{}\">{}</span>",
                    inert(&format!("value `{name}`, {source}")),
                    literal(&shown)
                );
                r.edits.replace(d.span.clone(), html);
            }
            "bibliography" => {
                placed = true;
                let list = references.unwrap_or("<p class=\"tangle-references-empty\">This chapter cites nothing.</p>");
                r.replace(d.span.clone(), list);
            }
            name if MDBOOK_DIRECTIVES.contains(&name) => {}
            other => r.warn(d.span.start, format!("unknown directive `{{{{#{other}}}}}`")),
        }
    }
    placed
}

/// The caption of a `{{#figure}}` or `{{#widget}}` directive: the trimmed text after `|`. It
/// stays in place, so that edits inside it (math, references) apply.
fn caption_range(r: &Renderer, d: &tangle_core::markdown::Directive, args: &str) -> std::ops::Range<usize> {
    match args.find('|') {
        Some(bar) => {
            let start = d.args.start + bar + 1;
            let text = r.page.doc.text(start..d.args.end);
            let lead = text.len() - text.trim_start().len();
            start + lead..start + text.trim_end().len()
        }
        None => d.args.end..d.args.end,
    }
}

fn render_mentions(r: &mut Renderer) {
    let leaves: Vec<_> = r.page.doc.leaves.iter().filter(|l| l.kind != LeafKind::Heading(1)).cloned().collect();
    for leaf in leaves.iter().filter(|l| matches!(l.kind, LeafKind::Paragraph | LeafKind::TableCell)) {
        for range in r.page.doc.prose_ranges(leaf) {
            let text = r.page.doc.text(range.clone());
            for mention in refs::mentions(text, range.start, r.page, r.labels) {
                match mention {
                    refs::Mention::Link(span, html) => r.edits.replace(span, html),
                    refs::Mention::Stale(at, why) => r.warn(at, why),
                }
            }
        }
    }
}

fn render_callouts(r: &mut Renderer) {
    let quotes: Vec<_> = r.page.doc.quotes.iter().filter(|q| q.depth == 0).cloned().collect();
    for quote in quotes {
        let first =
            r.page.doc.leaves.iter().find(|l| l.span.start >= quote.span.start && l.span.start < quote.span.end);
        let Some(kind) = first.and_then(|l| callouts::kind(r.page.doc.text(l.span.clone()))) else { continue };
        let (before, after) = callouts::wrap(&kind);
        r.edits.replace(quote.span.start..quote.span.start, before);
        let end = quote.span.end;
        let after = if r.page.doc.source()[..end].ends_with('\n') { after.to_string() } else { format!("\n{after}") };
        r.edits.replace(end..end, after);
    }
}

#[cfg(test)]
mod value_props;
