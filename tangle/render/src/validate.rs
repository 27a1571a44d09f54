//! One validation pass over what the book refuses, so that `check` fails on everything `book`
//! would: [`validate`] is called by the command line's `check` (and is there for any command
//! that promises a clean `book`), by [`crate::build_book`] before mdBook runs, and, over the
//! pages it is handed, by the preprocessor under a separately run mdBook. It finds:
//!
//! - `SUMMARY.md` entries whose file does not exist (mdBook would create an empty page), and a
//!   `SUMMARY.md` mdBook's parser refuses;
//! - `[@key]` citations of keys the bibliography does not have, with the nearest key;
//! - `{{#ref fig:NAME}}` naming no figure or equation of the book, and a plain "Figure 6.9" of
//!   the page's own chapter that does not exist;
//! - a directive whose name is a near miss of tangle's or mdBook's, and one never closed;
//! - `{{#figure NAME}}` naming a figure no cell draws, no diagram fence is named and no SVG
//!   under the figures folder holds;
//! - `{{#widget NAME}}` naming a calculator no cell writes and no data file holds;
//! - a figure or calculator placed twice on a page (its element ids would clash), or inside a
//!   paragraph of other text instead of one of its own;
//! - mdBook's `{{#include}}`, `{{#rustdoc_include}}` and `{{#playground}}` reading a file outside
//!   the book's folder (the folder of `book.toml`) and the folders `include-dirs` lists, or a
//!   file that does not exist, in the chapter or in a file it includes (mdBook expands those
//!   too), and an include that reaches a file already being included (it would never end);
//! - a link under the chapters' folder that points nowhere (an editor's mark on a chapter being
//!   edited), which mdBook would fail to copy into the book;
//! - no `SUMMARY.md`, which mdBook needs to know the pages;
//! - a `book.toml` that mdBook 0.5 does not accept (a key it removed, such as the `multilingual`
//!   of books made with mdBook 0.4), at the key's line.
//!
//! Every finding is an error at `FILE:LINE` with a fix.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use super::citations::{self, Bibliography};
use super::labels::{self, Labels, Page, Parsed};
use super::refs;
use super::{diagrams, figures};
use tangle_core::config::{Config, Layout};
use tangle_core::diagnostic::{Diagnostic, Location};
use tangle_core::fsutil::resolved;
use tangle_core::markdown::LeafKind;
use tangle_core::messages::closest;
use tangle_core::pipeline::Project;

/// Everything the book would refuse, as errors (an empty list: `book` accepts it).
pub fn validate(project: &Project) -> Vec<Diagnostic> {
    validate_with(&project.config, &Parsed::of(project))
}

/// Chapters (files with cells) that `SUMMARY.md` neither lists nor has a listed page include:
/// checked, and never shown. Warnings, which `check` prints beside [`validate`]'s refusals, as
/// `book` does; nothing when `SUMMARY.md` is missing or does not parse ([`validate`] refuses that).
pub fn unlisted_chapters(project: &Project) -> Vec<Diagnostic> {
    let layout = &project.config.layout;
    let src = layout.abs(&layout.src);
    let Ok(summary) = std::fs::read_to_string(src.join("SUMMARY.md")) else { return Vec::new() };
    let Ok(entries) = tangle_core::parse::summary::entries(&summary) else { return Vec::new() };
    let listed: Vec<(PathBuf, String)> = entries
        .into_iter()
        // As mdBook reads the entry: `./chapter_1.md` (what `mdbook init` writes) is `chapter_1.md`.
        .map(|(_, page)| tangle_core::config::normalize(&page))
        .filter_map(|page| Some((page.clone(), std::fs::read_to_string(src.join(&page)).ok()?)))
        .collect();
    unlisted(&src, &layout.src, &listed, &Parsed::of(project))
}

