//! Per-chapter rewriting: cells, output blocks, directives, and the order in which the other
//! passes (math, figures, callouts) run over the chapter's prose.

use std::path::{Path, PathBuf};

use super::figures::{self, Labels};
use super::{callouts, math, sequence};
use crate::model::CellKind;
use crate::parse::cell_kind;

/// One chapter as the preprocessor sees it.
#[derive(Debug, Clone)]
pub struct ChapterInput {
    /// Path relative to `book/src` (`ch06.md`).
    pub path: PathBuf,
    /// File stem (`ch06`): the directory of its figures under `figures/`.
    pub stem: String,
    /// The chapter number taken from its first heading (`# 6 Distributed ...` → 6).
    pub number: Option<u32>,
    pub content: String,
}

impl ChapterInput {
    pub fn new(path: &Path, content: &str) -> Self {
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        ChapterInput { path: path.to_path_buf(), stem, number: chapter_number(content), content: content.to_string() }
    }

    /// The page this chapter becomes, relative to the book root (`ch06.html`).
    pub fn html_path(&self) -> String {
        self.path.with_extension("html").to_string_lossy().replace('\\', "/")
    }
}

/// The number in a chapter's first level-one heading: `# 6 Distributed and Frontier Training`
/// (or `# 6. ...`, `# Chapter 6: ...`) gives 6. Headings inside code fences do not count.
pub fn chapter_number(content: &str) -> Option<u32> {
    for seg in split_fences(content) {
        let Segment::Text(text) = seg else { continue };
        for line in text.lines() {
            if let Some(title) = line.strip_prefix("# ") {
                let title = title.trim_start();
                let title = title.strip_prefix("Chapter ").unwrap_or(title);
                let digits: String = title.chars().take_while(|c| c.is_ascii_digit()).collect();
                return digits.parse().ok();
            }
        }
    }
    None
}

/// A piece of a Markdown file: prose, or a fenced code block.
#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    Text(String),
    Fence(Fence),
}

/// A fenced code block, kept with its exact fence so that it can be written back unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct Fence {
    pub indent: String,
    /// The fence itself: three or more backticks or tildes.
    pub marker: String,
    pub info: String,
    /// The lines between the fences, each ending in `\n`.
    pub body: String,
    pub closed: bool,
}

impl Fence {
    /// The first word of the info string (`rust`, `output`, `sequence`).
    pub fn lang(&self) -> &str {
        self.info.split_whitespace().next().unwrap_or("")
    }

    /// Writes the block back as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut s = format!("{}{}{}\n{}", self.indent, self.marker, self.info, self.body);
        if self.closed {
            s.push_str(&format!("{}{}\n", self.indent, self.marker));
        }
        s
    }
}

/// Splits Markdown into prose and fenced code blocks. Which blocks are fences is decided by
/// pulldown-cmark, through [`crate::parse::top_level_fences`], exactly as for the rest of
/// tangle; this only cuts the text at those spans and takes each fence apart.
pub fn split_fences(md: &str) -> Vec<Segment> {
    let mut segs = Vec::new();
    let mut at = 0;
    for range in crate::parse::top_level_fences(md) {
        // Cut at whole lines: the fence's indentation belongs to it, and so does the newline
        // that ends its closing line.
        let start = md[..range.start].rfind('\n').map_or(0, |i| i + 1).max(at);
        let end = match md[..range.end].ends_with('\n') {
            true => range.end,
            false => md[range.end..].find('\n').map_or(md.len(), |i| range.end + i + 1),
        };
        if start > at {
            segs.push(Segment::Text(md[at..start].to_string()));
        }
        segs.push(Segment::Fence(take_apart(&md[start..end])));
        at = end;
    }
    if at < md.len() {
        segs.push(Segment::Text(md[at..].to_string()));
    }
    segs
}

