//! The one Markdown front end. Every stage that reads a chapter (parse, accept's splicing, the
//! style checks, the renderer, value quotes) reads it through this module's [`Document`]: one
//! pulldown-cmark parse with the same options, kept with byte offsets into the file, so that
//! containers (list items, blockquotes, nested in each other), fence kinds and lengths,
//! indentation, CRLF and a byte-order mark are handled by the CommonMark rules and never by
//! scanning lines by hand.
//!
//! A document owns its text (shared, [`Arc<str>`]), so the parse made when the book is loaded
//! travels with the chapter ([`crate::model::Chapter::doc`], [`crate::model::Book::documents`])
//! to every later stage and to the renderer: a command parses each file once. [`parses`]
//! counts the parses of the process, which a test holds to one per file for `tangle book`.
//!
//! A [`Document`] lists what the stages look for: fenced blocks ([`Fence`]), headings, HTML
//! comments, text-bearing leaf blocks (paragraphs, headings, table cells) with their protected
//! inline spans (code, math, HTML, links), blockquotes and `{{#name ...}}` directives. Writers
//! never print a document back: they replace byte ranges of the original text ([`Edits`]), so
//! every byte they do not mean to change stays as it was. [`escape`] writes and reads a quoted
//! value's text in the source.

mod edit;
pub mod escape;
mod info;

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Tag, TagEnd};

pub use edit::Edits;
pub use info::{Attribute, FenceInfo, rustdoc_tests};

/// The extensions every stage parses with. The renderer's mdBook parses with tables,
/// footnotes, strikethrough and smart punctuation too; math is ours.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_MATH
        | Options::ENABLE_HEADING_ATTRIBUTES
}

/// Maps byte offsets of a text to one-based lines and columns.
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        LineIndex { starts }
    }

    /// The one-based line that contains byte `offset`.
    pub fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset)
    }

    /// The byte offset where one-based `line` starts (the end of the text past the last line).
    pub(crate) fn line_start(&self, line: usize) -> usize {
        self.starts.get(line.saturating_sub(1)).copied().unwrap_or(usize::MAX)
    }

    /// One-based line and column (in characters) of byte `offset` of `text`, the text this
    /// index was made from.
    pub fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let offset = offset.min(text.len());
        let line = self.line(offset);
        let start = self.line_start(line).min(offset);
        (line, text[start..offset].chars().count() + 1)
    }
}

/// A fenced code block, with everything a writer needs to replace parts of it in place.
#[derive(Debug, Clone)]
pub struct Fence {
    /// From the first fence character to the end of the closing fence (or of the content, when
    /// the block is never closed); excludes the container prefix before the opening fence and
    /// the newline after the closing one.
    pub span: Range<usize>,
    /// Where the lines between the fences start and end: from the start of the line after the
    /// opening fence to the start of the closing fence's line. Container prefixes included.
    pub content: Range<usize>,
    /// The info string as written (backslashes intact), trimmed.
    pub info_raw: String,
    pub info: Result<FenceInfo, String>,
    /// `` ` `` or `~`, and how many.
    pub marker: char,
    pub marker_len: usize,
    /// What starts every line of the block after the first in the file: the containers'
    /// prefixes (`> `, a list item's indentation) and the fence's own indentation. A writer
    /// puts it before every line it adds inside the block.
    pub prefix: String,
    /// The code between the fences, container prefixes and the fence's indentation removed,
    /// line ends as `\n`.
    pub text: String,
    /// One-based line of the opening fence.
    pub line: usize,
    pub closed: bool,
}

impl Fence {
    /// The language word, or "" when the info string does not parse.
    pub fn lang(&self) -> &str {
        self.info.as_ref().map(|i| i.lang.as_str()).unwrap_or("")
    }

    /// The one-based line of the first line between the fences.
    pub(crate) fn body_line(&self) -> usize {
        self.line + 1
    }
}

