//! The book as mdBook builds it: [`TanglePreprocessor`] (the preprocessor, run in-process by
//! [`build_book`] or by `mdbook-tangle` under a separately installed mdBook), and
//! the book-wide checks that need every chapter at once (chapters SUMMARY.md leaves out,
//! figures drawn but never placed, figures the prose never refers to), and the links at the
//! foot of each chapter to its Markdown and its crate. What the book refuses is found first,
//! by the validation pass `check` shares ([`crate::validate()`]); [`build_book`] fails on it, and
//! on any error mdBook logs while building.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use mdbook_preprocessor::book::{Book, BookItem, SectionNumber};
use mdbook_preprocessor::{Preprocessor, PreprocessorContext};

use super::labels::{self, Labels, Page, Parsed};
use super::{chapter, figures};
use tangle_core::config::{Config, Layout};
use tangle_core::diagnostic::{Diagnostic, Location, Sources, Style};

/// The name under which the preprocessor registers (`[preprocessor.tangle]`).
pub const NAME: &str = "tangle";

/// tangle's mdBook preprocessor, with the book's configuration (read from the `book.toml`
/// mdBook hands it, when it was not given one).
pub struct TanglePreprocessor {
    config: Option<Config>,
    /// Where the warnings of a build also go, rendered plain.
    collected: Option<std::sync::Arc<std::sync::Mutex<Vec<String>>>>,
    /// [`crate::validate()`] already ran over the book (in [`build_book`]): do not repeat it.
    validated: bool,
    /// The renderer's cache folder ([`crate::cache`]), where each chapter's preprocessed
    /// Markdown is kept and read back while its inputs stay the same (in [`build_book`]).
    cache: Option<PathBuf>,
    /// What [`build_book`] learns from the run, and asks of it (in [`build_book`]).
    exchange: Option<std::sync::Arc<std::sync::Mutex<Exchange>>>,
    /// The pages the check parsed, reused rather than parsed again.
    parsed: std::sync::Arc<Parsed>,
}

/// Between [`build_book`] and the preprocessor it runs.
#[derive(Default)]
struct Exchange {
    /// What each chapter became in a complete earlier build: chapters that become the same
    /// again are handed to mdBook empty (their pages are taken from that build).
    previous: Option<Chapters>,
    /// What each chapter became in this run.
    made: Chapters,
    /// The chapters handed to mdBook empty.
    unchanged: Vec<PathBuf>,
    /// The first chapter, whose page is also `index.html`.
    first: Option<PathBuf>,
    /// The text of every cell and output block of each page (`ch07.html`), as the page shows
    /// it, from the chapters as this run parsed them: what the search index files as code.
    code: std::collections::HashMap<String, Vec<String>>,
    /// Files outside the book's folders that the pages were made from (the values files the
    /// chapters quote, relative to the project root): a build is only as current as they are.
    read: Vec<PathBuf>,
}

/// What each chapter of a book became for mdBook (its Markdown and number), by its path
/// under the book's source folder.
pub type Chapters = std::collections::HashMap<PathBuf, (String, Option<u32>)>;

impl TanglePreprocessor {
    /// A preprocessor that reads the configuration from the book mdBook builds.
    pub fn new() -> Self {
        TanglePreprocessor {
            config: None,
            collected: None,
            validated: false,
            cache: None,
            exchange: None,
            parsed: Default::default(),
        }
    }

    /// A preprocessor for `project`'s book, which renders the pages the project parsed.
    pub fn with_project(project: &tangle_core::pipeline::Project) -> Self {
        TanglePreprocessor {
            config: Some(project.config.clone()),
            parsed: std::sync::Arc::new(Parsed::of(project)),
            ..TanglePreprocessor::new()
        }
    }

    /// A preprocessor for the book `config` describes.
    pub fn with_config(config: Config) -> Self {
        TanglePreprocessor { config: Some(config), ..TanglePreprocessor::new() }
    }
}

impl Default for TanglePreprocessor {
    fn default() -> Self {
        Self::new()
    }
}

impl Preprocessor for TanglePreprocessor {
    fn name(&self) -> &str {
        NAME
    }

