//! Numbered figures and cross-references.
//!
//! Syntax (documented in `book/src/building.md`):
//!
//! - `{{#figure NAME | Caption text.}}` on a paragraph of its own places `figures/chNN/NAME.svg`
//!   (drawn by a run cell through `tangle_runtime::figure::svg("NAME", ...)`), or the diagram of a
//!   ```` ```sequence fig=NAME ```` block, as "Figure N.i" with its caption. Figures are numbered
//!   per chapter in the order their directives appear.
//! - `{{#ref fig:NAME}}` → a link "Figure 6.1"; `{{#ref eq:NAME}}` or `{{#ref eq:6.1}}` → a link
//!   "Equation 6.1". Prefix the name with a chapter (`fig:ch07/NAME`) to point into another chapter.
//! - Plain prose "Figure 6.1" / "Equation 6.2" is linked too when that number exists; a number that
//!   does not exist draws a warning, because the prose has gone stale.

use std::collections::HashMap;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::math;
use super::preprocess::{ChapterInput, Segment, escape_html, split_fences, without_code_spans};

/// What a label names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefKind {
    Figure,
    Equation,
    /// A numbered heading (`## 6.2 Activations ...`), linked by its mdBook anchor.
    Section,
}

impl RefKind {
    fn word(self) -> &'static str {
        match self {
            RefKind::Figure => "Figure",
            RefKind::Equation => "Equation",
            RefKind::Section => "Section",
        }
    }
}

/// A numbered, linkable thing.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub kind: RefKind,
    /// "6.1"
    pub number: String,
    /// The HTML id (`fig-activation-totals`, `eq-6-1`).
    pub id: String,
    /// The page it is on (`ch06.html`).
    pub page: String,
    pub stem: String,
}

/// Every figure and equation label of the book.
#[derive(Debug, Default)]
pub struct Labels {
    by_name: HashMap<(RefKind, String, String), Label>,
    by_number: HashMap<(RefKind, String), Label>,
}

static FIGURE_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)\{\{#figure\s+([A-Za-z0-9_.-]+)\s*(?:\|(.*?))?\}\}").unwrap());
static REF_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{\{#ref\s+(fig|eq):(?:([A-Za-z0-9_-]+)/)?([A-Za-z0-9_.-]+)\s*\}\}").unwrap());
static PLAIN_REF_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b((?:[Ff]igure|[Ee]quation|[Ss]ection)s?|[Ff]ig\.|[Ee]q\.)(\s|&nbsp;)+(\d+\.\d+)\b").unwrap()
});
static SECTION_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?m)^#{2,6}\s+((\d+\.\d+)\s.*?)\s*#*\s*$").unwrap());

/// mdBook's anchor for a heading's text (lower case; alphanumerics, `_` and `-` kept; spaces
/// become `-`; everything else dropped).
pub fn heading_id(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c)
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}
static DRAWS_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#"figure::svg\(\s*"([A-Za-z0-9_.-]+)""#).unwrap());

/// The id of a figure's `<figure>` element.
pub fn figure_id(name: &str) -> String {
    format!("fig-{name}")
}

/// The id of an equation with this number (`6.1` → `eq-6-1`).
pub fn equation_id(number: &str) -> String {
    format!("eq-{}", number.replace('.', "-"))
}

/// The figure a run cell draws, if it calls `figure::svg("NAME", ...)`.
pub fn drawn_figure(code: &str) -> Option<String> {
    DRAWS_RE.captures(code).map(|c| c[1].to_string())
}

impl Labels {
    /// Numbers the figures and equations of every chapter.
    pub fn collect(chapters: &[ChapterInput]) -> Self {
        let mut labels = Labels::default();
        for ch in chapters {
            let page = ch.html_path();
            let prefix = ch.number.map(|n| format!("{n}.")).unwrap_or_default();
            let mut n_fig = 0;
            let mut n_eq = 0;
            for seg in split_fences(&ch.content) {
                let Segment::Text(text) = seg else { continue };
                let prose = without_code_spans(&text);
                for cap in FIGURE_RE.captures_iter(&prose) {
                    n_fig += 1;
                    let name = cap[1].to_string();
                    labels.insert(
                        Label {
                            kind: RefKind::Figure,
                            number: format!("{prefix}{n_fig}"),
                            id: figure_id(&name),
                            page: page.clone(),
                            stem: ch.stem.clone(),
                        },
                        Some(&name),
                    );
                }
                for cap in SECTION_RE.captures_iter(&text) {
                    labels.insert(
                        Label {
                            kind: RefKind::Section,
                            number: cap[2].to_string(),
                            id: heading_id(&cap[1]),
                            page: page.clone(),
                            stem: ch.stem.clone(),
                        },
                        None,
                    );
                }
                for latex in math::display_blocks(&prose) {
                    let meta = math::EquationMeta::parse(latex);
                    let number = match (&meta.tag, &meta.label) {
                        (Some(tag), _) => tag.clone(),
                        (None, Some(_)) => format!("{prefix}{}", n_eq + 1),
                        (None, None) => continue,
                    };
                    n_eq += 1;
                    labels.insert(
                        Label {
                            kind: RefKind::Equation,
                            id: equation_id(&number),
                            number,
                            page: page.clone(),
                            stem: ch.stem.clone(),
                        },
                        meta.label.as_deref(),
                    );
                }
            }
        }
        labels
    }