/// A heading (ATX or setext).
#[derive(Debug, Clone)]
pub struct Heading {
    pub level: u8,
    /// The heading's text, inline markup removed (code spans keep their text).
    pub text: String,
    pub span: Range<usize>,
}

/// An HTML comment `<!-- ... -->`, from a block of HTML or inline.
#[derive(Debug, Clone)]
pub struct Comment {
    /// What is between `<!--` and `-->`, container prefixes removed.
    pub inner: String,
    /// The source span of the HTML it sits in (the whole HTML block, or the inline HTML run).
    pub span: Range<usize>,
    /// Whether the comment is all of that HTML (a block that holds only this comment).
    pub alone: bool,
    /// One-based line of `<!--`.
    pub line: usize,
    /// Whether a `-->` ends it (else it runs to the end of its HTML, as a browser reads it).
    pub closed: bool,
}

/// What kind of leaf block holds inline text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafKind {
    Paragraph,
    Heading(u8),
    TableCell,
}

/// A block whose content is inline text: where prose lives.
#[derive(Debug, Clone)]
pub struct Leaf {
    pub kind: LeafKind,
    pub span: Range<usize>,
}

/// An inline span that prose scanners must leave alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InlineKind {
    Code,
    InlineMath(String),
    DisplayMath(String),
    Html,
    /// A whole link or image, text and destination.
    Link,
}

#[derive(Debug, Clone)]
pub struct Inline {
    pub kind: InlineKind,
    pub span: Range<usize>,
}

/// A blockquote.
#[derive(Debug, Clone)]
pub struct Quote {
    pub span: Range<usize>,
    pub depth: usize,
}

/// mdBook's own directives, which it expands after tangle.
pub const MDBOOK_DIRECTIVES: &[&str] = &["include", "rustdoc_include", "playground", "title"];

/// tangle's directives, which its renderer expands.
pub const TANGLE_DIRECTIVES: &[&str] = &["figure", "widget", "ref", "value", "bibliography"];

/// A `{{#name args}}` directive in prose (outside code spans).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    pub name: String,
    /// The text between the name and the closing `}}`, untrimmed.
    pub args: Range<usize>,
    pub span: Range<usize>,
}

/// How many documents this process has parsed ([`Document::parse`]): what `TANGLE_TIMINGS`
/// reports at the end of a command, and what the test of one parse per chapter counts.
pub fn parses() -> usize {
    PARSES.load(Ordering::Relaxed)
}

static PARSES: AtomicUsize = AtomicUsize::new(0);

/// A parsed chapter: the text and every structure the stages look at, with byte spans.
#[derive(Debug)]
pub struct Document {
    source: Arc<str>,
    lines: LineIndex,
    pub fences: Vec<Fence>,
    pub headings: Vec<Heading>,
    pub comments: Vec<Comment>,
    pub leaves: Vec<Leaf>,
    pub inlines: Vec<Inline>,
    pub quotes: Vec<Quote>,
    pub directives: Vec<Directive>,
    /// `{{#name` openings whose block ends before a closing `}}` (span: the opening and name).
    pub unclosed: Vec<Directive>,
}

/// A UTF-8 byte-order mark: skipped by the parse (a heading after it is still a heading) and
/// kept in the file.
const BOM: &str = "\u{feff}";

impl Document {
    pub fn parse(source: impl Into<Arc<str>>) -> Document {
        PARSES.fetch_add(1, Ordering::Relaxed);
        let source: Arc<str> = source.into();
        let start = if source.starts_with(BOM) { BOM.len() } else { 0 };
        let lines = LineIndex::new(&source);
        let mut doc = Document {
            source,
            lines,
            fences: Vec::new(),
            headings: Vec::new(),
            comments: Vec::new(),
            leaves: Vec::new(),
            inlines: Vec::new(),
            quotes: Vec::new(),
            directives: Vec::new(),
            unclosed: Vec::new(),
        };
        Builder::default().run(&mut doc, start);
        doc.inlines.sort_by_key(|i| i.span.start);
        doc.leaves.sort_by_key(|l| l.span.start);
        (doc.directives, doc.unclosed) = find_directives(&doc);
        doc
    }