    fn run(&self, ctx: &PreprocessorContext, mut book: Book) -> mdbook_preprocessor::errors::Result<Book> {
        let config = match &self.config {
            Some(config) => config.clone(),
            None => Config::load(&ctx.root)?,
        };
        let layout = &config.layout;
        if ctx.renderer == "html" {
            require_theme(layout, ctx)?;
        }
        let repo_root = &layout.root;
        let figures_dir = layout.abs(&layout.figures);
        let src_dir = layout.abs(&layout.src);
        // Paths in warnings: relative to the project root, as every other tangle message.
        let src_rel = layout.src.clone();

        let mut inputs: Vec<(PathBuf, String)> = Vec::new();
        for item in book.iter() {
            if let BookItem::Chapter(ch) = item
                && let Some(path) = &ch.path
            {
                inputs.push((path.clone(), ch.content.clone()));
            }
        }
        let _t = tangle_core::timing::Span::new("render: preprocessor");
        let pages: Vec<Page> = inputs.iter().map(|(path, content)| self.parsed.page(path, content)).collect();
        let labels = Labels::collect(&pages);
        let mut warnings = super::validate::unlisted(&src_dir, &src_rel, &inputs, &self.parsed);
        warnings.extend(unreferenced_figures(&pages, &labels, &src_rel, &inputs));
        let bibliography = match super::citations::Bibliography::load(layout) {
            Ok(b) => b,
            Err(d) => {
                warnings.push(*d);
                None
            }
        };
        if !self.validated {
            let paths: Vec<PathBuf> = inputs.iter().map(|(path, _)| path.clone()).collect();
            warnings.extend(super::validate::validate_pages(layout, &paths, &pages, bibliography.as_ref()));
        }
        let repository: Option<String> =
            ctx.config.get("output.html.git-repository-url").ok().flatten().filter(|u: &String| !u.is_empty());

        let slots = self.cache.as_ref().map(|dir| super::cache::Slots::new(dir.join("chapters")));
        let shared = shared_key(&config, &labels);
        let mut rendered = std::collections::HashMap::new();
        let mut code = std::collections::HashMap::new();
        let mut read = Vec::new();
        for ((path, content), page) in inputs.iter().zip(&pages) {
            let file = src_rel.join(path);
            // The check's chapter when it parsed this very text; else read from the page's parse.
            let parsed = match self.parsed.chapter(path, page) {
                Some(chapter) => chapter.cloned().map(Ok),
                None => tangle_core::parse::crate_name(path)
                    .map(|name| tangle_core::parse::read_chapter(&name, &file, page.doc.clone(), config.cells)),
            };
            let parsed_cleanly = !matches!(parsed, Some(Err(_)));
            let chapter = match parsed {
                Some(Ok(chapter)) if !chapter.cells.is_empty() => Some(chapter),
                // Shown as text, with a warning, unless the check before said what is wrong.
                Some(Err(found)) => {
                    if !self.parsed.was_reported(path) {
                        warnings.extend(found.0.into_iter().map(|mut d| {
                            d.severity = tangle_core::diagnostic::Severity::Warning;
                            d
                        }));
                    }
                    None
                }
                _ => None,
            };
            warnings.extend(heavy_calculators(page, &figures_dir, &file));
            if let Some(chapter) = &chapter {
                warnings.extend(unplaced_figures(page, chapter, &file));
                code.insert(page.html.clone(), searchable_code(chapter));
                read.extend(chapter.directives.values.iter().map(|(file, _)| file.clone()));
            }
            // A chapter whose inputs are those of an earlier build that warned of nothing is
            // read back as that build made it.
            let key = shared
                .clone()
                .part("file", file.as_os_str().as_encoded_bytes())
                .part("content", content.as_bytes())
                .part("figures", &figure_files(&figures_dir, &page.figures))
                .part("values", &recorded_values(repo_root, chapter.as_ref()))
                .hex();
            let slot = path.to_string_lossy().replace(['/', '\\'], "%");
            let cached = slots.as_ref().filter(|_| parsed_cleanly).and_then(|slots| slots.get(&slot, &key));
            let mut markdown = match cached {
                Some(markdown) => markdown,
                None => {
                    let out = tangle_core::timing::phase("render: chapter", || {
                        chapter::render(page, chapter.as_ref(), &labels, &figures_dir, &file, bibliography.as_ref())
                    });
                    if let Some(slots) = slots.as_ref().filter(|_| parsed_cleanly && out.warnings.is_empty()) {
                        slots.put(&slot, &key, &out.markdown);
                    }
                    warnings.extend(out.warnings);
                    out.markdown
                }
            };
            // The chapter's source and its generated crate, for a notebook chapter: a chapter of
            // examples has no crate to point at, and its page keeps what the book's own theme
            // links to (mdBook's edit link, say) without a paragraph added to every page.
            if let (Some(repository), Some(chapter)) = (&repository, &chapter)
                && chapter.mode == tangle_core::model::CellMode::Notebook
            {
                markdown.push_str(&source_links(repository, &file, &layout.code.join(&chapter.name)));
            }
            rendered.insert(path.clone(), (markdown, page.number));
        }
        let mut exchange = self.exchange.as_ref().map(|e| e.lock().expect("not poisoned"));
        if let Some(exchange) = exchange.as_mut() {
            exchange.made = rendered.clone();
            exchange.first = inputs.first().map(|(path, _)| path.clone());
            exchange.code = code;
            exchange.read = read;
        }
        book.for_each_chapter_mut(|ch| {
            let Some(path) = &ch.path else { return };
            if let Some((markdown, number)) = rendered.remove(path) {
                if let Some(n) = number {
                    ch.number = Some(SectionNumber::new(vec![n]));
                }
                let previous = exchange.as_ref().and_then(|e| e.previous.as_ref()?.get(path));
                ch.content = match previous == Some(&(markdown.clone(), number)) {
                    true => {
                        exchange.as_mut().expect("a previous build").unchanged.push(path.clone());
                        String::new()
                    }
                    false => markdown,
                };
            }
        });
        drop(exchange);
        let sources = Sources::new(repo_root);
        let style = Style::for_stderr();
        let errors = warnings.iter().filter(|d| d.is_error()).count();
        for w in warnings {
            eprintln!("{}\n", w.render(&sources, style));
            if let Some(collected) = &self.collected {
                collected.lock().expect("not poisoned").push(w.render(&sources, Style::Plain));
            }
        }
        if errors > 0 {
            return Err(anyhow::anyhow!("{errors} error(s) in the chapters (see above)"));
        }
        Ok(book)
    }

    fn supports_renderer(&self, _renderer: &str) -> mdbook_preprocessor::errors::Result<bool> {
        // Every renderer gets the processed book: one that is given the raw chapters would
        // publish `{{#value}}` and `{{#figure}}` as text (MathML, SVG and <details> are HTML
        // in Markdown, which Markdown renderers pass through).
        Ok(true)
    }
}

