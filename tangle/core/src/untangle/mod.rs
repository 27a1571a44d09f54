//! **untangle**, the way back from `code/` to the chapters: edits made in a generated crate
//! (in an editor with rust-analyzer, say) are taken into the cells they belong to, and only
//! the chapter lines they change are rewritten. In memory: the caller reads the edited files
//! and writes the chapters ([`crate::pipeline::untangle`]).
//!
//! For each generated source file (`src/lib.rs`, `src/main.rs`, `tests/cells.rs`) that was
//! edited after tangle wrote it (its [seal] no longer matches), the
//! file is compared line by line with what the chapter generates now ([`align`]). That is the
//! text the edits were made to: the file's seal must be the seal of the current generation,
//! else the chapter changed too since the file was written, and which lines are whose cannot
//! be told (refused). Every changed line is given to the cell it stands in, by the generator's
//! [`LineMap`](crate::generate::LineMap); the cell's new code is rebuilt with every change
//! generation made undone and spliced into the chapter ([`cell`]).
//!
//! A `use` line added above a file's first cell (rust-analyzer's auto-import puts it there) is
//! moved to the start of that cell first ([`imports_into_first_cell`]).
//!
//! Refused, with their place in the edited file, and nothing written: an edit of a line tangle
//! wrote itself (the header, the glue of `main.rs`, location comments, the blank line between
//! two cells, any manifest or file of the runtime), a line added between two cells, an edit that
//! spans two cells, and an edit that would not come back: the new chapter is generated again in
//! memory, and each edited file must come out as it was edited (location comments' numbers and
//! the seal aside, which follow the chapter), or the edit is refused at the first line that
//! would not (a blank line added at a cell's start, which generation drops; a run-cell line
//! indented less than the cell).
//!
//! [`refusal`] is the error `sync`, `check` and `book` stop with instead of overwriting an
//! edited file: each file at its first edited line, and the two ways out.

mod align;
mod cell;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::Config;
use crate::diagnostic::{Diagnostic, Diagnostics, Location};
use crate::generate::{self, Analyses, ChapterCrate, Generated, seal};
use crate::markdown::{Edits, LineIndex};
use crate::messages;
use crate::model::{Book, Chapter};

use align::{Owner, Problem};

/// A chapter with the edits of its generated files taken in.
#[derive(Debug, Clone)]
pub struct ChapterEdit {
    /// The chapter as it was parsed, before the edits.
    pub chapter: Arc<Chapter>,
    /// The chapter's new text (its old text when the edits changed nothing in it).
    pub text: String,
    /// The edited files taken in, relative to the project root.
    pub files: Vec<PathBuf>,
    /// The lines of the new text that changed (one-based).
    pub lines: Vec<usize>,
    /// How many lines of the old text were removed outright.
    pub removed: usize,
}

