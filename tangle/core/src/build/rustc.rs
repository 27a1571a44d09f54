//! rustc's diagnostics, re-rendered against the chapter file: the primary span's generated
//! position maps to a chapter line and column through the generator's
//! [`LineMap`](crate::generate::LineMap), child notes and suggestions become notes and help, and paths
//! into `code/` appear only with `--verbose`. A message whose span lies outside any cell (in
//! the generated wrapper, or in another crate) keeps rustc's own rendering.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cargo_metadata::diagnostic::{Diagnostic as RustcDiagnostic, DiagnosticLevel, DiagnosticSpan};

use crate::diagnostic::{Diagnostic, Location, NoteKind, Severity};
use crate::generate::{Generated, lexically_normal};
use crate::model::Chapter;

pub struct Mapper<'a> {
    pub root: &'a Path,
    pub generated: &'a Generated,
    pub verbose: bool,
    /// When mapping the build of examples: the edition of an example whose fence names none.
    pub examples_edition: Option<&'a str>,
    /// The crates book.toml declares (by the names the code uses).
    pub declared: &'a [String],
    /// The crate of the package whose manifest book.toml takes dependencies from, and that
    /// package's folder from book.toml's ([`crate::examples`]' `manifest_package`).
    pub manifest_package: Option<(&'a str, &'a str)>,
}

/// rustc's advice as it applies in a book: a crate is not added with `cargo add` to a
/// `Cargo.toml` (tangle writes those) but declared in `book.toml`. An example of edition 2015
/// (mdBook's default, as rustdoc's) also needs `extern crate`; `edition` is the example's, or
/// `None` in a notebook chapter, whose crates are of 2018 or later.
fn book_advice(message: &str, edition: Option<&str>, declared: &[String]) -> String {
    let examples = edition.is_some();
    // E0583 (`mod helpers;` with no file): tangle writes a chapter's crate from its cells alone.
    if let Some(rest) = message.strip_prefix("to create the module `") {
        let module = rest.split('`').next().unwrap_or("");
        return format!(
            "a chapter's crate holds only what its cells say, and tangle writes its files: write the module in the \
             cell itself, `mod {module} {{ ... }}`"
        );
    }
    if message.contains("edition") && message.contains("in `Cargo.toml`") {
        return match examples {
            true => {
                "set the edition in book.toml (`[rust] edition = \"2021\"`), or for one example with a fence \
                     attribute (`edition2021`)"
            }
            false => "set the edition in book.toml (`[rust] edition = \"2024\"`)",
        }
        .to_string();
    }
    let Some((_, rest)) = message.split_once("`cargo add ") else { return message.to_string() };
    let krate = rest.split(['`', ' ']).next().unwrap_or("");
    if edition == Some("2015") && declared.iter().any(|d| d == krate) {
        return format!(
            "`{krate}` is declared in book.toml, but this example is of edition 2015 (mdBook's default where \
             book.toml names none), which names a crate with `extern crate {krate};` first: add that line to the \
             example (`# extern crate {krate};` keeps it off the page), or give it a later edition (`[rust] \
             edition = \"2021\"` in book.toml, or `edition2021` on its fence)"
        );
    }
    let extern_crate = match edition {
        Some("2015") => format!(", and add `extern crate {krate};` to the example (its edition is 2015)"),
        _ => String::new(),
    };
    format!(
        "if you meant the crate `{krate}` from crates.io, declare it in book.toml, under \
         `[preprocessor.tangle.dependencies]` (by its name on crates.io, which may have `-` for `_`){extern_crate}"
    )
}

