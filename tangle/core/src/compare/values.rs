//! Quoted values: every `{{#value NAME shown}}` of a chapter's prose against the text its code
//! published (`tangle_runtime::value`), or a file of values recorded by a run outside the test
//! command (`<!-- tangle: values FILE -->`). A quote that differs is a drift, shown as the
//! sentence before and after; a quote of an unknown name and a name published twice are errors;
//! a value nothing quotes is a warning.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::diff::Diff;
use super::text::{matches, normalize};
use crate::diagnostic::{Diagnostic, Location};
use crate::model::{Chapter, OutputSpec, ValueQuote};
use crate::run::RunOutput;
use tangle_runtime::value::Vary;

/// A quote whose text is no longer what the code publishes.
#[derive(Debug, Clone)]
pub struct ValueDrift {
    pub quote: ValueQuote,
    /// The text the code publishes now.
    pub actual: String,
    /// The quote's line(s) before and after.
    pub diff: Diff,
    pub location: Location,
}

/// What comparing a chapter's quotes found.
#[derive(Debug, Clone, Default)]
pub struct ValueReport {
    pub drifts: Vec<ValueDrift>,
    /// Errors (an unknown name, a name published twice, an unreadable values file) and
    /// warnings (a value nothing quotes).
    pub diagnostics: Vec<Diagnostic>,
}

/// A file of values recorded outside the test command.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub file: PathBuf,
    /// The chapter line of the `<!-- tangle: values -->` comment that declares it.
    pub line: usize,
    pub values: BTreeMap<String, String>,
}

/// Where a published value came from, for messages.
#[derive(Debug, Clone)]
enum Origin {
    Cell(Location),
    File(PathBuf, Location),
}

impl Origin {
    fn location(&self) -> &Location {
        match self {
            Origin::Cell(l) | Origin::File(_, l) => l,
        }
    }
}

struct Published {
    text: String,
    vary: Vary,
    origin: Origin,
    /// Published again under the same name (an error, reported once).
    twice: bool,
}

/// Reads the values files a chapter declares. A file that cannot be read or does not hold a
/// `[values]` table of strings is an error at its directive's line.
pub fn load_recorded(root: &Path, chapter: &Chapter) -> Result<Vec<Recorded>, Box<Diagnostic>> {
    let mut out = Vec::new();
    for (file, line) in &chapter.directives.values {
        let at = chapter.location(*line);
        let text = std::fs::read_to_string(root.join(file)).map_err(|e| {
            Diagnostic::error(at.clone(), format!("the values file {} cannot be read: {e}", file.display()))
        })?;
        let table: toml::Table = toml::from_str(&text).map_err(|e| {
            Diagnostic::error(at.clone(), format!("the values file {} does not parse: {e}", file.display()))
        })?;
        let mut values = BTreeMap::new();
        let entries = table.get("values").and_then(|v| v.as_table()).ok_or_else(|| {
            Box::new(Diagnostic::error(at.clone(), format!("the values file {} has no [values] table", file.display())))
        })?;
        for (name, value) in entries {
            let Some(text) = value.as_str() else {
                return Err(Box::new(Diagnostic::error(
                    at,
                    format!("{}: value `{name}` is not a string", file.display()),
                )));
            };
            tangle_runtime::value::check(name, text)
                .map_err(|why| Diagnostic::error(at.clone(), format!("{}: {why}", file.display())))?;
            values.insert(name.clone(), text.to_string());
        }
        out.push(Recorded { file: file.clone(), line: *line, values });
    }
    Ok(out)
}