/// The part of every chapter's cache key that the chapters share: the book's settings, its
/// labels (a chapter's references may point into any other) and its bibliography.
fn shared_key(config: &Config, labels: &Labels) -> super::cache::Key {
    let layout = &config.layout;
    let mut key = super::cache::Key::new("chapter");
    key.part("cells", format!("{:?}", config.cells).as_bytes())
        .part("figures", layout.abs(&layout.figures).as_os_str().as_encoded_bytes())
        .part("labels", labels.digest().as_bytes())
        .part("references", &std::fs::read(layout.abs(&layout.references)).unwrap_or_default());
    key
}

/// The files a chapter's figures and calculators are read from (`figures/<stem>/`), names and
/// bytes: a figure accepted anew changes the chapter's page.
fn figure_files(figures_dir: &Path, stem: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let dir = figures_dir.join(stem);
    let Ok(entries) = std::fs::read_dir(&dir) else { return out };
    let mut names: Vec<_> = entries.filter_map(Result::ok).map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        let bytes = std::fs::read(dir.join(&name)).unwrap_or_default();
        out.extend((name.len() as u64).to_le_bytes());
        out.extend(name.as_encoded_bytes());
        out.extend((bytes.len() as u64).to_le_bytes());
        out.extend(bytes);
    }
    out
}

/// The files of values a chapter declares were recorded outside the test command
/// (`<!-- tangle: values FILE -->`), names and bytes: their values' tooltips say so.
fn recorded_values(root: &Path, chapter: Option<&tangle_core::model::Chapter>) -> Vec<u8> {
    let mut out = Vec::new();
    for (file, _) in chapter.map_or(&[][..], |c| &c.directives.values[..]) {
        let bytes = std::fs::read(root.join(file)).unwrap_or_default();
        out.extend((file.as_os_str().len() as u64).to_le_bytes());
        out.extend(file.as_os_str().as_encoded_bytes());
        out.extend((bytes.len() as u64).to_le_bytes());
        out.extend(bytes);
    }
    out
}

/// The HTML needs tangle's stylesheet and script, which a stock `mdbook build` loads only when
/// `book.toml` lists them (`tangle book` adds them itself).
fn require_theme(layout: &Layout, ctx: &PreprocessorContext) -> anyhow::Result<()> {
    let (css, js) = super::theme::entries(layout);
    let mut lacking = Vec::new();
    for (key, entry) in [("additional-css", css), ("additional-js", js)] {
        let listed: Vec<PathBuf> = ctx.config.get(&format!("output.html.{key}")).ok().flatten().unwrap_or_default();
        if let Some(entry) = super::theme::missing(&listed, &entry) {
            lacking.push(format!("{key} = [\"{entry}\"]"));
        }
    }
    anyhow::ensure!(
        lacking.is_empty(),
        "{}: [output.html] lacks {}: without tangle's stylesheet and script, outputs show as plain \
         paragraphs and calculators do nothing (add the line, or run `{}`)",
        layout.book_toml().display(),
        lacking.join(" and "),
        tangle_core::messages::command("init"),
    );
    Ok(())
}

/// The foot of a notebook chapter's page: links to its Markdown source and to the crate made
/// from it (`krate`, its folder relative to the project root). The links name the repository's
/// default branch as `HEAD`, which GitHub and GitLab resolve, whatever it is called (`main`,
/// `master`).
fn source_links(repository: &str, file: &Path, krate: &Path) -> String {
    let repository = repository.trim_end_matches('/');
    let slashes = |p: &Path| p.to_string_lossy().replace('\\', "/");
    let (file, krate) = (slashes(file), slashes(krate));
    format!(
        "\n\n<p class=\"tangle-source\">This chapter's source: <a href=\"{repository}/blob/HEAD/{file}\"><code>{file}</code></a>. \
         Its code as a crate: <a href=\"{repository}/tree/HEAD/{krate}\"><code>{krate}</code></a> \
         (library cells in <code>src/lib.rs</code>, run cells in <code>src/main.rs</code>).</p>\n"
    )
}

/// Figures no sentence of the book refers to (by `{{#ref fig:...}}` or "Figure N.M"): a
/// figure the text never points at is one the reader is left to find the reason for.
fn unreferenced_figures(
    pages: &[Page],
    labels: &Labels,
    src_rel: &Path,
    inputs: &[(PathBuf, String)],
) -> Vec<Diagnostic> {
    let referenced: std::collections::HashSet<String> = pages
        .iter()
        .flat_map(|p| super::refs::referenced(p, labels))
        .filter(|l| l.kind == labels::RefKind::Figure)
        .map(|l| format!("{}#{}", l.stem, l.id))
        .collect();
    let mut out = Vec::new();
    for (page, (path, _)) in pages.iter().zip(inputs) {
        // A live calculator is numbered, and referred to, as a figure is.
        let placed = page.doc.directives.iter().filter(|d| labels::FIGURE_DIRECTIVES.contains(&d.name.as_str()));
        for d in placed {
            let name = labels::figure_name(page.doc.text(d.args.clone()));
            let Some(label) = labels.figure(&page.stem, name) else { continue };
            if referenced.contains(&format!("{}#{}", label.stem, label.id)) {
                continue;
            }
            let (line, _) = page.doc.line_col(d.span.start);
            let what = if d.name == "widget" { "calculator " } else { "" };
            out.push(
                Diagnostic::warning(
                    Location::new(src_rel.join(path), line),
                    format!("Figure {} ({what}`{name}`) is never referred to from the prose", label.number),
                )
                .with_help(format!(
                    "say where the text discusses it: \"Figure {}\" or `{{{{#ref fig:{name}}}}}`",
                    label.number
                )),
            );
        }
    }
    out
}

/// Above this many bytes, a calculator's data (which its page carries whole, and so does
/// `print.html`) is worth a warning: a reader downloads it before the page is usable, on a
/// phone too. The largest of Chapter 7's eleven is about a quarter of it.
const HEAVY_CALCULATOR: u64 = 1 << 20;