/// For an unresolved crate that is the package of the manifest book.toml takes its
/// dependencies from (`manifest = "../Cargo.toml"`): that brings the package's dependencies, not
/// the package itself, which is declared by path.
fn manifest_crate_meant(message: &str, package: Option<(&str, &str)>, declared: &[String]) -> Option<String> {
    let (package, dir) = package?;
    let name = package.replace('-', "_");
    (unresolved_crate(message)? == name && !declared.iter().any(|d| d.replace('-', "_") == name)).then(|| {
        format!(
            "`{name}` is the crate of the manifest book.toml names (`manifest`), which lends the examples its \
             dependencies, not itself: declare it under `[preprocessor.tangle.dependencies]` in book.toml as \
             `{package} = {{ path = \"{dir}\" }}`"
        )
    })
}

/// For rustc's "cannot declare a file module inside a block" (`mod helpers;` in a run cell, whose
/// lines run inside the chapter program's `main`, or in an example, which rustdoc wraps in one):
/// where such a module goes in a book.
fn file_module_in_a_block(message: &str, examples: bool) -> Option<String> {
    let whose = match examples {
        true => "an example's lines run inside `fn main` (rustdoc wraps them so)",
        false => "a run cell's lines run inside the chapter program's `fn main`",
    };
    let or_saved = if examples { "" } else { ", or in a `// @save` cell, whose items the run cells use" };
    message.starts_with("cannot declare a file module inside a block").then(|| {
        format!(
            "{whose}, and tangle writes no module files: write the module in the cell itself, `mod name {{ ... }}`\
             {or_saved}"
        )
    })
}

/// The crate rustc could not find (`uber` in "unresolved import `uber::x`", "unlinked crate
/// `uber`", "cannot find module or crate `uber`"), if that is what `message` says.
fn unresolved_crate(message: &str) -> Option<&str> {
    let unresolved = ["unresolved import", "unlinked crate", "cannot find module or crate"];
    if !unresolved.iter().any(|u| message.contains(u)) {
        return None;
    }
    message.split('`').nth(1)?.split("::").next()
}

/// For rustc's "unresolved import `ch03`" in chapter `ch03` itself: a save cell is part of the
/// chapter's library, which names itself `crate::` (run and test cells, outside it, say `ch03::`).
fn own_crate_meant(message: &str, chapter: &str) -> Option<String> {
    (unresolved_crate(message)? == chapter).then(|| {
        format!(
            "`{chapter}` is this chapter's own crate: a save cell is part of it and writes `crate::` \
             (run and test cells, outside it, write `{chapter}::`)"
        )
    })
}

/// For rustc's "unresolved import `uber`" or "unlinked crate `uber`": the chapter whose crate
/// the name is close to, as a help, when one is (a path to a chapter since renamed, or
/// mistyped; `chNN` names that are no chapter are refused before the build).
fn chapter_meant(message: &str, chapters: &[&str], list: bool) -> Option<String> {
    let name = unresolved_crate(message)?;
    // A near spelling, else the one chapter whose name begins with it (`intro` → `intro_text`).
    let mut starting = chapters.iter().copied().filter(|c| c.starts_with(&format!("{name}_")));
    let prefixed = starting.next().filter(|_| starting.next().is_none());
    match crate::messages::closest(name, chapters.iter().copied()).or(prefixed).filter(|near| *near != name) {
        Some(near) => Some(format!(
            "`{near}` is a chapter of this book (a chapter's crate is named after its file): did you mean it?"
        )),
        // A chapter renamed since the `use` was written, perhaps: say what the chapters are now.
        None if list => crate::messages::chapter_crates(chapters.iter().copied()).map(|now| {
            format!(
                "if `{name}` was a chapter: a chapter's crate is named after its file, so renaming the file renames \
                 it; this book's are {now}"
            )
        }),
        None => None,
    }
}

/// A generated position seen from the chapter.
struct Mapped<'g> {
    chapter: &'g Arc<Chapter>,
    /// The file it is in, from the project root: the chapter's, or a file the chapter includes.
    file: PathBuf,
    line: usize,
    column: usize,
    /// Bytes of `file`.
    range: std::ops::Range<usize>,
    /// For a line included from another file, the chapter line of the `{{#include}}`.
    included_at: Option<usize>,
}

