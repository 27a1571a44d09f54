//! Property test: a value text drawn from a Markdown- and HTML-hostile alphabet, published by a
//! chapter and quoted in a sentence, a heading, a table cell, link text and a figure caption,
//! goes through `accept` (settling in one run: a second finds nothing to change), and the page
//! (the rendered Markdown, turned into HTML as mdBook does) shows exactly its characters in
//! every place: never a link, emphasis, tag or table cell the value made.

use std::path::Path;

use proptest::prelude::*;

use super::render;
use crate::labels::{Labels, Page};
use tangle_core::compare::{compare_values, normalize};
use tangle_core::parse::parse_chapter;
use tangle_core::run::{PublishedValue, RunEnd, RunOutput};

/// The chapter, its quotes not yet filled in.
const CHAPTER: &str = "# 1 One\n\n```rust\nlet x = 1;\n```\n\nThe value is {{#value v}} today.\n\n\
## Heading {{#value v}}\n\n| name | shown |\n|------|-------|\n| v | {{#value v}} |\n\n\
Follow [the {{#value v}} link](https://example.org/) and *see {{#value v}}*.\n\n\
{{#figure bars | A caption with {{#value v}}.}}\n";

fn run_with(text: &str) -> RunOutput {
    RunOutput {
        cells: vec![tangle_core::run::CellOutput { index: 0, stdout: String::new() }],
        end: RunEnd::Completed,
        values: vec![PublishedValue {
            name: "v".into(),
            text: text.into(),
            vary: "exact".into(),
            cell: Some(0),
            at: None,
        }],
    }
}

fn accepted(source: &str, run: &RunOutput) -> Option<String> {
    let chapter = parse_chapter("ch01", Path::new("ch01.md"), source.as_bytes().to_vec()).expect("parses");
    let report = compare_values(&chapter, run, &[], false);
    assert!(report.diagnostics.iter().all(|d| !d.is_error()), "{:?}", report.diagnostics);
    tangle_core::accept::rewrite(&chapter, run, &[], &report.drifts)
}

/// The texts of every `tangle-value` span of `html`, decoded; panics on a tag inside one.
fn shown_values(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find("<span class=\"tangle-value\"") {
        let after = &rest[at..];
        let open_end = after.find('>').expect("the tag closes") + 1;
        let close = after[open_end..].find("</span>").expect("the span closes");
        let inner = &after[open_end..open_end + close];
        assert!(!inner.contains('<'), "a tag inside a value: {inner}");
        out.push(decode(inner));
        rest = &after[open_end + close..];
    }
    out
}

/// Character references decoded, as a browser reads them (inside an HTML block, as a figure's
/// caption is, pulldown-cmark passes `&#42;` through for the browser).
fn decode(text: &str) -> String {
    let numeric = regex::Regex::new(r"&#([0-9]+);").unwrap();
    let text = numeric.replace_all(text, |c: &regex::Captures| {
        char::from_u32(c[1].parse().unwrap()).map(String::from).unwrap_or_default()
    });
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&")
}

fn to_html(markdown: &str) -> String {
    use pulldown_cmark::{Options, Parser, html};
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_SMART_PUNCTUATION
        | Options::ENABLE_HEADING_ATTRIBUTES;
    let mut out = String::new();
    html::push_html(&mut out, Parser::new_ext(markdown, options));
    out
}

fn hostile() -> impl Strategy<Value = String> {
    let alphabet: Vec<char> = "*_[]()|{}<>&\\`#!$~:;\"'-.=+ ab1éλ→😀\u{a0}".chars().collect();
    proptest::collection::vec(proptest::sample::select(alphabet), 1..24)
        .prop_map(|cs| cs.into_iter().collect::<String>())
        .prop_filter("a value shows something", |s| !s.trim().is_empty())
}

fn round_trip(text: &str) {
    let run = run_with(text);
    let once = accepted(CHAPTER, &run).expect("the empty quotes drift");
    assert_eq!(accepted(&once, &run), None, "a second accept changes nothing:\n{once}");
    let want: String = normalize(text).split_whitespace().collect::<Vec<_>>().join(" ");
    let chapter = parse_chapter("ch01", Path::new("ch01.md"), once.as_bytes().to_vec()).unwrap();
    assert_eq!(chapter.quotes.len(), 6, "every quote still found:\n{once}");
    for quote in &chapter.quotes {
        assert_eq!(quote.shown, want, "the source shows the value:\n{once}");
    }
    let page = Page::new(Path::new("ch01.md"), &once);
    let labels = Labels::collect(std::slice::from_ref(&page));
    let rendered = render(&page, Some(&chapter), &labels, Path::new("/nonexistent"), Path::new("ch01.md"), None);
    let html = to_html(&rendered.markdown);
    assert_eq!(shown_values(&html), vec![want; 6], "the page shows the value in every place:\n{html}");
    assert!(html.contains("<td><span class=\"tangle-value\""), "the table cell holds the value:\n{html}");
    assert!(!html.contains("href=\"javascript"), "{html}");
    assert_eq!(html.matches("<a href=").count(), 1, "only the chapter's own link:\n{html}");
    assert_eq!(html.matches("<em>").count(), 1, "only the chapter's own emphasis:\n{html}");
}

#[test]
fn the_red_team_values_round_trip() {
    for text in ["x](javascript:alert(1)) [y", "{a}", "a | b", "*bold* _it_", "<b>&amp;</b>", "`code`", "$x$", "\\"] {
        round_trip(text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn hostile_values_round_trip_through_accept_and_the_page(text in hostile()) {
        round_trip(&text);
    }
}