/// Chapter files (files with cells) that SUMMARY.md does not list, and no page it lists
/// includes: checked by tangle, never shown.
pub(crate) fn unlisted(
    src_dir: &Path,
    src_rel: &Path,
    listed: &[(PathBuf, String)],
    parsed: &Parsed,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // The book's pages: those SUMMARY.md lists, and the fragments they include.
    let mut shown = included_pages(src_dir, listed);
    shown.extend(listed.iter().map(|(path, _)| path.clone()));
    let unlisted = |rel: &Path| {
        Diagnostic::warning(
            Location::new(src_rel.join(rel), 1),
            "this chapter is not listed in SUMMARY.md, so the book leaves it out",
        )
    };
    // The check parsed every file of the source folder: its chapters are the files with cells.
    if !parsed.is_empty() {
        let mut found: Vec<&Path> = parsed.chapters().map(|(path, _)| path).filter(|p| !shown.contains(*p)).collect();
        found.sort();
        return found.into_iter().map(unlisted).collect();
    }
    for entry in walkdir::WalkDir::new(src_dir).sort_by_file_name().into_iter().filter_map(Result::ok) {
        let path = entry.path();
        let Ok(rel) = path.strip_prefix(src_dir) else { continue };
        if path.extension().is_none_or(|e| e != "md") || rel == Path::new("SUMMARY.md") {
            continue;
        }
        if shown.contains(rel) {
            continue;
        }
        let has_cells = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| tangle_core::parse::parse_chapter("x", rel, text.into_bytes()).ok())
            .is_some_and(|c| !c.cells.is_empty());
        if has_cells {
            out.push(unlisted(rel));
        }
    }
    out
}

/// A key that mdBook 0.4 read (or its `init` wrote) and mdBook 0.5 refuses, with the whole
/// `book.toml` it stands in: what `check` says of it and what `tangle init` does with it.
pub struct RemovedKey {
    /// The table it stands in: `book`, `output.html`.
    pub table: &'static str,
    pub key: &'static str,
    /// The key that took its place, with the same value, if any.
    pub renamed_to: Option<&'static str>,
    /// Why it went, or what replaces it.
    pub why: &'static str,
}

/// The keys mdBook 0.5 removed that books made with mdBook 0.4 hold.
pub const MDBOOK_05_REMOVED: [RemovedKey; 4] = [
    RemovedKey { table: "book", key: "multilingual", renamed_to: None, why: "it never did anything" },
    RemovedKey {
        table: "output.html",
        key: "curly-quotes",
        renamed_to: Some("smart-punctuation"),
        why: "now on by default",
    },
    RemovedKey {
        table: "output.html",
        key: "copy-fonts",
        renamed_to: None,
        why: "mdBook 0.5 always copies its fonts; override `theme/fonts/fonts.css` to change them",
    },
    RemovedKey {
        table: "output.html",
        key: "google-analytics",
        renamed_to: None,
        why: "mdBook 0.5 dropped it: add the tracking script to the theme to keep it",
    },
];

/// Whether mdBook 0.5 reads `text` as a `book.toml`; if not, its error.
pub fn mdbook_reads(text: &str) -> anyhow::Result<()> {
    text.parse::<mdbook_driver::config::Config>().map(drop)
}

/// What mdBook 0.5, which builds the book, finds wrong with `book.toml`, if anything: a key it
/// no longer accepts, at its line, with what to do instead.
fn mdbook_config(layout: &Layout) -> Option<Diagnostic> {
    let file = layout.book_toml();
    let text = std::fs::read_to_string(layout.abs(&file)).ok()?;
    let error = mdbook_reads(&text).err()?;
    let (message, span) = match error.chain().find_map(|e| e.downcast_ref::<toml::de::Error>()) {
        Some(e) => (e.message().trim().to_string(), e.span()),
        None => (format!("{error:#}"), None),
    };
    let at = match &span {
        Some(span) => {
            let (line, column) = tangle_core::markdown::LineIndex::new(&text).line_col(&text, span.start);
            Location::new(&file, line).with_column(column)
        }
        None => Location::new(&file, 1),
    };
    let key = span.as_ref().map_or("", |s| text.get(s.clone()).unwrap_or("").trim());
    let help = match MDBOOK_05_REMOVED.iter().find(|removed| removed.key == key) {
        Some(RemovedKey { key, renamed_to: Some(new), why, .. }) => {
            format!("mdBook 0.5 renamed `{key}` to `{new}` ({why}): rename the key")
        }
        Some(RemovedKey { key, why, .. }) => format!("mdBook 0.5 removed `{key}` ({why}): delete the line"),
        None => "tangle builds the book with mdBook 0.5: correct the key as its documentation describes it".into(),
    };
    Some(Diagnostic::error(at, format!("mdBook cannot read book.toml: {message}")).with_help(format!(
        "{help} (`{}` upgrades the keys mdBook 0.5 removed)",
        tangle_core::messages::command("init")
    )))
}