/// Takes the `edited` files (path relative to the project root → the text on disk) into the
/// chapters of `book`, whose generation is `generated`. Either every edit goes in, or none
/// does and the diagnostics say why, each at its line of the edited file.
pub fn untangle(
    book: &Book,
    config: &Config,
    generated: &Generated,
    edited: &BTreeMap<PathBuf, String>,
) -> Result<Vec<ChapterEdit>, Diagnostics> {
    let mut analyses = Analyses::default();
    let mut diagnostics = Diagnostics::default();
    let mut chapters: BTreeMap<String, (Arc<Chapter>, Edits, Vec<PathBuf>)> = BTreeMap::new();
    // An editor's auto-import, put above the first cell, is taken as the first cell's.
    let edited: BTreeMap<PathBuf, String> = edited
        .iter()
        .map(|(path, text)| {
            let moved = generated
                .crates
                .iter()
                .flat_map(|c| &c.files)
                .find(|(p, _)| p == path)
                .and_then(|(_, expected)| imports_into_first_cell(expected, text));
            (path.clone(), moved.unwrap_or_else(|| text.clone()))
        })
        .collect();
    let edited = &edited;
    for (path, text) in edited {
        if generated.files().all(|(p, _)| p != path) {
            let message = match gone_chapter(book, text) {
                Some(from) => format!(
                    "no chapter generates this file: tangle wrote it from {}, which is no chapter of the book now, so \
                     its edits have nowhere to go",
                    from.display()
                ),
                None => {
                    "no chapter generates this file, and tangle did not write it: its code has nowhere to go".into()
                }
            };
            diagnostics.push(
                Diagnostic::error(Location::new(path, 1), message)
                .with_help(format!(
                    "move its code into a cell of a chapter (a `// @save` cell for library code), then remove the file (`{}` does)",
                    discard_command([path])
                )),
            );
            continue;
        }
        let Some(krate) = generated.crates.iter().find(|c| c.files.iter().any(|(p, _)| p == path)) else {
            let line = first_difference(&expected_text(generated, path), text);
            diagnostics.push(
                Diagnostic::error(
                    Location::new(path, line + 1),
                    "this file is generated from book.toml and the tool, and holds no cell: its edits have nowhere to go",
                )
                .with_help(format!("drop them with `{}`", discard_command([path]))),
            );
            continue;
        };
        let chapter = &krate.chapter;
        let (_, edits, files) =
            chapters.entry(chapter.name.clone()).or_insert_with(|| (chapter.clone(), Edits::new(), Vec::new()));
        match file_edits(chapter, krate, path, text, &mut analyses, edits) {
            Ok(()) => files.push(path.clone()),
            Err(d) => diagnostics.extend(d),
        }
    }
    if diagnostics.has_errors() {
        return Err(diagnostics);
    }
    let mut out = Vec::new();
    for (chapter, edits, files) in chapters.into_values() {
        let text = edits.apply(chapter.source());
        let first = &files[0];
        let at = Location::new(first, first_difference(&expected_text(generated, first), &edited[first]) + 1);
        match verify(book, config, &chapter, &text, (&files, at), edited, &mut analyses) {
            Ok(()) => {
                let (lines, removed) = changed_lines(chapter.source(), &text);
                out.push(ChapterEdit { chapter, text, files, lines, removed });
            }
            Err(d) => match new_fence_line(generated, &files, edited) {
                // The likeliest cause, at its own line rather than the edit's first.
                Some(at) => diagnostics.push(
                    Diagnostic::error(
                        at,
                        format!("this line would close the cell's code block in {}", chapter.path.display()),
                    )
                    .with_help(format!(
                        "give the cell a longer fence in the chapter (````rust ... ````), then run `{}` again",
                        messages::command("untangle")
                    )),
                ),
                None => diagnostics.extend(d),
            },
        }
    }
    diagnostics.into_result(out)
}

/// The first line added to one of `files` that starts like a Markdown fence (```` ``` ```` or
/// `~~~`): in the chapter it would end the cell's code block.
fn new_fence_line(generated: &Generated, files: &[PathBuf], edited: &BTreeMap<PathBuf, String>) -> Option<Location> {
    files.iter().find_map(|file| {
        let expected = expected_text(generated, file);
        let before: std::collections::HashSet<&str> = expected.lines().collect();
        let text = &edited[file];
        let (i, _) = text.lines().enumerate().find(|(_, l)| {
            let t = l.trim_start();
            (t.starts_with("```") || t.starts_with("~~~")) && !before.contains(l)
        })?;
        Some(Location::new(file, i + 1).with_column(1))
    })
}

