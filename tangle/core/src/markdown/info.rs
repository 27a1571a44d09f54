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
