//! Callouts: a blockquote whose first line opens with a bold lead, as
//! `> **Note — Why bf16 and not fp16.** ...`, `> **Interview question:** ...` or
//! `> **Landscape (2025) — ...**`, becomes `<aside class="callout callout-note">` (the class is
//! the lead's first word), which the book's stylesheet draws as a side note. Other
//! blockquotes stay quotations.

/// The kind of callout a blockquote's first line announces, as a CSS class suffix.
pub fn callout_kind(first_line: &str) -> Option<String> {
    let rest = first_line.trim_start().strip_prefix('>')?.trim_start().strip_prefix("**")?;
    let word: String = rest.chars().take_while(|c| c.is_alphanumeric()).collect();
    if word.is_empty() {
        return None;
    }
    Some(word.to_lowercase())
}

/// Rewrites callout blockquotes into `<aside>` blocks; the inside stays Markdown.
pub fn render_callouts(text: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let starts_quote = line.trim_start().starts_with('>') && (i == 0 || lines[i - 1].trim().is_empty());
        let kind = if starts_quote { callout_kind(line) } else { None };
        let Some(kind) = kind else {
            out.push_str(line);
            i += 1;
            continue;
        };
        let mut inner = String::new();
        while i < lines.len() && !lines[i].trim().is_empty() {
            let l = lines[i].trim_start();
            let l = l.strip_prefix('>').map(|r| r.strip_prefix(' ').unwrap_or(r)).unwrap_or(l);
            inner.push_str(l);
            if !l.ends_with('\n') {
                inner.push('\n');
            }
            i += 1;
            // A `>` line that is empty separates paragraphs inside the callout.
        }
        out.push_str(&format!("<aside class=\"callout callout-{kind}\">\n\n{inner}\n</aside>\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn note_blockquote_becomes_aside() {
        let md = "Text.\n\n> **Note — Why bf16.** Because range.\n> More.\n>\n> Second paragraph.\n\nAfter.\n";
        let out = render_callouts(md);
        assert_eq!(
            out,
            "Text.\n\n<aside class=\"callout callout-note\">\n\n**Note — Why bf16.** Because range.\nMore.\n\nSecond paragraph.\n\n</aside>\n\nAfter.\n"
        );
    }

    #[test]
    fn kinds_and_plain_quotes() {
        assert_eq!(callout_kind("> **Interview question:** why?").as_deref(), Some("interview"));
        assert_eq!(callout_kind("> **Landscape (2025) — who**").as_deref(), Some("landscape"));
        assert_eq!(callout_kind("> A plain quotation."), None);
        assert_eq!(render_callouts("> A plain quotation.\n"), "> A plain quotation.\n");
    }
}