/// A fenced block's text → its parts (the block is known to be a fence).
fn take_apart(block: &str) -> Fence {
    let mut lines = block.split_inclusive('\n');
    let first = lines.next().unwrap_or("").trim_end_matches(['\n', '\r']);
    let trimmed = first.trim_start_matches(' ');
    let indent = first[..first.len() - trimmed.len()].to_string();
    let ch = trimmed.chars().next().unwrap_or('`');
    let n = trimmed.chars().take_while(|&c| c == ch).count();
    let marker = trimmed[..n].to_string();
    let info = trimmed[n..].trim().to_string();
    let rest: Vec<&str> = lines.collect();
    let closes = |line: &str| {
        let t = line.trim();
        t.len() >= n && t.chars().all(|c| c == ch)
    };
    let closed = rest.last().is_some_and(|l| closes(l));
    let body_lines = if closed { &rest[..rest.len() - 1] } else { &rest[..] };
    let mut body: String = body_lines.concat();
    if !body.is_empty() && !body.ends_with('\n') {
        body.push('\n');
    }
    Fence { indent, marker, info, body, closed }
}

/// The result of rendering one chapter.
#[derive(Debug, Default)]
pub struct Rendered {
    pub markdown: String,
    pub warnings: Vec<String>,
}

fn drop_first_line(body: &str) -> &str {
    body.split_once('\n').map(|(_, rest)| rest).unwrap_or("")
}

/// Escapes text for HTML element content.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// Names of the `#[test]` functions in a test cell, for its folded summary.
fn test_names(body: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut after_test_attr = false;
    for line in body.lines() {
        let l = line.trim();
        if l.starts_with("#[test]") {
            after_test_attr = true;
            continue;
        }
        if after_test_attr && let Some(pos) = l.find("fn ") {
            let name: String = l[pos + 3..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            names.push(name);
            after_test_attr = false;
        }
    }
    names
}

/// Splits prose into pieces that are inline code spans (`true`) or not (`false`).
pub fn code_span_pieces(text: &str) -> Vec<(bool, &str)> {
    let b = text.as_bytes();
    let mut pieces = Vec::new();
    let (mut i, mut copied) = (0, 0);
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let n = b[i..].iter().take_while(|&&c| c == b'`').count();
        let run = &text[i..i + n];
        // The closing run must be exactly as long as the opening one.
        let mut j = i + n;
        let mut end = None;
        while let Some(p) = text[j..].find(run) {
            let s = j + p;
            let len = b[s..].iter().take_while(|&&c| c == b'`').count();
            if len == n {
                end = Some(s + n);
                break;
            }
            j = s + len;
        }
        match end {
            Some(e) => {
                pieces.push((false, &text[copied..i]));
                pieces.push((true, &text[i..e]));
                i = e;
                copied = e;
            }
            None => i += n,
        }
    }
    pieces.push((false, &text[copied.min(text.len())..]));
    pieces
}

/// Applies `f` to the parts of `text` outside inline code spans, so that directives shown as
/// code (`` `{{#ref fig:x}}` ``) stay as written.
pub fn map_outside_code(text: &str, mut f: impl FnMut(&str) -> String) -> String {
    code_span_pieces(text).into_iter().map(|(code, t)| if code { t.to_string() } else { f(t) }).collect()
}

/// The prose with inline code spans removed (for finding directives).
pub fn without_code_spans(text: &str) -> String {
    code_span_pieces(text).into_iter().filter(|(code, _)| !code).map(|(_, t)| t).collect()
}

