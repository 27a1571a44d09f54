//! LaTeX → MathML at build time (the `katex` crate, MathML output), so that equations render
//! offline, with no script in the page.
//!
//! Display math is `$$ ... $$`. `\tag{6.1}` numbers it and gives it the anchor `eq-6-1`;
//! `\label{eq:name}` lets prose say `{{#ref eq:name}}`; a labelled equation without a tag is
//! numbered automatically (chapter.count). Inline math is `$...$` with Pandoc's rule: the opening
//! `$` is followed by a non-space character and the closing `$`, in the same paragraph, is
//! preceded by a non-space and not followed by a digit, so "$2.50 and $45k" stays prose while
//! `$16P$` is math. `\$` is a dollar sign.

use std::sync::LazyLock;

use regex::Regex;

use super::figures::{Labels, RefKind, equation_id};
use super::preprocess::{ChapterInput, escape_html};

static TAG_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\\tag\*?\{([^}]*)\}").unwrap());
static LABEL_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\\label\{(?:eq:)?([^}]*)\}").unwrap());

/// What a display equation says about itself.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EquationMeta {
    pub tag: Option<String>,
    pub label: Option<String>,
    /// The LaTeX without `\tag` and `\label`, which we typeset ourselves.
    pub body: String,
}

impl EquationMeta {
    pub fn parse(latex: &str) -> Self {
        let tag = TAG_RE.captures(latex).map(|c| c[1].trim().to_string());
        let label = LABEL_RE.captures(latex).map(|c| c[1].trim().to_string());
        let body = LABEL_RE.replace_all(&TAG_RE.replace_all(latex, ""), "").trim().to_string();
        EquationMeta { tag, label, body }
    }
}

/// The LaTeX of every `$$ ... $$` block in a piece of prose, in order.
pub fn display_blocks(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("$$") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("$$") else { break };
        blocks.push(&after[..end]);
        rest = &after[end + 2..];
    }
    blocks
}

/// Converts LaTeX to a MathML string.
pub fn to_mathml(latex: &str, display: bool) -> Result<String, String> {
    let opts = katex::Opts::builder()
        .display_mode(display)
        .output_type(katex::OutputType::Mathml)
        .throw_on_error(true)
        .build()
        .map_err(|e| e.to_string())?;
    let html = katex::render_with_opts(latex, &opts).map_err(|e| e.to_string())?;
    // The HTML parser puts <math> in the MathML namespace by itself; dropping the URI keeps
    // the page free of any http:// string a reader's audit would have to explain.
    let html = html.replace(" xmlns=\"http://www.w3.org/1998/Math/MathML\"", "");
    Ok(protect_from_markdown(&html))
}

/// Replaces characters that Markdown would interpret (`*`, `_`, `\`, `` ` ``, `[`, `]`, `$`,
/// `~`, `|`) in the text between tags with character references, so inline MathML survives
/// the Markdown parser unchanged.
fn protect_from_markdown(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => {
                in_tag = true;
                out.push(c)
            }
            '>' => {
                in_tag = false;
                out.push(c)
            }
            '*' | '_' | '\\' | '`' | '[' | ']' | '$' | '~' | '|' if !in_tag => {
                out.push_str(&format!("&#{};", c as u32))
            }
            _ => out.push(c),
        }
    }
    out
}

/// Renders one display equation as an HTML block with its number and anchor.
pub fn display_equation(latex: &str, number: Option<&str>) -> Result<String, String> {
    let meta = EquationMeta::parse(latex);
    let mathml = to_mathml(&meta.body, true)?;
    Ok(match number {
        Some(n) => format!(
            "<div class=\"tangle-equation\" id=\"{}\"><div class=\"tangle-equation-body\">{mathml}</div><span class=\"tangle-equation-number\">({n})</span></div>",
            equation_id(n)
        ),
        None => format!("<div class=\"tangle-equation\"><div class=\"tangle-equation-body\">{mathml}</div></div>"),
    })
}

/// Converts every `$$ ... $$` and `$...$` in a piece of prose.
pub fn render_math(text: &str, input: &ChapterInput, labels: &Labels, warnings: &mut Vec<String>) -> String {
    // Display math first; each block becomes an HTML block of its own.
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("$$") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("$$") else { break };
        let latex = &after[..end];
        let meta = EquationMeta::parse(latex);
        let number = match (&meta.tag, &meta.label) {
            (Some(tag), _) => Some(tag.clone()),
            (None, Some(name)) => labels.get(RefKind::Equation, &input.stem, name).map(|l| l.number.clone()),
            (None, None) => None,
        };
        let before = &rest[..start];
        out.push_str(&render_inline(before, input, warnings));
        match display_equation(latex, number.as_deref()) {
            Ok(html) => {
                out.push_str("\n\n");
                out.push_str(&html);
                out.push_str("\n\n");
            }
            Err(e) => {
                warnings.push(format!("{}: cannot typeset $${}$$: {e}", input.path.display(), latex.trim()));
                out.push_str(&format!("\n\n<pre class=\"math-error\">{}</pre>\n\n", escape_html(latex.trim())));
            }
        }
        rest = &after[end + 2..];
        // The closing `$$` usually ends its line; keep what follows on that line (punctuation).
        if let Some(stripped) = rest.strip_prefix('\n') {
            rest = stripped;
        }
    }
    out.push_str(&render_inline(rest, input, warnings));
    out
}

