//! Property tests of the way back, in memory (no cargo): random chapters (save, run and test
//! cells at the top level, in list items and in blockquotes, with inner attributes, multi-line
//! strings, final expressions without `;`, LF or CRLF), their generated files edited at random.
//!
//! - Lines changed, added and removed inside cell bodies round-trip: `untangle` takes them,
//!   the new chapter generates the edited file exactly (location numbers and seal aside) and
//!   every other file as before, and the chapter differs only inside the edited cells.
//! - A line changed or added outside every cell is refused, at its line, and nothing is taken.
//!
//! The number of cases is pinned, so that the test command stays quick;
//! `PROPTEST_CASES=5000 cargo test -p tangle-core --release untangle::proptests` runs more.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::align::{Owner, keys, owners};
use super::tests::{config, file, generated};
use super::untangle;
use crate::model::{Book, CellKind, Chapter};
use crate::parse::parse_chapter;

const CASES: u32 = 96;

/// `PROPTEST_CASES`, or [`CASES`].
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(CASES)
}

#[derive(Debug, Clone, Copy)]
enum Container {
    Top,
    Bullet,
    Quote,
}

/// A line of a cell body. `Literal` is the two lines of a multi-line string.
#[derive(Debug, Clone)]
enum Body {
    Item(u32),
    Comment(u32),
    Blank,
    Literal(u32),
}

#[derive(Debug, Clone)]
struct CellSpec {
    kind: CellKind,
    container: Container,
    attribute: bool,
    body: Vec<Body>,
    /// A run cell's final expression, without `;`.
    tail: bool,
}

fn cell_spec() -> impl Strategy<Value = CellSpec> {
    let kind = prop_oneof![Just(CellKind::Save), Just(CellKind::Run), Just(CellKind::Test)];
    let container = prop_oneof![Just(Container::Top), Just(Container::Bullet), Just(Container::Quote)];
    let body = prop::collection::vec(
        prop_oneof![
            4 => (0u32..50).prop_map(Body::Item),
            2 => (0u32..50).prop_map(Body::Comment),
            1 => Just(Body::Blank),
            1 => (0u32..50).prop_map(Body::Literal),
        ],
        1..6,
    );
    (kind, container, any::<bool>(), body, any::<bool>()).prop_map(|(kind, container, attribute, mut body, tail)| {
        // A body starts and ends with code: generation drops the blank lines that open an
        // item cell and trims those that end a file.
        while matches!(body.first(), Some(Body::Blank)) {
            body.remove(0);
        }
        while matches!(body.last(), Some(Body::Blank)) {
            body.pop();
        }
        if body.is_empty() {
            body.push(Body::Item(0));
        }
        CellSpec {
            kind,
            container,
            attribute: attribute && kind != CellKind::Run,
            body,
            tail: tail && kind == CellKind::Run,
        }
    })
}

fn item(kind: CellKind, n: u32) -> String {
    match kind {
        CellKind::Save => format!("pub fn f{n}() -> u32 {{ {n} }}"),
        CellKind::Test => format!("#[test] fn t{n}() {{ assert_eq!({n}, {n}); }}"),
        CellKind::Run => format!("let v{n} = {n};"),
    }
}

/// The cell's code lines (marker first for save and test cells).
fn code(spec: &CellSpec) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(marker) = spec.kind.marker() {
        out.push(marker.to_string());
    }
    if spec.attribute {
        out.push("#![allow(dead_code)]".into());
        out.push(String::new());
    }
    for line in &spec.body {
        match line {
            Body::Item(n) => out.push(item(spec.kind, *n)),
            Body::Comment(n) => out.push(format!("// note {n}")),
            Body::Blank => out.push(String::new()),
            Body::Literal(n) => match spec.kind {
                CellKind::Run => {
                    out.push(format!("let s{n} = \"lit {n}"));
                    out.push("    tail\";".into());
                }
                _ => {
                    out.push(format!("pub const S{n}: &str = \"lit {n}"));
                    out.push("    tail\";".into());
                }
            },
        }
    }
    if spec.tail {
        out.push("1 + 1".into());
    }
    out
}

fn chapter_text(cells: &[CellSpec], crlf: bool) -> String {
    let mut md = String::from("# A chapter\n\nSome prose.\n\n");
    for (i, spec) in cells.iter().enumerate() {
        let (first, rest) = match spec.container {
            Container::Top => ("", ""),
            Container::Bullet => ("- ", "  "),
            Container::Quote => ("> ", "> "),
        };
        if !first.is_empty() {
            md += &format!("{first}Item {i}.\n{}\n", rest.trim_end());
        }
        md += &format!("{rest}```rust\n");
        for line in code(spec) {
            md += if line.is_empty() { rest.trim_end() } else { rest };
            md += &line;
            md += "\n";
        }
        md += &format!("{rest}```\n\nProse after cell {i}.\n\n");
    }
    if crlf { md.replace('\n', "\r\n") } else { md }
}

