//! Stage 1, **parse**: a chapter's Markdown → [`Chapter`]. All knowledge of Markdown lives here.
//!
//! pulldown-cmark finds the fenced blocks and their byte spans; this module classifies them
//! (save, test and run cells, output blocks), attaches each output block to the cell before it,
//! reads `<!-- tangle: ... -->` directives, and rejects malformed input with a file and line.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Tag, TagEnd};
use regex::Regex;

use crate::diagnostic::{InputError, LineIndex};
use crate::model::{Book, Cell, CellKind, Chapter, Directives, Location, OutputBlock, OutputSpec, Redaction};

/// Reads every `chNN.md` under `root/book/src`, in chapter order.
pub fn load_book(root: &Path) -> anyhow::Result<Book> {
    let src = root.join("book/src");
    let mut files: Vec<(String, PathBuf)> = std::fs::read_dir(&src)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", src.display()))?
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let name = chapter_name(&path)?;
            Some((name, path))
        })
        .collect();
    files.sort();
    let mut chapters = Vec::new();
    for (name, path) in files {
        let bytes = std::fs::read(&path)?;
        let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        chapters.push(parse_chapter(&name, &rel, bytes)?);
    }
    Ok(Book { chapters })
}

/// What a Rust cell is for, from its first line (`// @save`, `// @test`, anything else).
pub fn cell_kind(code: &str) -> CellKind {
    match code.lines().next().map(str::trim) {
        Some("// @save") => CellKind::Save,
        Some("// @test") => CellKind::Test,
        _ => CellKind::Run,
    }
}

/// The byte ranges of the fenced code blocks that stand at the top level of `markdown` (not
/// inside a list or a quote), as pulldown-cmark finds them: the renderer splits chapters on
/// these, so that it and the rest of tangle agree on what is a fence.
pub fn top_level_fences(markdown: &str) -> Vec<Range<usize>> {
    let mut depth = 0usize;
    let mut fences = Vec::new();
    for (event, range) in pulldown_cmark::Parser::new_ext(markdown, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) if depth == 0 => fences.push(range),
            Event::Start(Tag::BlockQuote(_) | Tag::List(_) | Tag::Item | Tag::FootnoteDefinition(_)) => depth += 1,
            Event::End(TagEnd::BlockQuote(_) | TagEnd::List(_) | TagEnd::Item | TagEnd::FootnoteDefinition) => {
                depth = depth.saturating_sub(1)
            }
            _ => {}
        }
    }
    fences
}

/// `ch06` for `.../ch06.md`; `None` for pages that are not chapters.
pub fn chapter_name(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    (path.extension()? == "md" && is_chapter_name(stem)).then(|| stem.to_string())
}

/// Whether `name` has the form of a chapter (`ch` and two digits), as a file stem or a crate.
pub fn is_chapter_name(name: &str) -> bool {
    name.len() == 4 && name.starts_with("ch") && name[2..].bytes().all(|b| b.is_ascii_digit())
}

/// Parses one chapter file. `path` is relative to the project root and used in messages.
pub fn parse_chapter(name: &str, path: &Path, bytes: Vec<u8>) -> Result<Chapter, InputError> {
    let source = String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..valid].iter().filter(|&&b| b == b'\n').count() + 1;
        InputError::new(
            Location { file: path.to_path_buf(), line },
            "the file is not valid UTF-8 (re-save it as UTF-8)",
        )
    })?;
    Parser::new(path, &source).run().map(|(cells, directives)| Chapter {
        name: name.to_string(),
        path: path.to_path_buf(),
        source: source.clone(),
        cells,
        directives,
    })
}

/// A fenced block as pulldown-cmark reports it.
struct Fence {
    info: String,
    span: Range<usize>,
    text: String,
}

struct Parser<'a> {
    path: &'a Path,
    source: &'a str,
    lines: LineIndex,
}

impl<'a> Parser<'a> {
    fn new(path: &'a Path, source: &'a str) -> Self {
        Parser { path, source, lines: LineIndex::new(source) }
    }

    fn loc(&self, offset: usize) -> Location {
        Location { file: self.path.to_path_buf(), line: self.lines.line(offset) }
    }

    fn error(&self, offset: usize, message: impl Into<String>) -> InputError {
        InputError::new(self.loc(offset), message)
    }