/// Calculators placed on `page` whose data file is larger than [`HEAVY_CALCULATOR`].
fn heavy_calculators(page: &Page, figures_dir: &Path, file: &Path) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for d in page.doc.directives_named("widget") {
        let name = labels::figure_name(page.doc.text(d.args.clone()));
        let data = figures_dir.join(&page.figures).join(format!("{name}.widget.json"));
        let Ok(size) = std::fs::metadata(&data).map(|m| m.len()) else { continue };
        if size > HEAVY_CALCULATOR {
            let (line, _) = page.doc.line_col(d.span.start);
            out.push(
                Diagnostic::warning(
                    Location::new(file, line),
                    format!(
                        "calculator `{name}` carries {:.1} MB of data, which its page and print.html hold whole",
                        size as f64 / 1e6
                    ),
                )
                .with_help("offer fewer values for its inputs, or split it into calculators of fewer inputs each"),
            );
        }
    }
    out
}

/// Figures a chapter's cells draw, and calculators they compute, that no `{{#figure}}` or
/// `{{#widget}}` places.
fn unplaced_figures(page: &Page, chapter: &tangle_core::model::Chapter, file: &Path) -> Vec<Diagnostic> {
    let placed = |directive: &str| -> Vec<&str> {
        page.doc.directives_named(directive).map(|d| labels::figure_name(page.doc.text(d.args.clone()))).collect()
    };
    let (figures, calculators) = (placed("figure"), placed("widget"));
    let mut out = Vec::new();
    for cell in &chapter.cells {
        for name in figures::drawn_figures(&cell.code) {
            if !figures.contains(&name.as_str()) {
                out.push(Diagnostic::warning(
                    Location::new(file, cell.code_line),
                    format!("figure `{name}` is drawn but never placed (add `{{{{#figure {name} | caption}}}}`)"),
                ));
            }
        }
        for name in figures::computed_calculators(&cell.code) {
            if !calculators.contains(&name.as_str()) {
                out.push(Diagnostic::warning(
                    Location::new(file, cell.code_line),
                    format!(
                        "calculator `{name}` is computed but never placed (add `{{{{#widget {name} | caption}}}}`)"
                    ),
                ));
            }
        }
    }
    out
}

/// The diagnostics that stopped [`build_book`] before mdBook ran (already printed).
#[derive(Debug)]
pub struct Refused(pub Vec<Diagnostic>);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let errors = self.0.iter().filter(|d| d.is_error()).count();
        write!(f, "{errors} error(s) in the chapters (see above); the book was not built")
    }
}

impl std::error::Error for Refused {}

/// How [`build_book`] builds.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// Write the site here instead of the book's `build-dir` (`book/book`).
    pub dest: Option<PathBuf>,
    /// The pages a check parsed ([`Parsed::of`] the checked project), which the build renders
    /// instead of parsing the files again; empty, the build parses what it reads.
    pub parsed: std::sync::Arc<Parsed>,
}

/// A complete earlier build: its site folder and what each chapter became. See
/// [`build_changed_pages`].
#[derive(Debug, Clone)]
pub struct Previous {
    pub site: PathBuf,
    pub chapters: Chapters,
}

/// What [`build_book`] made.
#[derive(Debug)]
pub struct Rendered {
    /// The folder holding `index.html`.
    pub site: PathBuf,
    /// The warnings the chapters drew, as printed (plain text).
    pub warnings: Vec<String>,
    /// What each chapter became for mdBook (empty when the build was skipped as unchanged).
    pub chapters: Chapters,
}

/// Builds the HTML book with mdBook's library, running [`TanglePreprocessor`] in-process.
pub fn build_book(book: &Config, options: &RenderOptions) -> anyhow::Result<Rendered> {
    build(book, options, None)
}

/// Builds only the pages whose chapters changed since `previous`, a complete earlier build of
/// the same `SUMMARY.md`, `book.toml` and theme, and takes the others from it: what `serve`
/// shows first after a save. The print page and the search index are `previous`'s, until a
/// complete build replaces them.
pub fn build_changed_pages(book: &Config, options: &RenderOptions, previous: &Previous) -> anyhow::Result<Rendered> {
    build(book, options, Some(previous))
}

