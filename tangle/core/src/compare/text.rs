//! The text rules shared by output blocks and quoted values: what counts as the same output
//! (trailing spaces and blank lines dropped, redactions replaced by `[NAME]`, numbers within a
//! relative tolerance), and which redactions find nothing to replace.

use std::sync::LazyLock;

use regex::Regex;

use crate::model::OutputSpec;

/// Trailing spaces on a line and trailing blank lines are not part of an output.
pub fn normalize(text: &str) -> String {
    let mut out: String = text.lines().map(str::trim_end).collect::<Vec<_>>().join("\n");
    while out.ends_with('\n') {
        out.pop();
    }
    out
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
