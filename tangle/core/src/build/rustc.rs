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
}

/// A generated position seen from the chapter.
struct Mapped<'g> {
    chapter: &'g Arc<Chapter>,
    line: usize,
    column: usize,
    range: std::ops::Range<usize>,
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
            // Outside the chapters: a warning there is not the author's business; an error is
            // shown as rustc rendered it.
            if severity == Severity::Warning {
                return None;
            }
            let text = d.rendered.clone().unwrap_or_else(|| d.message.clone());
            return Some(Diagnostic::new(severity, None, text.trim_end().to_string()));
        };
        let chapter = mapped.chapter;
        let location = Location::new(chapter.path.clone(), mapped.line).with_column(mapped.column);
        let mut out = Diagnostic::new(severity, Some(location), d.message.clone());
        out.code = d.code.as_ref().map(|c| c.code.clone());
        out = out.with_span(mapped.range.clone(), primary.and_then(|s| s.label.clone()).unwrap_or_default());
        for span in d.spans.iter().filter(|s| !s.is_primary) {
            if let Some(m) = self.position(span).filter(|m| Arc::ptr_eq(m.chapter, mapped.chapter)) {
                out = out.with_secondary(m.range, span.label.clone().unwrap_or_default());
            }
        }
        for child in &d.children {
            let kind = match child.level {
                DiagnosticLevel::Help => NoteKind::Help,
                DiagnosticLevel::Note => NoteKind::Note,
                _ => continue,
            };
            let mut text = child.message.clone();
            if let Some(suggestion) = child.spans.iter().find_map(|s| s.suggested_replacement.as_ref())
                && !suggestion.is_empty()
            {
                text = format!("{text}: `{suggestion}`");
            }
            if let Some(at) = child.spans.iter().find_map(|s| self.position(s))
                && (!Arc::ptr_eq(at.chapter, mapped.chapter) || at.line != mapped.line)
            {
                text = format!("{text} ({}:{}:{})", at.chapter.path.display(), at.line, at.column);
            }
            out.notes.push((kind, text));
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
        let (chapter, line, column) = loop {
            let file = self.generated_path(span);
            if let Some(found) = self.generated.chapter_position(&file, span.line_start, span.column_start) {
                break found;
            }
            span = &span.expansion.as_ref()?.span;
        };
        let source = chapter.source();
        let start = byte_at(source, line, column);
        let width =
            if span.line_end == span.line_start { span.column_end.saturating_sub(span.column_start) } else { 1 };
        let end = source[start..].char_indices().nth(width).map_or(source.len(), |(i, _)| start + i);
        let end = source[start..end].find(['\n', '\r']).map_or(end, |i| start + i);
        Some(Mapped { chapter, line, column, range: start..end })
    }
}

/// The byte offset of one-based `line`, one-based character `column`, in `text`.
fn byte_at(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    let line_text = text[start.min(text.len())..].split('\n').next().unwrap_or("");
    start + line_text.char_indices().nth(column.saturating_sub(1)).map_or(line_text.len(), |(i, _)| i)
}