/// [`validate`] for a book's configuration, reusing the pages a check parsed where their text
/// is what the files hold (with no pages, it reads `SUMMARY.md` and the chapters it lists).
pub(crate) fn validate_with(config: &Config, parsed: &Parsed) -> Vec<Diagnostic> {
    let layout = &config.layout;
    let src = layout.abs(&layout.src);
    let mut out: Vec<Diagnostic> = mdbook_config(layout).into_iter().collect();
    out.extend(dangling_links(layout));
    let summary_file = layout.src.join("SUMMARY.md");
    let summary = match std::fs::read(src.join("SUMMARY.md")) {
        // mdBook learns the pages and their order from SUMMARY.md alone, and refuses a book
        // without one (only `mdbook init` writes it).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            out.push(
                Diagnostic::new(
                    tangle_core::diagnostic::Severity::Error,
                    None,
                    format!(
                        "the book has no {}: mdBook builds the pages it lists, in its order",
                        summary_file.display()
                    ),
                )
                .with_help("create it with a line per chapter, such as `- [Chapter 1](ch01.md)` under `# Summary`"),
            );
            return out;
        }
        Err(e) => {
            out.push(Diagnostic::error(Location::new(summary_file, 1), format!("cannot read SUMMARY.md: {e}")));
            return out;
        }
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                out.push(not_utf8(&summary_file, e.as_bytes(), e.utf8_error()));
                return out;
            }
        },
    };
    let mut inputs: Vec<(PathBuf, String)> = Vec::new();
    let entries = match tangle_core::parse::summary::entries(&summary) {
        Ok(entries) => entries,
        Err(e) => {
            let message = format!("{e:#}");
            let line = duplicate_entry_line(&summary, &message).unwrap_or(1);
            out.push(Diagnostic::error(Location::new(layout.src.join("SUMMARY.md"), line), message));
            return out;
        }
    };
    if let Some(d) = listed_twice(&layout.src.join("SUMMARY.md"), &entries) {
        out.push(d);
        return out;
    }
    for (line, path) in entries {
        match std::fs::read(src.join(&path)).map(String::from_utf8) {
            Ok(Ok(text)) => inputs.push((path, text)),
            Ok(Err(e)) => out.push(not_utf8(&layout.src.join(&path), e.as_bytes(), e.utf8_error())),
            Err(_) => out.push(
                Diagnostic::error(
                    Location::new(layout.src.join("SUMMARY.md"), line),
                    format!(
                        "SUMMARY.md lists `{}`, and {} does not exist",
                        path.display(),
                        layout.src.join(&path).display()
                    ),
                )
                .with_help("create the chapter, correct the path, or write a draft chapter as `[Title]()`"),
            ),
        }
    }
    let bibliography = match Bibliography::load(layout) {
        Ok(b) => b,
        Err(d) => {
            out.push(*d);
            None
        }
    };
    let pages: Vec<Page> = inputs.iter().map(|(path, text)| parsed.page(path, text)).collect();
    let paths: Vec<PathBuf> = inputs.iter().map(|(path, _)| path.clone()).collect();
    out.extend(validate_pages(layout, &paths, &pages, bibliography.as_ref()));
    // References point across the book: resolved against every page's labels at once.
    let labels = Labels::collect(&pages);
    for (path, page) in paths.iter().zip(&pages) {
        out.extend(broken_references(page, &labels, &layout.src.join(path)));
    }
    out
}