fn book_of(md: &str) -> Book {
    Book::from_chapters(vec![parse_chapter("ch01", Path::new("book/src/ch01.md"), md.as_bytes().to_vec()).unwrap()])
}

/// An edit inside one cell's lines of the generated file (indices wrap around).
#[derive(Debug, Clone)]
enum Edit {
    Change(usize, u32),
    Append(usize, u32),
    Add(usize, u32),
    /// A blank line added (next to the blank line between two cells, it could stand on
    /// either side of it).
    Blank(usize),
    Remove(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 0u32..1000).prop_map(|(i, n)| Edit::Change(i, n)),
        (any::<usize>(), 0u32..1000).prop_map(|(i, n)| Edit::Append(i, n)),
        (any::<usize>(), 0u32..1000).prop_map(|(i, n)| Edit::Add(i, n)),
        any::<usize>().prop_map(Edit::Blank),
        any::<usize>().prop_map(Edit::Remove),
    ]
}

/// A line of a multi-line literal: changing or removing it alone would break the string.
fn in_literal(line: &str) -> bool {
    line.contains("\"lit ") || line.contains("tail\";")
}

/// Applies `edits` to the lines of one cell (`lines`, as written with `pad`), but not those
/// that would break a multi-line string or remove the cell's last line; `false` when the
/// result starts or ends in a way generation does not keep.
fn apply(lines: &mut Vec<String>, kind: CellKind, pad: &str, edits: &[Edit], last: bool) -> bool {
    for e in edits {
        let len = lines.len();
        match *e {
            // Left alone: changing or removing one line of a string alone would break it.
            Edit::Change(i, _) | Edit::Append(i, _) | Edit::Remove(i) if in_literal(&lines[i % len]) => {}
            Edit::Change(i, n) => lines[i % len] = format!("{pad}// edit {n}"),
            Edit::Append(i, n) if lines[i % len].is_empty() => lines[i % len] = format!("{pad}// edit {n}"),
            Edit::Append(i, n) => lines[i % len] += &format!(" // edit {n}"),
            Edit::Add(i, n) => {
                let text = match n % 2 {
                    0 => format!("{pad}// added {n}"),
                    _ => format!("{pad}{}", item(kind, 1000 + n)),
                };
                lines.insert(i % (len + 1), text);
            }
            Edit::Blank(i) => lines.insert(i % (len + 1), String::new()),
            Edit::Remove(_) if len == 1 => {}
            Edit::Remove(i) => {
                lines.remove(i % len);
            }
        }
    }
    // Generation drops blank lines that open an item cell, and trims those that end a file.
    let blank = |l: Option<&String>| l.is_some_and(|l| l.trim().is_empty());
    !(kind != CellKind::Run && (blank(lines.first()) || (last && blank(lines.last()))))
}

/// The text outside every cell's code (the fences, the prose), and the code of each cell.
fn skeleton(chapter: &Chapter) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut at = 0;
    for cell in &chapter.cells {
        out += &chapter.source()[at..cell.content.start];
        out += "<cell>";
        at = cell.content.end;
    }
    out += &chapter.source()[at..];
    (out, chapter.cells.iter().map(|c| c.code.clone()).collect())
}

