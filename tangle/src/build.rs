//! Stage 3, **build**: one `cargo build --release` for every chapter that must run, so cargo
//! builds independent chapters in parallel. rustc's JSON diagnostics are mapped back through
//! the [`LineMap`](crate::generate::LineMap) to the chapter line they came from.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;
use cargo_metadata::Message;
use cargo_metadata::diagnostic::DiagnosticLevel;

use crate::generate::Generated;
use crate::model::Location;

/// Where tangle builds chapter binaries: apart from `target/release`, so that `cargo tangle`
/// (itself running from `target/release`) and `cargo test` never wait on each other's lock.
/// `TANGLE_TARGET_DIR` overrides it (the fixture tests share one across fixture books).
pub fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("TANGLE_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => root.join("target/tangle"),
    }
}

/// The built binary of a chapter.
pub fn binary(root: &Path, chapter: &str) -> PathBuf {
    target_dir(root).join("release").join(format!("{chapter}{}", std::env::consts::EXE_SUFFIX))
}

/// A compile error, located in the chapter.
#[derive(Debug)]
pub struct CompileError {
    /// The chapter line, when the error points into generated code.
    pub location: Option<Location>,
    /// rustc's message, rendered as rustc prints it (against the generated file).
    pub rendered: String,
    pub message: String,
}

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.location {
            Some(loc) => write!(f, "{loc}: {}\n{}", self.message, self.rendered.trim_end()),
            None => write!(f, "{}", self.rendered.trim_end()),
        }
    }
}

/// Builds the binaries of `chapters` in the release profile. `Ok(errors)` holds the compile
/// errors (empty on success); `Err` is a failure to run cargo at all.
pub fn build(root: &Path, generated: &Generated, chapters: &[String]) -> anyhow::Result<Vec<CompileError>> {
    if chapters.is_empty() {
        return Ok(Vec::new());
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args(["build", "--release", "--bins", "--message-format=json"])
        .env("CARGO_TARGET_DIR", target_dir(root))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for c in chapters {
        cmd.args(["--package", c]);
    }
    let mut child = cmd.spawn().context("cannot run cargo (is a Rust toolchain installed?)")?;
    let stdout = child.stdout.take().expect("piped stdout");
    let mut errors = Vec::new();
    for message in Message::parse_stream(BufReader::new(stdout)) {
        let Message::CompilerMessage(msg) = message? else { continue };
        let diag = msg.message;
        if !matches!(diag.level, DiagnosticLevel::Error | DiagnosticLevel::Ice) {
            continue;
        }
        let location = diag.spans.iter().find(|s| s.is_primary).and_then(|span| {
            let file = PathBuf::from(&span.file_name);
            let file = file.strip_prefix(root).map(Path::to_path_buf).unwrap_or(file);
            let chapter = file.components().nth(1)?.as_os_str().to_str()?.to_string();
            let krate = generated.get(&chapter)?;
            let line = krate.line_map.chapter_line(&file, span.line_start)?;
            Some(Location { file: PathBuf::from(format!("book/src/{chapter}.md")), line })
        });
        errors.push(CompileError {
            location,
            rendered: diag.rendered.clone().unwrap_or_else(|| diag.message.clone()),
            message: diag.message,
        });
    }
    let status = child.wait()?;
    if !status.success() && errors.is_empty() {
        anyhow::bail!("cargo build failed ({status}) without a compile error; see its output above");
    }
    Ok(errors)
}