/// `text`, a generated file as edited, with the `use` lines added above its first cell moved
/// to the start of that cell, at the cell's indentation, with the blank line that followed them
/// if one did: where rust-analyzer's auto-import puts a `use` (after the file's header, or
/// beside `main.rs`'s `use ch01::*;`) is tangle's, but the import belongs to the code that
/// needs it. `None` unless the lines above the first cell are what tangle wrote, the added
/// `use` lines and blank lines aside.
fn imports_into_first_cell(expected: &str, text: &str) -> Option<String> {
    let first_cell = |t: &str| t.lines().position(generate::is_location_comment);
    let (old_at, new_at) = (first_cell(expected)?, first_cell(text)?);
    let (old_head, new_head): (Vec<&str>, Vec<&str>) =
        (expected.lines().take(old_at).collect(), text.lines().take(new_at).collect());
    let is_import = |l: &&str| {
        let t = l.trim();
        (t.starts_with("use ") || t.starts_with("pub use ")) && t.ends_with(';') && !old_head.contains(l)
    };
    let imports: Vec<&str> = new_head.iter().copied().filter(is_import).collect();
    if imports.is_empty() {
        return None;
    }
    // What is left must be tangle's lines, with at most the blank lines an editor adds between.
    let mut rest: Vec<&str> = new_head.iter().copied().filter(|l| !is_import(l)).collect();
    rest.dedup_by(|a, b| a.trim().is_empty() && b.trim().is_empty());
    if rest != old_head {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let comment = lines[new_at];
    let indent = &comment[..comment.len() - comment.trim_start().len()];
    let mut out: Vec<String> = old_head.iter().map(|l| l.to_string()).collect();
    out.push(comment.to_string());
    out.extend(imports.iter().map(|l| format!("{indent}{}", l.trim())));
    // A blank line added with the imports, below them, stays below them, between them and the
    // code (unless the cell opens with imports of its own, which they join).
    let blanks = |head: &[&str]| head.iter().filter(|l| l.trim().is_empty()).count();
    let last_import = new_head.iter().rposition(is_import).expect("an import");
    let cell_opens = lines.get(new_at + 1).map_or("", |l| l.trim());
    if blanks(&new_head) > blanks(&old_head)
        && new_head[last_import..].iter().any(|l| l.trim().is_empty())
        && !cell_opens.is_empty()
        && !cell_opens.starts_with("use ")
        && !cell_opens.starts_with("pub use ")
    {
        out.push(String::new());
    }
    out.extend(lines[new_at + 1..].iter().map(|l| l.to_string()));
    let mut joined = out.join("\n");
    if text.ends_with('\n') {
        joined.push('\n');
    }
    Some(joined)
}

/// The chapter edits that one edited file makes, added to `edits`.
fn file_edits(
    chapter: &Chapter,
    krate: &ChapterCrate,
    path: &Path,
    text: &str,
    analyses: &mut Analyses,
    edits: &mut Edits,
) -> Result<(), Diagnostics> {
    let expected = &krate.files.iter().find(|(p, _)| p == path).expect("a file of the crate").1;
    if let Some(conflict) = crate::git::conflicts(text).first() {
        let line = text[..conflict.whole.start].matches('\n').count() + 1;
        return Err(Diagnostic::error(
            Location::new(path, line).with_column(1),
            "this file holds a merge conflict, and one side of it is an edit made in the generated file that no \
             chapter has",
        )
        .with_help(format!(
            "make that edit in {} by hand (`git diff` shows both sides), then drop the file with `{}`, which keeps \
             a copy: tangle writes it again from the chapter",
            chapter.path.display(),
            discard_command([path])
        ))
        .into());
    }
    if let (Some(was), Some(now)) = (seal::recorded(text), seal::recorded(expected))
        && was != now
    {
        return Err(Diagnostic::error(
            Location::new(path, 1),
            format!(
                "this file was edited, and {} changed too since tangle wrote it: which lines are whose cannot be told",
                chapter.path.display()
            ),
        )
        .with_help(format!(
            "drop the file's edits with `{}` (and make them again), or undo the chapter's change, run `{}`, and redo it",
            discard_command([path]),
            messages::command("untangle")
        ))
        .into());
    }
    let map = &krate.line_map;
    let segments = map.segments(path);
    let hoisted = map.hoisted(path);
    let old = align::keys(expected);
    let new = align::keys(text);
    let owners = align::owners(old.len(), segments, hoisted);
    let alignment = align::align(&old, &new, &owners)
        .map_err(|problems| problems.iter().map(|p| problem(chapter, krate, path, expected, p)).collect::<Vec<_>>())
        .map_err(Diagnostics)?;

    let old_lines: Vec<&str> = expected.lines().collect();
    let new_lines: Vec<&str> = text.lines().collect();
    let cell_of = |s: usize| cell_at(chapter, segments[s].chapter);
    // Each cell's lines in the edited file, and whether any of them changed.
    let mut regions: BTreeMap<usize, (Vec<cell::Line>, bool)> = BTreeMap::new();
    let mut hoisted_edits: BTreeMap<usize, String> = BTreeMap::new();
    for (j, owner) in alignment.owner.iter().enumerate() {
        match (*owner, alignment.old_of[j]) {
            (Owner::Cell(s), Some(o)) => {
                let n = segments[s].chapter + (o + 1 - segments[s].generated) + 1 - cell_of(s).code_line;
                let region = regions.entry(s).or_default();
                region.0.push(cell::Line::Kept(n, new_lines[j]));
                region.1 |= new_lines[j] != old_lines[o];
            }
            (Owner::Cell(s), None) => {
                let region = regions.entry(s).or_default();
                region.0.push(cell::Line::New(new_lines[j]));
                region.1 = true;
            }
            (Owner::Hoisted(h), None) => {
                hoisted_edits.insert(hoisted[h].1, new_lines[j].to_string());
            }
            _ => {}
        }
    }
    let index = LineIndex::new(chapter.source());
    for (s, segment) in segments.iter().enumerate() {
        let cell = cell_of(s);
        let present =
            ((segment.generated + segment.len - 1).min(old_lines.len()) + 1).saturating_sub(segment.generated);
        let (lines, changed) = regions.remove(&s).unwrap_or_default();
        let hoisted_here = hoisted_in(cell, &hoisted_edits);
        if !changed && lines.len() == present && hoisted_here.is_empty() {
            continue;
        }
        let syntax = analyses.cell(chapter, cell).map_err(|d| Diagnostics::from(*d))?;
        let written = cell::Written {
            cell,
            syntax: &syntax,
            first: segment.chapter + 1 - cell.code_line,
            indent: segment.indent,
            trimmed: (segment.generated + segment.len - 1).saturating_sub(old_lines.len()),
        };
        let code = cell::rebuild(chapter, &written, &lines, &hoisted_here, analyses);
        cell::splice(chapter, &index, cell, &code, edits);
    }
    // Cells of which only hoisted attributes were written (nothing else to copy).
    let with_segment: BTreeSet<usize> = segments.iter().map(|s| cell_at(chapter, s.chapter).code_line).collect();
    let mut done = BTreeSet::new();
    for &line in hoisted_edits.keys() {
        let cell = cell_at(chapter, line);
        if with_segment.contains(&cell.code_line) || !done.insert(cell.code_line) {
            continue;
        }
        let syntax = analyses.cell(chapter, cell).map_err(|d| Diagnostics::from(*d))?;
        let all = cell.code.lines().count() + 1;
        let written = cell::Written { cell, syntax: &syntax, first: all, indent: 0, trimmed: 0 };
        let code = cell::rebuild(chapter, &written, &[], &hoisted_in(cell, &hoisted_edits), analyses);
        cell::splice(chapter, &index, cell, &code, edits);
    }
    Ok(())
}

/// The cell whose code holds chapter line `line`.
fn cell_at(chapter: &Chapter, line: usize) -> &crate::model::Cell {
    chapter.cell_at(line).expect("a generated line maps into a cell")
}

/// The hoisted lines edited at the top of the file that belong to `cell`, by cell line.
fn hoisted_in(cell: &crate::model::Cell, edits: &BTreeMap<usize, String>) -> BTreeMap<usize, String> {
    edits
        .iter()
        .filter(|(line, _)| cell.code_line <= **line && **line <= cell.last_line())
        .map(|(line, text)| (line + 1 - cell.code_line, text.clone()))
        .collect()
}

/// A problem of the alignment as a diagnostic at its line of the edited file.
fn problem(chapter: &Chapter, krate: &ChapterCrate, path: &Path, expected: &str, p: &Problem) -> Diagnostic {
    let cell_location = |s: usize| {
        let segment = &krate.line_map.segments(path)[s];
        chapter.location(cell_at(chapter, segment.chapter).code_line)
    };
    let at = |line: usize| Location::new(path, line + 1).with_column(1);
    let discard = discard_command([path]);
    let again = messages::command("untangle");
    match *p {
        Problem::Replaces { new, old } => {
            let what = what_line(path, expected, old);
            Diagnostic::error(at(new), format!("this edit changes {what}, which is outside every cell"))
                .with_note(format!("tangle writes that line itself; only the cells' lines come from {}", chapter.path.display()))
                .with_help(format!(
                    "make the change in the chapter (or in book.toml) instead, then drop this edit with `{discard}`"
                ))
        }
        Problem::AddedOutside { new } if krate.line_map.segments(path).is_empty() && is_manifest(path) => {
            Diagnostic::error(at(new), "this line was added to a manifest, which tangle writes: it holds no cell")
                .with_note("a chapter's dependencies come from its cells' paths and book.toml's [preprocessor.tangle.dependencies]")
                .with_help(format!("declare the dependency in book.toml instead, then drop this edit with `{discard}`"))
        }
        Problem::AddedOutside { new } => Diagnostic::error(at(new), "this line was added outside every cell")
            .with_note("between two cells, or among the lines tangle writes around them, nothing comes from the chapter")
            .with_help(format!("move it into a cell's lines and run `{again}` again, or drop it with `{discard}`")),
        Problem::TwoCells { new, first, second } => Diagnostic::error(
            at(new),
            format!("this edit spans two cells, {} and {}", cell_location(first), cell_location(second)),
        )
        .with_note("the lines between them are tangle's")
        .with_help(format!("edit each cell within its own lines and run `{again}` again")),
        Problem::Hoisted { new } => Diagnostic::error(
            at(new),
            "this edit adds or removes inner attributes at the top of the file, which tangle hoists from the cells",
        )
        .with_help(format!("add or remove the attribute in its cell, in {}", chapter.path.display())),
    }
}

/// What line `old` (zero-based) of a generated file is, for a message.
fn what_line(path: &Path, expected: &str, old: usize) -> String {
    let text = expected.lines().nth(old).unwrap_or("");
    if is_manifest(path) {
        format!("the manifest's line `{}`", text.trim())
    } else if old < 2 {
        "tangle's header".to_string()
    } else if generate::is_location_comment(text) {
        "the location comment of the cell below it".to_string()
    } else if text.trim().is_empty() {
        "a blank line tangle writes between the cells".to_string()
    } else {
        format!("`{}`", text.trim())
    }
}

fn is_manifest(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "toml")
}

