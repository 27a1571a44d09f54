//! The rendered book: an mdBook preprocessor and the `cargo tangle book` driver.
//!
//! mdBook reads `book/src/*.md` and hands every chapter to [`TanglePreprocessor`], which turns
//! tangle's authoring conventions into plain Markdown and HTML that mdBook's HTML renderer can show:
//!
//! - `output` blocks become preformatted program output, styled apart from code;
//! - `// @save` / `// @test` marker lines disappear, test cells fold into a `<details>`;
//! - `<!-- tangle: ... -->` directives vanish;
//! - `{{#figure name | caption}}` places `figures/chNN/name.svg` as a numbered figure, and
//!   `{{#ref fig:name}}` / `{{#ref eq:name}}` become numbered links ([`figures`]);
//! - `$$ ... \tag{6.1} $$` and `$...$` become MathML at build time ([`math`]);
//! - blockquotes opening with `> **Note — ...**` become styled asides ([`callouts`]);
//! - chapters take their number from their heading (`# 6 Distributed ...`).
//!
//! Nothing in the output loads a script, stylesheet or font from the network.

pub mod callouts;
pub mod figures;
pub mod math;
pub mod preprocess;
pub mod sequence;
pub mod serve;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use mdbook_preprocessor::book::{Book, BookItem, SectionNumber};
use mdbook_preprocessor::{Preprocessor, PreprocessorContext};

pub use preprocess::{ChapterInput, render_chapter};
pub use serve::serve;

/// The name under which the preprocessor registers (`[preprocessor.tangle]`).
pub const NAME: &str = "tangle";

/// tangle's mdBook preprocessor. `repo_root` is where `figures/` lives.
pub struct TanglePreprocessor {
    repo_root: Option<PathBuf>,
}

impl TanglePreprocessor {
    /// A preprocessor that finds the repository root from the book's root at run time.
    pub fn new() -> Self {
        TanglePreprocessor { repo_root: None }
    }

    /// A preprocessor that reads figures from `repo_root/figures`.
    pub fn with_repo_root(repo_root: impl Into<PathBuf>) -> Self {
        TanglePreprocessor { repo_root: Some(repo_root.into()) }
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
        let repo_root = match &self.repo_root {
            Some(root) => root.clone(),
            None => find_repo_root(&ctx.root),
        };
        let figures_dir = repo_root.join("figures");

        // Pass 1: every chapter's labels, so that a reference may point into another chapter.
        let mut inputs = Vec::new();
        for item in book.iter() {
            if let BookItem::Chapter(ch) = item
                && let Some(path) = &ch.path
            {
                inputs.push(ChapterInput::new(path, &ch.content));
            }
        }
        let labels = figures::Labels::collect(&inputs);
        let mut warnings = Vec::new();
        // A chapter file that SUMMARY.md does not list is checked by tangle but never shown.
        if let Ok(entries) = std::fs::read_dir(ctx.root.join(&ctx.config.book.src)) {
            for path in entries.flatten().map(|e| e.path()) {
                let listed = inputs.iter().any(|i| path.ends_with(&i.path));
                if crate::parse::chapter_name(&path).is_some() && !listed {
                    warnings.push(format!("{} is not listed in SUMMARY.md, so the book leaves it out", path.display()));
                }
            }
        }
        for input in &inputs {
            let placed = figures::placed_figure_names(&input.content);
            for name in figures::drawn_figure_names(&input.content).into_iter().filter(|n| !placed.contains(n)) {
                warnings.push(format!(
                    "{}: figure `{name}` is drawn but never placed (add `{{{{#figure {name} | caption}}}}`)",
                    input.path.display()
                ));
            }
        }

        // Pass 2: render.
        book.for_each_chapter_mut(|ch| {
            let Some(path) = ch.path.clone() else { return };
            let input = ChapterInput::new(&path, &ch.content);
            if let Some(n) = input.number {
                ch.number = Some(SectionNumber::new(vec![n]));
            }
            let rendered = render_chapter(&input, &labels, &figures_dir);
            warnings.extend(rendered.warnings);
            ch.content = rendered.markdown;
        });
        for w in warnings {
            eprintln!("tangle book: warning: {w}");
        }
        Ok(book)
    }

    fn supports_renderer(&self, renderer: &str) -> mdbook_preprocessor::errors::Result<bool> {
        // MathML, inline SVG and <details> are HTML; other renderers get raw Markdown.
        Ok(renderer == "html")
    }
}

/// Walks up from the book's root to the directory that holds `figures/` (the repository root).
/// Falls back to the book root's parent, which is the repository root in this layout.
pub fn find_repo_root(book_root: &Path) -> PathBuf {
    let start = book_root.canonicalize().unwrap_or_else(|_| book_root.to_path_buf());
    for dir in start.ancestors() {
        if dir.join("figures").is_dir() && dir.join("Cargo.toml").is_file() {
            return dir.to_path_buf();
        }
    }
    start.parent().map(Path::to_path_buf).unwrap_or(start)
}