/// Links under the chapters' folder that point nowhere. mdBook copies every file of that folder
/// into the book, and fails on one it cannot read, naming only the path; the likeliest is an
/// editor's mark on a chapter being edited (Emacs's `.#ch02.md`), gone once it is saved.
fn dangling_links(layout: &Layout) -> Vec<Diagnostic> {
    let src = layout.abs(&layout.src);
    let walk = walkdir::WalkDir::new(&src).sort_by_file_name().into_iter().filter_map(Result::ok);
    walk.filter(|e| e.path_is_symlink() && !e.path().exists())
        .map(|e| {
            let rel = layout.src.join(e.path().strip_prefix(&src).unwrap_or(e.path()));
            let target = std::fs::read_link(e.path()).map(|t| t.display().to_string()).unwrap_or_default();
            Diagnostic::new(
                tangle_core::diagnostic::Severity::Error,
                None,
                format!(
                    "{} is a link to `{target}`, which does not exist: mdBook copies every file of {} into the \
                     book, and cannot copy this one",
                    rel.display(),
                    layout.src.display()
                ),
            )
            .with_help(
                "remove the link, or point it at a file; an editor's mark on a chapter not yet saved \
                 (Emacs's `.#NAME.md`) goes away when the chapter is saved",
            )
        })
        .collect()
}

/// `{{#ref fig:NAME}}` naming no figure or equation, and a plain "Figure 6.9" of this chapter
/// that does not exist: the page would show a broken reference, and the prose has gone stale.
fn broken_references(page: &Page, labels: &Labels, file: &Path) -> Vec<Diagnostic> {
    let at = |offset: usize| {
        let (line, column) = page.doc.line_col(offset);
        Location::new(file, line).with_column(column)
    };
    let mut out = Vec::new();
    for d in page.doc.directives_named("ref") {
        if let Err((_, why)) = refs::resolve(page.doc.text(d.args.clone()), page, labels) {
            out.push(Diagnostic::error(at(d.span.start), why).with_help("name a figure or equation the book has"));
        }
    }
    let prose = page.doc.leaves.iter().filter(|l| matches!(l.kind, LeafKind::Paragraph | LeafKind::TableCell));
    for range in prose.flat_map(|leaf| page.doc.prose_ranges(leaf)) {
        for mention in refs::mentions(page.doc.text(range.clone()), range.start, page, labels) {
            if let refs::Mention::Stale(offset, why) = mention {
                out.push(Diagnostic::error(at(offset), why));
            }
        }
    }
    out
}

/// mdBook reads its pages as UTF-8 and stops at the first that is not: the error at the line
/// of the first bad byte.
fn not_utf8(file: &Path, bytes: &[u8], error: std::str::Utf8Error) -> Diagnostic {
    let at = error.valid_up_to();
    let line = bytes[..at].iter().filter(|b| **b == b'\n').count() + 1;
    Diagnostic::error(
        Location::new(file, line),
        format!("{} is not UTF-8 text (byte {at} is 0x{:02x}), and mdBook reads only UTF-8", file.display(), bytes[at]),
    )
    .with_help("save the file as UTF-8 (e.g. `iconv -f LATIN1 -t UTF-8`)")
}

/// The checks of one page at a time, for `pages` at `paths` (relative to the source folder).
pub(crate) fn validate_pages(
    layout: &Layout,
    paths: &[PathBuf],
    pages: &[Page],
    bibliography: Option<&Bibliography>,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (path, page) in paths.iter().zip(pages) {
        let file = layout.src.join(path);
        out.extend(citations::unknown_keys(page, bibliography, &file));
        out.extend(unknown_figures(layout, page, &file));
        out.extend(calculators(layout, page, &file));
        out.extend(includes(layout, path, page, &file));
        out.extend(misspelled_directives(page, &file));
    }
    out
}