    fn insert(&mut self, label: Label, name: Option<&str>) {
        if let Some(name) = name {
            self.by_name.insert((label.kind, label.stem.clone(), name.to_string()), label.clone());
        }
        self.by_name.insert((label.kind, label.stem.clone(), label.number.clone()), label.clone());
        self.by_number.insert((label.kind, label.number.clone()), label);
    }

    /// The figure `name` of chapter `stem`.
    pub fn figure(&self, stem: &str, name: &str) -> Option<&Label> {
        self.by_name.get(&(RefKind::Figure, stem.to_string(), name.to_string()))
    }

    /// A label by kind and chapter, by name or by number.
    pub fn get(&self, kind: RefKind, stem: &str, name: &str) -> Option<&Label> {
        self.by_name.get(&(kind, stem.to_string(), name.to_string()))
    }

    /// A label by its printed number ("6.1").
    pub fn by_number(&self, kind: RefKind, number: &str) -> Option<&Label> {
        self.by_number.get(&(kind, number.to_string()))
    }

    /// The href of `label` seen from the page of chapter `from`.
    pub fn href(label: &Label, from: &ChapterInput) -> String {
        if label.stem == from.stem { format!("#{}", label.id) } else { format!("{}#{}", label.page, label.id) }
    }
}

fn link(label: &Label, from: &ChapterInput, text: &str) -> String {
    format!("<a class=\"xref\" href=\"{}\">{}</a>", Labels::href(label, from), text)
}

/// Replaces `{{#figure NAME | caption}}` directives by numbered `<figure>` blocks.
pub fn render_figures(
    text: &str,
    input: &ChapterInput,
    labels: &Labels,
    figures_dir: &Path,
    diagrams: &HashMap<String, String>,
    warnings: &mut Vec<String>,
) -> String {
    FIGURE_RE
        .replace_all(text, |cap: &regex::Captures| {
            let name = &cap[1];
            let caption = cap.get(2).map(|m| m.as_str().trim()).unwrap_or("");
            let number = labels.figure(&input.stem, name).map(|l| l.number.clone()).unwrap_or_default();
            let file = figures_dir.join(&input.stem).join(format!("{name}.svg"));
            let body = match diagrams.get(name) {
                Some(svg) => svg.clone(),
                None => match std::fs::read_to_string(&file) {
                    Ok(svg) => inline_svg(&svg, &format!("Figure {number}")),
                    Err(_) => {
                        // Either no cell draws this name (a typo, or the drawing cell is missing),
                        // or it is drawn but was never accepted; the advice covers both.
                        let advice = match drawn_figure_names(&input.content).contains(&name.to_string()) {
                            true => format!("run `cargo tangle accept --chapter {}`", input.stem),
                            false => format!(
                                "no cell of this chapter draws `{name}`: fix the name, or draw it with \
                                 `tangle_runtime::figure::svg(\"{name}\", ...)`"
                            ),
                        };
                        warnings.push(format!(
                            "{}: Figure {number} ({name}): {} is missing; {advice}",
                            input.path.display(),
                            file.display(),
                        ));
                        format!(
                            "<div class=\"tangle-figure-missing\">figures/{}/{name}.svg has not been drawn yet</div>",
                            input.stem
                        )
                    }
                },
            };
            // The <figure> opens an HTML block; the caption is a Markdown paragraph of its own
            // so that emphasis, code and references inside it still render.
            format!(
                "\n<figure class=\"tangle-figure\" id=\"{id}\">\n<div class=\"tangle-figure-body\">{body}</div>\n<figcaption>\n\n<span class=\"tangle-figure-label\">Figure {number}.</span> {caption}\n\n</figcaption>\n</figure>\n",
                id = figure_id(name),
            )
        })
        .into_owned()
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

/// Resolves `{{#ref ...}}` and links plain "Figure 6.1" / "Equation 6.2" mentions.
pub fn resolve_refs(text: &str, input: &ChapterInput, labels: &Labels, warnings: &mut Vec<String>) -> String {
    let text = REF_RE.replace_all(text, |cap: &regex::Captures| {
        let kind = if &cap[1] == "fig" { RefKind::Figure } else { RefKind::Equation };
        let stem = cap.get(2).map(|m| m.as_str()).unwrap_or(&input.stem);
        let name = &cap[3];
        match labels.get(kind, stem, name) {
            Some(label) => link(label, input, &format!("{}&nbsp;{}", kind.word(), label.number)),
            None => {
                warnings.push(format!("{}: {} has no label `{}` in {stem}", input.path.display(), &cap[0], name));
                format!("<span class=\"xref-broken\">{}</span>", escape_html(&cap[0]))
            }
        }
    });
    text.into_owned()
}

/// Links plain mentions ("Figure 6.1", "Equation 6.2") in prose. Skips headings, code spans,
/// HTML tags and existing link text; warns when a mentioned number does not exist.
pub fn link_plain_mentions(text: &str, input: &ChapterInput, labels: &Labels, warnings: &mut Vec<String>) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with('#') {
            out.push_str(line);
            continue;
        }
        let mut last = 0;
        let protected = protected_ranges(line);
        for cap in PLAIN_REF_RE.captures_iter(line) {
            let m = cap.get(0).unwrap();
            if protected.iter().any(|&(a, b)| m.start() >= a && m.start() < b) {
                continue;
            }
            let kind = match cap[1].as_bytes()[0].to_ascii_lowercase() {
                b'f' => RefKind::Figure,
                b'e' => RefKind::Equation,
                _ => RefKind::Section,
            };
            let number = &cap[3];
            if let Some(label) = labels.by_number(kind, number) {
                out.push_str(&line[last..m.start()]);
                out.push_str(&link(label, input, &format!("{}&nbsp;{}", &cap[1], number)));
                last = m.end();
            } else if input.number.is_some_and(|n| number.split('.').next() == Some(&n.to_string())) {
                warnings.push(format!(
                    "{}: prose mentions {} {number}, which does not exist",
                    input.path.display(),
                    kind.word()
                ));
            }
        }
        out.push_str(&line[last..]);
    }
    out
}

