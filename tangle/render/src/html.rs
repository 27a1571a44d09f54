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
