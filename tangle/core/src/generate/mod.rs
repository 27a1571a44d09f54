//! Stage 2, **generate**: [`Chapter`]s → the files of `code/`.
//!
//! Cells are written as the author wrote them, comments and layout included: syn analyses them
//! ([`analyse`]: syntax errors at the chapter line and column, references to other chapters
//! and to external crates) but never prints them. Each cell is preceded by a
//! `// book/src/chNN.md:LINE` comment ([`emit`]), so that a generated line maps to its chapter
//! line by a constant offset ([`LineMap`]), as rustdoc maps doctests. The chapter crates form
//! their own workspace, `code/Cargo.toml` ([`manifest`]: each chapter a library package and a
//! package for its run program, compiled unoptimised), ordered so that dependencies come first
//! ([`order`]); [`sync`] writes the files or reports the stale ones. Every generated text file
//! carries a [`seal`] in its header, so that a file edited after tangle wrote it is told from
//! one that is merely stale, and is never overwritten unasked.

mod analyse;
mod crates;
mod emit;
mod line_map;
mod manifest;
mod order;
pub mod runtime;
pub mod seal;
pub mod sync;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use crate::config::{CellMode, Config};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::model::{Book, CellKind, Chapter};

pub(crate) use analyse::literal_continuation_lines;
pub use analyse::{Analyses, CellSyntax};
pub use crates::{ChapterCrate, Generated};
pub(crate) use crates::{header_source, is_location_comment};
pub(crate) use line_map::lexically_normal;
pub use line_map::{Included, LineMap, Segment};
use manifest::Dependency;
pub use manifest::{RUN_PROFILE_RESET, RUNTIME_STACK, Workspace};
pub(crate) use manifest::{quoted, run_package};

/// Generates every notebook chapter's crate and the workspace around them, taking cell
/// analyses from `analyses` where it has them and adding the rest. Collects every error of
/// every chapter. Examples chapters are left to [`crate::examples`].
pub fn generate(book: &Book, config: &Config, analyses: &mut Analyses) -> Result<Generated, Diagnostics> {
    let workspace = &Workspace::new(config);
    let code = &config.layout.code;
    let notebook = || book.chapters.iter().filter(|c| c.mode == CellMode::Notebook);
    let names: BTreeSet<&str> = notebook().map(|c| c.name.as_str()).collect();
    let mut crates = Vec::new();
    let mut diagnostics = Diagnostics::default();
    if let Some(named) = config.rust_edition.as_ref().filter(|e| e.edition == "2015")
        && !names.is_empty()
    {
        diagnostics.push(Diagnostic::error(
            named.at.clone(),
            "`[rust] edition = \"2015\"`: the crates of notebook chapters need 2018 or later, since each \
             imports the chapters before it (`use ch01::*`). Set 2021, or remove the line: examples \
             then default to mdBook's 2015 and notebook chapters to 2021",
        ));
        return Err(diagnostics);
    }
    for chapter in notebook() {
        match generate_chapter(chapter, &names, workspace, &code.join(&chapter.name), analyses) {
            Ok(krate) => crates.push(krate),
            Err(d) => diagnostics.extend(d),
        }
    }
    if diagnostics.has_errors() {
        return Err(diagnostics);
    }
    let crates = order::topological(crates)?;
    let members: Vec<&str> = crates.iter().map(ChapterCrate::name).collect();
    let workspace = (code.join("Cargo.toml"), seal::seal(&workspace.manifest(&members)));
    let support = runtime::files(code, &config.layout.work_dir_relative(), &config.layout.root)
        .into_iter()
        .map(|(path, bytes)| match String::from_utf8(bytes) {
            Ok(text) => (path, seal::seal(&text).into_bytes()),
            Err(e) => (path, e.into_bytes()),
        })
        .collect();
    Ok(Generated { code: code.clone(), crates, workspace, support })
}