impl<'a> Mapper<'a> {
    /// The diagnostic for one rustc message; `None` for messages not worth showing (notes on
    /// their own, the "aborting due to" summary, warnings outside the chapters).
    pub fn map(&self, d: &RustcDiagnostic) -> Option<Diagnostic> {
        let severity = match d.level {
            DiagnosticLevel::Error | DiagnosticLevel::Ice => Severity::Error,
            DiagnosticLevel::Warning => Severity::Warning,
            _ => return None,
        };
        if d.spans.is_empty() && d.message.starts_with("aborting due to") {
            return None;
        }
        let primary = d.spans.iter().find(|s| s.is_primary).or(d.spans.first());
        let mapped = primary.and_then(|s| self.position(s));
        let Some(mapped) = mapped else {
            // Outside the chapters: a warning there is not the author's business.
            return (severity == Severity::Error).then(|| self.unmapped(d, primary));
        };
        let chapter = mapped.chapter;
        let location = Location::new(mapped.file.clone(), mapped.line).with_column(mapped.column);
        let mut out = Diagnostic::new(severity, Some(location), d.message.clone());
        out.code = d.code.as_ref().map(|c| c.code.clone());
        out.included_at = mapped.included_at.map(|line| chapter.location(line));
        out = out.with_span(mapped.range.clone(), primary.and_then(|s| s.label.clone()).unwrap_or_default());
        for span in d.spans.iter().filter(|s| !s.is_primary) {
            if let Some(m) = self.position(span).filter(|m| m.file == mapped.file) {
                out = out.with_secondary(m.range, span.label.clone().unwrap_or_default());
            }
        }
        for child in &d.children {
            let kind = match child.level {
                DiagnosticLevel::Help => NoteKind::Help,
                DiagnosticLevel::Note => NoteKind::Note,
                _ => continue,
            };
            // rustc's own fix (`extern crate itoa;` in edition 2015) is kept as it says it.
            let suggested = child.spans.iter().any(|s| s.suggested_replacement.as_ref().is_some_and(|r| !r.is_empty()));
            let edition = self.edition_at(chapter, mapped.line, mapped.included_at);
            // Unless it is `cargo add`'s, which a book does otherwise (and says how).
            let mut text = match suggested && !child.message.contains("`cargo add ") {
                true => match suggested_code(&child.spans) {
                    Some(suggestion) => format!("{}: {suggestion}", child.message),
                    None => child.message.clone(),
                },
                false => book_advice(&child.message, edition, self.declared),
            };
            if let Some(at) = child.spans.iter().find_map(|s| self.position(s))
                && (at.file != mapped.file || at.line != mapped.line)
            {
                text = format!("{text} ({}:{}:{})", at.file.display(), at.line, at.column);
            }
            text += &elsewhere_labels(self, &child.spans);
            out.notes.push((kind, text));
        }
        let chapters: Vec<&str> = self.generated.crates.iter().map(|c| c.name()).collect();
        if let Some(help) = own_crate_meant(&d.message, &chapter.name) {
            // rustc's advice about crates.io does not apply: the crate is the chapter's own.
            out.notes.retain(|(_, n)| !n.contains("[preprocessor.tangle.dependencies]"));
            out.notes.insert(0, (NoteKind::Help, help));
        } else if let Some(help) = chapter_meant(&d.message, &chapters, self.examples_edition.is_none()) {
            // The likelier fix in a book: before rustc's advice about crates.io.
            out.notes.insert(0, (NoteKind::Help, help));
        } else if let Some(help) = manifest_crate_meant(&d.message, self.manifest_package, self.declared) {
            // The project's own crate: declared by path, not fetched from crates.io.
            out.notes.retain(|(_, n)| !n.contains("[preprocessor.tangle.dependencies]"));
            out.notes.insert(0, (NoteKind::Help, help));
        } else if let Some(help) = file_module_in_a_block(&d.message, self.examples_edition.is_some()) {
            out.notes.push((NoteKind::Help, help));
        }
        if self.verbose
            && let Some(span) = primary
        {
            out.notes.push((
                NoteKind::Note,
                format!("generated: {}:{}:{}", self.generated_path(span).display(), span.line_start, span.column_start),
            ));
        }
        Some(out)
    }