    fn run(self) -> Result<(Vec<Cell>, Directives), InputError> {
        let mut cells: Vec<Cell> = Vec::new();
        let mut directives = Directives::default();
        let mut section = String::new();
        let mut heading: Option<(HeadingLevel, String)> = None;
        let mut fence: Option<Fence> = None;

        let options = Options::ENABLE_TABLES | Options::ENABLE_FOOTNOTES | Options::ENABLE_MATH;
        for (event, range) in pulldown_cmark::Parser::new_ext(self.source, options).into_offset_iter() {
            match event {
                Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                    fence = Some(Fence { info: info.to_string(), span: range, text: String::new() });
                }
                Event::Text(text) if fence.is_some() => {
                    fence.as_mut().unwrap().text.push_str(&text);
                }
                Event::End(TagEnd::CodeBlock) => {
                    if let Some(f) = fence.take() {
                        self.fence(f, &section, &mut cells)?;
                    }
                }
                Event::Start(Tag::Heading { level, .. }) => heading = Some((level, String::new())),
                Event::Text(text) | Event::Code(text) if heading.is_some() => {
                    heading.as_mut().unwrap().1.push_str(&text);
                }
                Event::End(TagEnd::Heading(_)) => {
                    if let Some((level, text)) = heading.take()
                        && level <= HeadingLevel::H2
                    {
                        section = text;
                    }
                }
                Event::Html(html) | Event::InlineHtml(html) => {
                    self.directive(&html, range.start, &mut directives)?;
                }
                _ => {}
            }
        }
        Ok((cells, directives))
    }

    /// Classifies one fenced block and adds it to the cells.
    fn fence(&self, fence: Fence, section: &str, cells: &mut Vec<Cell>) -> Result<(), InputError> {
        let mut words = fence.info.split(|c: char| c == ',' || c.is_whitespace()).filter(|w| !w.is_empty());
        let lang = words.next().unwrap_or("");
        let block = &self.source[fence.span.clone()];
        let closed = is_closed(block);
        if !closed && (lang == "rust" || lang == "output") {
            return Err(self.error(fence.span.start, "this code block is never closed (add the closing ``` fence)"));
        }
        match lang {
            "rust" if !fence.info.split(|c: char| c == ',' || c.is_whitespace()).any(|w| w == "ignore") => {
                cells.push(self.cell(fence, section)?);
            }
            "output" => self.attach_output(fence, cells)?,
            _ => {}
        }
        Ok(())
    }

    fn cell(&self, fence: Fence, section: &str) -> Result<Cell, InputError> {
        let first = fence.text.lines().next().unwrap_or("").trim();
        let marker = first.strip_prefix("//").map(str::trim_start).filter(|m| m.starts_with('@'));
        if let Some(marker) = marker.filter(|_| !matches!(first, "// @save" | "// @test")) {
            return Err(self.error(
                fence.span.start,
                format!("unknown cell marker `{marker}` (the first line must be exactly `// @save` or `// @test`)"),
            ));
        }
        let kind = cell_kind(&fence.text);
        let fence_line = self.lines.line(fence.span.start);
        let end = trim_newline_end(self.source, fence.span.end);
        Ok(Cell {
            kind,
            code_line: fence_line + 1,
            code: fence.text,
            end,
            section: section.to_string(),
            output: None,
        })
    }

    fn attach_output(&self, fence: Fence, cells: &mut [Cell]) -> Result<(), InputError> {
        let start = fence.span.start;
        let Some(cell) = cells.last_mut().filter(|c| self.source[c.end..start].trim().is_empty()) else {
            return Err(self.error(
                start,
                "this output block has no rust cell directly before it (only blank lines may separate them)",
            ));
        };
        if cell.kind != CellKind::Run {
            return Err(
                self.error(start, "an output block may only follow a run cell, not a `// @save` or `// @test` cell")
            );
        }
        if cell.output.is_some() {
            return Err(self.error(start, "this cell already has an output block"));
        }
        let block = &self.source[fence.span.clone()];
        // The info string as written: CommonMark would turn `\(` into `(`, and redaction
        // regexes need their backslashes.
        let raw_info = block.lines().next().unwrap_or("").trim().trim_start_matches(['`', '~']);
        let spec = self.output_spec(raw_info, start)?;
        let open_len = block.find('\n').map_or(block.len(), |i| i + 1);
        let content_start = fence.span.start + open_len;
        let close_start =
            fence.span.start + block.trim_end_matches(['\n', '\r']).rfind('\n').map_or(open_len, |i| i + 1);
        let content = content_start..close_start.max(content_start);
        cell.output = Some(OutputBlock {
            span: fence.span.start..trim_newline_end(self.source, fence.span.end),
            content,
            line: self.lines.line(start),
            text: fence.text,
            spec,
        });
        Ok(())
    }

    /// Parses `output NAME="regex" rtol=0.05` into an [`OutputSpec`].
    fn output_spec(&self, info: &str, at: usize) -> Result<OutputSpec, InputError> {
        let mut spec = OutputSpec::default();
        let rest = info.trim_start().strip_prefix("output").unwrap_or("");
        let attrs = attributes(rest).map_err(|m| self.error(at, m))?;
        for (i, (key, _)) in attrs.iter().enumerate() {
            if attrs[..i].iter().any(|(k, _)| k == key) {
                return Err(self.error(at, format!("`{key}` is given twice on this output block")));
            }
        }
        for (key, value) in attrs {
            if key == "rtol" {
                let rtol: f64 = value
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| self.error(at, format!("rtol must be a non-negative number, not `{value}`")))?;
                spec.rtol = Some(rtol);
            } else if key.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') {
                let regex = Regex::new(&value)
                    .map_err(|e| self.error(at, format!("the redaction {key} is not a valid regex: {e}")))?;
                spec.redactions.push(Redaction { name: key, regex });
            } else {
                return Err(self.error(
                    at,
                    format!("unknown output attribute `{key}` (use rtol=… or an upper-case redaction name)"),
                ));
            }
        }
        Ok(spec)
    }

    fn directive(&self, html: &str, at: usize, directives: &mut Directives) -> Result<(), InputError> {
        for found in directive_regex().captures_iter(html) {
            let (word, arg) = (&found[1], found[2].trim());
            match word {
                "data" => {
                    for path in arg.split_whitespace().map(PathBuf::from) {
                        if !path.is_relative() || path.components().any(|c| c == std::path::Component::ParentDir) {
                            return Err(self.error(
                                at,
                                format!("data file `{}` must be a path inside the repository, relative to its root", path.display()),
                            ));
                        }
                        directives.data.push((path, self.lines.line(at)));
                    }
                }
                "timeout" => {
                    let seconds: u64 = arg.parse().ok().filter(|&s| s > 0).ok_or_else(|| {
                        self.error(at, format!("`tangle: timeout` takes a whole number of seconds above 0, not `{arg}`"))
                    })?;
                    directives.timeout = Some(Duration::from_secs(seconds));
                }
                other => {
                    return Err(self.error(at, format!("unknown tangle directive `{other}` (known: data, timeout)")));
                }
            }
        }
        Ok(())
    }
}

