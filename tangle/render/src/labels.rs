//! Numbers and anchors for everything a sentence may point to: figures (numbered per chapter
//! in the order of their `{{#figure}}` and `{{#widget}}` directives: a live calculator is a
//! figure whose picture the reader can change, so it shares their numbers and `fig:` references), display equations (by `\tag{6.1}`, or
//! numbered when only `\label{eq:name}` is given) and numbered sections (`## 6.2 ...`).
//! Collected for the whole book first, so a reference may point into another chapter.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use regex::Regex;

use tangle_core::markdown::{Document, InlineKind};
use tangle_core::model::Chapter;
use tangle_core::pipeline::Project;

/// What a label names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefKind {
    Figure,
    Equation,
    /// A numbered heading (`## 6.2 Activations ...`), linked by its mdBook anchor.
    Section,
    /// A numbered chapter (`# 6 Distributed ...`), linked as its page.
    Chapter,
}

impl RefKind {
    pub fn word(self) -> &'static str {
        match self {
            RefKind::Figure => "Figure",
            RefKind::Equation => "Equation",
            RefKind::Section => "Section",
            RefKind::Chapter => "Chapter",
        }
    }
}

/// A numbered, linkable thing.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub kind: RefKind,
    /// "6.1"
    pub number: String,
    /// The HTML id (`fig-activation-totals`, `eq-6-1`).
    pub id: String,
    /// The page it is on (`ch06.html`).
    pub page: String,
    pub stem: String,
}

/// A chapter as the renderer sees it: where it is, its number, its parsed Markdown.
pub struct Page {
    /// File stem (`ch06`, `chapter-two`): how references from other pages name it
    /// (`fig:ch06/NAME`).
    pub stem: String,
    /// The folder of its figures and calculators under `figures/`: its crate's name
    /// (`chapter-two.md` → `chapter_two`), where its cells draw them.
    pub figures: String,
    /// The page it becomes, relative to the book root (`ch06.html`).
    pub html: String,
    /// The number in its first level-one heading (`# 6 Distributed ...` → 6).
    pub number: Option<u32>,
    pub doc: Arc<Document>,
}

impl Page {
    /// `path` is relative to the book's source folder (`ch06.md`); `content` is parsed.
    pub fn new(path: &std::path::Path, content: &str) -> Self {
        Page::of(path, Arc::new(Document::parse(content)))
    }

    /// The page at `path` (relative to the book's source folder) made from a parsed document.
    pub fn of(path: &std::path::Path, doc: Arc<Document>) -> Self {
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let html = path.with_extension("html").to_string_lossy().replace('\\', "/");
        let number = chapter_number(&doc);
        // Where its cells draw: the folder named after the chapter's crate, as the runtime names it.
        let figures = tangle_core::parse::crate_name(path).unwrap_or_else(|| stem.clone());
        Page { stem, html, number, doc, figures }
    }
}

/// The pages a check already parsed ([`tangle_core::model::Book::documents`]), by path under
/// the book's source folder, each with the chapter read from it when it has cells: what the
/// renderer works from, so that `tangle book` parses every file once. A page whose text is
/// not the one parsed (saved again since, or a book without a check) is parsed when asked for.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    pages: HashMap<PathBuf, (Arc<Document>, Option<Arc<Chapter>>)>,
    /// Pages (under the source folder) whose mistakes the check that came first reported
    /// already: the renderer, which reads them again, does not warn of them a second time.
    reported: std::collections::HashSet<PathBuf>,
}

impl Parsed {
    /// What `project` parsed when it was loaded.
    pub fn of(project: &Project) -> Parsed {
        let src = &project.layout().src;
        let pages = project
            .book
            .documents
            .iter()
            .filter_map(|(path, doc)| {
                let rel = path.strip_prefix(src).ok()?.to_path_buf();
                Some((rel, (doc.clone(), project.book.chapter_at(path).cloned())))
            })
            .collect();
        Parsed { pages, reported: Default::default() }
    }

    /// Nothing parsed, but the mistakes of the pages at `files` (from the project root) were
    /// reported by a check that could not load the book.
    pub fn reported(layout: &tangle_core::config::Layout, files: impl IntoIterator<Item = PathBuf>) -> Parsed {
        let reported =
            files.into_iter().filter_map(|f| Some(f.strip_prefix(&layout.src).ok()?.to_path_buf())).collect();
        Parsed { pages: HashMap::new(), reported }
    }

    /// Whether the check reported the mistakes of the page at `path` (under the source folder).
    pub fn was_reported(&self, path: &Path) -> bool {
        self.reported.contains(path)
    }

    /// The page at `path` (relative to the source folder) whose text is `content`.
    pub fn page(&self, path: &Path, content: &str) -> Page {
        match self.pages.get(path) {
            Some((doc, _)) if doc.source() == content => Page::of(path, doc.clone()),
            _ => Page::new(path, content),
        }
    }

    /// The chapter read from `page` (at `path`), when the check parsed that very document:
    /// `Some(None)` for a page without cells, `None` when the page is not the one parsed.
    pub fn chapter(&self, path: &Path, page: &Page) -> Option<Option<&Chapter>> {
        let (doc, chapter) = self.pages.get(path)?;
        Arc::ptr_eq(doc, &page.doc).then_some(chapter.as_deref())
    }