/// Builds the HTML book from `root/book` into `root/book/book` with mdBook's library,
/// running [`TanglePreprocessor`] in-process.
///
/// A `[preprocessor.tangle]` table in `book.toml` (for authors who run `mdbook` themselves) is
/// ignored here, so the preprocessor does not run twice.
pub fn build_book(root: &Path) -> anyhow::Result<()> {
    let book_root = root.join("book");
    let config_file = book_root.join("book.toml");
    if !config_file.is_file() {
        bail!("no book at {}: {} is missing", book_root.display(), config_file.display());
    }
    let mut config = mdbook_driver::config::Config::from_disk(&config_file)
        .with_context(|| format!("reading {}", config_file.display()))?;
    let mut preprocessors: std::collections::BTreeMap<String, serde_json::Value> =
        config.preprocessors().context("reading [preprocessor] tables")?;
    if preprocessors.remove(NAME).is_some() {
        config.set("preprocessor", &preprocessors)?;
    }
    // The HTML must not load anything from the network.
    config.set("output.html.mathjax-support", false)?;
    config.set("output.html.playground.runnable", false)?;

    let mut md = mdbook_driver::MDBook::load_with_config(&book_root, config)
        .with_context(|| format!("loading the book at {}", book_root.display()))?;
    md.with_preprocessor(TanglePreprocessor::with_repo_root(root));
    md.build().context("building the HTML book")?;
    Ok(())
}

/// The standard mdBook preprocessor protocol on stdin/stdout.
///
/// `cargo tangle preprocess supports <renderer>` exits 0 when the renderer is supported and 1
/// otherwise; `cargo tangle preprocess` reads `[context, book]` JSON on stdin and writes the
/// processed book as JSON on stdout.
pub fn run_as_mdbook_preprocessor() -> anyhow::Result<()> {
    let pre = TanglePreprocessor::new();
    let args: Vec<String> = std::env::args().collect();
    if let Some(pos) = args.iter().position(|a| a == "supports") {
        let renderer = args.get(pos + 1).map(String::as_str).unwrap_or("");
        let ok = pre.supports_renderer(renderer)?;
        std::process::exit(if ok { 0 } else { 1 });
    }
    let (ctx, book) = mdbook_preprocessor::parse_input(std::io::stdin().lock())
        .context("reading the [context, book] JSON that mdBook sends on stdin")?;
    if ctx.mdbook_version.split('.').take(2).collect::<Vec<_>>()
        != mdbook_preprocessor::MDBOOK_VERSION.split('.').take(2).collect::<Vec<_>>()
    {
        eprintln!(
            "tangle preprocess: warning: built against mdBook {}, called by mdBook {}",
            mdbook_preprocessor::MDBOOK_VERSION,
            ctx.mdbook_version
        );
    }
    let processed = pre.run(&ctx, book)?;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &processed)?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mdbook_preprocessor::book::Chapter;

    #[test]
    fn preprocessor_protocol_round_trip_numbers_the_chapter() {
        let mut book = Book::new();
        let content = "# 6 Six\n\n```output rtol=0.1\n1 < 2\n```\n\n$$ a \\tag{6.1} $$\n";
        book.push_item(Chapter::new("Six", content.to_string(), "ch06.md", vec![]));
        let ctx = PreprocessorContext::new(
            PathBuf::from("/nonexistent/book"),
            mdbook_preprocessor::config::Config::default(),
            "html".to_string(),
        );
        // What mdBook writes on the preprocessor's stdin.
        let input = serde_json::to_vec(&(&ctx, &book)).unwrap();
        let (ctx, book) = mdbook_preprocessor::parse_input(&input[..]).unwrap();
        let out = TanglePreprocessor::with_repo_root("/nonexistent").run(&ctx, book).unwrap();
        let ch = out.chapters().next().unwrap();
        assert_eq!(ch.number, Some(SectionNumber::new(vec![6])));
        assert!(ch.content.contains("<pre class=\"tangle-output\"><samp>1 &lt; 2</samp></pre>"));
        assert!(ch.content.contains("id=\"eq-6-1\""));
        assert!(TanglePreprocessor::new().supports_renderer("html").unwrap());
        assert!(!TanglePreprocessor::new().supports_renderer("epub").unwrap());
    }

    #[test]
    fn build_book_renders_offline_html_with_numbered_figures_and_equations() {
        let root = std::env::temp_dir().join(format!("tangle-build-book-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("book/src")).unwrap();
        std::fs::create_dir_all(root.join("figures/ch03")).unwrap();
        std::fs::write(
            root.join("book/book.toml"),
            "[book]\ntitle = \"T\"\n\n[preprocessor.tangle]\ncommand = \"false\"\n",
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
        build_book(&root).unwrap();
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

    #[test]
    fn no_network_resources_in_the_book_stylesheet() {
        let css = include_str!("../../../book/theme/tangle.css");
        assert!(!css.contains("http://") && !css.contains("https://") && !css.contains("@import"));
    }
}