/// Renders one chapter: code fences by kind, prose through math, figures and callouts.
pub fn render_chapter(input: &ChapterInput, labels: &Labels, figures_dir: &Path) -> Rendered {
    let mut out = Rendered::default();
    let mut diagrams = std::collections::HashMap::new();
    let segs = split_fences(&input.content);
    // Diagrams drawn at build time from `sequence` blocks, placed by their `{{#figure}}`.
    for seg in &segs {
        if let Segment::Fence(f) = seg
            && f.lang() == "sequence"
        {
            match sequence::render_fence(f) {
                Ok((Some(name), svg)) => {
                    diagrams.insert(name, svg);
                }
                Ok((None, _)) => {}
                Err(e) => out.warnings.push(format!("{}: sequence diagram: {e}", input.path.display())),
            }
        }
    }
    let mut md = String::new();
    for seg in segs {
        match seg {
            Segment::Text(text) => {
                let text = remove_directives(&text, &mut out.warnings, input);
                let text = figures::link_plain_mentions(&text, input, labels, &mut out.warnings);
                let text = map_outside_code(&text, |t| math::render_math(t, input, labels, &mut out.warnings));
                let text = map_outside_code(&text, |t| {
                    let t = figures::render_figures(t, input, labels, figures_dir, &diagrams, &mut out.warnings);
                    figures::resolve_refs(&t, input, labels, &mut out.warnings)
                });
                let text = callouts::render_callouts(&text);
                md.push_str(&text);
            }
            Segment::Fence(f) => md.push_str(&render_fence(&f, input, labels, &diagrams, &mut out.warnings)),
        }
    }
    out.markdown = md;
    out
}

fn render_fence(
    f: &Fence,
    input: &ChapterInput,
    labels: &Labels,
    diagrams: &std::collections::HashMap<String, String>,
    warnings: &mut Vec<String>,
) -> String {
    match f.lang() {
        "output" => {
            // Program output: shown verbatim, without the redaction/tolerance attributes.
            let body = f.body.trim_end_matches('\n');
            format!("{}<pre class=\"tangle-output\"><samp>{}</samp></pre>\n", f.indent, escape_html(body))
        }
        "sequence" => match sequence::render_fence(f) {
            // A named diagram is placed by its {{#figure}}; an unnamed one stands where it is.
            Ok((Some(name), _)) if diagrams.contains_key(&name) => String::new(),
            Ok((_, svg)) => format!("\n<div class=\"tangle-diagram\">{svg}</div>\n\n"),
            Err(e) => {
                warnings.push(format!("{}: sequence diagram: {e}", input.path.display()));
                f.to_markdown()
            }
        },
        "rust" => {
            let kind = cell_kind(&f.body);
            let shown = Fence {
                body: match kind {
                    CellKind::Save | CellKind::Test => drop_first_line(&f.body).to_string(),
                    CellKind::Run => f.body.clone(),
                },
                ..f.clone()
            };
            match kind {
                CellKind::Save => shown.to_markdown(),
                CellKind::Test => {
                    let names = test_names(&shown.body);
                    let summary = if names.is_empty() {
                        "Tests".to_string()
                    } else {
                        format!("Tests <span class=\"tangle-test-names\">({})</span>", names.join(", "))
                    };
                    format!(
                        "\n<details class=\"tangle-test\">\n<summary>{summary}</summary>\n\n{}\n</details>\n",
                        shown.to_markdown()
                    )
                }
                CellKind::Run => match figures::drawn_figure(&shown.body) {
                    Some(name) => {
                        let what = labels
                            .figure(&input.stem, &name)
                            .map(|l| format!("Figure {}", l.number))
                            .unwrap_or_else(|| format!("figure <code>{name}</code>"));
                        format!(
                            "\n<details class=\"tangle-figure-code\">\n<summary>Code that draws {what}</summary>\n\n{}\n</details>\n",
                            shown.to_markdown()
                        )
                    }
                    None => shown.to_markdown(),
                },
            }
        }
        _ => f.to_markdown(),
    }
}

