//! The one fence-info rule: how the text after a fence's backticks splits into a language and
//! attributes. Every stage (parse, accept, render) reads fences through [`FenceInfo`], so that a
//! ```` ```rust,no_run ```` fence means the same thing to the checker and to the book.
//!
//! The info string is read as written in the file, before CommonMark's backslash escapes, so
//! that a redaction's regex keeps its backslashes. Words are separated by spaces or commas
//! (rustdoc's `rust,ignore` and the spaced `rust ignore` are the same); the first word is the
//! language; every other word is a flag (`ignore`) or a `key=value` pair whose value may be
//! double-quoted (`fold="Answer"`, `TPS="([0-9.]+) tok/s"`, `\"` escapes a quote).

/// One attribute of a fence: `ignore`, or `rtol=0.05`, or `NAME="regex"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    pub key: String,
    /// `None` for a bare flag.
    pub value: Option<String>,
}

/// A fence's info string, taken apart.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FenceInfo {
    /// The first word (`rust`, `output`, `sequence`), empty for a bare fence.
    pub lang: String,
    pub attributes: Vec<Attribute>,
}

impl FenceInfo {
    /// Splits a raw info string. Fails on an unterminated quote or an empty key.
    pub fn parse(raw: &str) -> Result<FenceInfo, String> {
        let mut words = split_words(raw.trim())?.into_iter();
        let lang = match words.next() {
            Some(Word { key, value: None }) => key,
            Some(Word { key, value: Some(_) }) => {
                return Err(format!("the fence's first word must be its language, not `{key}=...`"));
            }
            None => String::new(),
        };
        let attributes = words.map(|w| Attribute { key: w.key, value: w.value }).collect();
        Ok(FenceInfo { lang, attributes })
    }

    /// Whether the bare flag `name` is present (`ignore` in `rust,ignore`).
    #[cfg(test)]
    pub(crate) fn has_flag(&self, name: &str) -> bool {
        self.attributes.iter().any(|a| a.key == name && a.value.is_none())
    }

    /// The value of `key=value`, if given.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.attributes.iter().find(|a| a.key == key).and_then(|a| a.value.as_deref())
    }
}

/// Whether rustdoc, and so `mdbook test`, compiles a block with this info string as a Rust
/// doctest (rustdoc's `LangString::parse`): a bare fence is Rust; so is one whose words are
/// all rustdoc's own (```` ```no_run ````, ```` ```ignore ````), and one that says `rust`
/// anywhere; any other word first (```` ```text,no_run ````) makes it something else.
pub fn rustdoc_tests(raw: &str) -> bool {
    let (mut rust, mut other) = (false, false);
    for token in raw.split([',', ' ', '\t']).map(str::trim).filter(|t| !t.is_empty()) {
        match token {
            "rust" => rust = true,
            "should_panic" | "no_run" | "ignore" => rust = !other,
            _ if token.starts_with("ignore-") => rust = !other,
            "test_harness" | "compile_fail" | "standalone_crate" => rust = !other || rust,
            _ if token.starts_with("edition") => {}
            _ if token.len() == 5 && token.starts_with('E') && token[1..].bytes().all(|b| b.is_ascii_digit()) => {
                rust = !other || rust
            }
            _ => other = true,
        }
    }
    !other || rust
}

struct Word {
    key: String,
    value: Option<String>,
}

fn split_words(mut s: &str) -> Result<Vec<Word>, String> {
    let is_sep = |c: char| c == ',' || c.is_whitespace();
    let mut out = Vec::new();
    loop {
        s = s.trim_start_matches(is_sep);
        if s.is_empty() {
            return Ok(out);
        }
        let key_end = s.find(|c: char| is_sep(c) || c == '=').unwrap_or(s.len());
        let key = s[..key_end].to_string();
        s = &s[key_end..];
        let Some(rest) = s.strip_prefix('=') else {
            if key.is_empty() {
                return Err("an attribute has no name".into());
            }
            out.push(Word { key, value: None });
            continue;
        };
        if key.is_empty() {
            return Err(format!("expected key=value, found `={}`", rest.split(is_sep).next().unwrap_or("")));
        }
        let value;
        if let Some(quoted) = rest.strip_prefix('"') {
            let (v, after) = unquote(quoted).ok_or_else(|| format!("unterminated quote in the value of `{key}`"))?;
            value = v;
            s = after;
        } else {
            let end = rest.find(is_sep).unwrap_or(rest.len());
            value = rest[..end].to_string();
            s = &rest[end..];
        }
        out.push(Word { key, value: Some(value) });
    }
}

/// Reads a double-quoted value up to its closing quote (`\"` is a quote, any other backslash
/// stays); returns the value and the text after the closing quote.
fn unquote(s: &str) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, '"')) => value.push('"'),
                Some((_, other)) => {
                    value.push('\\');
                    value.push(other);
                }
                None => value.push('\\'),
            },
            '"' => return Some((value, &s[i + 1..])),
            c => value.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(key: &str, value: Option<&str>) -> Attribute {
        Attribute { key: key.into(), value: value.map(Into::into) }
    }

    #[test]
    fn rust_blocks_are_those_rustdoc_tests() {
        for rust in ["", "rust", "no_run", "ignore", "should_panic,edition2018", "compile_fail,E0382", "rust,editable"]
        {
            assert!(rustdoc_tests(rust), "`{rust}` is a doctest");
        }
        for other in ["text", "text,no_run", "console", "editable", "output", "toml rust=1"] {
            assert!(!rustdoc_tests(other), "`{other}` is no doctest");
        }
        assert!(rustdoc_tests("no_run,text"), "rustdoc's words first, as rustdoc reads them");
    }

    #[test]
    fn commas_and_spaces_separate_words() {
        let info = FenceInfo::parse("rust,no_run").unwrap();
        assert_eq!(info.lang, "rust");
        assert!(info.has_flag("no_run"));
        assert_eq!(FenceInfo::parse("rust ignore").unwrap(), FenceInfo::parse("rust,ignore").unwrap());
        assert_eq!(FenceInfo::parse("").unwrap().lang, "");
    }

    #[test]
    fn quoted_values_keep_backslashes_commas_and_spaces() {
        let info = FenceInfo::parse(r#"output TPS="([0-9.,]+) tok/s" rtol=0.1 Q="a \"b\"" fold"#).unwrap();
        assert_eq!(info.lang, "output");
        assert_eq!(
            info.attributes,
            vec![
                attr("TPS", Some("([0-9.,]+) tok/s")),
                attr("rtol", Some("0.1")),
                attr("Q", Some("a \"b\"")),
                attr("fold", None)
            ]
        );
        assert_eq!(FenceInfo::parse(r#"output X="\d+""#).unwrap().value("X"), Some(r"\d+"));
    }

    #[test]
    fn malformed_info_is_an_error() {
        assert!(FenceInfo::parse(r#"output A="open"#).is_err());
        assert!(FenceInfo::parse("output =3").is_err());
        assert!(FenceInfo::parse("lang=rust").is_err());
    }
}