    /// The chapters (files with cells) the check found, by path under the source folder.
    pub fn chapters(&self) -> impl Iterator<Item = (&Path, &Chapter)> {
        self.pages.iter().filter_map(|(path, (_, chapter))| Some((path.as_path(), chapter.as_deref()?)))
    }

    /// Whether nothing was parsed before (the renderer reads the book itself).
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }
}

/// The number in a chapter's first level-one heading: `# 6 Distributed and Frontier Training`
/// (or `# 6. ...`, `# Chapter 6: ...`) gives 6.
pub fn chapter_number(doc: &Document) -> Option<u32> {
    let title = &doc.headings.iter().find(|h| h.level == 1)?.text;
    let title = title.strip_prefix("Chapter ").unwrap_or(title);
    let digits: String = title.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// Every label of the book.
#[derive(Debug, Default)]
pub struct Labels {
    by_name: HashMap<(RefKind, String, String), Label>,
    by_number: HashMap<(RefKind, String), Label>,
}

static TAG_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\\tag\*?\{([^}]*)\}").expect("a valid regex"));
static LABEL_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\\label\{(?:eq:)?([^}]*)\}").expect("a valid regex"));

/// What a display equation says about itself.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EquationMeta {
    pub tag: Option<String>,
    pub label: Option<String>,
    /// The LaTeX without `\tag` and `\label`, which we typeset ourselves.
    pub body: String,
}

impl EquationMeta {
    pub fn parse(latex: &str) -> Self {
        let tag = TAG_RE.captures(latex).map(|c| c[1].trim().to_string());
        let label = LABEL_RE.captures(latex).map(|c| c[1].trim().to_string());
        let body = LABEL_RE.replace_all(&TAG_RE.replace_all(latex, ""), "").trim().to_string();
        EquationMeta { tag, label, body }
    }
}

