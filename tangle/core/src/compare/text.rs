//! The text rules shared by output blocks and quoted values: what counts as the same output
//! (each line as a terminal shows it, trailing spaces and blank lines dropped, redactions
//! replaced by `[NAME]`, numbers within a relative tolerance), and which redactions find
//! nothing to replace.

use std::sync::LazyLock;

use regex::Regex;

use crate::model::OutputSpec;

/// Trailing spaces on a line and trailing blank lines are not part of an output, and each line
/// is what a terminal shows of it ([`as_shown`]).
pub fn normalize(text: &str) -> String {
    let shown: Vec<std::borrow::Cow<'_, str>> = text.lines().map(as_shown).collect();
    let mut out: String = shown.iter().map(|l| l.trim_end()).collect::<Vec<_>>().join("\n");
    while out.ends_with('\n') {
        out.pop();
    }
    out
}

/// A line as a terminal shows it: colour and cursor sequences (`ESC [ 31 m`) take no room, a
/// carriage return starts the line over (what stays of a progress bar is its last state), a
/// backspace steps back, and other control characters show nothing. An output block holds
/// what the reader saw, never control bytes, which a Markdown file would carry invisibly.
fn as_shown(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.chars().any(|c| c.is_control() && c != '\t') {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut shown: Vec<char> = Vec::new();
    let mut at: usize = 0;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            // CSI (`ESC [ params final`), OSC (`ESC ] ... BEL`), or ESC and one character.
            '\x1b' => match chars.next() {
                Some('[') => {
                    chars.find(|c| ('@'..='~').contains(c));
                }
                Some(']') => {
                    chars.find(|&c| c == '\x07' || c == '\x1b');
                }
                _ => {}
            },
            '\r' => at = 0,
            '\x08' => at = at.saturating_sub(1),
            c if c.is_control() && c != '\t' => {}
            c => {
                match shown.get_mut(at) {
                    Some(cell) => *cell = c,
                    None => shown.push(c),
                }
                at += 1;
            }
        }
    }
    std::borrow::Cow::Owned(shown.into_iter().collect())
}

/// The names of `spec`'s redactions whose pattern finds nothing in the block's text or in
/// what was printed: a pattern that does not say what was meant, which a drift should name.
pub fn unmatched_redactions<'s>(spec: &'s OutputSpec, block: &str, printed: &str) -> Vec<&'s str> {
    spec.redactions
        .iter()
        .filter(|r| !r.regex.is_match(block) && !r.regex.is_match(printed))
        .map(|r| r.name.as_str())
        .collect()
}

/// Replaces each redaction's match (or first capture group) by `[NAME]`.
pub fn redact(text: &str, spec: &OutputSpec) -> String {
    let mut text = text.to_string();
    for r in &spec.redactions {
        let placeholder = format!("[{}]", r.name);
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for caps in r.regex.captures_iter(&text) {
            let m = caps.get(1).or_else(|| caps.get(0)).expect("a match has group 0");
            out.push_str(&text[last..m.start()]);
            out.push_str(&placeholder);
            last = m.end();
        }
        out.push_str(&text[last..]);
        text = out;
    }
    text
}

static NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?").expect("a valid regex"));

/// Whether `actual` matches `expected` under `spec` (both already normalized).
pub fn matches(expected: &str, actual: &str, spec: &OutputSpec) -> bool {
    let (expected, actual) = (redact(expected, spec), redact(actual, spec));
    let Some(rtol) = spec.rtol else { return expected == actual };
    let re = &*NUMBER;
    if re.replace_all(&expected, "#") != re.replace_all(&actual, "#") {
        return false;
    }
    re.find_iter(&expected).zip(re.find_iter(&actual)).all(|(e, a)| {
        match (e.as_str().parse::<f64>(), a.as_str().parse::<f64>()) {
            (Ok(e), Ok(a)) => (e - a).abs() <= rtol * e.abs().max(a.abs()),
            _ => e.as_str() == a.as_str(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_is_what_a_terminal_shows() {
        assert_eq!(normalize("\x1b[31mred\x1b[0m and bell \x07 and cr\rX"), "Xed and bell  and cr");
        assert_eq!(normalize("[###   ] 50%\r[######] 100%\ndone\n\n"), "[######] 100%\ndone");
        assert_eq!(normalize("ab\x08c\tz \x1b]0;title\x07x"), "ac\tz x");
        assert_eq!(normalize("plain\r\nlines  \r\n"), "plain\nlines", "CRLF is a line ending");
        assert!(matches!(as_shown("untouched"), std::borrow::Cow::Borrowed(_)));
    }
}
