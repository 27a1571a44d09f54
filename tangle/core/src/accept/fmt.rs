//! `cargo tangle fmt`: rustfmt on every cell, written back into the chapter. A run cell is
//! formatted where it will stand, inside the body of a function (so its lines wrap at the same
//! column as in `code/chNN/src/main.rs`), then taken out again; items are formatted as the
//! top level of a file. Only the lines between a cell's fences change; every other byte of the
//! chapter stays as it was. After it, the generated files pass `rustfmt --check`.
//!
//! rustfmt runs once per cell, and `tangle test` asks about every cell of the book: the cells
//! it found formatted are remembered ([`Clean`]), by a hash of what rustfmt was given and how
//! (its version, the edition, the `rustfmt.toml` files it reads), and not given to it again.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::markdown::Edits;
use crate::model::{Cell, CellKind, Chapter};

/// A chapter whose cells were not all formatted.
#[derive(Debug)]
pub(crate) struct Formatted {
    /// The chapter's text with every cell formatted.
    pub text: String,
    /// The first code line of each cell that formatting changed, in order.
    pub cells: Vec<usize>,
}

/// The chapter with every cell formatted, or `None` when every cell already is.
/// rustfmt runs in `style_dir` (the chapter workspace, `code/`), so it reads the
/// `rustfmt.toml` that `rustfmt --check` on the generated files would read, whatever the
/// directory the tool was started from.
pub(crate) fn format_chapter(
    chapter: &Chapter,
    edition: &str,
    style_dir: &Path,
    clean: &mut Clean,
) -> anyhow::Result<Option<Formatted>> {
    let mut edits = Edits::new();
    let mut cells = Vec::new();
    let mut diagnostics = Diagnostics::default();
    for cell in &chapter.cells {
        let key = clean.key(cell, edition);
        if clean.is_known(&key) {
            continue;
        }
        match format_cell(cell, edition, style_dir) {
            Ok(formatted) if formatted == cell.code => clean.found(key),
            Ok(formatted) => {
                cells.push(cell.code_line);
                // Lines end as the cell's own do, where a file mixes its endings.
                let nl = chapter.newline_at(cell.content.start);
                let mut text = String::new();
                for line in formatted.lines() {
                    text.push_str(if line.is_empty() { cell.prefix.trim_end() } else { &cell.prefix });
                    text.push_str(line);
                    text.push_str(nl);
                }
                edits.replace(cell.content.clone(), text);
            }
            Err(FmtError::Rejected(why)) => diagnostics.push(
                Diagnostic::error(chapter.location(cell.code_line), "rustfmt cannot format this cell")
                    .with_note(why.trim().to_string()),
            ),
            Err(FmtError::Missing(e)) => return Err(e),
        }
    }
    if diagnostics.has_errors() {
        return Err(diagnostics.into());
    }
    Ok((!edits.is_empty()).then(|| Formatted { text: edits.apply(chapter.source()), cells }))
}

/// The cells rustfmt found formatted, as the hashes [`Clean::key`] gives them, kept in a file of
/// the work folder from one command to the next.
pub(crate) struct Clean {
    file: PathBuf,
    /// rustfmt's version and the style files it reads; `None` when rustfmt cannot say its
    /// version, and nothing is remembered.
    salt: Option<String>,
    known: BTreeSet<String>,
    /// The hashes this command met formatted (what is kept once the file grows long).
    seen: BTreeSet<String>,
    added: bool,
}

/// How many hashes the file keeps before it is cut down to the cells of the last command.
const KEPT: usize = 20_000;

impl Clean {
    /// What `work_dir` remembers for rustfmt run in `style_dir`.
    pub(crate) fn load(work_dir: &Path, style_dir: &Path) -> Clean {
        let file = work_dir.join("fmt-clean");
        let version = rustfmt_version();
        // rustfmt reads the first `rustfmt.toml` or `.rustfmt.toml` it finds upwards.
        let styles = style_dir.ancestors().flat_map(|d| [d.join("rustfmt.toml"), d.join(".rustfmt.toml")]);
        let salt = version.map(|v| {
            let mut salt = v.to_string();
            for style in styles {
                if let Ok(text) = std::fs::read_to_string(&style) {
                    salt.push_str(&format!("\n{}\n{text}", style.display()));
                }
            }
            salt
        });
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let known = text.lines().map(str::to_string).collect();
        Clean { file, salt, known, seen: BTreeSet::new(), added: false }
    }

