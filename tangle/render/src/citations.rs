//! Citations from one bibliography file, `book/references.yaml` (hayagriva's YAML format),
//! rendered in one style (Chicago author-date, from the CSL styles that ship inside the
//! `hayagriva` crate).
//!
//! In prose, `[@key]` cites one entry and `[@a; @b]` several; each becomes the style's in-text
//! citation, "(Huang et al. 2019)", linked to the entry in the chapter's reference list. A key
//! the bibliography does not have is an error at `chNN.md:LINE`, and the build fails on it.
//! `{{#bibliography}}` places the chapter's reference list (the entries it cites, in the
//! style's order, each with the anchor `ref-KEY`); a chapter that cites without placing one
//! gets it at its end under "References". Citations in code, in code spans and in program
//! output are text, as everything there is.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use hayagriva::citationberg::{IndependentStyle, Locale, Style};
use hayagriva::{
    BibliographyDriver, BibliographyRequest, BufWriteFormat, CitationItem, CitationRequest, Entry, Library,
};
use regex::Regex;

use super::html::escape_html;
use super::labels::Page;
use tangle_core::config::Layout;
use tangle_core::diagnostic::{Diagnostic, Location};
use tangle_core::markdown::LeafKind;

/// `[@key]` or `[@a; @b]`: a citation group. Keys are letters, digits and `_-:.`.
static CITE_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[(@[A-Za-z0-9_:.\-]*[A-Za-z0-9_](?:\s*;\s*@[A-Za-z0-9_:.\-]*[A-Za-z0-9_])*)\]")
        .expect("a valid regex")
});

/// The book's bibliography and the style it is rendered in.
pub struct Bibliography {
    /// The file, relative to the project root (for messages).
    file: PathBuf,
    library: Library,
    /// The style and its locales, read from hayagriva's archive when a citation is first
    /// rendered: checking that every key exists (what `check` does) needs neither, and reading
    /// them is most of what loading a bibliography costs.
    style: std::sync::OnceLock<(IndependentStyle, Vec<Locale>)>,
    /// The hash of the YAML it was read from: what rendered citations are kept under.
    digest: String,
}

impl Bibliography {
    /// Reads the book's bibliography (`references.yaml` beside `book.toml`, or what
    /// `[preprocessor.tangle] references` names). `Ok(None)` when the book has none; an error
    /// (located in the file) when it cannot be read.
    pub fn load(layout: &Layout) -> Result<Option<Bibliography>, Box<Diagnostic>> {
        let shown_as = &layout.references;
        let Ok(text) = std::fs::read_to_string(layout.abs(shown_as)) else { return Ok(None) };
        Bibliography::parse(&text).map(|b| Some(Bibliography { file: shown_as.clone(), ..b })).map_err(|(line, why)| {
            Box::new(Diagnostic::error(Location::new(shown_as, line), format!("cannot read the bibliography: {why}")))
        })
    }

    /// A bibliography from YAML text; the error is a line and why.
    pub fn parse(yaml: &str) -> Result<Bibliography, (usize, String)> {
        let library =
            hayagriva::io::from_yaml_str(yaml).map_err(|e| (e.location().map_or(1, |l| l.line()), e.to_string()))?;
        let digest = super::cache::Key::new("bibliography").part("yaml", yaml.as_bytes()).hex();
        Ok(Bibliography { file: PathBuf::from("references.yaml"), library, style: std::sync::OnceLock::new(), digest })
    }

    /// Chicago author-date and its locales.
    fn style(&self) -> &(IndependentStyle, Vec<Locale>) {
        self.style.get_or_init(|| {
            let style = match hayagriva::archive::ArchivedStyle::ChicagoAuthorDate.get() {
                Style::Independent(style) => style,
                Style::Dependent(_) => unreachable!("Chicago author-date is an independent style"),
            };
            (style, hayagriva::archive::locales())
        })
    }

    fn get(&self, key: &str) -> Option<&Entry> {
        self.library.get(key)
    }
}

/// What citations do to one page: byte ranges to replace, the reference list (if the page
/// cites anything), and the errors (unknown keys).
#[derive(Default)]
pub struct Cited {
    pub edits: Vec<(Range<usize>, String)>,
    /// The `<ul>` of the entries cited, `None` when nothing is.
    pub list: Option<String>,
    pub errors: Vec<Diagnostic>,
}

/// One citation group found in the prose: where, and its keys.
struct Group {
    span: Range<usize>,
    keys: Vec<String>,
}