    /// The edition of the example at `line` of `chapter` (or of the example whose include is
    /// at `included_at`): its fence's, else the book's; `None` outside an examples build.
    fn edition_at(&self, chapter: &'a Chapter, line: usize, included_at: Option<usize>) -> Option<&'a str> {
        let default = self.examples_edition?;
        let cell = chapter.cell_at(included_at.unwrap_or(line));
        let fence = cell.and_then(|c| c.example.as_ref()).and_then(|e| e.edition.as_deref());
        Some(fence.unwrap_or(default))
    }

    /// An error outside every cell: at its line of the generated file when that file is in
    /// the project (the wrapper tangle wrote around the cells), else as rustc rendered it (a
    /// dependency's source), without repeating the level rustc's rendering starts with.
    fn unmapped(&self, d: &RustcDiagnostic, primary: Option<&DiagnosticSpan>) -> Diagnostic {
        let generated = primary.map(|span| (self.generated_path(span), span)).filter(|(file, _)| file.is_relative());
        let Some((file, span)) = generated else {
            let rendered = d.rendered.as_deref().unwrap_or(&d.message).trim_end();
            // rustc's own headline (`error[E0432]: …`) without its level, which ours adds.
            let text =
                rendered.split_once(": ").filter(|(level, _)| level.starts_with("error")).map_or(rendered, |(_, t)| t);
            let mut out = Diagnostic::new(Severity::Error, None, text.to_string());
            out.code = d.code.as_ref().map(|c| c.code.clone());
            return out;
        };
        let mut out = Diagnostic::new(
            Severity::Error,
            Some(Location::new(file, span.line_start).with_column(span.column_start)),
            d.message.clone(),
        );
        out.code = d.code.as_ref().map(|c| c.code.clone());
        out.notes.extend(d.children.iter().filter_map(|child| {
            let kind = match child.level {
                DiagnosticLevel::Help => NoteKind::Help,
                DiagnosticLevel::Note => NoteKind::Note,
                _ => return None,
            };
            Some((kind, child.message.clone()))
        }));
        out.notes.push((
            NoteKind::Help,
            "this line is code tangle generated around the cells, not a cell: check book.toml's `[rust] edition` \
             and dependencies; if they do not explain it, it is a bug in tangle, worth reporting"
                .into(),
        ));
        out
    }

    /// The file a span names, relative to the project root (rustc names files relative to the
    /// workspace it builds, `code/`).
    /// A run program's source is named from its package (`ch06/run/../src/main.rs`): the path
    /// comes back without the detour.
    fn generated_path(&self, span: &DiagnosticSpan) -> PathBuf {
        let file = Path::new(&span.file_name);
        lexically_normal(&match file.strip_prefix(self.root) {
            Ok(rel) => rel.to_path_buf(),
            Err(_) if file.is_relative() => self.generated.code.join(file),
            Err(_) => file.to_path_buf(),
        })
    }

    fn position(&self, span: &DiagnosticSpan) -> Option<Mapped<'a>> {
        // A span inside a macro's expansion points at the macro's definition; the call site,
        // one or more expansions out, is where the author's code is.
        let mut span = span;
        let (file, (chapter, line, column)) = loop {
            let file = self.generated_path(span);
            if let Some(found) = self.generated.chapter_position(&file, span.line_start, span.column_start) {
                break (file, found);
            }
            span = &span.expansion.as_ref()?.span;
        };
        let width =
            if span.line_end == span.line_start { span.column_end.saturating_sub(span.column_start) } else { 1 };
        // A line an example included from another file is shown in that file, where it is fixed.
        let included = self.generated.included_position(&file, span.line_start, span.column_start);
        if let Some((path, at, column)) = included
            && let Ok(text) = std::fs::read_to_string(self.root.join(path))
        {
            let range = span_range(&text, at, column, width);
            let file = path.to_path_buf();
            return Some(Mapped { chapter, file, line: at, column, range, included_at: Some(line) });
        }
        let range = span_range(chapter.source(), line, column, width);
        Some(Mapped { chapter, file: chapter.path.clone(), line, column, range, included_at: None })
    }
}