    /// The hash of `cell` as rustfmt is asked about it.
    fn key(&self, cell: &Cell, edition: &str) -> Option<String> {
        use sha2::Digest;
        let salt = self.salt.as_ref()?;
        // A run cell is formatted inside a function body, the others as a file's top level.
        let kind = if cell.kind == CellKind::Run { "body" } else { "items" };
        let mut h = sha2::Sha256::new();
        for (label, part) in [("salt", salt.as_str()), ("edition", edition), ("kind", kind), ("code", &cell.code)] {
            crate::cache::feed(&mut h, label, part.as_bytes());
        }
        Some(crate::cache::hex(h))
    }

    /// Whether the cell of hash `key` is known formatted.
    fn is_known(&mut self, key: &Option<String>) -> bool {
        let known = key.as_ref().is_some_and(|k| self.known.contains(k));
        if known {
            self.found(key.clone());
        }
        known
    }

    fn found(&mut self, key: Option<String>) {
        if let Some(key) = key {
            self.added |= self.known.insert(key.clone());
            self.seen.insert(key);
        }
    }

    /// Writes what was learnt. Remembering is only a saving: a file that cannot be written
    /// costs the next command its rustfmt runs, nothing else.
    pub(crate) fn save(&self) {
        if self.added {
            let kept = if self.known.len() > KEPT { &self.seen } else { &self.known };
            let text: String = kept.iter().map(|k| format!("{k}\n")).collect();
            let _ = std::fs::create_dir_all(self.file.parent().unwrap_or(Path::new(".")));
            let _ = crate::fsutil::write_atomic(&self.file, text.as_bytes());
        }
    }
}

fn rustfmt_program() -> std::ffi::OsString {
    std::env::var_os("RUSTFMT").unwrap_or_else(|| "rustfmt".into())
}

/// What the rustfmt that formats cells says its version is; `None` when it cannot run. Asked
/// once per command: `tangle test` wants to know whether rustfmt is there, and the memory of
/// formatted cells is keyed by its version.
pub fn rustfmt_version() -> Option<&'static str> {
    static VERSION: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    VERSION
        .get_or_init(|| {
            let out = Command::new(rustfmt_program()).arg("--version").output().ok()?;
            out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        })
        .as_deref()
}

enum FmtError {
    /// rustfmt ran and refused (a syntax error); its message.
    Rejected(String),
    /// rustfmt could not run at all.
    Missing(anyhow::Error),
}

/// One cell's code, formatted.
fn format_cell(cell: &Cell, edition: &str, style_dir: &Path) -> Result<String, FmtError> {
    match cell.kind {
        CellKind::Save | CellKind::Test => rustfmt(&cell.code, edition, style_dir),
        CellKind::Run => {
            // Inside a function body, as in main.rs, indented as the body is; the wrapper
            // lines and the indentation go again afterwards. A statement rustfmt cannot
            // format (a string literal past the width) it leaves as it was given, so it must
            // be given indented, or taking the body out again would unindent it.
            let formatted = rustfmt(&wrap_body(&cell.code), edition, style_dir)?;
            Ok(unwrap_body(&formatted))
        }
    }
}