/// Byte ranges of a line that mentions must not be linked in: code spans, HTML tags,
/// `<a>` elements, Markdown link text, `{{...}}` directives and `$...$` math.
fn protected_ranges(line: &str) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'`' => {
                let n = b[i..].iter().take_while(|&&c| c == b'`').count();
                let fence = &line[i..i + n];
                let end = line[i + n..].find(fence).map(|p| i + n + p + n).unwrap_or(b.len());
                ranges.push((i, end));
                i = end;
            }
            b'<' => {
                let end = if line[i..].starts_with("<a ") {
                    line[i..].find("</a>").map(|p| i + p + 4)
                } else {
                    line[i..].find('>').map(|p| i + p + 1)
                }
                .unwrap_or(b.len());
                ranges.push((i, end));
                i = end;
            }
            b'[' => {
                let end = line[i..].find(']').map(|p| i + p + 1).unwrap_or(b.len());
                ranges.push((i, end));
                i = end;
            }
            b'{' if line[i..].starts_with("{{#") => {
                let end = line[i..].find("}}").map(|p| i + p + 2).unwrap_or(b.len());
                ranges.push((i, end));
                i = end;
            }
            _ => i += 1,
        }
    }
    ranges
}

/// The names every `figure::svg("name", ...)` call in a chapter draws.
pub(crate) fn drawn_figure_names(content: &str) -> Vec<String> {
    DRAWS_RE.captures_iter(content).map(|c| c[1].to_string()).collect()
}