/// Converts inline `$...$` outside code spans and HTML comments.
fn render_inline(text: &str, input: &ChapterInput, warnings: &mut Vec<String>) -> String {
    if !text.contains('$') {
        return text.to_string();
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'`' => {
                let n = b[i..].iter().take_while(|&&c| c == b'`').count();
                let fence = &text[i..i + n];
                i = text[i + n..].find(fence).map(|p| i + n + p + n).unwrap_or(i + n);
            }
            b'<' if text[i..].starts_with("<!--") => {
                i = text[i..].find("-->").map(|p| i + p + 3).unwrap_or(b.len());
            }
            b'$' => {
                let opens = b.get(i + 1).is_some_and(|&c| !c.is_ascii_whitespace() && c != b'$');
                let close = opens
                    .then(|| {
                        let mut j = i + 1;
                        while j < b.len() {
                            match b[j] {
                                b'\\' => j += 2,
                                b'\n' if b.get(j + 1) == Some(&b'\n') => return None,
                                b'$' => {
                                    let ok = !b[j - 1].is_ascii_whitespace()
                                        && !b.get(j + 1).is_some_and(|c| c.is_ascii_digit());
                                    return ok.then_some(j);
                                }
                                _ => j += 1,
                            }
                        }
                        None
                    })
                    .flatten();
                match close {
                    Some(j) => {
                        let latex = &text[i + 1..j];
                        out.push_str(&text[copied..i]);
                        match to_mathml(latex, false) {
                            Ok(m) => out.push_str(&m),
                            Err(e) => {
                                warnings.push(format!("{}: cannot typeset ${latex}$: {e}", input.path.display()));
                                out.push_str(&format!("<code class=\"math-error\">{}</code>", escape_html(latex)));
                            }
                        }
                        i = j + 1;
                        copied = i;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[copied.min(text.len())..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn ch06(md: &str) -> (ChapterInput, Labels) {
        let input = ChapterInput::new(Path::new("ch06.md"), md);
        let labels = Labels::collect(std::slice::from_ref(&input));
        (input, labels)
    }

    #[test]
    fn tag_becomes_number_and_anchor() {
        let md = "# 6 X\n\n$$\nM = \\underbrace{2}_{\\text{bf16 weight}} + 14 \\tag{6.1}\n$$\n";
        let (input, labels) = ch06(md);
        let mut w = Vec::new();
        let out = render_math(md, &input, &labels, &mut w);
        assert!(w.is_empty(), "{w:?}");
        assert!(out.contains("<div class=\"tangle-equation\" id=\"eq-6-1\">"), "{out}");
        assert!(out.contains("<span class=\"tangle-equation-number\">(6.1)</span>"));
        assert!(out.contains("<math"));
        assert!(out.contains("<munder>"), "underbrace should become munder: {out}");
        assert!(out.contains("bf16 weight"));
        assert!(!out.contains("\\tag"), "the tag is typeset by us, not left as TeX");
        assert!(!out.contains("$$"));
    }

    #[test]
    fn operatorname_and_fractions_convert() {
        let m =
            to_mathml(r"\operatorname{MFU} = \frac{q \cdot F_{\text{token}}}{G \cdot F_{\text{peak}}}", true).unwrap();
        assert!(m.contains("<mi mathvariant=\"normal\">MFU</mi>") || m.contains("MFU"), "{m}");
        assert!(m.contains("<mfrac>"));
        assert!(m.contains("display=\"block\""));
    }

    #[test]
    fn labels_number_untagged_equations() {
        let md = "# 6 X\n\n$$ a \\label{eq:first} $$\n\n$$ b \\label{eq:second} $$\n";
        let (input, labels) = ch06(md);
        assert_eq!(labels.get(RefKind::Equation, "ch06", "second").unwrap().number, "6.2");
        let out = render_math(md, &input, &labels, &mut Vec::new());
        assert!(out.contains("id=\"eq-6-2\""));
        assert!(!out.contains("\\label"));
    }

    #[test]
    fn inline_math_but_not_prices_or_code() {
        let md = "cost $2.50 vs $45k; size $s^{2}$ and `$x$` and \\$5 and $2 or $3.\n";
        let (input, labels) = ch06(md);
        let out = render_math(md, &input, &labels, &mut Vec::new());
        assert!(out.starts_with("cost $2.50 vs $45k; size <span class=\"katex\"><math"), "{out}");
        assert!(out.contains("`$x$`"));
        assert!(out.contains("\\$5 and $2 or $3."));
        assert_eq!(out.matches("<math").count(), 1);
        let out = render_math("state of $16P$ bytes\n", &input, &labels, &mut Vec::new());
        assert!(out.starts_with("state of <span class=\"katex\"><math"), "{out}");
    }

    #[test]
    fn inline_mathml_has_no_markdown_specials_in_text() {
        let m = to_mathml(r"a_{b} * c", false).unwrap();
        let text_only: String = m.split('<').map(|p| p.split_once('>').map(|x| x.1).unwrap_or(p)).collect();
        assert!(!text_only.contains('_') && !text_only.contains('*') && !text_only.contains('\\'), "{m}");
    }

    #[test]
    fn bad_latex_warns_instead_of_failing() {
        let md = "$$ \\frac{1 $$\n";
        let (input, labels) = ch06(md);
        let mut w = Vec::new();
        let out = render_math(md, &input, &labels, &mut w);
        assert_eq!(w.len(), 1);
        assert!(out.contains("math-error"));
    }
}
