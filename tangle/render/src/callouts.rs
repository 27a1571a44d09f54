//! Callouts: a blockquote whose first paragraph opens with a bold lead, as
//! `> **Note — Why bf16 and not fp16.** ...`, `> **Interview question:** ...` or
//! `> **Landscape (2025) — ...**`, is wrapped in `<aside class="callout callout-note">` (the
//! class is the lead's first word), which the book's stylesheet draws as a side note. Other
//! blockquotes stay quotations. The quote itself is left as it is, so its Markdown renders as
//! any quote's does.

/// The kind of callout a blockquote's first paragraph announces, as a CSS class suffix.
pub fn kind(first_paragraph: &str) -> Option<String> {
    let rest = first_paragraph.trim_start().strip_prefix("**")?;
    let word: String = rest.chars().take_while(|c| c.is_alphanumeric()).collect();
    (!word.is_empty()).then(|| word.to_lowercase())
}

/// What goes before and after a callout's blockquote.
pub fn wrap(kind: &str) -> (String, &'static str) {
    (format!("<aside class=\"callout callout-{kind}\">\n\n"), "\n</aside>\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_plain_quotes() {
        assert_eq!(kind("**Note — Why bf16.** Because").as_deref(), Some("note"));
        assert_eq!(kind("**Interview question:** why?").as_deref(), Some("interview"));
        assert_eq!(kind("**Landscape (2025) — who**").as_deref(), Some("landscape"));
        assert_eq!(kind("A plain quotation."), None);
    }
}