/// Compares every quote of `chapter` with the values of `run` and the `recorded` files. With
/// `exact`, values that may vary must match exactly too (`accept --refresh`). Quotes are only
/// judged after a run that completed: a cell that never ran published nothing.
pub fn compare_values(chapter: &Chapter, run: &RunOutput, recorded: &[Recorded], exact: bool) -> ValueReport {
    let mut report = ValueReport::default();
    if !run.completed() {
        return report;
    }
    let published = collect(chapter, run, recorded, &mut report);
    let mut quoted = std::collections::BTreeSet::new();
    for quote in &chapter.quotes {
        let at = chapter.location(quote.line).with_column(quote.column);
        let Some(value) = published.get(&quote.name) else {
            let mut d = Diagnostic::error(at, format!("no value named `{}` is published by this chapter", quote.name))
                .with_span(quote.span.clone(), "");
            d = match crate::messages::closest(&quote.name, published.keys().map(String::as_str)) {
                Some(near) => d.with_help(format!("did you mean `{near}`?")),
                None => d.with_help("publish it from a run cell: `tangle_runtime::value(\"NAME\", text)`"),
            };
            report.diagnostics.push(d);
            continue;
        };
        quoted.insert(quote.name.clone());
        if value.twice {
            continue;
        }
        let vary = if exact { Vary::Exact } else { value.vary };
        let actual = normalize_spaces(&value.text);
        if !same(&quote.shown, &actual, vary) {
            report.drifts.push(ValueDrift {
                diff: sentence_diff(chapter, quote, &actual),
                quote: quote.clone(),
                actual,
                location: at,
            });
        }
    }
    for (name, value) in &published {
        if !quoted.contains(name) {
            let what = match &value.origin {
                Origin::Cell(_) => format!("value `{name}` is published but no sentence quotes it"),
                Origin::File(file, _) => format!("value `{name}` of {} is not quoted by any sentence", file.display()),
            };
            report.diagnostics.push(Diagnostic::warning(value.origin.location().clone(), what).with_help(format!(
                "quote it as `{{{{#value {name} {}}}}}`, or stop publishing it",
                crate::markdown::escape::quote(&normalize_spaces(&value.text))
            )));
        }
    }
    report
}

/// The published values by name; a name published twice is an error.
fn collect(
    chapter: &Chapter,
    run: &RunOutput,
    recorded: &[Recorded],
    report: &mut ValueReport,
) -> BTreeMap<String, Published> {
    // (A name published twice is reported once; its quotes are not judged against either.)
    let mut published: BTreeMap<String, Published> = BTreeMap::new();
    let run_cells: Vec<_> = chapter.run_cells().collect();
    let mut add = |name: &str, value: Published, report: &mut ValueReport| {
        if let Some(first) = published.get_mut(name) {
            first.twice = true;
            report.diagnostics.push(
                Diagnostic::error(
                    value.origin.location().clone(),
                    format!("value `{name}` is published twice (first at {})", first.origin.location()),
                )
                .with_help("give each value its own name"),
            );
        } else {
            published.insert(name.to_string(), value);
        }
    };
    for v in &run.values {
        let location = match v.at {
            Some((line, column)) => chapter.location(line).with_column(column),
            None => chapter.location(v.cell.and_then(|c| run_cells.get(c)).map_or(1, |c| c.code_line)),
        };
        let vary = Vary::from_field(&v.vary).unwrap_or(Vary::Exact);
        add(&v.name, Published { text: v.text.clone(), vary, origin: Origin::Cell(location), twice: false }, report);
    }
    for file in recorded {
        for (name, text) in &file.values {
            let origin = Origin::File(file.file.clone(), chapter.location(file.line));
            add(name, Published { text: text.clone(), vary: Vary::Exact, origin, twice: false }, report);
        }
    }
    published
}

/// Whether the shown text is the value, under how it may vary. A quote never filled in
/// (`{{#value name}}`) differs from any value.
fn same(shown: &str, actual: &str, vary: Vary) -> bool {
    match vary {
        _ if shown.is_empty() => actual.is_empty(),
        Vary::Exact => shown == actual,
        Vary::Within(rtol) => matches(shown, actual, &OutputSpec { redactions: Vec::new(), rtol: Some(rtol) }),
        Vary::Measured => true,
    }
}

fn normalize_spaces(text: &str) -> String {
    normalize(text).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The quote's line(s), as they are and as `accept` would write them.
fn sentence_diff(chapter: &Chapter, quote: &ValueQuote, actual: &str) -> Diff {
    let src = chapter.source();
    let start = src[..quote.span.start].rfind('\n').map_or(0, |i| i + 1);
    let end = src[quote.span.end..].find('\n').map_or(src.len(), |i| quote.span.end + i);
    let before = src[start..end].trim_end_matches('\r');
    let replacement = replacement(quote, actual, src);
    let after = format!(
        "{}{}{}",
        &src[start..quote.shown_span.start],
        replacement,
        src[quote.shown_span.end..end].trim_end_matches('\r')
    );
    Diff::new(&format!("{before}\n"), &format!("{after}\n"), quote.line)
}

/// The text that replaces a quote's shown span: the value, quoted for the source
/// ([`crate::markdown::escape::quote`]), after a space when the quote had shown nothing yet
/// (`{{#value name}}` → `{{#value name 42}}`).
pub(crate) fn replacement(quote: &ValueQuote, actual: &str, source: &str) -> String {
    let needs_space = quote.shown_span.is_empty() && !source[..quote.shown_span.start].ends_with(char::is_whitespace);
    let quoted = crate::markdown::escape::quote(actual);
    if needs_space { format!(" {quoted}") } else { quoted }
}
