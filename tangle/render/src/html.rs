//! HTML text: escaping as pulldown-cmark does it.

/// Escapes text for HTML element content and attribute values.
pub(crate) fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    pulldown_cmark_escape::escape_html(&mut out, s).expect("writing to a String cannot fail");
    out
}

/// Text escaped for HTML, with `{` and `$` as character references: nothing mdBook or tangle
/// expands (`{{#include}}`, math) can be found in it. For program output, code and values.
pub(crate) fn inert(text: &str) -> String {
    escape_html(text).replace('{', "&#123;").replace('$', "&#36;")
}

/// A quoted value's text as Markdown that shows exactly those characters: every ASCII
/// punctuation character (what Markdown and HTML give meaning to: `*_[]()|{}<>&\`#!$~`) as a
/// numeric character reference, so that no emphasis, link, table cell, tag or directive can
/// come of it.
pub(crate) fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_punctuation() {
            out.push_str(&format!("&#{};", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}