/// The citation groups in `page`'s prose (paragraphs, table cells, headings; not code).
fn groups(page: &Page) -> Vec<Group> {
    let mut out = Vec::new();
    let leaves = page
        .doc
        .leaves
        .iter()
        .filter(|l| matches!(l.kind, LeafKind::Paragraph | LeafKind::TableCell | LeafKind::Heading(_)));
    for leaf in leaves {
        for range in page.doc.prose_ranges(leaf) {
            let text = page.doc.text(range.clone());
            for cap in CITE_RE.captures_iter(text) {
                let m = cap.get(0).expect("group 0");
                let keys = cap[1].split(';').map(|k| k.trim().trim_start_matches('@').to_string()).collect();
                out.push(Group { span: range.start + m.start()..range.start + m.end(), keys });
            }
        }
    }
    out.sort_by_key(|g| g.span.start);
    out
}

/// The citations of `page` that name no entry (`file` names it in the errors), without
/// rendering any: what validation needs.
pub fn unknown_keys(page: &Page, bibliography: Option<&Bibliography>, file: &Path) -> Vec<Diagnostic> {
    cite_with(page, bibliography, file, false).errors
}

/// Renders the citations of `page` (`file` names it in errors).
pub fn cite(page: &Page, bibliography: Option<&Bibliography>, file: &Path) -> Cited {
    cite_with(page, bibliography, file, true)
}

fn cite_with(page: &Page, bibliography: Option<&Bibliography>, file: &Path, render: bool) -> Cited {
    let mut cited = Cited::default();
    let found = groups(page);
    if found.is_empty() {
        return cited;
    }
    let error = |span: &Range<usize>, message: String| {
        let (line, column) = page.doc.line_col(span.start);
        Diagnostic::error(Location::new(file, line).with_column(column), message)
    };
    let Some(bib) = bibliography else {
        let first = &found[0];
        cited.errors.push(
            error(&first.span, format!("`[@{}]` cites the bibliography, and the book has none", first.keys[0]))
                .with_help("add a references.yaml beside book.toml with the entry (hayagriva's YAML format)"),
        );
        return cited;
    };
    // Groups whose every key is known go to the style; the others are errors, left as text.
    let mut known: Vec<(&Group, Vec<&Entry>)> = Vec::new();
    for group in &found {
        let missing: Vec<&str> = group.keys.iter().filter(|k| bib.get(k).is_none()).map(String::as_str).collect();
        if missing.is_empty() {
            known.push((group, group.keys.iter().filter_map(|k| bib.get(k)).collect()));
            continue;
        }
        for key in missing {
            let help = match tangle_core::messages::closest(key, bib.library.keys()) {
                Some(near) => format!("did you mean `@{near}`? (or add an entry `{key}:` to {})", bib.file.display()),
                None => format!("add an entry `{key}:` to {}, or correct the key", bib.file.display()),
            };
            cited.errors.push(error(&group.span, format!("`@{key}` is not in the bibliography")).with_help(help));
        }
        let text = escape_html(page.doc.text(group.span.clone()));
        cited.edits.push((group.span.clone(), format!("<span class=\"citation-broken\">{text}</span>")));
    }
    if known.is_empty() || !render {
        return cited;
    }
    let (texts, list) = rendered_citations(bib, &known);
    for ((group, _), text) in known.iter().zip(&texts) {
        let html = format!("<a class=\"citation\" href=\"#ref-{}\">{}</a>", escape_html(&group.keys[0]), text);
        cited.edits.push((group.span.clone(), html));
    }
    cited.list = list;
    cited.edits.sort_by_key(|(span, _)| span.start);
    cited
}