/// The labels of a note's spans outside the chapters, one per line: where rustc lists what
/// its note is about in the standard library (E0277's "the following other types implement
/// trait"), the list the author needs, since the spans themselves cannot be shown.
/// What a suggestion of rustc's makes of the code, in backticks: the new code of a single
/// replacement (`len` for `lenn`); the line with every edit made when there are several or the
/// edit only inserts (`((x / 2.0) as u32).into()` from an insertion at each end, `let r#async =
/// 6;`); each alternative when the edits are alternatives for one place (one of several
/// imports). `None` when it suggests nothing, or its edits span lines.
fn suggested_code(spans: &[DiagnosticSpan]) -> Option<String> {
    let edits: Vec<(&DiagnosticSpan, &str)> =
        spans.iter().filter_map(|s| Some((s, s.suggested_replacement.as_deref()?))).collect();
    let &(first, replacement) = edits.first()?;
    let place = |s: &DiagnosticSpan| (s.file_name.clone(), s.line_start, s.column_start, s.line_end, s.column_end);
    if edits.len() > 1 && edits.iter().all(|(s, _)| place(s) == place(first)) {
        let each: Vec<String> = edits.iter().map(|(_, r)| format!("`{}`", r.trim())).collect();
        return Some(each.join(" or "));
    }
    // One stretch of code replaced (a name corrected), or words inserted (`.to_string()`,
    // `mut`): the new code says it. A few symbols inserted (`r#`, `.0`) say little without
    // the line around them.
    let replaces = first.line_start != first.line_end || first.column_start != first.column_end;
    let words = replacement.chars().filter(|c| c.is_alphabetic()).count() >= 2;
    if edits.len() == 1 && (replaces || words) {
        return (!replacement.trim().is_empty()).then(|| format!("`{}`", replacement.trim()));
    }
    let one_line = |s: &DiagnosticSpan| {
        s.file_name == first.file_name && s.line_start == first.line_start && s.line_end == s.line_start
    };
    if !edits.iter().all(|(s, _)| one_line(s)) {
        return None;
    }
    let mut line: Vec<char> = first.text.first()?.text.chars().collect();
    let mut edits = edits;
    // From the right, so that each edit's columns still hold when it is made.
    edits.sort_by_key(|(s, _)| std::cmp::Reverse(s.column_start));
    for (span, replacement) in edits {
        let (start, end) = (span.column_start.checked_sub(1)?, span.column_end.checked_sub(1)?);
        if start > end || end > line.len() {
            return None;
        }
        line.splice(start..end, replacement.chars());
    }
    let fixed: String = line.into_iter().collect();
    (!fixed.trim().is_empty()).then(|| format!("`{}`", fixed.trim()))
}

fn elsewhere_labels(mapper: &Mapper<'_>, spans: &[DiagnosticSpan]) -> String {
    let mut labels: Vec<&str> = Vec::new();
    for span in spans.iter().filter(|s| mapper.position(s).is_none()) {
        if let Some(label) = span.label.as_deref().filter(|l| !l.is_empty() && !labels.contains(l)) {
            labels.push(label);
        }
    }
    labels.iter().map(|l| format!("\n  {l}")).collect()
}

/// The bytes of `text` a span of `width` characters at one-based `line` and `column` covers,
/// cut at the end of its line.
fn span_range(text: &str, line: usize, column: usize, width: usize) -> std::ops::Range<usize> {
    let start = byte_at(text, line, column);
    let end = text[start..].char_indices().nth(width).map_or(text.len(), |(i, _)| start + i);
    let end = text[start..end].find(['\n', '\r']).map_or(end, |i| start + i);
    start..end
}