/// Generates the new chapter in memory and checks that each edited file comes out as edited.
fn verify(
    book: &Book,
    config: &Config,
    chapter: &Chapter,
    text: &str,
    (files, at): (&[PathBuf], Location),
    edited: &BTreeMap<PathBuf, String>,
    analyses: &mut Analyses,
) -> Result<(), Diagnostics> {
    let fails = |why: String| {
        Diagnostics::from(
            Diagnostic::error(
                at.clone(),
                format!("with these edits, {} would not generate: {why}", chapter.path.display()),
            )
            .with_help(format!(
                "fix the edit here and run `{}` again, or drop it with `{}`",
                messages::command("untangle"),
                discard_command([&at.file])
            )),
        )
    };
    let first_message = |d: &Diagnostics| d.iter().next().map(|d| d.message.clone()).unwrap_or_default();
    let reparsed = crate::parse::parse_chapter(&chapter.name, &chapter.path, text.as_bytes().to_vec())
        .map_err(|d| fails(first_message(&d)))?;
    let mut book = book.clone();
    book.replace(reparsed);
    let regenerated = generate::generate(&book, config, analyses).map_err(|d| fails(first_message(&d)))?;
    let krate = regenerated.get(&chapter.name).expect("the chapter is generated");
    let mut diagnostics = Diagnostics::default();
    for file in files {
        let want = &edited[file];
        let got = krate.files.iter().find(|(p, _)| p == file).map_or("", |(_, t)| t.as_str());
        let (want_keys, got_keys) = (align::keys(want), align::keys(got));
        if want_keys == got_keys {
            continue;
        }
        let k = want_keys.iter().zip(&got_keys).take_while(|(a, b)| a == b).count();
        let instead = match got.lines().nth(k) {
            Some(line) => format!("tangle would write `{line}` here"),
            None => "tangle would end the file before it".to_string(),
        };
        diagnostics.push(
            Diagnostic::error(
                Location::new(file, k + 1).with_column(1),
                "this edited line would not come back from the chapter as it is",
            )
            .with_note(format!(
                "{instead} (generation drops blank lines that open a cell, indents run cells by 4 spaces, ...)"
            ))
            .with_help(format!(
                "write it as tangle would and run `{}` again, or drop the edit with `{}`",
                messages::command("untangle"),
                discard_command([file])
            )),
        );
    }
    diagnostics.into_result(())
}