fn generate_chapter(
    chapter: &Arc<Chapter>,
    chapters: &BTreeSet<&str>,
    workspace: &Workspace,
    dir: &Path,
    analyses: &mut Analyses,
) -> Result<ChapterCrate, Diagnostics> {
    let mut diagnostics = Diagnostics::default();
    let mut analysed = Vec::new();
    for cell in &chapter.cells {
        match analyses.cell(chapter, cell) {
            Ok(syntax) => analysed.push((cell, syntax)),
            Err(d) => diagnostics.push(*d),
        }
    }
    if diagnostics.has_errors() {
        return Err(diagnostics);
    }

    let mut chapter_deps = BTreeMap::new();
    // The library's dependencies (its save cells'), the program's (its run cells'), the test
    // cells': a run or test cell may use a chapter that uses this chapter's library.
    let mut lib_chapters = BTreeSet::new();
    let mut deps = BTreeMap::new();
    let mut run_deps = BTreeMap::new();
    let mut dev_deps = BTreeMap::new();
    // A module of the chapter's own, named like a chapter (`mod ch02`), is not that chapter.
    let own_modules: BTreeSet<&String> = analysed.iter().flat_map(|(_, syntax)| &syntax.modules).collect();
    for (cell, syntax) in &analysed {
        for (name, line, column) in &syntax.refs {
            if *name == chapter.name || own_modules.contains(name) {
                continue;
            }
            // Located only when needed: finding the column walks the chapter from its start.
            let loc = || {
                let (_, col) = analyse::chapter_offset(chapter, cell, *line, *column);
                chapter.location(cell.code_line + line - 1).with_column(col)
            };
            let entry = if chapters.contains(name.as_str()) {
                chapter_deps.entry(name.clone()).or_insert_with(loc);
                if cell.kind == CellKind::Save {
                    lib_chapters.insert(name.clone());
                }
                Dependency::Chapter(name.clone())
            } else if looks_like_chapter(name) {
                // A chapter renamed since, perhaps: what the chapters' crates are called now.
                let now = crate::messages::chapter_crates(chapters.iter().copied())
                    .map_or_else(String::new, |list| format!("; this book's are {list}"));
                diagnostics.push(Diagnostic::error(loc(), format!("`{name}` names no chapter")).with_help(format!(
                    "there is no chapter whose crate is `{name}` (a file {name}.md beside the others: a chapter's \
                     crate is named after its file){now}"
                )));
                continue;
            } else if let Some(key) = workspace.dependency_key(name) {
                Dependency::Workspace(key.to_string())
            } else {
                continue;
            };
            let target = match cell.kind {
                CellKind::Save => &mut deps,
                CellKind::Run => &mut run_deps,
                CellKind::Test => &mut dev_deps,
            };
            target.insert(name.clone(), entry);
        }
    }
    if diagnostics.has_errors() {
        return Err(diagnostics);
    }
    deps.insert("tangle_runtime".into(), Dependency::Workspace("tangle-runtime".into()));
    dev_deps.retain(|k, _| !deps.contains_key(k));
    // The program links the library, and so everything the library may use.
    run_deps.extend(deps.iter().map(|(k, v)| (k.clone(), v.clone())));

    let mut line_map = LineMap::default();
    let mut files = vec![(dir.join("Cargo.toml"), manifest::chapter(chapter, &deps, &dev_deps))];
    let lib = dir.join("src/lib.rs");
    files.push((lib.clone(), emit::items_file(chapter, &analysed, CellKind::Save, &lib, &mut line_map, "")));
    let main = dir.join("src/main.rs");
    files.push((main.clone(), emit::main_file(chapter, &analysed, &main, &mut line_map)));
    files.push((dir.join("run/Cargo.toml"), manifest::run_program(chapter, &run_deps)));
    if chapter.cells.iter().any(|c| c.kind == CellKind::Test) {
        let tests = dir.join("tests/cells.rs");
        let prelude = format!("use {}::*;\n\n", chapter.name);
        files.push((
            tests.clone(),
            emit::items_file(chapter, &analysed, CellKind::Test, &tests, &mut line_map, &prelude),
        ));
    }
    let files = files.into_iter().map(|(path, text)| (path, seal::seal(&text))).collect();
    Ok(ChapterCrate { chapter: chapter.clone(), dir: dir.to_path_buf(), chapter_deps, lib_chapters, files, line_map })
}

/// `ch` and digits: the shape of a chapter crate's name, so that `ch99::f` with no chapter 99
/// is reported rather than left to the compiler.
fn looks_like_chapter(name: &str) -> bool {
    name.len() > 2 && name.starts_with("ch") && name[2..].bytes().all(|b| b.is_ascii_digit())
}