/// Each group's citation as HTML, and the reference list: rendered in the style, or read back
/// as an earlier build rendered them from the same bibliography and the same groups of keys
/// (loading the style and rendering in it is most of what a chapter with citations costs).
fn rendered_citations(bib: &Bibliography, known: &[(&Group, Vec<&Entry>)]) -> (Vec<String>, Option<String>) {
    let store = super::cache::store("citations");
    let mut key = super::cache::Key::new("citations");
    key.part("bibliography", bib.digest.as_bytes());
    known.iter().for_each(|(group, _)| _ = key.part("group", group.keys.join(";").as_bytes()));
    let key = key.hex();
    if let Some(entry) = store.as_ref().and_then(|s| s.get(&key))
        && let Ok(found) = serde_json::from_str(&entry)
    {
        return found;
    }
    let (style, locales) = bib.style();
    let mut driver = BibliographyDriver::new();
    for (_, entries) in known {
        let items = entries.iter().map(|e| CitationItem::with_entry(*e)).collect();
        driver.citation(CitationRequest::from_items(items, style, locales));
    }
    let rendered = driver.finish(BibliographyRequest::new(style, None, locales));
    let mut texts = Vec::new();
    for citation in &rendered.citations {
        let mut text = String::new();
        let _ = citation.citation.write_buf(&mut text, BufWriteFormat::Html);
        texts.push(inert(&text));
    }
    let mut references = None;
    if let Some(list) = rendered.bibliography {
        let mut html = String::from("<ul class=\"tangle-references\">\n");
        for item in list.items {
            let mut text = String::new();
            let _ = item.content.write_buf(&mut text, BufWriteFormat::Html);
            html.push_str(&format!("<li id=\"ref-{}\">{}</li>\n", escape_html(&item.key), inert(&text)));
        }
        html.push_str("</ul>\n");
        references = Some(html);
    }
    let found = (texts, references);
    if let (Some(store), Ok(entry)) = (store, serde_json::to_string(&found)) {
        store.put(&key, &entry);
    }
    found
}

/// Rendered text that Markdown and mdBook leave as it is: `*`, `_`, `[`, `]`, `{`, `$`, `` ` ``
/// and `\` between tags become character references (a title may hold any of them).
fn inert(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            _ => {}
        }
        match c {
            '*' | '_' | '[' | ']' | '{' | '$' | '`' | '\\' | '~' if !in_tag => {
                out.push_str(&format!("&#{};", c as u32))
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = r#"
gpipe:
  type: article
  title: "GPipe: Efficient Training of Giant Neural Networks Using Pipeline Parallelism"
  author: ["Huang, Yanping", "Cheng, Youlong", "Bapna, Ankur", "Firat, Orhan"]
  date: 2019
  parent:
    type: proceedings
    title: Advances in Neural Information Processing Systems 32
zero:
  type: article
  title: "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models"
  author: ["Rajbhandari, Samyam", "Rasley, Jeff", "Ruwase, Olatunji", "He, Yuxiong"]
  date: 2020
  url: https://arxiv.org/abs/1910.02054
"#;

    #[test]
    fn citations_render_in_one_style_with_a_reference_list() {
        let bib = Bibliography::parse(YAML).unwrap();
        let md = "# 6 T\n\nPipelines [@gpipe] and sharding [@zero; @gpipe], not `[@code]`.\n";
        let page = Page::new(Path::new("ch06.md"), md);
        let cited = cite(&page, Some(&bib), Path::new("book/src/ch06.md"));
        assert!(cited.errors.is_empty());
        assert_eq!(cited.edits.len(), 2, "the code span is not a citation");
        let (span, html) = &cited.edits[0];
        assert_eq!(&md[span.clone()], "[@gpipe]");
        assert_eq!(html, "<a class=\"citation\" href=\"#ref-gpipe\">(Huang et al. 2019)</a>");
        assert!(cited.edits[1].1.contains("Rajbhandari et al. 2020; Huang et al. 2019"), "{}", cited.edits[1].1);
        let list = cited.list.unwrap();
        assert!(list.contains("<li id=\"ref-gpipe\">Huang, Yanping"), "{list}");
        assert!(list.find("ref-gpipe").unwrap() < list.find("ref-zero").unwrap(), "sorted by author");
    }

    #[test]
    fn an_unknown_key_is_an_error_at_its_line() {
        let bib = Bibliography::parse(YAML).unwrap();
        let md = "# 6 T\n\nText.\n\nAs shown [@gpipe; @nope].\n";
        let page = Page::new(Path::new("ch06.md"), md);
        let cited = cite(&page, Some(&bib), Path::new("book/src/ch06.md"));
        assert_eq!(cited.errors.len(), 1);
        let d = &cited.errors[0];
        assert!(d.is_error() && d.message.contains("`@nope`"), "{}", d.message);
        assert_eq!(d.location.as_ref().unwrap().line, 5);
        assert!(cited.edits[0].1.contains("citation-broken"));
        assert!(cited.list.is_none());
        // A book without a bibliography: the first citation says so.
        let none = cite(&page, None, Path::new("book/src/ch06.md"));
        assert!(none.errors[0].message.contains("has none"));
    }

    #[test]
    fn a_bibliography_that_is_not_yaml_is_located() {
        let (line, why) = Bibliography::parse("a:\n  type: article\n  title: [unclosed\n").err().unwrap();
        assert!(line >= 3 && !why.is_empty(), "{line}: {why}");
    }
}