/// `{{#valeu …}}` (a directive whose name is near one of tangle's or mdBook's but is none of
/// them) and `{{#value …` never closed: neither would be expanded, and the page would show
/// the raw text. A name near none of them is left alone: another preprocessor may own it.
fn misspelled_directives(page: &Page, file: &Path) -> Vec<Diagnostic> {
    use tangle_core::markdown::{MDBOOK_DIRECTIVES, TANGLE_DIRECTIVES};
    let known = || TANGLE_DIRECTIVES.iter().chain(MDBOOK_DIRECTIVES).copied();
    let doc = &page.doc;
    let at = |offset: usize| {
        let (line, column) = doc.line_col(offset);
        Location::new(file, line).with_column(column)
    };
    let mut out = Vec::new();
    for d in &doc.directives {
        if known().any(|k| k == d.name) {
            continue;
        }
        if let Some(near) = closest(&d.name, known()) {
            out.push(
                Diagnostic::error(at(d.span.start), format!("unknown directive `{{{{#{}}}}}`", d.name))
                    .with_help(format!("did you mean `{{{{#{near}}}}}`? As it is, the page would show it as text")),
            );
        }
    }
    for d in &doc.unclosed {
        let name = known().find(|k| *k == d.name).or_else(|| closest(&d.name, known()));
        if let Some(name) = name {
            // In a table a `|` ends the cell, directive or not: the usual reason there.
            let in_table = doc
                .leaves
                .iter()
                .any(|l| l.kind == LeafKind::TableCell && l.span.start <= d.span.start && d.span.start < l.span.end);
            let help = match in_table {
                true => "in a table, a `|` ends the cell, inside a directive too: write it `\\|`; as it is, the \
                         page would show it as text"
                    .to_string(),
                false => format!(
                    "end it with `}}}}` in the same paragraph, as in `{{{{#{name} …}}}}`; as it is, the page would \
                     show it as text"
                ),
            };
            out.push(
                Diagnostic::error(at(d.span.start), format!("this `{{{{#{}` is never closed", d.name)).with_help(help),
            );
        }
    }
    out
}

/// An entry of SUMMARY.md (`summary`, its path) that names a file an earlier entry names
/// otherwise (`./ch01.md` after `ch01.md`), which mdBook's own check, comparing the paths as
/// written, lets through, and then makes two pages of.
fn listed_twice(summary: &Path, entries: &[(usize, PathBuf)]) -> Option<Diagnostic> {
    let mut seen: HashMap<PathBuf, (usize, &Path)> = HashMap::new();
    for (line, path) in entries {
        let file = resolved(path);
        if let Some((first, written)) = seen.get(&file) {
            let message = format!(
                "SUMMARY.md lists {} twice: as `{}` here, and as `{}` at line {first}",
                file.display(),
                path.display(),
                written.display()
            );
            return Some(
                Diagnostic::error(Location::new(summary, *line), message)
                    .with_help("a chapter is one page of the book: remove one of the two lines"),
            );
        }
        seen.insert(file, (*line, path));
    }
    None
}

/// For mdBook's `Duplicate file in SUMMARY.md: "ch03.md"`: the line of the entry that lists the
/// file a second time, which mdBook's parser does not say.
fn duplicate_entry_line(summary: &str, message: &str) -> Option<usize> {
    let (_, rest) = message.split_once("Duplicate file in SUMMARY.md: \"")?;
    let file = rest.split('"').next()?;
    let links =
        |l: &str| [format!("]({file}"), format!("](./{file}"), format!("](<{file}>")].iter().any(|w| l.contains(w));
    summary.lines().enumerate().filter(|(_, l)| links(l)).nth(1).map(|(i, _)| i + 1)
}

fn error_at(page: &Page, file: &Path, offset: usize, message: String) -> Diagnostic {
    let (line, column) = page.doc.line_col(offset);
    Diagnostic::error(Location::new(file, line).with_column(column), message)
}

/// `{{#figure NAME}}` directives whose figure nothing provides.
fn unknown_figures(layout: &Layout, page: &Page, file: &Path) -> Vec<Diagnostic> {
    let dir = layout.abs(&layout.figures).join(&page.figures);
    let mut known: Vec<String> = figures::drawn_figure_names(&page.doc);
    for fence in &page.doc.fences {
        if diagrams::find(fence.lang()).is_some()
            && let Some(name) = fence.info.as_ref().ok().and_then(|i| i.value("fig"))
        {
            known.push(name.to_string());
        }
    }
    known.extend(files_ending(&dir, ".svg"));
    let mut out = placements(page, file, "figure", "figure");
    for (d, name) in first_unknown(page, "figure", &known) {
        let shown = layout.figures.join(&page.figures).join(format!("{name}.svg"));
        let d = error_at(
            page,
            file,
            d.span.start,
            format!(
                "no figure is named `{name}`: no cell of this chapter draws it, no diagram is named so, and {} does not exist",
                shown.display()
            ),
        );
        out.push(match closest(name, known.iter().map(String::as_str)) {
            Some(near) => d.with_help(format!("did you mean `{near}`?")),
            None => d.with_help(format!("draw it in a run cell with `tangle_runtime::figure::svg(\"{name}\", ...)`")),
        });
    }
    // In the page's order, misplacements among the unknown names.
    out.sort_by_key(|d| d.location.as_ref().map(|l| (l.line, l.column)));
    out
}