    /// The text the document was parsed from, byte for byte.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// One-based line and column (in characters) of byte `offset`.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        self.lines.line_col(&self.source, offset)
    }

    pub(crate) fn line_index(&self) -> &LineIndex {
        &self.lines
    }

    /// The byte offset where `offset`'s line starts.
    pub(crate) fn line_start_of(&self, offset: usize) -> usize {
        self.lines.line_start(self.lines.line(offset))
    }

    /// The prefix that a line added at `offset`'s nesting must carry: the text before
    /// `offset` on its line, with list markers turned into spaces (`1. ` → `   `, `> - ` →
    /// `>   `). See [`continuation`].
    pub(crate) fn prefix_at(&self, offset: usize) -> String {
        continuation(&self.source[self.line_start_of(offset)..offset])
    }

    /// The prefix every line of the block holding `offset` carries (`> `, a list item's
    /// indentation): what text inserted there must put before each new line. Inside prose it
    /// is the prefix of the paragraph's first line, not the words before `offset`.
    pub fn block_prefix(&self, offset: usize) -> String {
        let leaf = self.leaves.iter().rfind(|l| l.span.start <= offset && offset < l.span.end.max(l.span.start + 1));
        self.prefix_at(leaf.map_or(offset, |l| l.span.start))
    }

    /// The protected inline spans that overlap `range`, in order.
    pub(crate) fn inlines_in(&self, range: Range<usize>) -> impl Iterator<Item = &Inline> {
        let first = self.inlines.partition_point(|i| i.span.end <= range.start);
        self.inlines[first..].iter().take_while(move |i| i.span.start < range.end)
    }

    /// Whether byte `offset` lies inside a code span.
    pub(crate) fn in_code_span(&self, offset: usize) -> bool {
        self.inlines_in(offset..offset + 1).any(|i| i.kind == InlineKind::Code && i.span.contains(&offset))
    }

    /// The parts of `leaf` that are plain prose: its span minus protected inline spans and
    /// directives. What scanners for mentions and numbers read.
    pub fn prose_ranges(&self, leaf: &Leaf) -> Vec<Range<usize>> {
        let mut cuts: Vec<Range<usize>> = self.inlines_in(leaf.span.clone()).map(|i| i.span.clone()).collect();
        cuts.extend(
            self.directives
                .iter()
                .filter(|d| d.span.start < leaf.span.end && d.span.end > leaf.span.start)
                .map(|d| d.span.clone()),
        );
        cuts.sort_by_key(|r| r.start);
        let mut out = Vec::new();
        let mut at = leaf.span.start;
        for cut in cuts {
            if cut.start > at {
                out.push(at..cut.start.min(leaf.span.end));
            }
            at = at.max(cut.end);
        }
        if at < leaf.span.end {
            out.push(at..leaf.span.end);
        }
        out
    }

    /// The directives named `name`, in order.
    pub fn directives_named<'d>(&'d self, name: &'d str) -> impl Iterator<Item = &'d Directive> + 'd {
        self.directives.iter().filter(move |d| d.name == name)
    }

    /// The text of a range.
    pub fn text(&self, range: Range<usize>) -> &str {
        &self.source[range]
    }
}

/// Turns the text before something on its line into the prefix of the lines that continue it:
/// blockquote markers and whitespace stay, list markers become spaces of the same width.
pub fn continuation(before: &str) -> String {
    before.chars().map(|c| if c == '>' || c.is_whitespace() { c } else { ' ' }).collect()
}