fn build(book: &Config, options: &RenderOptions, since: Option<&Previous>) -> anyhow::Result<Rendered> {
    let layout = &book.layout;
    let book_root = layout.abs(&layout.book);
    let config_file = book_root.join("book.toml");
    if !config_file.is_file() {
        bail!("no book at {}: {} is missing", book_root.display(), config_file.display());
    }
    // Nothing the book is made from has been written since the last build, which warned of
    // nothing, and the built book is as that build left it: it stands.
    let stamps = (options.dest.is_none() && since.is_none()).then(|| Stamps::new(layout));
    if let Some(site) = stamps.as_ref().and_then(Stamps::unchanged) {
        return Ok(Rendered { site, warnings: Vec::new(), chapters: Chapters::new() });
    }
    let collected = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    // What the book refuses, found by the same pass as `check`'s, before mdBook (which would
    // create a missing chapter as an empty page) sees the book.
    // (The changed pages are built before the complete build that follows, which refuses.)
    let problems = match since {
        Some(_) => Vec::new(),
        None => {
            tangle_core::timing::phase("render: validate", || super::validate::validate_with(book, &options.parsed))
        }
    };
    if !problems.is_empty() {
        let sources = Sources::new(&layout.root);
        for d in &problems {
            eprintln!("{}\n", d.render(&sources, Style::for_stderr()));
        }
        return Err(Refused(problems).into());
    }
    let mut config = mdbook_driver::config::Config::from_disk(&config_file)
        .with_context(|| format!("reading {}", config_file.display()))?;
    // Our preprocessor runs first, before mdBook's `links` (which expands `{{#include}}`), so
    // that program output is never expanded. A `[preprocessor.tangle]` table (for authors who
    // run `mdbook` themselves) is replaced by the in-process preprocessor below.
    let mut preprocessors: std::collections::BTreeMap<String, serde_json::Value> =
        config.preprocessors().context("reading [preprocessor] tables")?;
    preprocessors.insert(NAME.into(), serde_json::json!({ "command": "tangle preprocess", "before": ["links"] }));
    config.set("preprocessor", &preprocessors)?;
    // The theme's stylesheet and script, written where they are missing or out of date (the
    // command line refuses first where nothing may be written), and listed if book.toml does
    // not list them (a stock `mdbook build` needs the lines; this build does not).
    super::theme::write(layout)?;
    let (css, js) = super::theme::entries(layout);
    for (key, entry) in [("output.html.additional-css", css), ("output.html.additional-js", js)] {
        let mut listed: Vec<PathBuf> = config.get(key).ok().flatten().unwrap_or_default();
        if super::theme::missing(&listed, &entry).is_some() {
            listed.insert(0, PathBuf::from(entry));
            config.set(key, &listed)?;
        }
    }
    // Equations are MathML made here: MathJax (loaded from the network) would redo them. The
    // playground's Run buttons are the book's choice (`[output.html.playground]`), as in a
    // stock `mdbook build`.
    config.set("output.html.mathjax-support", false)?;
    // A chapter SUMMARY.md lists must exist (the validation above says which does not).
    config.set("build.create-missing", false)?;
    if let Some(dest) = &options.dest {
        config.set("build.build-dir", dest.to_string_lossy().as_ref())?;
    }
    // The changed pages keep the earlier build's search index: mdBook indexes no chapter (its
    // search stays on, so that the pages are the same).
    if since.is_some() {
        config.set("output.html.search.chapter", serde_json::json!({ "": { "enable": false } }))?;
    }

    super::cache::keep_in(super::cache::dir(layout));
    let exchange = std::sync::Arc::new(std::sync::Mutex::new(Exchange {
        previous: since.map(|p| p.chapters.clone()),
        ..Exchange::default()
    }));
    let mut md = mdbook_driver::MDBook::load_with_config(&book_root, config)
        .with_context(|| format!("loading the book at {}", book_root.display()))?;
    md.with_preprocessor(TanglePreprocessor {
        config: Some(book.clone()),
        collected: Some(collected.clone()),
        validated: true,
        cache: Some(super::cache::dir(layout)),
        exchange: Some(exchange.clone()),
        parsed: options.parsed.clone(),
    });
    // mdBook logs what it cannot do (an include it cannot read) and carries on; any error it
    // logs fails the build.
    let logged = super::mdbook_log::Errors::default();
    {
        let _scope = logged.watch();
        tangle_core::timing::phase("render: mdbook build", || md.build()).context("building the HTML book")?;
    }
    if let Some(first) = logged.first() {
        bail!("mdBook reported {} error(s) while building the book, the first: {first}", logged.count());
    }
    let site = md.build_dir_for("html");
    let exchange = std::mem::take(&mut *exchange.lock().expect("not poisoned"));
    if let Some(previous) = since {
        tangle_core::timing::phase("render: unchanged pages", || {
            take_unchanged_pages(&previous.site, &site, &exchange)
        })?;
        let warnings = collected.lock().expect("not poisoned").clone();
        return Ok(Rendered { site, warnings, chapters: exchange.made });
    }
    // Prose before code in search results (the cells of the chapters the preprocessor parsed;
    // a chapter that does not parse keeps its code in the prose, and the build said why).
    let _t = tangle_core::timing::Span::new("render: search");
    let cache = super::cache::Slots::new(super::cache::dir(layout));
    if let Err(why) = super::search::separate_code(&site, &exchange.code, Some(&cache)) {
        eprintln!("warning: the search index keeps code and prose together: {why:#}");
    }
    drop(_t);
    let warnings = collected.lock().expect("not poisoned").clone();
    if let Some(stamps) = stamps.filter(|_| warnings.is_empty()) {
        stamps.record(&site, &exchange.read);
    }
    Ok(Rendered { site, warnings, chapters: exchange.made })
}

/// Completes a build of the changed pages ([`build_changed_pages`]) in `site` with what the
/// earlier build in `previous` made: the pages of the chapters handed to mdBook empty (and
/// `index.html`, when it is the first one's), the print page and the search index.
fn take_unchanged_pages(previous: &Path, site: &Path, exchange: &Exchange) -> anyhow::Result<()> {
    let mut pages: Vec<PathBuf> = exchange.unchanged.iter().map(|p| p.with_extension("html")).collect();
    if exchange.first.as_ref().is_some_and(|first| exchange.unchanged.contains(first)) {
        pages.push(PathBuf::from("index.html"));
    }
    pages.push(PathBuf::from("print.html"));
    for entry in std::fs::read_dir(previous)?.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("searchindex") {
            pages.push(PathBuf::from(name));
        }
    }
    for page in pages {
        let from = previous.join(&page);
        if from.is_file() {
            std::fs::copy(&from, site.join(&page)).with_context(|| format!("copying {}", from.display()))?;
        }
    }
    Ok(())
}