/// mdBook's anchor for a heading's text (lower case; alphanumerics, `_` and `-` kept; spaces
/// become `-`; everything else dropped).
pub fn heading_id(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

/// The id of a figure's `<figure>` element.
pub fn figure_id(name: &str) -> String {
    format!("fig-{name}")
}

/// The id of an equation with this number (`6.1` → `eq-6-1`).
pub fn equation_id(number: &str) -> String {
    format!("eq-{}", number.replace('.', "-"))
}

/// The directives that place a numbered figure: a drawn one, or a live calculator.
pub const FIGURE_DIRECTIVES: &[&str] = &["figure", "widget"];

/// The figure name a `{{#figure NAME | caption}}` (or `{{#widget NAME | caption}}`) directive's
/// arguments give.
pub fn figure_name(args: &str) -> &str {
    args.split('|').next().unwrap_or("").trim()
}

impl Labels {
    /// Numbers the figures, equations and sections of every page.
    pub fn collect(pages: &[Page]) -> Self {
        let mut labels = Labels::default();
        for page in pages {
            let prefix = page.number.map(|n| format!("{n}.")).unwrap_or_default();
            let label =
                |kind, number: String, id| Label { kind, number, id, page: page.html.clone(), stem: page.stem.clone() };
            if let Some(n) = page.number {
                labels.insert(label(RefKind::Chapter, n.to_string(), String::new()), None);
            }
            let figures = page.doc.directives.iter().filter(|d| FIGURE_DIRECTIVES.contains(&d.name.as_str()));
            for (i, d) in figures.enumerate() {
                let name = figure_name(page.doc.text(d.args.clone()));
                labels.insert(label(RefKind::Figure, format!("{prefix}{}", i + 1), figure_id(name)), Some(name));
            }
            for h in page.doc.headings.iter().filter(|h| h.level >= 2) {
                let number: String = h.text.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
                let number = number.trim_end_matches('.');
                if number.contains('.') && h.text[number.len()..].starts_with(' ') {
                    labels.insert(label(RefKind::Section, number.to_string(), heading_id(&h.text)), None);
                }
            }
            let mut n_eq = 0;
            for inline in &page.doc.inlines {
                let InlineKind::DisplayMath(latex) = &inline.kind else { continue };
                let meta = EquationMeta::parse(latex);
                let number = match (&meta.tag, &meta.label) {
                    (Some(tag), _) => tag.clone(),
                    (None, Some(_)) => format!("{prefix}{}", n_eq + 1),
                    (None, None) => continue,
                };
                n_eq += 1;
                labels.insert(label(RefKind::Equation, number.clone(), equation_id(&number)), meta.label.as_deref());
            }
        }
        labels
    }

    fn insert(&mut self, label: Label, name: Option<&str>) {
        if let Some(name) = name {
            self.by_name.insert((label.kind, label.stem.clone(), name.to_string()), label.clone());
        }
        self.by_name.insert((label.kind, label.stem.clone(), label.number.clone()), label.clone());
        self.by_number.insert((label.kind, label.number.clone()), label);
    }

    /// The figure `name` of chapter `stem`.
    /// Every label, in a stable order, as text: what a chapter's rendering depends on of the
    /// rest of the book (its references may point anywhere), for the renderer's cache key.
    pub fn digest(&self) -> String {
        let mut entries: Vec<String> = self.by_name.iter().map(|(k, v)| format!("{k:?}={v:?}")).collect();
        entries.extend(self.by_number.iter().map(|(k, v)| format!("{k:?}#{v:?}")));
        entries.sort();
        entries.join("\n")
    }

    pub fn figure(&self, stem: &str, name: &str) -> Option<&Label> {
        self.get(RefKind::Figure, stem, name)
    }

    /// A label by kind and chapter, by name or by number.
    pub fn get(&self, kind: RefKind, stem: &str, name: &str) -> Option<&Label> {
        self.by_name.get(&(kind, stem.to_string(), name.to_string()))
    }

    /// A label by its printed number ("6.1").
    pub fn by_number(&self, kind: RefKind, number: &str) -> Option<&Label> {
        self.by_number.get(&(kind, number.to_string()))
    }

    /// The href of `label` seen from the page `from`.
    /// Relative to `from`'s own folder, as a browser resolves it on that page (and as mdBook's
    /// print page rewrites a chapter's links, with the chapter's folder in front).
    pub fn href(label: &Label, from: &Page) -> String {
        let page = || relative_page(&from.html, &label.page);
        if label.id.is_empty() {
            page()
        } else if label.stem == from.stem {
            format!("#{}", label.id)
        } else {
            format!("{}#{}", page(), label.id)
        }
    }
}

/// `to` (a page's path from the book's root, `/` between folders) as a link on page `from`:
/// `part3/ch17.html` links to `part3/ch16.html` as `ch16.html`, and to `ch08.html` as
/// `../ch08.html`.
fn relative_page(from: &str, to: &str) -> String {
    let folder = Path::new(from).parent().unwrap_or(Path::new(""));
    let link = tangle_core::config::relative_to(Path::new(to), folder, Path::new(""));
    tangle_core::fsutil::slashed(&link)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const CH06: &str = "# 6 Distributed\n\n## 6.1 The `memory` ledger, first\n\n{{#figure activation-totals | Totals.}}\n\nText.\n\n{{#figure ledger | Ledger.}}\n\n$$\nA = b \\label{eq:act} \\tag{6.2}\n$$\n\n{{#widget meter | Live.}}\n\n{{#figure after | After.}}\n";

    /// A link works from the page it is on, in whatever folder of the book that page is.
    #[test]
    fn links_to_pages_are_relative_to_the_page_they_are_on() {
        for (from, to, href) in [
            ("ch01.html", "ch06.html", "ch06.html"),
            ("ch01.html", "part/ch02.html", "part/ch02.html"),
            ("part/ch02.html", "ch01.html", "../ch01.html"),
            ("part3/ch17.html", "part3/ch16.html", "ch16.html"),
            ("part2/deep/ch14.html", "part3/ch16.html", "../../part3/ch16.html"),
            ("part2/deep/ch14.html", "part2/ch09.html", "../ch09.html"),
        ] {
            assert_eq!(relative_page(from, to), href, "{from} -> {to}");
        }
        let pages = vec![Page::new(Path::new("part/ch07.md"), "# 7 P\n"), Page::new(Path::new("ch06.md"), CH06)];
        let labels = Labels::collect(&pages);
        let figure = labels.figure("ch06", "ledger").expect("the figure's label");
        assert_eq!(Labels::href(figure, &pages[0]), "../ch06.html#fig-ledger");
        assert_eq!(Labels::href(figure, &pages[1]), "#fig-ledger");
    }

    #[test]
    fn figures_equations_and_sections_are_numbered() {
        let pages = vec![Page::new(Path::new("ch06.md"), CH06), Page::new(Path::new("ch07.md"), "# 7 P\n")];
        let labels = Labels::collect(&pages);
        assert_eq!(labels.figure("ch06", "activation-totals").unwrap().number, "6.1");
        assert_eq!(labels.figure("ch06", "ledger").unwrap().number, "6.2");
        // A widget is numbered with the figures, in document order.
        assert_eq!(labels.figure("ch06", "meter").unwrap().number, "6.3");
        assert_eq!(labels.figure("ch06", "meter").unwrap().id, "fig-meter");
        assert_eq!(labels.figure("ch06", "after").unwrap().number, "6.4");
        assert!(labels.figure("ch07", "ledger").is_none());
        assert_eq!(labels.get(RefKind::Equation, "ch06", "act").unwrap().id, "eq-6-2");
        assert_eq!(labels.by_number(RefKind::Section, "6.1").unwrap().id, "61-the-memory-ledger-first");
        assert_eq!(pages[0].number, Some(6));
    }

    #[test]
    fn chapter_number_comes_from_the_first_heading_outside_code() {
        let n = |md: &str| chapter_number(&Document::parse(md));
        assert_eq!(n("```\n# 9 not this\n```\n# 6 Distributed and Frontier Training\n"), Some(6));
        assert_eq!(n("# Chapter 7: Parallelism\n"), Some(7));
        assert_eq!(n("# How this book is built\n"), None);
    }
}