/// Puts `prefix` before every line of `text` after the first; blank lines get the prefix
/// without its trailing spaces (`>` in a blockquote, nothing in a list item).
pub fn reindent(text: &str, prefix: &str) -> String {
    if prefix.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if i > 0 {
            let blank = line.trim_end_matches(['\n', '\r']).is_empty();
            out.push_str(if blank { prefix.trim_end() } else { prefix });
        }
        out.push_str(line);
    }
    out
}

#[derive(Default)]
struct Builder {
    depth: usize,
    /// Inside a paragraph, heading or table cell.
    in_leaf: bool,
    /// The span so far of inline text that sits directly in a tight list item (pulldown-cmark
    /// emits no paragraph for it); it is a leaf too.
    tight: Option<Range<usize>>,
    fence: Option<OpenFence>,
    heading: Option<(u8, Range<usize>, String)>,
    html: Option<(Range<usize>, String)>,
    inline_html: Option<(Range<usize>, String)>,
}

struct OpenFence {
    span: Range<usize>,
    texts: Vec<Range<usize>>,
    text: String,
}

fn is_inline(tag: &Tag) -> bool {
    matches!(
        tag,
        Tag::Emphasis
            | Tag::Strong
            | Tag::Strikethrough
            | Tag::Link { .. }
            | Tag::Image { .. }
            | Tag::Superscript
            | Tag::Subscript
    )
}

fn is_inline_end(tag: &TagEnd) -> bool {
    matches!(
        tag,
        TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Link
            | TagEnd::Image
            | TagEnd::Superscript
            | TagEnd::Subscript
    )
}

fn level(level: HeadingLevel) -> u8 {
    level as u8
}

