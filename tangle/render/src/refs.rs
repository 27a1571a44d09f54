//! Cross-references: `{{#ref fig:NAME}}`, `{{#ref eq:NAME}}` (or `eq:6.1`), with a chapter
//! prefix to point elsewhere (`fig:ch07/NAME`), become numbered links; plain prose "Figure
//! 6.1", "Equation 6.2", "Section 7.3" is linked too when that number exists, and a mention of
//! a number of this chapter that does not exist is reported, because the prose has gone stale.
//! "Chapter 6" links to that chapter's page when the book has it (a chapter still to be
//! written is not an error) and is left alone on the chapter's own page. [`referenced`] lists
//! what a page points to, for the book-wide check that every figure is referred to.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use super::html::escape_html;
use super::labels::{Label, Labels, Page, RefKind};

static REF_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(fig|eq):(?:([A-Za-z0-9_-]+)/)?([A-Za-z0-9_.-]+)\s*$").expect("a valid regex"));
static PLAIN_REF_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b((?:[Ff]igure|[Ee]quation|[Ss]ection)s?|[Ff]ig\.|[Ee]q\.)(\s|&nbsp;)+(\d+\.\d+)\b")
        .expect("a valid regex")
});

static CHAPTER_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b([Cc]hapters?)(\s|&nbsp;)+(\d+)\b").expect("a valid regex"));

fn link(label: &Label, from: &Page, text: &str) -> String {
    format!("<a class=\"xref\" href=\"{}\">{}</a>", Labels::href(label, from), text)
}

/// The link for a `{{#ref ...}}` directive's arguments, or a marked broken reference and why.
pub fn resolve(args: &str, page: &Page, labels: &Labels) -> Result<String, (String, String)> {
    let broken = |why: String| {
        (format!("<span class=\"xref-broken\">{}</span>", escape_html(&format!("{{{{#ref{args}}}}}"))), why)
    };
    let Some(cap) = REF_RE.captures(args) else {
        return Err(broken(format!("`{{{{#ref{args}}}}}` is not `fig:NAME` or `eq:NAME`")));
    };
    let kind = if &cap[1] == "fig" { RefKind::Figure } else { RefKind::Equation };
    let stem = cap.get(2).map_or(page.stem.as_str(), |m| m.as_str());
    let name = &cap[3];
    match labels.get(kind, stem, name) {
        Some(label) => Ok(link(label, page, &format!("{}&nbsp;{}", kind.word(), label.number))),
        None => Err(broken(format!("`{}` names no {} in {stem}", args.trim(), kind.word().to_lowercase()))),
    }
}

/// A plain mention to link: its byte range in the page and the link, or a warning when the
/// number belongs to this chapter and does not exist.
pub enum Mention {
    Link(Range<usize>, String),
    Stale(usize, String),
}

/// The plain mentions in one range of prose (`offset` is where `text` starts in the page).
pub fn mentions(text: &str, offset: usize, page: &Page, labels: &Labels) -> Vec<Mention> {
    let mut out = Vec::new();
    for cap in PLAIN_REF_RE.captures_iter(text) {
        let m = cap.get(0).expect("group 0");
        let kind = match cap[1].as_bytes()[0].to_ascii_lowercase() {
            b'f' => RefKind::Figure,
            b'e' => RefKind::Equation,
            _ => RefKind::Section,
        };
        let number = &cap[3];
        if let Some(label) = labels.by_number(kind, number) {
            let text = format!("{}&nbsp;{}", &cap[1], number);
            out.push(Mention::Link(offset + m.start()..offset + m.end(), link(label, page, &text)));
        } else if page.number.is_some_and(|n| number.split('.').next() == Some(&n.to_string())) {
            out.push(Mention::Stale(
                offset + m.start(),
                format!("the prose mentions {} {number}, which does not exist", kind.word()),
            ));
        }
    }
    for cap in CHAPTER_RE.captures_iter(text) {
        let m = cap.get(0).expect("group 0");
        // "Chapter 6.2" is a section number written loosely: not a chapter.
        let after = &text[m.end()..];
        if after.starts_with('.') && after[1..].starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let number = &cap[3];
        let Some(label) = labels.by_number(RefKind::Chapter, number) else { continue };
        if label.stem == page.stem {
            continue;
        }
        let text = format!("{}&nbsp;{}", &cap[1], number);
        out.push(Mention::Link(offset + m.start()..offset + m.end(), link(label, page, &text)));
    }
    out.sort_by_key(|m| match m {
        Mention::Link(r, _) => r.start,
        Mention::Stale(at, _) => *at,
    });
    out
}