fn directive_regex() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| Regex::new(r"<!--\s*tangle:\s*([a-z-]+)\s*(.*?)\s*-->").unwrap())
}

/// Whether a fenced block's text ends with a closing fence of the same kind.
fn is_closed(block: &str) -> bool {
    let opening = block.trim_start();
    let ch = opening.chars().next().unwrap_or('`');
    let count = opening.chars().take_while(|&c| c == ch).count();
    let mut lines = block.trim_end_matches(['\n', '\r']).lines();
    lines.next();
    lines.last().is_some_and(|last| {
        let t = last.trim();
        t.len() >= count && t.chars().all(|c| c == ch)
    })
}

/// Moves `end` back over a trailing newline, so spans end at the closing fence.
fn trim_newline_end(source: &str, end: usize) -> usize {
    let mut end = end;
    while end > 0 && matches!(source.as_bytes()[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    end
}

/// Splits `key=value key="quoted value"` pairs.
fn attributes(mut s: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    loop {
        s = s.trim_start();
        if s.is_empty() {
            return Ok(out);
        }
        let eq = s.find('=').ok_or_else(|| format!("expected key=value in the output line, found `{s}`"))?;
        let key = s[..eq].trim().to_string();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(format!("expected key=value in the output line, found `{s}`"));
        }
        s = &s[eq + 1..];
        let value;
        if let Some(rest) = s.strip_prefix('"') {
            let mut v = String::new();
            let mut chars = rest.char_indices();
            let mut close = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => match chars.next() {
                        Some((_, '"')) => v.push('"'),
                        Some((_, other)) => {
                            v.push('\\');
                            v.push(other);
                        }
                        None => v.push('\\'),
                    },
                    '"' => {
                        close = Some(i);
                        break;
                    }
                    c => v.push(c),
                }
            }
            let close = close.ok_or_else(|| format!("unterminated quote in the value of `{key}`"))?;
            value = v;
            s = &rest[close + 1..];
        } else {
            let end = s.find(char::is_whitespace).unwrap_or(s.len());
            value = s[..end].to_string();
            s = &s[end..];
        }
        out.push((key, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_split_quoted_values() {
        let attrs = attributes(r#" TPS="([0-9.]+) tok/s" rtol=0.1 Q="a \"b\"""#).unwrap();
        assert_eq!(
            attrs,
            vec![
                ("TPS".into(), "([0-9.]+) tok/s".into()),
                ("rtol".into(), "0.1".into()),
                ("Q".into(), "a \"b\"".into())
            ]
        );
        assert!(attributes("novalue").is_err());
        assert!(attributes(r#"A="open"#).is_err());
    }

    #[test]
    fn chapter_names() {
        assert_eq!(chapter_name(Path::new("book/src/ch06.md")).as_deref(), Some("ch06"));
        assert_eq!(chapter_name(Path::new("book/src/building.md")), None);
        assert_eq!(chapter_name(Path::new("book/src/ch6.md")), None);
    }
}