/// The byte offset of one-based `line`, one-based character `column`, in `text`.
fn byte_at(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    let line_text = text[start.min(text.len())..].split('\n').next().unwrap_or("");
    start + line_text.char_indices().nth(column.saturating_sub(1)).map_or(line_text.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {

    #[test]
    fn rustc_s_cargo_add_advice_points_at_book_toml() {
        let said = "if you wanted to use a crate named `itoa`, use `cargo add itoa` to add it to your `Cargo.toml`";
        let advice = super::book_advice(said, Some("2015"), &[]);
        assert!(
            advice.contains("`[preprocessor.tangle.dependencies]`") && advice.contains("`extern crate itoa;`"),
            "{advice}"
        );
        assert!(!advice.contains("cargo add"), "{advice}");
        // An example of a later edition names the crate without `extern crate`; a notebook
        // chapter has no examples, and no edition 2015.
        for edition in [Some("2021"), None] {
            let advice = super::book_advice(said, edition, &[]);
            assert!(
                advice.contains("`[preprocessor.tangle.dependencies]`") && !advice.contains("extern crate"),
                "{edition:?}: {advice}"
            );
        }
        // A declared crate in an example of 2015 is named with `extern crate`, not declared again.
        let declared = super::book_advice(said, Some("2015"), &["itoa".to_string()]);
        assert!(declared.contains("`itoa` is declared in book.toml") && declared.contains("`extern crate itoa;`"));
        assert!(!declared.contains("[preprocessor.tangle.dependencies]") && !declared.contains("cargo add"));
        assert_eq!(super::book_advice("consider borrowing here", Some("2015"), &[]), "consider borrowing here");
        // `mod helpers;` has no file to find, and gets none: the module is written inline.
        let module = super::book_advice(
            "to create the module `helpers`, create file \"ch01/src/helpers.rs\" or \"ch01/src/helpers/mod.rs\"",
            None,
            &[],
        );
        assert!(module.contains("`mod helpers { ... }`") && !module.contains("create file"), "{module}");
        let edition = super::book_advice("set `edition = \"2024\"` in `Cargo.toml`", Some("2015"), &[]);
        assert!(edition.contains("book.toml") && !edition.contains("Cargo.toml"), "{edition}");
        assert!(!super::book_advice("set `edition = \"2024\"` in `Cargo.toml`", None, &[]).contains("example"));
    }

    use super::*;
    use crate::diagnostic::{Sources, Style};

    /// A span of `line` (its line 3) from `from` to `to` (1-based columns), replaced by `by`.
    fn edit(line: &str, from: usize, to: usize, by: &str) -> DiagnosticSpan {
        serde_json::from_value(serde_json::json!({
            "file_name": "src/lib.rs", "byte_start": 0, "byte_end": 0, "line_start": 3, "line_end": 3,
            "column_start": from, "column_end": to, "is_primary": true,
            "text": [{ "text": line, "highlight_start": from, "highlight_end": to }], "label": null,
            "suggested_replacement": by, "suggestion_applicability": "MaybeIncorrect", "expansion": null
        }))
        .unwrap()
    }

    #[test]
    fn a_path_to_a_chapter_since_renamed_names_the_chapter() {
        let chapters = ["intro", "ueber_alles", "growth"];
        let help =
            chapter_meant("failed to resolve: use of unresolved module or unlinked crate `uber_alle`", &chapters, true);
        assert!(help.is_some_and(|h| h.starts_with("`ueber_alles` is a chapter")));
        let help = chapter_meant("unresolved import `growht`", &chapters, true);
        assert!(help.is_some_and(|h| h.starts_with("`growth`")));
        let help = chapter_meant("cannot find module or crate `intro` in this scope", &["intro_text", "two"], true);
        assert!(help.is_some_and(|h| h.starts_with("`intro_text`")));
        // Far from every chapter: what the chapters' crates are called now (a chapter renamed
        // renames its crate), in a book of chapters, not of examples.
        let help = chapter_meant("unresolved import `vectors`", &chapters, true).unwrap();
        assert!(help.starts_with("if `vectors` was a chapter"), "{help}");
        assert!(help.ends_with("this book's are `intro`, `ueber_alles`, `growth`"), "{help}");
        assert_eq!(chapter_meant("unresolved import `serde`", &chapters, false), None);
        let said = "cannot declare a file module inside a block unless it has a path attribute";
        let run = file_module_in_a_block(said, false).unwrap();
        assert!(run.contains("run cell") && run.contains("`mod name { ... }`") && run.contains("@save"), "{run}");
        let example = file_module_in_a_block(said, true).unwrap();
        assert!(example.contains("rustdoc wraps") && !example.contains("@save"), "{example}");
        assert_eq!(file_module_in_a_block("cannot find value `x` in this scope", false), None);
        let own = manifest_crate_meant("unresolved import `myproj`", Some(("myproj", "..")), &[]).unwrap();
        assert!(own.contains("`myproj = { path = \"..\" }`"), "{own}");
        assert_eq!(
            manifest_crate_meant("unresolved import `myproj`", Some(("myproj", "..")), &["myproj".into()]),
            None
        );
        assert_eq!(manifest_crate_meant("unresolved import `serde`", Some(("myproj", "..")), &[]), None);
        // A package named with `-` is declared by that name, and its crate used with `_`.
        let dashed = manifest_crate_meant("unresolved import `my_proj`", Some(("my-proj", "..")), &[]).unwrap();
        assert!(dashed.contains("`my-proj = { path = \"..\" }`"), "{dashed}");
        assert_eq!(chapter_meant("cannot find value `growht` in this scope", &chapters, true), None);
    }

    #[test]
    fn a_suggestion_shows_the_code_with_all_its_edits_made() {
        // Words inserted say it; symbols are shown in their line.
        let line = "    let b: String = half(a);";
        assert_eq!(suggested_code(&[edit(line, 27, 27, ".to_string()")]).as_deref(), Some("`.to_string()`"));
        let line = "    let async = 6 * 7;";
        assert_eq!(suggested_code(&[edit(line, 9, 9, "r#")]).as_deref(), Some("`let r#async = 6 * 7;`"));
        // An insertion at each end (rustc's `.into()` conversion): both, on the line.
        let line = "    (x / 2.0) as u32";
        let spans = [edit(line, 5, 5, "("), edit(line, 21, 21, ").into()")];
        assert_eq!(suggested_code(&spans).as_deref(), Some("`((x / 2.0) as u32).into()`"));
        // A literal completed, a name corrected: the line as it would read.
        let line = "assert_eq!(f, 1);";
        assert_eq!(suggested_code(&[edit(line, 16, 16, ".0")]).as_deref(), Some("`assert_eq!(f, 1.0);`"));
        let line = "    v.lenn()";
        assert_eq!(suggested_code(&[edit(line, 7, 11, "len")]).as_deref(), Some("`len`"));
        // Alternatives for one place: each of them.
        let line = "fn f() -> HashMap<u8, u8> {";
        let spans =
            [edit(line, 1, 1, "use std::collections::HashMap;\n"), edit(line, 1, 1, "use hashbrown::HashMap;\n")];
        assert_eq!(
            suggested_code(&spans).as_deref(),
            Some("`use std::collections::HashMap;` or `use hashbrown::HashMap;`")
        );
        // No suggestion, or columns past the line: nothing rather than something wrong.
        assert_eq!(suggested_code(&[]), None);
        assert_eq!(suggested_code(&[edit("ab", 9, 9, "x")]), None);
    }

    /// rustc's JSON for an error at `file:3:5`, with a note, as cargo relays it.
    fn rustc_error(file: &str) -> RustcDiagnostic {
        serde_json::from_value(serde_json::json!({
            "message": "unresolved import `nb`",
            "code": { "code": "E0432", "explanation": null },
            "level": "error",
            "spans": [{
                "file_name": file, "byte_start": 0, "byte_end": 2, "line_start": 3, "line_end": 3,
                "column_start": 5, "column_end": 7, "is_primary": true, "text": [], "label": "not found",
                "suggested_replacement": null, "suggestion_applicability": null, "expansion": null
            }],
            "children": [{
                "message": "an edition before 2018 names crates from the crate root", "code": null,
                "level": "note", "spans": [], "children": [], "rendered": null
            }],
            "rendered": format!("error[E0432]: unresolved import `nb`\n --> {file}:3:5\n")
        }))
        .unwrap()
    }

    /// A chapter workspace under `code/` with no chapter crates.
    fn no_crates() -> Generated {
        Generated {
            code: "code".into(),
            crates: Vec::new(),
            workspace: ("code/Cargo.toml".into(), String::new()),
            support: Vec::new(),
        }
    }

    /// The mapper of a notebook build of `generated` under `root`.
    fn notebook_mapper<'a>(root: &'a Path, generated: &'a Generated) -> Mapper<'a> {
        Mapper { root, generated, verbose: false, examples_edition: None, declared: &[], manifest_package: None }
    }

    #[test]
    fn an_error_in_generated_code_points_at_its_line_there_and_says_what_to_check() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("code/nb/src")).unwrap();
        std::fs::write(root.path().join("code/nb/src/main.rs"), "// @generated\n\nuse nb::*;\n").unwrap();
        let generated = no_crates();
        let mapper = notebook_mapper(root.path(), &generated);
        let d = mapper.map(&rustc_error("nb/src/main.rs")).unwrap();
        assert_eq!(d.location, Some(Location::new("code/nb/src/main.rs", 3).with_column(5)));
        let text = d.render(&Sources::new(root.path()), Style::Plain);
        assert!(text.starts_with("error[E0432]: unresolved import `nb`\n"), "{text}");
        assert_eq!(text.matches("error").count(), 1, "one headline, its level once: {text}");
        assert!(text.contains("3 | use nb::*;"), "the generated line is quoted: {text}");
        assert!(text.contains("note: an edition before 2018"), "rustc's notes are kept: {text}");
        assert!(text.contains("book.toml's `[rust] edition`"), "{text}");

        // In a dependency's source, outside the project: rustc's rendering, its level once.
        let d = mapper.map(&rustc_error("/home/u/.cargo/registry/src/x/lib.rs")).unwrap();
        let text = d.render(&Sources::new(root.path()), Style::Plain);
        assert!(text.starts_with("error[E0432]: unresolved import `nb`\n"), "{text}");
        assert!(!text.contains("error: error"), "{text}");
        assert!(text.contains("--> /home/u/.cargo/registry/src/x/lib.rs:3:5"), "{text}");
    }

    #[test]
    fn a_note_about_the_standard_library_keeps_the_list_its_spans_carry() {
        let generated = no_crates();
        let root = tempfile::tempdir().unwrap();
        let mapper = notebook_mapper(root.path(), &generated);
        let span = |label: &str| -> DiagnosticSpan {
            serde_json::from_value(serde_json::json!({
                "file_name": "/rustc/abc/library/core/src/ops/arith.rs", "byte_start": 0, "byte_end": 1,
                "line_start": 108, "line_end": 108, "column_start": 9, "column_end": 10, "is_primary": true,
                "text": [], "label": label, "suggested_replacement": null, "suggestion_applicability": null,
                "expansion": null
            }))
            .unwrap()
        };
        let spans =
            [span("`&u32` implements `Add<u32>`"), span("`u32` implements `Add`"), span("`u32` implements `Add`")];
        assert_eq!(elsewhere_labels(&mapper, &spans), "\n  `&u32` implements `Add<u32>`\n  `u32` implements `Add`");
        assert_eq!(elsewhere_labels(&mapper, &[]), "");
    }
}
