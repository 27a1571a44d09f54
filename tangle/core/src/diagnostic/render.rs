//! Rendering diagnostics as rustc does, with annotate-snippets: a headline, then the file's
//! line(s) with the column underlined, then help and notes. Colour only where it helps: on a
//! terminal, never in a pipe or with `NO_COLOR` set.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use annotate_snippets::{AnnotationKind, Level, Renderer, Snippet};

use super::finding::{Diagnostic, Label, NoteKind, Severity};

/// Whether to colour what we print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    Colored,
}

impl Style {
    /// Colours when stderr is a terminal and `NO_COLOR` is unset (<https://no-color.org>).
    pub fn for_stderr() -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        if !no_color && std::io::stderr().is_terminal() { Style::Colored } else { Style::Plain }
    }

    /// The same rule for stdout.
    pub fn for_stdout() -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        if !no_color && std::io::stdout().is_terminal() { Style::Colored } else { Style::Plain }
    }
}

/// The texts of the files diagnostics point into, read once from the project root.
pub struct Sources {
    root: PathBuf,
    files: Mutex<HashMap<PathBuf, Option<String>>>,
}

impl Sources {
    pub fn new(root: &Path) -> Self {
        Sources { root: root.to_path_buf(), files: Mutex::new(HashMap::new()) }
    }

    /// A file's text (`None` if it cannot be read as UTF-8).
    pub fn get(&self, file: &Path) -> Option<String> {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        files.entry(file.to_path_buf()).or_insert_with(|| std::fs::read_to_string(self.root.join(file)).ok()).clone()
    }
}

impl Diagnostic {
    /// Renders the diagnostic with an excerpt of its file, as rustc would.
    pub fn render(&self, sources: &Sources, style: Style) -> String {
        render(self, sources, style)
    }
}

/// The notes printed under `d`: where the file it points into is included first, then its own.
fn notes_of(d: &Diagnostic) -> Vec<(NoteKind, String)> {
    let included =
        d.included_at.as_ref().map(|at| (NoteKind::Note, format!("this line is included into the chapter at {at}")));
    included.into_iter().chain(d.notes.iter().cloned()).collect()
}

/// Renders `d` with an excerpt of its file, or as one line when the file is unknown.
fn render(d: &Diagnostic, sources: &Sources, style: Style) -> String {
    let level = match d.severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
    };
    let mut title = level.primary_title(d.message.as_str());
    if let Some(code) = &d.code {
        title = title.id(code.as_str());
    }
    let source = d.location.as_ref().and_then(|l| sources.get(&l.file).map(|s| (l, s)));
    let path = d.location.as_ref().map(|l| l.file.display().to_string());
    let primary = source.as_ref().map(|(location, text)| {
        d.primary
            .clone()
            .filter(|p| {
                p.range.end <= text.len() && text.is_char_boundary(p.range.start) && text.is_char_boundary(p.range.end)
            })
            .unwrap_or_else(|| {
                // In TOML a key's words are joined by `-` (`line-width`): all of it is the word.
                let toml = location.file.extension().is_some_and(|e| e == "toml");
                Label { range: point(text, location.line, location.column, toml), text: String::new() }
            })
    });
    let mut group = match (&source, &primary) {
        (Some((_, text)), Some(primary)) => {
            let mut snippet = Snippet::source(text.as_str())
                .path(path.clone().unwrap_or_default())
                .fold(true)
                .annotation(AnnotationKind::Primary.span(primary.range.clone()).label(non_empty(&primary.text)));
            for label in d.secondary.iter().filter(|l| l.range.end <= text.len()) {
                snippet =
                    snippet.annotation(AnnotationKind::Context.span(label.range.clone()).label(non_empty(&label.text)));
            }
            title.element(snippet)
        }
        // No text to quote (an unreadable file, or no file at all): the headline, then where.
        _ => {
            let mut out = format!("{}: {}", if d.is_error() { "error" } else { "warning" }, d.message);
            if let Some(code) = &d.code {
                out = out.replacen(':', &format!("[{code}]:"), 1);
            }
            if let Some(location) = &d.location {
                out.push_str(&format!("\n  --> {location}"));
            }
            for (kind, text) in &notes_of(d) {
                let word = if *kind == NoteKind::Help { "help" } else { "note" };
                out.push_str(&format!("\n   = {word}: {text}"));
            }
            return out;
        }
    };
    let notes = notes_of(d);
    for (kind, text) in &notes {
        let level = match kind {
            NoteKind::Help => Level::HELP,
            NoteKind::Note => Level::NOTE,
        };
        group = group.element(level.message(text.as_str()));
    }
    let renderer = match style {
        Style::Plain => Renderer::plain(),
        Style::Colored => Renderer::styled(),
    };
    renderer.render(&[group])
}