/// Whether a cell of the chapter `source` computes calculator `name`.
pub(crate) fn writes_calculator(chapter: &tangle_core::markdown::Document, name: &str) -> bool {
    figures::rust_blocks(chapter).any(|code| figures::computed_calculators(code).iter().any(|n| n == name))
}

/// `{{#figure NAME}}` and `{{#widget NAME}}` placed where the book cannot show them as they
/// mean: inside a paragraph of other text (mdBook leaves the figure's HTML inside the paragraph,
/// empty, and logs unclosed tags) or a second time on the page (two elements with one id, the
/// number given to the last of them, and no figure with the first number).
fn placements(page: &Page, file: &Path, directive: &str, what: &str) -> Vec<Diagnostic> {
    let doc = &page.doc;
    let mut placed: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::new();
    for d in doc.directives_named(directive) {
        let name = labels::figure_name(doc.text(d.args.clone()));
        let (line, _) = doc.line_col(d.span.start);
        let leaf = doc.leaves.iter().find(|l| l.span.start <= d.span.start && d.span.end <= l.span.end);
        let alone = leaf.is_none_or(|l| doc.text(l.span.clone()).trim() == doc.text(d.span.clone()).trim());
        if !alone {
            out.push(
                error_at(page, file, d.span.start, format!("{what} `{name}` is placed inside a paragraph of other text"))
                    .with_help(format!(
                        "give the `{{{{#{directive} ...}}}}` line a paragraph of its own, with a blank line before and after it"
                    )),
            );
        }
        match placed.get(name) {
            Some(first) => out.push(
                error_at(
                    page,
                    file,
                    d.span.start,
                    format!("{what} `{name}` is placed twice: at {}:{first} and here, line {line}", file.display()),
                )
                .with_help(format!("place each {what} once; refer to it elsewhere with `{{{{#ref fig:NAME}}}}`")),
            ),
            None => {
                placed.insert(name, line);
            }
        }
    }
    out
}

/// The first `{{#DIRECTIVE NAME}}` of each name not in `known`, with its name: what is
/// reported as unknown (once per name; a second placement is [`placements`]' to report).
fn first_unknown<'p>(
    page: &'p Page,
    directive: &'p str,
    known: &'p [String],
) -> impl Iterator<Item = (&'p tangle_core::markdown::Directive, &'p str)> + 'p {
    let mut seen = std::collections::HashSet::new();
    page.doc.directives_named(directive).filter_map(move |d| {
        let name = labels::figure_name(page.doc.text(d.args.clone()));
        (seen.insert(name) && !known.iter().any(|k| k == name)).then_some((d, name))
    })
}

/// `{{#widget NAME}}` directives: a calculator nothing computes, or one misplaced.
fn calculators(layout: &Layout, page: &Page, file: &Path) -> Vec<Diagnostic> {
    let dir = layout.abs(&layout.figures).join(&page.figures);
    let mut known: Vec<String> = figures::rust_blocks(&page.doc).flat_map(figures::computed_calculators).collect();
    known.extend(files_ending(&dir, ".widget.json"));
    let mut out = placements(page, file, "widget", "calculator");
    // A figure and a calculator are both `fig:NAME`, the id of their element and the name
    // `{{#ref}}` finds them by: one name for both would give the page two elements of one id,
    // and every reference to either would lead to the last.
    let figures: HashMap<&str, usize> = page
        .doc
        .directives_named("figure")
        .map(|d| (labels::figure_name(page.doc.text(d.args.clone())), page.doc.line_col(d.span.start).0))
        .collect();
    for d in page.doc.directives_named("widget") {
        let name = labels::figure_name(page.doc.text(d.args.clone()));
        if let Some(line) = figures.get(name) {
            out.push(
                error_at(
                    page,
                    file,
                    d.span.start,
                    format!("calculator `{name}` has the name of the figure at {}:{line}", file.display()),
                )
                .with_help(format!(
                    "give one of them another name: a figure and a calculator are both referred to as `fig:{name}`"
                )),
            );
        }
    }
    for (d, name) in first_unknown(page, "widget", &known) {
        let shown = layout.figures.join(&page.figures).join(format!("{name}.widget.json"));
        let d = error_at(
            page,
            file,
            d.span.start,
            format!(
                "no calculator is named `{name}`: no cell of this chapter writes it, and {} does not exist",
                shown.display()
            ),
        );
        out.push(match closest(name, known.iter().map(String::as_str)) {
            Some(near) => d.with_help(format!("did you mean `{near}`?")),
            None => d.with_help(format!(
                "write it in a run cell with `tangle_runtime::widget::Widget::new(\"{name}\")` ... `.write()`"
            )),
        });
    }
    // In the page's order, misplacements among the unknown names.
    out.sort_by_key(|d| d.location.as_ref().map(|l| (l.line, l.column)));
    out
}