/// The labels `page` refers to: its `{{#ref}}` directives and the plain mentions in its prose.
pub fn referenced(page: &Page, labels: &Labels) -> Vec<Label> {
    use tangle_core::markdown::LeafKind;
    let mut out = Vec::new();
    for d in page.doc.directives_named("ref") {
        let Some(cap) = REF_RE.captures(page.doc.text(d.args.clone())) else { continue };
        let kind = if &cap[1] == "fig" { RefKind::Figure } else { RefKind::Equation };
        let stem = cap.get(2).map_or(page.stem.as_str(), |m| m.as_str());
        out.extend(labels.get(kind, stem, &cap[3]).cloned());
    }
    for leaf in page.doc.leaves.iter().filter(|l| matches!(l.kind, LeafKind::Paragraph | LeafKind::TableCell)) {
        for range in page.doc.prose_ranges(leaf) {
            let text = page.doc.text(range.clone());
            for cap in PLAIN_REF_RE.captures_iter(text) {
                let kind = match cap[1].as_bytes()[0].to_ascii_lowercase() {
                    b'f' => RefKind::Figure,
                    b'e' => RefKind::Equation,
                    _ => RefKind::Section,
                };
                out.extend(labels.by_number(kind, &cap[3]).cloned());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const CH06: &str = "# 6 Distributed\n\n## 6.1 The `memory` ledger, first\n\n{{#figure activation-totals | Totals.}}\n\n{{#figure ledger | Ledger.}}\n\n$$\nA = b \\label{eq:act} \\tag{6.2}\n$$\n";

    #[test]
    fn references_resolve_within_and_across_chapters() {
        let pages = vec![Page::new(Path::new("ch06.md"), CH06), Page::new(Path::new("ch07.md"), "# 7 P\n")];
        let labels = Labels::collect(&pages);
        assert_eq!(
            resolve(" fig:ledger", &pages[0], &labels).unwrap(),
            "<a class=\"xref\" href=\"#fig-ledger\">Figure&nbsp;6.2</a>"
        );
        assert_eq!(
            resolve(" eq:act", &pages[0], &labels).unwrap(),
            "<a class=\"xref\" href=\"#eq-6-2\">Equation&nbsp;6.2</a>"
        );
        assert_eq!(
            resolve(" fig:ch06/ledger", &pages[1], &labels).unwrap(),
            "<a class=\"xref\" href=\"ch06.html#fig-ledger\">Figure&nbsp;6.2</a>"
        );
        let (html, why) = resolve(" fig:nope", &pages[0], &labels).unwrap_err();
        assert!(html.contains("xref-broken") && why.contains("nope"));
    }

    #[test]
    fn a_page_refers_to_what_its_directives_and_mentions_name() {
        let pages = vec![
            Page::new(Path::new("ch06.md"), CH06),
            Page::new(Path::new("ch07.md"), "# 7 P\n\nAs {{#ref fig:ch06/ledger}} and Equation 6.2 show.\n"),
        ];
        let labels = Labels::collect(&pages);
        let ids: Vec<String> = referenced(&pages[1], &labels).into_iter().map(|l| l.id).collect();
        assert_eq!(ids, ["fig-ledger", "eq-6-2"]);
        assert!(referenced(&pages[0], &labels).is_empty());
    }

    #[test]
    fn plain_mentions_link_and_stale_numbers_warn() {
        let pages = vec![Page::new(Path::new("ch06.md"), CH06), Page::new(Path::new("ch07.md"), "# 7 P\n")];
        let labels = Labels::collect(&pages);
        let found = mentions("Figure 6.1 and Figure 6.9 and Section 6.1.", 10, &pages[0], &labels);
        assert!(
            matches!(&found[0], Mention::Link(r, html) if *r == (10..20) && html.contains("#fig-activation-totals"))
        );
        assert!(matches!(&found[1], Mention::Stale(at, why) if *at == 25 && why.contains("Figure 6.9")));
        assert!(matches!(&found[2], Mention::Link(_, html) if html.contains("#61-the-memory-ledger-first")));
        let chapters = mentions("Chapter 6 and chapter 7, Chapter 3, Chapter 6.1", 0, &pages[1], &labels);
        assert_eq!(chapters.len(), 1, "chapter 7 is this page, chapter 3 is not in the book, 6.1 is no chapter");
        assert!(
            matches!(&chapters[0], Mention::Link(r, html) if *r == (0..9) && html == "<a class=\"xref\" href=\"ch06.html\">Chapter&nbsp;6</a>")
        );
        let there = mentions("as equation 6.2 says", 0, &pages[1], &labels);
        assert!(
            matches!(&there[0], Mention::Link(_, html) if html == "<a class=\"xref\" href=\"ch06.html#eq-6-2\">equation&nbsp;6.2</a>")
        );
    }
}
