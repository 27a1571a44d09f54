//! LaTeX → MathML at build time (KaTeX's MathML output, [`super::katex`]), so that equations render
//! offline, with no script in the page. Which `$...$` and `$$...$$` are math is decided by
//! the Markdown front end (pulldown-cmark's math extension: an opening `$` followed by a
//! non-space, a closing `$` preceded by one and not followed by a digit; `\$` is a dollar).
//!
//! `\tag{6.1}` numbers a display equation and gives it the anchor `eq-6-1`; `\label{eq:name}`
//! lets prose say `{{#ref eq:name}}` (see [`super::labels`]).

use super::cache::Key;
use super::html::escape_html;
use super::labels::{EquationMeta, Labels, Page, RefKind, equation_id};

/// Converts LaTeX to a MathML string safe to place in Markdown; read from the cache when this
/// equation was rendered before.
pub fn to_mathml(latex: &str, display: bool) -> Result<String, String> {
    // KaTeX runs in a JavaScript engine: an equation rendered by an earlier build is read back.
    let Some(store) = super::cache::store("math") else { return render_mathml(latex, display) };
    let key = Key::new("math").part("latex", latex.as_bytes()).part("display", &[display as u8]).hex();
    if let Some(mathml) = store.get(&key) {
        return Ok(mathml);
    }
    let mathml = render_mathml(latex, display)?;
    store.put(&key, &mathml);
    Ok(mathml)
}

fn render_mathml(latex: &str, display: bool) -> Result<String, String> {
    let html = super::katex::render_mathml(latex, display)?;
    // The HTML parser puts <math> in the MathML namespace by itself; dropping the URI keeps
    // the page free of any http:// string a reader's audit would have to explain.
    let html = html.replace(" xmlns=\"http://www.w3.org/1998/Math/MathML\"", "");
    Ok(protect_from_markdown(&without_tex_annotation(&html)))
}

/// KaTeX keeps the TeX source in an `<annotation>` no reader sees; mdBook's search would
/// index it beside the formula's own text, so that every equation came up twice.
fn without_tex_annotation(html: &str) -> String {
    const OPEN: &str = "<annotation encoding=\"application/x-tex\">";
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(start) = rest.find(OPEN) {
        out.push_str(&rest[..start]);
        match rest[start..].find("</annotation>") {
            Some(end) => rest = &rest[start + end + "</annotation>".len()..],
            None => {
                rest = &rest[start..];
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Replaces characters that Markdown would interpret (`*`, `_`, `\`, `` ` ``, `[`, `]`, `$`,
/// `~`, `|`, `{`) in the text between tags with character references, so inline MathML
/// survives the Markdown parser (and mdBook's `{{#...}}` expansion) unchanged.
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
            '*' | '_' | '\\' | '`' | '[' | ']' | '$' | '~' | '|' | '{' if !in_tag => {
                out.push_str(&format!("&#{};", c as u32))
            }
            _ => out.push(c),
        }
    }
    out
}

/// One display equation as an HTML block with its number and anchor.
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

/// The HTML for a display equation of `page`, or an error box and the reason.
pub fn display(latex: &str, page: &Page, labels: &Labels) -> Result<String, (String, String)> {
    let meta = EquationMeta::parse(latex);
    let number = match (&meta.tag, &meta.label) {
        (Some(tag), _) => Some(tag.clone()),
        (None, Some(name)) => labels.get(RefKind::Equation, &page.stem, name).map(|l| l.number.clone()),
        (None, None) => None,
    };
    display_equation(latex, number.as_deref())
        .map_err(|e| (format!("<pre class=\"math-error\">{}</pre>", escape_html(latex.trim())), e))
}

/// The MathML for inline math, or an error box and the reason.
pub fn inline(latex: &str) -> Result<String, (String, String)> {
    to_mathml(latex, false).map_err(|e| (format!("<code class=\"math-error\">{}</code>", escape_html(latex)), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_becomes_number_and_anchor() {
        let out = display_equation("M = \\underbrace{2}_{\\text{bf16 weight}} + 14 \\tag{6.1}", Some("6.1")).unwrap();
        assert!(out.contains("<div class=\"tangle-equation\" id=\"eq-6-1\">"), "{out}");
        assert!(out.contains("<span class=\"tangle-equation-number\">(6.1)</span>"));
        assert!(out.contains("<munder>"), "underbrace should become munder: {out}");
        assert!(!out.contains("\\tag"), "the tag is typeset by us, not left as TeX");
    }

    #[test]
    fn operatorname_and_fractions_convert() {
        let m =
            to_mathml(r"\operatorname{MFU} = \frac{q \cdot F_{\text{token}}}{G \cdot F_{\text{peak}}}", true).unwrap();
        assert!(m.contains("MFU"), "{m}");
        assert!(m.contains("<mfrac>"));
        assert!(m.contains("display=\"block\""));
    }

    #[test]
    fn inline_mathml_has_no_markdown_specials_in_text() {
        let m = to_mathml(r"a_{b} * c", false).unwrap();
        let text_only: String = m.split('<').map(|p| p.split_once('>').map(|x| x.1).unwrap_or(p)).collect();
        assert!(!text_only.contains('_') && !text_only.contains('*') && !text_only.contains('\\'), "{m}");
    }

    #[test]
    fn the_tex_source_is_not_kept_beside_the_formula() {
        let m = to_mathml(r"\sqrt{x} + y", true).unwrap();
        assert!(!m.contains("annotation") && !m.contains("&#92;sqrt") && m.contains("<msqrt>"), "{m}");
    }

    #[test]
    fn bad_latex_is_an_error_box() {
        let (html, why) = inline("\\frac{1").unwrap_err();
        assert!(html.contains("math-error") && !why.is_empty());
    }
}