/// The names a chapter places with `{{#figure name | ...}}`.
pub(crate) fn placed_figure_names(content: &str) -> Vec<String> {
    FIGURE_RE.captures_iter(content).map(|c| c[1].to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::preprocess::render_chapter;

    const CH06: &str = "# 6 Distributed\n\n## 6.1 The `memory` ledger, first\n\n{{#figure activation-totals | Totals.}}\n\nText.\n\n{{#figure ledger | Ledger.}}\n\n$$\nA = b \\label{eq:act} \\tag{6.2}\n$$\n";

    fn chapters() -> Vec<ChapterInput> {
        vec![
            ChapterInput::new(Path::new("ch06.md"), CH06),
            ChapterInput::new(Path::new("ch07.md"), "# 7 Parallel\n\nSee {{#ref fig:ch06/ledger}}.\n"),
        ]
    }

    #[test]
    fn figures_are_numbered_per_chapter_in_order() {
        let labels = Labels::collect(&chapters());
        assert_eq!(labels.figure("ch06", "activation-totals").unwrap().number, "6.1");
        assert_eq!(labels.figure("ch06", "ledger").unwrap().number, "6.2");
        assert!(labels.figure("ch07", "ledger").is_none());
    }

    #[test]
    fn references_resolve_within_and_across_chapters() {
        let chs = chapters();
        let labels = Labels::collect(&chs);
        let mut w = Vec::new();
        let here = resolve_refs("as {{#ref fig:ledger}} and {{#ref eq:act}} show", &chs[0], &labels, &mut w);
        assert_eq!(
            here,
            "as <a class=\"xref\" href=\"#fig-ledger\">Figure&nbsp;6.2</a> and <a class=\"xref\" href=\"#eq-6-2\">Equation&nbsp;6.2</a> show"
        );
        let there = resolve_refs("{{#ref fig:ch06/ledger}}", &chs[1], &labels, &mut w);
        assert_eq!(there, "<a class=\"xref\" href=\"ch06.html#fig-ledger\">Figure&nbsp;6.2</a>");
        assert!(w.is_empty());
        let broken = resolve_refs("{{#ref fig:nope}}", &chs[0], &labels, &mut w);
        assert!(broken.contains("xref-broken"));
        assert_eq!(w.len(), 1);
    }

    #[test]
    fn plain_mentions_link_and_stale_numbers_warn() {
        let chs = chapters();
        let labels = Labels::collect(&chs);
        let mut w = Vec::new();
        let out = link_plain_mentions("Figure 6.1 and `Figure 6.2` and Figure 6.9.\n", &chs[0], &labels, &mut w);
        assert!(
            out.starts_with("<a class=\"xref\" href=\"#fig-activation-totals\">Figure&nbsp;6.1</a> and `Figure 6.2`")
        );
        assert!(out.ends_with("and Figure 6.9.\n"));
        assert_eq!(w.len(), 1, "{w:?}");
        // Lower case keeps its case; from another chapter the link names the page.
        let out = link_plain_mentions("as equation 6.2 says\n", &chs[1], &labels, &mut w);
        assert_eq!(out, "as <a class=\"xref\" href=\"ch06.html#eq-6-2\">equation&nbsp;6.2</a> says\n");
    }

    #[test]
    fn sections_link_to_mdbook_heading_anchors() {
        let chs = chapters();
        let labels = Labels::collect(&chs);
        let mut w = Vec::new();
        let out = link_plain_mentions("See Section 6.1.\n", &chs[0], &labels, &mut w);
        assert_eq!(out, "See <a class=\"xref\" href=\"#61-the-memory-ledger-first\">Section&nbsp;6.1</a>.\n");
        assert!(w.is_empty());
    }

    #[test]
    fn figure_directive_becomes_numbered_figure_with_inlined_svg() {
        let dir = std::env::temp_dir().join(format!("tangle-render-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("ch06")).unwrap();
        std::fs::write(
            dir.join("ch06/ledger.svg"),
            "<?xml version=\"1.0\"?>\n<svg width=\"10\" height=\"10\">\n\n<rect/>\n</svg>\n",
        )
        .unwrap();
        let chs = chapters();
        let labels = Labels::collect(&chs);
        let r = render_chapter(&chs[0], &labels, &dir);
        assert!(r.markdown.contains("<figure class=\"tangle-figure\" id=\"fig-ledger\">\n<div class=\"tangle-figure-body\"><svg role=\"img\" aria-label=\"Figure 6.2\" width=\"10\" height=\"10\"> <rect/> </svg></div>"), "{}", r.markdown);
        assert!(r.markdown.contains("<span class=\"tangle-figure-label\">Figure 6.2.</span> Ledger."));
        // activation-totals.svg does not exist: a visible gap and a warning, not a failure.
        assert!(r.markdown.contains("figures/ch06/activation-totals.svg has not been drawn yet"));
        assert!(r.warnings.iter().any(|w| w.contains("activation-totals")));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn cells_that_draw_a_figure_are_folded_and_named() {
        assert_eq!(
            drawn_figure("let p = tangle_runtime::figure::svg(\"ledger\", (640, 360), |root| {})"),
            Some("ledger".into())
        );
        let chs = vec![ChapterInput::new(
            Path::new("ch06.md"),
            "# 6 X\n\n```rust\nfigure::svg(\"ledger\", (1, 1), |_| Ok(())).unwrap();\n```\n\n{{#figure ledger | L.}}\n",
        )];
        let labels = Labels::collect(&chs);
        let r = render_chapter(&chs[0], &labels, Path::new("/nonexistent"));
        assert!(r.markdown.contains("<summary>Code that draws Figure 6.1</summary>"), "{}", r.markdown);
    }
}