/// The zero-based line where two generated texts first differ (as the seal sees them).
fn first_difference(expected: &str, text: &str) -> usize {
    let (a, b) = (align::keys(expected), align::keys(text));
    match a.iter().zip(&b).take_while(|(x, y)| x == y).count() {
        // The lines agree as the seal sees them: what changed is the seal itself, on line 1.
        n if n == a.len() && n == b.len() => 0,
        n => n,
    }
}

/// The one-based lines of `new` that are not in `old`, and how many lines of `old` went
/// without a line of `new` in their place.
fn changed_lines(old: &str, new: &str) -> (Vec<usize>, usize) {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let (mut changed, mut removed) = (Vec::new(), 0);
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &a, &b) {
        match op {
            similar::DiffOp::Insert { new_index, new_len, .. } => changed.extend(new_index + 1..=new_index + new_len),
            similar::DiffOp::Replace { old_len, new_index, new_len, .. } => {
                changed.extend(new_index + 1..=new_index + new_len);
                removed += old_len.saturating_sub(new_len);
            }
            similar::DiffOp::Delete { old_len, .. } => removed += old_len,
            similar::DiffOp::Equal { .. } => {}
        }
    }
    (changed, removed)
}

/// The error `sync` (and `check`, `book`, `test`) stops with when generated files were edited
/// since tangle wrote them: each file named at its first edited line (with the chapter line
/// it came from, where it came from one), and the ways out that work: `untangle` is offered
/// only when it would take the edits (it is tried in memory); otherwise its reason is given.
pub fn refusal(book: &Book, config: &Config, generated: &Generated, edited: &[(PathBuf, String)]) -> Diagnostic {
    let crate_of = |path: &Path| generated.crates.iter().find(|c| c.files.iter().any(|(p, _)| p == path));
    // A file edited after its chapter changed: its first difference from what the chapter
    // generates now may be the chapter's change, not the edit, so no line is blamed.
    let both_changed = |path: &Path, text: &str| {
        let expected = expected_text(generated, path);
        crate_of(path).is_some()
            && matches!((seal::recorded(text), seal::recorded(&expected)), (Some(was), Some(now)) if was != now)
    };
    let place = |path: &Path, text: &str| {
        if both_changed(path, text) {
            return (1, None);
        }
        let line = first_difference(&expected_text(generated, path), text) + 1;
        let from = generated.chapter_position(path, line, 1).map(|(c, l, _)| c.location(l));
        (line, from)
    };
    let generates = |path: &Path| generated.files().any(|(p, _)| p == path);
    let (first, text) = &edited[0];
    let (line, from) = place(first, text);
    let message = match (generates(first), crate_of(first)) {
        (true, Some(krate)) if both_changed(first, text) => format!(
            "{} was edited, and {} changed too since tangle wrote it: tangle will not overwrite it",
            first.display(),
            krate.chapter.path.display()
        ),
        (true, _) => format!("{} was edited since tangle wrote it, and tangle will not overwrite it", first.display()),
        (false, _) => format!(
            "{}: no chapter generates it, and it is not as tangle wrote it (edited since, or never tangle's): tangle will not remove it",
            first.display()
        ),
    };
    let mut d = Diagnostic::error(Location::new(first, line).with_column(1), message);
    if let Some(from) = from {
        d = d.with_note(format!("line {line} came from {from}"));
    }
    for (path, text) in &edited[1..] {
        let (line, from) = place(path, text);
        let from = from.map(|f| format!(" (from {f})")).unwrap_or_default();
        let what = if generates(path) { "also edited" } else { "also not tangle's" };
        d = d.with_note(format!("{what}: {}:{line}{from}", path.display()));
    }
    if edited.iter().all(|(p, _)| generates(p) && crate_of(p).is_none()) {
        return d.with_help(format!(
            "the tool writes this, not a chapter: drop the edits with `{}` (rules of your own for the theme go in \
             a stylesheet or script listed after tangle's in book.toml)",
            messages::command("sync --discard")
        ));
    }
    if !edited.iter().any(|(p, _)| generates(p)) {
        // A crate of a chapter renamed or moved since: its files name the chapter's old path.
        let gone = edited.iter().find_map(|(_, text)| gone_chapter(book, text));
        if let Some(from) = gone {
            d = d
                .with_note(format!("tangle generated it from {}, which is no chapter of the book now", from.display()));
            return d.with_help(format!(
                "if you renamed or moved that chapter, put it back where it was (and its SUMMARY.md entry), run `{}` \
                 to take the edits into it, then rename it again; otherwise move the code into a cell to keep it, \
                 and `{}` removes the file",
                messages::command("untangle"),
                messages::command("sync --discard")
            ));
        }
        return d.with_help(format!(
            "move its code into a cell of a chapter to keep it; `{}` removes it",
            messages::command("sync --discard")
        ));
    }
    let files: BTreeMap<PathBuf, String> = edited.iter().cloned().collect();
    match untangle(book, config, generated, &files) {
        Ok(_) => d.with_help(format!(
            "take the edits into the chapters with `{}`, or drop them with `{}`",
            messages::command("untangle"),
            messages::command("sync --discard")
        )),
        Err(_) if both_changed(first, text) => d.with_help(format!(
            "copy what you want to keep, drop the file's edits with `{}`, and make them again in the chapter; or \
             undo the chapter's change, run `{}`, and redo it",
            messages::command("sync --discard"),
            messages::command("untangle")
        )),
        Err(refused) => {
            let why = first_reason(&refused);
            // The files whose edits untangle refuses; the others' it would take once those go.
            let refused_files = refused_files(&refused);
            let discard = discard_command(&refused_files);
            let help = match refused_files.len() < edited.len() && !refused_files.is_empty() {
                true => format!(
                    "copy what you want to keep of those edits into the chapter's cells by hand, drop them with \
                     `{discard}`, then take the other files' edits with `{}`",
                    messages::command("untangle")
                ),
                false => format!(
                    "copy what you want to keep into the chapter's cells by hand, then drop the edits with `{discard}`"
                ),
            };
            d.with_note(format!("`{}` cannot take these edits: {why}", messages::command("untangle"))).with_help(help)
        }
    }
}