/// `code` as the body of `fn cell() { ... }`, four spaces deeper (but not the lines that
/// continue a multi-line string, whose text must not change).
fn wrap_body(code: &str) -> String {
    let literal_lines = crate::generate::literal_continuation_lines(code);
    let mut out = String::from("fn cell() {\n");
    for (i, line) in code.lines().enumerate() {
        if !line.is_empty() && !literal_lines.contains(&(i + 1)) {
            out.push_str("    ");
        }
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("}\n");
    out
}

/// The body of `fn cell() { ... }` as rustfmt printed it, four spaces of indentation removed
/// (but not from the lines that continue a multi-line string, whose text must not change).
fn unwrap_body(formatted: &str) -> String {
    let lines: Vec<&str> = formatted.lines().collect();
    let body = &lines[1.min(lines.len())..lines.len().saturating_sub(1)];
    let literal_lines = crate::generate::literal_continuation_lines(formatted);
    let mut out = String::new();
    for (i, line) in body.iter().enumerate() {
        let generated_line = i + 2;
        let text = match literal_lines.contains(&generated_line) {
            true => line,
            false => line.strip_prefix("    ").unwrap_or(line),
        };
        out.push_str(text);
        out.push('\n');
    }
    out
}

fn rustfmt(code: &str, edition: &str, style_dir: &Path) -> Result<String, FmtError> {
    let mut child = Command::new(rustfmt_program())
        .args(["--edition", edition, "--emit", "stdout", "--quiet"])
        .current_dir(style_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run rustfmt (install it with `rustup component add rustfmt`)")
        .map_err(FmtError::Missing)?;
    let mut stdin = child.stdin.take().expect("piped");
    let input = code.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().map_err(|e| FmtError::Missing(e.into()))?;
    let _ = writer.join();
    if !out.status.success() {
        return Err(FmtError::Rejected(String::from_utf8_lossy(&out.stderr).into_owned()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chapter(md: &str) -> Chapter {
        crate::parse::parse_chapter("ch01", std::path::Path::new("book/src/ch01.md"), md.as_bytes().to_vec()).unwrap()
    }

    /// A memory of formatted cells in a folder of its own, empty.
    fn nothing_known() -> Clean {
        let dir = tempfile::tempdir().unwrap().keep();
        Clean::load(&dir, &dir)
    }

    fn have_rustfmt() -> bool {
        Command::new("rustfmt").arg("--version").output().is_ok_and(|o| o.status.success())
    }

    #[test]
    fn cells_are_formatted_in_place_and_nothing_else_moves() {
        if !have_rustfmt() {
            eprintln!("skipped: rustfmt is not installed");
            return;
        }
        let md = "Prose   with  spaces.\n\n- item\n\n  ```rust\n  // @save\n  pub fn f( x:u32)->u32{x+1}\n  ```\n\n```rust\nlet s = \"a\n  b\";\nif true { println!(\"{}\",f(1)) }\n```\n";
        let formatted =
            format_chapter(&chapter(md), "2024", &std::env::temp_dir(), &mut nothing_known()).unwrap().unwrap();
        assert_eq!(formatted.cells, vec![6, 11], "the first line in the fence of each changed cell");
        let out = formatted.text;
        assert_eq!(
            out,
            "Prose   with  spaces.\n\n- item\n\n  ```rust\n  // @save\n  pub fn f(x: u32) -> u32 {\n      x + 1\n  }\n  ```\n\n```rust\nlet s = \"a\n  b\";\nif true {\n    println!(\"{}\", f(1))\n}\n```\n"
        );
        assert_eq!(
            format_chapter(&chapter(&out), "2024", &std::env::temp_dir(), &mut nothing_known())
                .unwrap()
                .map(|f| f.text),
            None,
            "formatting is idempotent"
        );
    }

    /// A formatted cell is remembered, under what rustfmt was given and how; an unformatted
    /// one is not, and a change of the code, the edition or the style files is a new question.
    #[test]
    fn cells_found_formatted_are_remembered_until_they_or_the_style_change() {
        if !have_rustfmt() {
            eprintln!("skipped: rustfmt is not installed");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (work, style) = (dir.path().join("work"), dir.path().join("style"));
        std::fs::create_dir_all(&style).unwrap();
        let md = "```rust\n// @save\npub fn f(x: u32) -> u32 {\n    x + 1\n}\n```\n\n```rust\nlet y  =  f(1);\n```\n";
        let ch = chapter(md);
        let mut clean = Clean::load(&work, &style);
        let formatted = format_chapter(&ch, "2024", &style, &mut clean).unwrap().unwrap();
        assert_eq!(formatted.cells, vec![9], "only the run cell needs formatting");
        clean.save();
        let mut again = Clean::load(&work, &style);
        let keys: Vec<_> = ch.cells.iter().map(|c| again.key(c, "2024")).collect();
        assert!(again.is_known(&keys[0]), "the formatted cell is remembered");
        assert!(!again.is_known(&keys[1]), "the unformatted one is not");
        assert_ne!(again.key(&ch.cells[0], "2021"), keys[0], "another edition");
        std::fs::write(style.join("rustfmt.toml"), "max_width = 80\n").unwrap();
        assert_ne!(Clean::load(&work, &style).key(&ch.cells[0], "2024"), keys[0], "another style");
        // Asked again, the chapter gets the same answer.
        let formatted = format_chapter(&ch, "2024", &style, &mut again).unwrap().unwrap();
        assert_eq!(formatted.cells, vec![9]);
    }

    #[test]
    fn a_statement_rustfmt_leaves_alone_keeps_its_indentation() {
        if !have_rustfmt() {
            eprintln!("skipped: rustfmt is not installed");
            return;
        }
        let long = "x".repeat(120);
        let md = format!("```rust\nfor i in 0..2 {{\n    f(\n\"{long}\",\n    i)?;\n}}\n```\n");
        let once = format_chapter(&chapter(&md), "2024", &std::env::temp_dir(), &mut nothing_known())
            .unwrap()
            .map_or(md.clone(), |f| f.text);
        assert!(once.contains("\n    f(\n"), "{once}");
        assert_eq!(
            format_chapter(&chapter(&once), "2024", &std::env::temp_dir(), &mut nothing_known())
                .unwrap()
                .map(|f| f.text),
            None,
            "formatting is idempotent:\n{once}"
        );
    }
}