/// What a build of the author's book (`book/book`) was made from and what it wrote, as
/// stamps ([`super::cache::stamp`]): the book's folder (chapters, `SUMMARY.md`, `book.toml`,
/// theme, files the chapters include), the folders `include-dirs` lists, the figures, the
/// bibliography, mdBook's `MDBOOK_*` settings from the environment, and the values files
/// the chapters quote, wherever they are (recorded with the build that read them).
struct Stamps {
    layout: Layout,
    slots: super::cache::Slots,
    inputs: String,
    /// Some input was written just before the build began (see [`super::cache::Stamp::is_racy`]).
    racy: bool,
    /// When the build began: a file read by the build and written since may not be in it.
    started: std::time::SystemTime,
}

impl Stamps {
    fn new(layout: &Layout) -> Stamps {
        let _t = tangle_core::timing::Span::new("render: stamps");
        // The bibliography may live outside the book's folder (`references = "..."`).
        let roots: Vec<PathBuf> = std::iter::once(&layout.book)
            .chain(&layout.include_dirs)
            .chain([&layout.figures, &layout.references])
            .map(|p| layout.abs(p))
            .collect();
        let skip = [layout.abs(&layout.build), layout.abs(&layout.target)];
        let stamp = super::cache::stamp("inputs", &roots, &skip);
        let mut env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k.starts_with("MDBOOK_")).collect();
        env.sort();
        let inputs = super::cache::Key::new("inputs")
            .part("files", stamp.hex.as_bytes())
            .part("environment", format!("{env:?}").as_bytes())
            .hex();
        let started = std::time::SystemTime::now();
        let racy = stamp.is_racy(started);
        let slots = super::cache::Slots::new(super::cache::dir(layout));
        Stamps { layout: layout.clone(), slots, inputs, racy, started }
    }

    fn output(site: &Path) -> String {
        super::cache::stamp("output", &[site.to_path_buf()], &[]).hex
    }

    /// The files outside the book's folders that a build read (`read`, relative to the
    /// project root), as a stamp.
    fn read_stamp(&self, read: &[PathBuf]) -> super::cache::Stamp {
        let files: Vec<PathBuf> = read.iter().map(|f| self.layout.abs(f)).collect();
        super::cache::stamp("read", &files, &[])
    }

    /// The built book, when it is as the last build left it and made from the same inputs
    /// (the files under the book's folders, and those elsewhere that the build read).
    fn unchanged(&self) -> Option<PathBuf> {
        let recorded = self.slots.get("book-stamp", &self.inputs)?;
        let mut lines = recorded.lines();
        let (site, output, read_stamp) = (lines.next()?, lines.next()?, lines.next()?);
        let read: Vec<PathBuf> = lines.map(PathBuf::from).collect();
        let site = self.layout.abs(site);
        let current = site.join("index.html").is_file()
            && Stamps::output(&site) == output
            && self.read_stamp(&read).hex == read_stamp;
        current.then_some(site)
    }

    fn record(&self, site: &Path, read: &[PathBuf]) {
        let read_stamp = self.read_stamp(read);
        // Written since the build began (or just before): the build may have read the old text.
        if self.racy || read_stamp.is_racy(self.started) {
            return;
        }
        let shown = site.strip_prefix(&self.layout.root).unwrap_or(site);
        let mut recorded = format!("{}\n{}\n{}", shown.display(), Stamps::output(site), read_stamp.hex);
        for file in read {
            recorded.push('\n');
            recorded.push_str(&file.to_string_lossy());
        }
        self.slots.put("book-stamp", &self.inputs, &recorded);
    }
}

/// The text of every cell and output block of `chapter`, as its page shows it.
fn searchable_code(chapter: &tangle_core::model::Chapter) -> Vec<String> {
    let mut snippets = Vec::new();
    for cell in &chapter.cells {
        snippets.push(super::cells::shown_code(cell).to_string());
        if let Some(output) = &cell.output {
            snippets.push(tangle_core::compare::visible(&output.text));
        }
    }
    snippets
}

#[cfg(test)]
mod tests {
    use super::*;
    use mdbook_preprocessor::book::Chapter;

    #[test]
    fn a_notebook_chapter_links_its_source_and_its_crate() {
        let notebook = source_links("https://x.org/b/", Path::new("src/ch01.md"), Path::new("code/ch01"));
        assert!(notebook.contains("href=\"https://x.org/b/blob/HEAD/src/ch01.md\""), "{notebook}");
        assert!(notebook.contains("href=\"https://x.org/b/tree/HEAD/code/ch01\""), "{notebook}");
        assert!(notebook.trim_end().ends_with("</p>"), "{notebook}");
    }

    #[test]
    fn preprocessor_protocol_round_trip_numbers_the_chapter() {
        let mut book = Book::new();
        let content = "# 6 Six\n\n```output rtol=0.1\n1 < 2\n```\n\n$$ a \\tag{6.1} $$\n";
        book.push_item(Chapter::new("Six", content.to_string(), "ch06.md", vec![]));
        let mut mdbook_config = mdbook_preprocessor::config::Config::default();
        let ctx = PreprocessorContext::new(PathBuf::from("/nonexistent/book"), mdbook_config.clone(), "html".into());
        let config = Config::parse(Path::new("/nonexistent"), Path::new("book"), "").unwrap();
        // A book.toml without tangle's stylesheet and script: refused, saying which lines to add.
        let err = TanglePreprocessor::with_config(config.clone()).run(&ctx, book.clone()).unwrap_err().to_string();
        assert!(err.contains("additional-css = [\"theme/tangle.css\"]") && err.contains("tangle.js"), "{err}");
        mdbook_config.set("output.html.additional-css", ["theme/tangle.css"]).unwrap();
        mdbook_config.set("output.html.additional-js", ["theme/tangle.js"]).unwrap();
        let ctx = PreprocessorContext::new(PathBuf::from("/nonexistent/book"), mdbook_config, "html".into());
        // What mdBook writes on the preprocessor's stdin.
        let input = serde_json::to_vec(&(&ctx, &book)).unwrap();
        let (ctx, book) = mdbook_preprocessor::parse_input(&input[..]).unwrap();
        let out = TanglePreprocessor::with_config(config).run(&ctx, book).unwrap();
        let ch = out.chapters().next().unwrap();
        assert_eq!(ch.number, Some(SectionNumber::new(vec![6])));
        assert!(ch.content.contains("<pre class=\"tangle-output\"><samp>1 &lt; 2</samp></pre>"));
        assert!(ch.content.contains("id=\"eq-6-1\""));
        assert!(TanglePreprocessor::new().supports_renderer("html").unwrap());
        assert!(TanglePreprocessor::new().supports_renderer("linkcheck").unwrap());
    }