/// Removes `<!-- tangle: ... -->` directive lines; turns `<!-- figure: ... -->` placeholders
/// into a visible "figure to come" box, with a warning.
fn remove_directives(text: &str, warnings: &mut Vec<String>, input: &ChapterInput) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with("<!-- tangle:") && t.ends_with("-->") {
            continue;
        }
        if let Some(rest) = t.strip_prefix("<!-- figure:")
            && let Some(desc) = rest.strip_suffix("-->")
        {
            warnings.push(format!("{}: figure placeholder not yet drawn: {}", input.path.display(), desc.trim()));
            out.push_str(&format!(
                "\n<div class=\"tangle-figure-missing\">Figure to come: {}</div>\n\n",
                escape_html(desc.trim())
            ));
            continue;
        }
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(md: &str) -> Rendered {
        let input = ChapterInput::new(Path::new("ch06.md"), md);
        let labels = Labels::collect(std::slice::from_ref(&input));
        render_chapter(&input, &labels, Path::new("/nonexistent-figures"))
    }

    #[test]
    fn chapter_number_comes_from_the_first_heading_outside_code() {
        assert_eq!(chapter_number("```\n# 9 not this\n```\n# 6 Distributed and Frontier Training\n"), Some(6));
        assert_eq!(chapter_number("# Chapter 7: Parallelism\n"), Some(7));
        assert_eq!(chapter_number("# How this book is built\n"), None);
    }

    #[test]
    fn fences_nest_by_length() {
        let md = "a\n````markdown\n```rust\nx\n```\n````\nb\n";
        let segs = split_fences(md);
        assert_eq!(segs.len(), 3);
        let Segment::Fence(f) = &segs[1] else { panic!("expected a fence") };
        assert_eq!(f.lang(), "markdown");
        assert_eq!(f.body, "```rust\nx\n```\n");
        let round: String = segs
            .iter()
            .map(|s| match s {
                Segment::Text(t) => t.clone(),
                Segment::Fence(f) => f.to_markdown(),
            })
            .collect();
        assert_eq!(round, md);
    }

    #[test]
    fn output_attributes_are_stripped_and_text_escaped() {
        let r = render("```output TPS=\"([0-9.]+)k\" rtol=0.05\na < b & c\n\nTPS 3k\n```\n");
        assert!(
            r.markdown.starts_with("<pre class=\"tangle-output\"><samp>a &lt; b &amp; c\n\nTPS 3k</samp></pre>"),
            "{}",
            r.markdown
        );
        assert!(!r.markdown.contains("rtol"));
    }

    #[test]
    fn markers_are_hidden_and_tests_fold() {
        let r = render("```rust\n// @save\npub fn f() {}\n```\n\n```rust\n// @test\n#[test]\nfn f_works() {}\n```\n");
        assert!(!r.markdown.contains("@save"));
        assert!(!r.markdown.contains("@test"));
        assert!(r.markdown.contains("```rust\npub fn f() {}\n```"));
        assert!(r.markdown.contains("<details class=\"tangle-test\">\n<summary>Tests <span class=\"tangle-test-names\">(f_works)</span></summary>"));
    }

    #[test]
    fn directives_vanish_but_code_is_untouched() {
        let r = render("<!-- tangle: data book/data/x.txt -->\ntext\n```markdown\n<!-- tangle: timeout 9 -->\n```\n");
        assert_eq!(r.markdown, "text\n```markdown\n<!-- tangle: timeout 9 -->\n```\n");
    }

    #[test]
    fn directives_inside_code_spans_stay_as_written() {
        let r = render("Write `{{#ref fig:x}}` or ``{{#figure y | c}}``.\n");
        assert_eq!(r.markdown, "Write `{{#ref fig:x}}` or ``{{#figure y | c}}``.\n");
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn math_inside_code_spans_stays_as_written() {
        let r = render("Display equations are `$$ ... $$` blocks; `\\tag{6.1}` numbers them.\n");
        assert_eq!(r.markdown, "Display equations are `$$ ... $$` blocks; `\\tag{6.1}` numbers them.\n");
    }

    #[test]
    fn figure_placeholders_are_visible_and_warned() {
        let r = render("<!-- figure: 6.3 sequence diagram -->\n");
        assert!(r.markdown.contains("Figure to come: 6.3 sequence diagram"));
        assert_eq!(r.warnings.len(), 1);
    }
}