fn non_empty(text: &str) -> Option<&str> {
    (!text.is_empty()).then_some(text)
}

/// The byte range of one character at `line:column` (or of the line's first non-blank
/// character when the column is unknown), or of the word starting there; `dashed`: words may
/// hold `-`, as TOML's keys do.
fn point(text: &str, line: usize, column: Option<usize>, dashed: bool) -> std::ops::Range<usize> {
    let start = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum::<usize>().min(text.len());
    let line_text = text[start..].split('\n').next().unwrap_or("");
    let offset = match column {
        Some(c) => line_text.char_indices().nth(c.saturating_sub(1)).map_or(line_text.len(), |(i, _)| i),
        None => line_text.len() - line_text.trim_start().len(),
    };
    let at = start + offset;
    // A whole word when the position starts one (`ch09` in `ch09::f`), else one character.
    let word =
        text[at..].find(|c: char| !(c.is_alphanumeric() || c == '_' || dashed && c == '-')).unwrap_or(text.len() - at);
    let len = match word {
        0 => text[at..].chars().next().filter(|c| *c != '\n' && *c != '\r').map_or(0, char::len_utf8),
        n => n,
    };
    at..at + len
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Location;
    use std::path::Path;

    fn sources(file: &str, text: &str) -> (tempfile::TempDir, Sources) {
        let dir = tempfile::tempdir().unwrap();
        crate::fsutil::put(&dir.path().join(file), text);
        let s = Sources::new(dir.path());
        (dir, s)
    }

    #[test]
    fn excerpt_with_a_caret_under_the_column() {
        let text = "# 1 One\n\n```rust\nlet y = sqaure(2);\n```\n";
        let (_dir, src) = sources("book/src/ch01.md", text);
        let at = text.find("sqaure").unwrap();
        let d = Diagnostic::error(Location::new("book/src/ch01.md", 4).with_column(9), "cannot find function `sqaure`")
            .with_span(at..at + 6, "not found in this scope")
            .with_help("a function with a similar name exists: `square`");
        let out = d.render(&src, Style::Plain);
        assert!(out.starts_with("error: cannot find function `sqaure`"), "{out}");
        assert!(out.contains("--> book/src/ch01.md:4:9"), "{out}");
        assert!(out.contains("4 | let y = sqaure(2);"), "{out}");
        assert!(out.contains("^^^^^^ not found in this scope"), "{out}");
        assert!(out.contains("= help: a function with a similar name exists: `square`"), "{out}");
    }

    #[test]
    fn a_line_without_column_points_at_its_first_word() {
        let (_dir, src) = sources("a.md", "one\n  two three\n");
        let d = Diagnostic::error(Location::new("a.md", 2), "bad");
        let out = d.render(&src, Style::Plain);
        assert!(out.contains("--> a.md:2:3"), "{out}");
        assert!(out.contains("2 |   two three"), "{out}");
        // A key of book.toml is underlined whole, dashes and all; in code a `-` ends the word.
        let (_dir, src) = sources("book.toml", "[preprocessor.tangle]\nline-width = \"wide\"\n");
        let out = Diagnostic::error(Location::new("book.toml", 2), "bad").render(&src, Style::Plain);
        assert!(out.lines().any(|l| l == "  | ^^^^^^^^^^"), "{out}");
        let (_dir, src) = sources("a.rs", "x-1\n");
        let out = Diagnostic::error(Location::new("a.rs", 1), "bad").render(&src, Style::Plain);
        assert!(out.lines().any(|l| l == "  | ^"), "{out}");
    }

    #[test]
    fn unknown_file_still_names_the_place() {
        let src = Sources::new(Path::new("/nonexistent"));
        let d = Diagnostic::error(Location::new("book/src/x.md", 3), "gone");
        let out = d.render(&src, Style::Plain);
        assert_eq!(out, "error: gone\n  --> book/src/x.md:3");
    }
}