impl Builder {
    fn run(mut self, doc: &mut Document, start: usize) {
        let source = doc.source.clone();
        let body = &source[start..];
        for (event, range) in pulldown_cmark::Parser::new_ext(body, options()).into_offset_iter() {
            let range = range.start + start..range.end + start;
            if !matches!(event, Event::InlineHtml(_)) {
                self.flush_inline_html(doc);
            }
            self.track_tight_items(doc, &event, &range);
            match event {
                Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) => {
                    self.fence = Some(OpenFence { span: range, texts: Vec::new(), text: String::new() });
                }
                Event::Text(text) if self.fence.is_some() => {
                    let fence = self.fence.as_mut().expect("checked");
                    fence.texts.push(range);
                    fence.text.push_str(&text);
                }
                Event::End(TagEnd::CodeBlock) => {
                    if let Some(open) = self.fence.take() {
                        doc.fences.push(finish_fence(doc, open));
                    }
                }
                Event::Start(Tag::BlockQuote(_)) => {
                    doc.quotes.push(Quote { span: range, depth: self.depth });
                    self.depth += 1;
                }
                Event::Start(Tag::Item | Tag::FootnoteDefinition(_)) => self.depth += 1,
                Event::End(TagEnd::BlockQuote(_) | TagEnd::Item | TagEnd::FootnoteDefinition) => {
                    self.depth = self.depth.saturating_sub(1)
                }
                Event::Start(Tag::Heading { level: l, .. }) => {
                    self.heading = Some((level(l), range.clone(), String::new()));
                    doc.leaves.push(Leaf { kind: LeafKind::Heading(level(l)), span: range });
                }
                Event::End(TagEnd::Heading(_)) => {
                    if let Some((level, span, text)) = self.heading.take() {
                        doc.headings.push(Heading { level, text: text.trim().to_string(), span });
                    }
                }
                Event::Text(text) if self.heading.is_some() => {
                    self.heading.as_mut().expect("checked").2.push_str(&text);
                }
                Event::Code(text) if self.heading.is_some() => {
                    self.heading.as_mut().expect("checked").2.push_str(&text);
                    doc.inlines.push(Inline { kind: InlineKind::Code, span: range });
                }
                Event::Start(Tag::Paragraph) => doc.leaves.push(Leaf { kind: LeafKind::Paragraph, span: range }),
                Event::Start(Tag::TableCell) => doc.leaves.push(Leaf { kind: LeafKind::TableCell, span: range }),
                Event::Code(_) => doc.inlines.push(Inline { kind: InlineKind::Code, span: range }),
                Event::InlineMath(tex) => {
                    doc.inlines.push(Inline { kind: InlineKind::InlineMath(tex.to_string()), span: range })
                }
                Event::DisplayMath(tex) => {
                    doc.inlines.push(Inline { kind: InlineKind::DisplayMath(tex.to_string()), span: range })
                }
                Event::Start(Tag::Link { .. } | Tag::Image { .. }) => {
                    doc.inlines.push(Inline { kind: InlineKind::Link, span: range })
                }
                Event::FootnoteReference(_) => doc.inlines.push(Inline { kind: InlineKind::Link, span: range }),
                Event::Start(Tag::HtmlBlock) => self.html = Some((range, String::new())),
                Event::Html(text) => {
                    if let Some((_, buf)) = self.html.as_mut() {
                        buf.push_str(&text);
                    }
                }
                Event::End(TagEnd::HtmlBlock) => {
                    if let Some((span, text)) = self.html.take() {
                        push_comments(doc, span, &text, true);
                    }
                }
                Event::InlineHtml(text) => {
                    doc.inlines.push(Inline { kind: InlineKind::Html, span: range.clone() });
                    match self.inline_html.as_mut() {
                        Some((span, buf)) => {
                            span.end = range.end;
                            buf.push_str(&text);
                        }
                        None => self.inline_html = Some((range, text.to_string())),
                    }
                }
                _ => {}
            }
        }
        self.flush_inline_html(doc);
    }

    /// Keeps [`Builder::tight`] up to date: inline events outside any leaf extend it, block
    /// events end it.
    fn track_tight_items(&mut self, doc: &mut Document, event: &Event, range: &Range<usize>) {
        match event {
            Event::Start(Tag::Paragraph | Tag::Heading { .. } | Tag::TableCell) => self.in_leaf = true,
            Event::End(TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::TableCell) => self.in_leaf = false,
            _ => {}
        }
        let inline = match event {
            Event::Text(_) | Event::Code(_) | Event::InlineMath(_) | Event::DisplayMath(_) | Event::InlineHtml(_) => {
                true
            }
            Event::SoftBreak | Event::HardBreak | Event::FootnoteReference(_) => true,
            Event::Start(tag) => is_inline(tag),
            Event::End(tag) => is_inline_end(tag),
            _ => false,
        };
        if inline && !self.in_leaf && self.fence.is_none() && self.depth > 0 {
            match self.tight.as_mut() {
                Some(span) => span.end = span.end.max(range.end),
                None => self.tight = Some(range.clone()),
            }
        } else if !inline && let Some(span) = self.tight.take() {
            doc.leaves.push(Leaf { kind: LeafKind::Paragraph, span });
        }
    }

    fn flush_inline_html(&mut self, doc: &mut Document) {
        if let Some((span, text)) = self.inline_html.take() {
            push_comments(doc, span, &text, false);
        }
    }
}

/// Records the comments in a piece of HTML. `text` is the HTML with container prefixes
/// removed; lines are counted in it from the span's first line.
fn push_comments(doc: &mut Document, span: Range<usize>, text: &str, block: bool) {
    let first_line = doc.lines.line(span.start);
    let mut rest = text;
    let mut consumed = 0;
    while let Some(open) = rest.find("<!--") {
        let after = &rest[open + 4..];
        let (inner, len, closed) = match after.find("-->") {
            Some(close) => (&after[..close], open + 4 + close + 3, true),
            None => (after, rest.len(), false),
        };
        let line = first_line + text[..consumed + open].matches('\n').count();
        let alone = block && text.trim() == format!("<!--{inner}-->");
        doc.comments.push(Comment { inner: inner.to_string(), span: span.clone(), alone, line, closed });
        consumed += len;
        rest = &rest[len..];
    }
}

