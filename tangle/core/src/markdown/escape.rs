//! A quoted value's text as it stands in a chapter's source (`{{#value NAME shown}}`): the
//! characters that would change how the chapter parses around it (a `}` that closes the
//! directive early, a `|` that splits a table cell, a backtick, `$` or `<` that opens a code
//! span, math or HTML across the directive's end, brackets that make a link) carry a
//! backslash, as CommonMark escapes them. [`quote`] writes that form, [`unquote`] reads it;
//! `unquote(quote(t)) == t` for every text, so `accept` settles in one run.

/// The characters [`quote`] puts a backslash before.
const ESCAPED: &[char] = &['\\', '`', '{', '}', '|', '$', '<', '[', ']'];

/// `text` as a quote shows it in the source: every character of [`ESCAPED`] after a backslash.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if ESCAPED.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The text a quote's source shows: a backslash before ASCII punctuation is dropped (CommonMark's
/// backslash escape); any other backslash stays.
pub fn unquote(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && next.is_ascii_punctuation()
        {
            out.push(next);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_escapes_what_would_end_or_split_the_directive() {
        assert_eq!(quote("{a}"), "\\{a\\}");
        assert_eq!(quote("a | b"), "a \\| b");
        assert_eq!(quote("x](javascript:alert(1)) [y"), "x\\](javascript:alert(1)) \\[y");
        assert_eq!(quote("2,550 × 10²⁴"), "2,550 × 10²⁴");
        assert_eq!(quote("C:\\dir"), "C:\\\\dir");
    }

    #[test]
    fn unquoting_reverses_quoting_and_keeps_other_backslashes() {
        for text in ["{a}", "a \\ b", "\\", "*x*", "$5 | <b>", "a\\nb", "}}"] {
            assert_eq!(unquote(&quote(text)), text);
        }
        assert_eq!(unquote("a\\b"), "a\\b");
        assert_eq!(unquote("2.50"), "2.50");
    }
}