/// The chapter a generated file's text says it came from, when the book has no such chapter
/// now (it was renamed, moved or deleted).
pub(crate) fn gone_chapter(book: &Book, text: &str) -> Option<PathBuf> {
    generate::header_source(text)
        .filter(|from| from.extension().is_some_and(|e| e == "md") && !book.chapters.iter().any(|c| c.path == *from))
}

/// The files whose edits `refused` refuses (the files its errors stand in).
pub(crate) fn refused_files(refused: &Diagnostics) -> BTreeSet<PathBuf> {
    refused.iter().filter(|d| d.is_error()).filter_map(|d| Some(d.location.as_ref()?.file.clone())).collect()
}

/// `tangle sync --discard FILE…`, which drops the edits of `files` alone.
pub(crate) fn discard_command<P: AsRef<Path>>(files: impl IntoIterator<Item = P>) -> String {
    let files: Vec<String> = files.into_iter().map(|p| p.as_ref().display().to_string()).collect();
    messages::command(&format!("sync --discard {}", files.join(" ")))
}

/// The first reason an [`untangle`] refused, at its place (`FILE:LINE: why`), for advice that
/// says why `untangle` is no way out.
pub fn first_reason(refused: &Diagnostics) -> String {
    refused.iter().find(|d| d.is_error()).map_or_else(String::new, |d| match &d.location {
        Some(at) => format!("{at}: {}", d.message),
        None => d.message.clone(),
    })
}

/// What tangle generates at `path` now, as text ("" when it generates nothing there).
fn expected_text(generated: &Generated, path: &Path) -> String {
    generated
        .files()
        .find(|(p, _)| *p == path)
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