fn finish_fence(doc: &Document, open: OpenFence) -> Fence {
    let src = doc.source();
    let start = open.span.start;
    let marker = src[start..].chars().next().unwrap_or('`');
    let marker_len = src[start..].chars().take_while(|&c| c == marker).count();
    let open_line_end = src[start..].find('\n').map_or(src.len(), |i| start + i);
    let info_raw = src[start + marker_len..open_line_end].trim().to_string();
    let content_start = (open_line_end + 1).min(src.len());
    // The block is closed when, after its last line of content, a line of at least as many
    // fence characters follows (container prefixes aside).
    let last_text = open.texts.last().map_or(content_start, |r| r.end).max(content_start);
    let tail_end = open.span.end.max(last_text);
    let tail = &src[last_text..tail_end];
    let closing = tail.trim_start_matches(|c: char| c.is_whitespace() || c == '>');
    let run = closing.chars().take_while(|&c| c == marker).count();
    let closed = run >= marker_len && closing[run..].trim().is_empty();
    let (content_end, span_end) = if closed {
        let fence_at = tail_end - closing.len();
        (doc.line_start_of(fence_at).max(content_start), fence_at + closing.trim_end().len())
    } else {
        let end = src[..tail_end].trim_end_matches(['\n', '\r']).len().max(start);
        (tail_end.max(content_start), end)
    };
    let info = FenceInfo::parse(&info_raw);
    Fence {
        span: start..span_end,
        content: content_start..content_end.max(content_start),
        info_raw,
        info,
        marker,
        marker_len,
        prefix: doc.prefix_at(start),
        text: open.text.replace("\r\n", "\n"),
        line: doc.lines.line(start),
        closed,
    }
}

/// Finds `{{#name ...}}` in the leaves, skipping code spans. A directive may hold others (a
/// figure's caption may say `{{#ref ...}}`): its closing `}}` is the one that balances its
/// opening, outside code and math and not escaped by a backslash (`\}`); the ones inside are
/// found too. Returns the directives, then the openings never closed within their block.
fn find_directives(doc: &Document) -> (Vec<Directive>, Vec<Directive>) {
    let protected = |at: usize| {
        doc.inlines_in(at..at + 2).any(|i| {
            matches!(i.kind, InlineKind::Code | InlineKind::InlineMath(_) | InlineKind::DisplayMath(_))
                && i.span.contains(&at)
        })
    };
    let (mut out, mut unclosed) = (Vec::new(), Vec::new());
    for leaf in &doc.leaves {
        let end = leaf.span.end;
        let mut from = leaf.span.start;
        while let Some(found) = doc.source[from..end].find("{{#") {
            let start = from + found;
            from = start + 3;
            if doc.in_code_span(start) {
                continue;
            }
            let name_start = start + 3;
            let name_len = doc.source[name_start..end]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(end - name_start);
            let name_end = name_start + name_len;
            let (mut depth, mut at, mut close) = (0usize, name_end, None);
            while at + 1 < end {
                let pair = &doc.source.as_bytes()[at..at + 2];
                if pair[0] == b'\\' {
                    // `\}` and `\{` are text (CommonMark's backslash escape), never a brace.
                    at += 2;
                } else if pair == b"{{" && !protected(at) {
                    depth += 1;
                    at += 2;
                } else if pair == b"}}" && !protected(at) {
                    if depth == 0 {
                        close = Some(at);
                        break;
                    }
                    depth -= 1;
                    at += 2;
                } else {
                    at += 1;
                }
            }
            let Some(close) = close else {
                let name = doc.source[name_start..name_end].to_string();
                unclosed.push(Directive { name, args: name_end..name_end, span: start..name_end });
                continue;
            };
            out.push(Directive {
                name: doc.source[name_start..name_end].to_string(),
                args: name_end..close,
                span: start..close + 2,
            });
        }
    }
    out.sort_by_key(|d| d.span.start);
    (out, unclosed)
}

#[cfg(test)]
mod tests;