    #[test]
    fn a_figure_drawn_but_never_placed_is_a_warning_at_its_cell() {
        let text = "# 3 Three\n\n```rust\nfigure::svg(\"placed\", 4, 4, |_| Ok(()))?;\n```\n\n\
                    {{#figure placed | Shown.}}\n\n```rust\n// figure::svg(\"commented\", 4, 4, |_| Ok(()))?;\n\
                    let s = \"figure::svg(\\\"quoted\\\", 4, 4, f)\";\nfigure::svg(\"lost\", 4, 4, |_| Ok(()))?;\n```\n";
        let file = Path::new("book/src/ch03.md");
        let chapter = tangle_core::parse::parse_chapter("ch03", file, text.as_bytes().to_vec()).unwrap();
        let page = Page::new(Path::new("ch03.md"), text);
        let found = unplaced_figures(&page, &chapter, file);
        let said: Vec<String> = found
            .iter()
            .map(|d| {
                let at = d.location.as_ref().expect("a warning at a cell");
                format!("{}:{} {}", at.file.display(), at.line, d.message)
            })
            .collect();
        assert_eq!(
            said,
            ["book/src/ch03.md:10 figure `lost` is drawn but never placed (add `{{#figure lost | caption}}`)"],
            "{found:?}"
        );
        assert!(found.iter().all(|d| !d.is_error()));
    }

    #[test]
    fn a_calculator_computed_but_never_placed_or_never_referred_to_is_a_warning() {
        let text = "# 3 Three\n\nAs {{#ref fig:shown}} shows.\n\n```rust\nWidget::new(\"shown\").write()?;\n\
                    Widget::new(\"quiet\").write()?;\nWidget::new(\"lost\").write()?;\n```\n\n\
                    {{#widget shown | Shown.}}\n\n{{#widget quiet | Never named in the text.}}\n";
        let file = Path::new("book/src/ch03.md");
        let chapter = tangle_core::parse::parse_chapter("ch03", file, text.as_bytes().to_vec()).unwrap();
        let page = Page::new(Path::new("ch03.md"), text);
        let unplaced: Vec<String> = unplaced_figures(&page, &chapter, file).iter().map(|d| d.message.clone()).collect();
        assert_eq!(unplaced, ["calculator `lost` is computed but never placed (add `{{#widget lost | caption}}`)"]);
        let pages = [page];
        let labels = Labels::collect(&pages);
        let inputs = [(PathBuf::from("ch03.md"), text.to_string())];
        let found = unreferenced_figures(&pages, &labels, Path::new("book/src"), &inputs);
        let said: Vec<String> = found.iter().map(|d| d.message.clone()).collect();
        assert_eq!(said, ["Figure 3.2 (calculator `quiet`) is never referred to from the prose"]);
        assert_eq!(found[0].location.as_ref().map(|l| l.line), Some(13));
    }