fn which_file(cells: &[CellSpec], pick: usize) -> &'static str {
    let mut files = Vec::new();
    if cells.iter().any(|c| c.kind == CellKind::Run) {
        files.push("code/ch01/src/main.rs");
    }
    if cells.iter().any(|c| c.kind == CellKind::Save) {
        files.push("code/ch01/src/lib.rs");
    }
    if cells.iter().any(|c| c.kind == CellKind::Test) {
        files.push("code/ch01/tests/cells.rs");
    }
    files[pick % files.len()]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        // About one case in five is rejected (an edit that leaves the file as it was).
        max_global_rejects: cases().max(1024),
        ..ProptestConfig::default()
    })]

    #[test]
    fn edits_inside_cells_round_trip(
        cells in prop::collection::vec(cell_spec(), 1..5),
        crlf in any::<bool>(),
        pick in any::<usize>(),
        edits in prop::collection::vec((any::<usize>(), prop::collection::vec(edit(), 1..4)), 1..3),
    ) {
        let md = chapter_text(&cells, crlf);
        let book = book_of(&md);
        let old = generated(&book);
        let path = which_file(&cells, pick);
        let krate = old.get("ch01").unwrap();
        let segments = krate.line_map.segments(Path::new(path)).to_vec();
        prop_assume!(!segments.is_empty());
        let text = file(&old, path).to_string();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        // Each edited cell once, the last in the file first, so that the others stay put.
        let mut chosen: BTreeMap<usize, Vec<Edit>> = BTreeMap::new();
        for (s, e) in &edits {
            chosen.entry(s % segments.len()).or_default().extend(e.iter().cloned());
        }
        let mut edited_cells = BTreeSet::new();
        for (&s, e) in chosen.iter().rev() {
            let seg = &segments[s];
            let start = seg.generated - 1;
            let end = (start + seg.len).min(lines.len());
            let cell = &book.chapters[0].cells.iter().position(|c| c.code_line <= seg.chapter && seg.chapter <= c.last_line()).unwrap();
            let mut region: Vec<String> = lines[start..end].to_vec();
            let kind = book.chapters[0].cells[*cell].kind;
            let last = s + 1 == segments.len();
            prop_assume!(apply(&mut region, kind, &" ".repeat(seg.indent), e, last));
            lines.splice(start..end, region);
            edited_cells.insert(*cell);
        }
        let new_text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        prop_assume!(new_text != text);
        let edited = BTreeMap::from([(PathBuf::from(path), new_text.clone())]);

        let taken = untangle(&book, &config(), &old, &edited);
        let taken = match taken {
            Ok(taken) => taken,
            Err(d) => return Err(TestCaseError::fail(format!("refused:\n{d}\n--- edited:\n{new_text}\n--- chapter:\n{md}"))),
        };
        prop_assert_eq!(taken.len(), 1);
        let after = book_of(&taken[0].text);
        let regenerated = generated(&after);
        // The edited file comes back as edited; every other file as it was.
        for (p, t) in &krate.files {
            let want = if p == Path::new(path) { &new_text } else { t };
            let got = file(&regenerated, p.to_str().unwrap());
            prop_assert_eq!(keys(got), keys(want), "{}", p.display());
        }
        // Only the edited cells changed.
        let (before_skeleton, before_cells) = skeleton(&book.chapters[0]);
        let (after_skeleton, after_cells) = skeleton(&after.chapters[0]);
        prop_assert_eq!(before_skeleton, after_skeleton);
        prop_assert_eq!(before_cells.len(), after_cells.len());
        for (i, (b, a)) in before_cells.iter().zip(&after_cells).enumerate() {
            if !edited_cells.contains(&i) {
                prop_assert_eq!(b, a, "cell {} was not edited", i);
            }
        }
        // The line endings stay the chapter's.
        prop_assert_eq!(taken[0].text.contains("\r\n"), crlf);
        prop_assert!(!crlf || !taken[0].text.replace("\r\n", "").contains('\n'));
    }

    #[test]
    fn edits_outside_cells_are_refused(
        cells in prop::collection::vec(cell_spec(), 1..5),
        pick in any::<usize>(),
        at in any::<usize>(),
        add in any::<bool>(),
        n in 0u32..1000,
    ) {
        let md = chapter_text(&cells, false);
        let book = book_of(&md);
        let old = generated(&book);
        let path = which_file(&cells, pick);
        let krate = old.get("ch01").unwrap();
        let text = file(&old, path).to_string();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let owner = owners(lines.len(), krate.line_map.segments(Path::new(path)), krate.line_map.hoisted(Path::new(path)));
        let line = if add {
            // Between two lines tangle wrote (or at the file's ends next to one).
            let places: Vec<usize> = (0..=lines.len())
                .filter(|&k| {
                    let tangle = |i: Option<usize>| i.is_none_or(|i| owner.get(i).is_none_or(|o| *o == Owner::Tangle));
                    tangle(k.checked_sub(1)) && tangle(Some(k)) && (k > 0 || k < lines.len())
                })
                .collect();
            let k = places[at % places.len()];
            lines.insert(k, format!("// outside {n}"));
            k
        } else {
            let places: Vec<usize> = (0..lines.len()).filter(|&k| owner[k] == Owner::Tangle).collect();
            let k = places[at % places.len()];
            lines[k] = format!("// outside {n}");
            k
        };
        let new_text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let edited = BTreeMap::from([(PathBuf::from(path), new_text.clone())]);
        let refused = untangle(&book, &config(), &old, &edited);
        let Err(refused) = refused else {
            return Err(TestCaseError::fail(format!("taken:\n{new_text}")));
        };
        let at_line = refused.iter().any(|d| d.location.as_ref().is_some_and(|l| l.file == Path::new(path) && l.line == line + 1));
        prop_assert!(at_line, "{} at line {}:\n{}", refused, line + 1, new_text);
    }
}