/// The names of the files in `dir` whose names end in `suffix`, without it.
fn files_ending(dir: &Path, suffix: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_suffix(suffix)).map(str::to_string))
        .collect()
}

/// mdBook's directives that read a file, found as mdBook finds them (its own rule is a regex
/// over the chapter's text, not its Markdown: includes expand inside code blocks too): anywhere in the text but
/// the cells and output blocks tangle renders itself (where braces are shown as text) and
/// after a backslash (`\{{#include}}`, which mdBook leaves as text).
static READS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{\{\s*#(include|rustdoc_include|playground)\s+([^}]+)\}\}").expect("a valid regex"));

/// Files mdBook's directives would read from outside the allowed folders, or that do not exist.
fn includes(layout: &Layout, path: &Path, page: &Page, file: &Path) -> Vec<Diagnostic> {
    let source = page.doc.source();
    // The cells, their outputs and the diagrams tangle renders itself; any other block
    // (```` ```rust,ignore ````, ```` ```text ````) is mdBook's.
    let cells = tangle_core::parse::read_chapter("chapter", path, page.doc.clone(), Default::default())
        .map(|c| c.cells)
        .unwrap_or_default();
    let mut inert: Vec<std::ops::Range<usize>> = cells
        .iter()
        .flat_map(|c| std::iter::once(c.span.clone()).chain(c.output.as_ref().map(|o| o.span.clone())))
        .collect();
    inert.extend(page.doc.fences.iter().filter(|f| diagrams::find(f.lang()).is_some()).map(|f| f.span.clone()));
    let chapter_dir = layout.abs(&layout.src).join(path.parent().unwrap_or(Path::new("")));
    let mut out = Vec::new();
    for read in reads(source, &chapter_dir) {
        if inert.iter().any(|r| r.contains(&read.at)) {
            continue;
        }
        let chain = vec![page_file(layout, path)];
        if let Some((message, help)) = refused(layout, &read, &chain) {
            out.push(error_at(page, file, read.at, message).with_help(help));
        }
    }
    out
}

/// One of mdBook's directives that reads a file: where it stands, its words, what it reads.
/// The Markdown files of `src_dir` that the pages `listed` (relative to `src_dir`, with their
/// text) include, directly or through one another: fragments such pages are made of (the Rust
/// Cookbook lists `url.md`, which includes `url/parse.md`), part of the book though
/// `SUMMARY.md` never names them. Relative to `src_dir`.
pub(crate) fn included_pages(src_dir: &Path, listed: &[(PathBuf, String)]) -> std::collections::HashSet<PathBuf> {
    let mut found = std::collections::HashSet::new();
    let mut todo: Vec<(PathBuf, String)> = listed.to_vec();
    while let Some((page, text)) = todo.pop() {
        let dir = src_dir.join(page.parent().unwrap_or(Path::new("")));
        for read in reads(&text, &dir) {
            let Ok(rel) = read.full.strip_prefix(src_dir) else { continue };
            if read.full.extension().is_none_or(|e| e != "md") || found.contains(rel) {
                continue;
            }
            found.insert(rel.to_path_buf());
            if let Ok(text) = std::fs::read_to_string(&read.full) {
                todo.push((rel.to_path_buf(), text));
            }
        }
    }
    found
}

struct Read {
    at: usize,
    kind: String,
    /// The directive's argument as written (`file.rs:anchor`), for messages.
    spec: String,
    /// The file it reads, resolved.
    full: PathBuf,
}

/// The directives of `text` that read a file, paths resolved from `dir`; escaped ones left out.
fn reads(text: &str, dir: &Path) -> Vec<Read> {
    let mut out = Vec::new();
    for cap in READS.captures_iter(text) {
        let whole = cap.get(0).expect("group 0");
        if text[..whole.start()].ends_with('\\') {
            continue;
        }
        let spec = cap[2].split_whitespace().next().unwrap_or("").to_string();
        // `file.rs:anchor` or `file.rs:2:10` name parts of the file.
        let target = spec.split(':').next().unwrap_or(&spec).to_string();
        let full = resolved(&dir.join(&target));
        out.push(Read { at: whole.start(), kind: cap[1].to_string(), spec, full });
    }
    out
}

fn page_file(layout: &Layout, path: &Path) -> PathBuf {
    resolved(&layout.abs(&layout.src).join(path))
}

/// How [`refused`] says that a directive's file does not exist, or may not be read.
const MISSING: &str = ", which does not exist";
const OUTSIDE: &str = ", outside the folders the book may read from";

/// Whether `d` is this pass's refusal of a directive on the page itself (not in a file it
/// includes) that reads a file that does not exist or may not be read: what an example holding
/// an `{{#include}}`, `{{#rustdoc_include}}` or `{{#playground}}` reports for itself when it
/// cannot be built, at the same line.
pub fn reads_an_unreadable_file(d: &Diagnostic) -> bool {
    let directive =
        ["`{{#include ", "`{{#rustdoc_include ", "`{{#playground "].iter().any(|p| d.message.starts_with(p));
    let unreadable = d.message.ends_with(MISSING) || d.message.contains(OUTSIDE);
    directive && unreadable && !d.message.contains(" (through ")
}

/// What is wrong with `read` (a message and a fix), included through the files of `chain`
/// (the chapter first), if anything: a file outside the allowed folders, a missing one, or an
/// include of a file already being included (mdBook would follow it until it gives up).
/// The files it reads are checked the same way, as mdBook expands their directives too.
fn refused(layout: &Layout, read: &Read, chain: &[PathBuf]) -> Option<(String, String)> {
    let readable = layout.readable_dirs();
    let shown = pathdiff(&read.full, &layout.root);
    let through = match chain.len() {
        1 => String::new(),
        _ => format!(
            " (through {})",
            chain[1..].iter().map(|f| pathdiff(f, &layout.root)).collect::<Vec<_>>().join(", which includes ")
        ),
    };
    let directive = format!("`{{{{#{} {}}}}}`", read.kind, read.spec);
    if !readable.iter().any(|(_, dir)| read.full.starts_with(dir)) {
        let dirs: Vec<String> = readable.iter().map(|(shown, _)| format!("`{shown}`")).collect();
        return Some((
            format!("{directive} reads {shown}{through}{OUTSIDE} ({})", dirs.join(", ")),
            "move the file into the book's folder, or list its folder in `include-dirs` under [preprocessor.tangle] in book.toml".into(),
        ));
    }
    if !read.full.is_file() {
        return Some((
            format!("{directive} reads {shown}{through}{MISSING}"),
            "correct the path (it is relative to the folder of the file that holds the directive)".into(),
        ));
    }
    if chain.contains(&read.full) {
        return Some((
            format!("{directive} reads {shown}{through}, which is already being included: the includes never end"),
            "include each file from outside itself".into(),
        ));
    }
    let text = std::fs::read_to_string(&read.full).ok()?;
    let dir = read.full.parent().unwrap_or(Path::new("/"));
    let mut deeper = chain.to_vec();
    deeper.push(read.full.clone());
    reads(&text, dir).iter().find_map(|inner| refused(layout, inner, &deeper))
}

/// `path` relative to `root` when it lies inside it, else as it is.
fn pathdiff(path: &Path, root: &Path) -> String {
    let root = resolved(root);
    path.strip_prefix(&root).map_or_else(|_| path.display().to_string(), |p| p.display().to_string())
}

#[cfg(test)]
mod tests;