    #[test]
    fn a_calculator_whose_data_would_weigh_its_page_down_is_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ch03")).unwrap();
        std::fs::write(dir.path().join("ch03/light.widget.json"), "{}").unwrap();
        std::fs::write(dir.path().join("ch03/heavy.widget.json"), vec![b' '; 1_500_000]).unwrap();
        let text = "# 3 Three\n\n{{#widget light | Light.}}\n\n{{#widget heavy | Heavy.}}\n";
        let page = Page::new(Path::new("ch03.md"), text);
        let found = heavy_calculators(&page, dir.path(), Path::new("book/src/ch03.md"));
        let said: Vec<String> = found.iter().map(|d| d.message.clone()).collect();
        assert_eq!(said, ["calculator `heavy` carries 1.5 MB of data, which its page and print.html hold whole"]);
        assert_eq!(found[0].location.as_ref().map(|l| l.line), Some(5));
        assert!(!found[0].is_error());
    }

    #[test]
    fn build_book_renders_offline_html_with_numbered_figures_and_equations() {
        let root = std::env::temp_dir().join(format!("tangle-build-book-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("book/src")).unwrap();
        std::fs::create_dir_all(root.join("figures/ch03")).unwrap();
        std::fs::write(
            root.join("book/book.toml"),
            "[book]\ntitle = \"T\"\n\n[preprocessor.tangle]\nroot = \"..\"\ncommand = \"false\"\n",
        )
        .unwrap();
        std::fs::write(root.join("book/src/SUMMARY.md"), "# Summary\n\n- [Three](ch03.md)\n").unwrap();
        std::fs::write(
            root.join("book/src/ch03.md"),
            "# 3 Three\n\nSee Figure 3.1 and equation 3.1.\n\n$$ E = mc^2 \\tag{3.1} $$\n\n{{#figure bars | Bars.}}\n",
        )
        .unwrap();
        std::fs::write(
            root.join("figures/ch03/bars.svg"),
            "<svg width=\"4\" height=\"4\" xmlns=\"http://www.w3.org/2000/svg\"><rect/></svg>\n",
        )
        .unwrap();
        // The [preprocessor.tangle] table names a command that would fail: build_book must not run it.
        build_book(&Config::load(&root).unwrap(), &RenderOptions::default()).unwrap();
        let html = std::fs::read_to_string(root.join("book/book/ch03.html")).unwrap();
        assert!(html.contains("Figure 3.1.</span>"), "numbered caption");
        assert!(html.contains("href=\"#fig-bars\""), "linked mention");
        assert!(html.contains("id=\"eq-3-1\"") && html.contains("<math"), "MathML equation");
        for page in std::fs::read_dir(root.join("book/book")).unwrap() {
            let path = page.unwrap().path();
            if path.extension().is_some_and(|e| e == "html") {
                let text = std::fs::read_to_string(&path).unwrap();
                for bad in ["src=\"http://", "src=\"https://", "href=\"http://", "href=\"https://"] {
                    assert!(!text.contains(bad), "{} loads {bad}...", path.display());
                }
            }
        }
        std::fs::remove_dir_all(&root).ok();
    }

    /// A book in `root/book` whose one chapter, `ch01.md`, reads `chapter`.
    fn one_chapter_book(root: &Path, chapter: &str) {
        std::fs::create_dir_all(root.join("book/src")).unwrap();
        std::fs::write(root.join("book/book.toml"), "[book]\ntitle = \"T\"\n\n[preprocessor.tangle]\nroot = \"..\"\n")
            .unwrap();
        std::fs::write(root.join("book/src/SUMMARY.md"), "# Summary\n\n- [One](ch01.md)\n").unwrap();
        std::fs::write(root.join("book/src/ch01.md"), chapter).unwrap();
    }

    /// Builds the book at `root` into `book/book`.
    fn build_at(root: &Path) {
        build_book(&Config::load(root).unwrap(), &RenderOptions::default()).unwrap();
    }

    /// When `root/book/book/ch01.html` was last written.
    fn page_written(root: &Path) -> std::time::SystemTime {
        std::fs::metadata(root.join("book/book/ch01.html")).unwrap().modified().unwrap()
    }

    /// Builds the book twice, waiting out the racy window between (a stamp taken just after a
    /// write is not recorded; the first build writes the theme), so that the second is the
    /// book's last build, left standing by the next: when its page was written.
    fn settled(root: &Path) -> std::time::SystemTime {
        build_at(root);
        std::thread::sleep(std::time::Duration::from_millis(200));
        build_at(root);
        page_written(root)
    }

    #[test]
    fn a_book_nothing_was_written_to_since_its_last_build_is_left_standing() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        one_chapter_book(root, "# 1 One\n\nFirst words, $x^2$.\n");
        let page = root.join("book/book/ch01.html");
        let written = settled(root);
        build_at(root);
        assert_eq!(page_written(root), written, "rebuilt with nothing changed");
        // An edit, of the same length: built again.
        std::fs::write(root.join("book/src/ch01.md"), "# 1 One\n\nOther words, $x^3$.\n").unwrap();
        build_at(root);
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(html.contains("Other words") && html.contains("<msup>"), "{html}");
        // The built book changed by hand: built again.
        settled(root);
        std::fs::write(&page, "spoilt").unwrap();
        build_at(root);
        assert!(std::fs::read_to_string(&page).unwrap().contains("Other words"));
    }

    #[test]
    fn a_values_file_outside_the_book_is_an_input_of_the_standing_build() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        let chapter = "# 1 One\n\n<!-- tangle: values bench/v.toml -->\n\n```rust\nprintln!(\"hi\");\n```\n\n\
                       Measured: {{#value speed 12}}.\n";
        one_chapter_book(root, chapter);
        std::fs::create_dir_all(root.join("bench")).unwrap();
        std::fs::write(root.join("bench/v.toml"), "[values]\nspeed = \"12\"\n").unwrap();
        let written = settled(root);
        std::thread::sleep(std::time::Duration::from_millis(200));
        build_at(root);
        assert_eq!(page_written(root), written, "rebuilt with nothing changed");
        // Only the values file changes (a benchmark recorded again): the book is built again.
        std::fs::write(root.join("bench/v.toml"), "[values]\nspeed = \"13\"\n").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        build_at(root);
        assert_ne!(page_written(root), written, "the values file was not an input");
    }

    #[test]
    fn an_error_mdbook_logs_fails_the_build() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        std::fs::create_dir_all(root.join("book/src")).unwrap();
        std::fs::write(root.join("book/book.toml"), "[book]\ntitle = \"T\"\n\n[preprocessor.tangle]\nroot = \"..\"\n")
            .unwrap();
        std::fs::write(root.join("book/src/SUMMARY.md"), "# Summary\n\n- [One](ch01.md)\n").unwrap();
        // Inside the book and present, so the validation lets it by; mdBook cannot read it.
        std::fs::write(root.join("book/src/ch01.md"), "# 1 One\n\n```text\n{{#include bytes.txt}}\n```\n").unwrap();
        std::fs::write(root.join("book/src/bytes.txt"), b"\xff\xfe not UTF-8\n").unwrap();
        let err = build_book(&Config::load(root).unwrap(), &RenderOptions::default()).unwrap_err();
        assert!(err.to_string().contains("mdBook reported 1 error(s) while building the book"), "{err:#}");
        // Readable, the same include builds.
        std::fs::write(root.join("book/src/bytes.txt"), "now UTF-8\n").unwrap();
        build_book(&Config::load(root).unwrap(), &RenderOptions::default()).unwrap();
    }
}
