//! Stage 3, **build**: one `cargo build --release` of the chapter workspace (`code/`) for every
//! chapter that must run, so that cargo builds independent chapters in parallel; each chapter's
//! program is reported with the executable cargo made. rustc's JSON diagnostics come back as
//! [`Diagnostic`]s against the chapter files ([`rustc`]); cargo's own chatter ("could not
//! compile") is dropped, its progress lines passed on. Books sharing a target folder build
//! their own chapters, never reuse each other's ([`claims`]).

pub(crate) mod claims;
pub(crate) mod rustc;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;
use cargo_metadata::Message;

use crate::config::Layout;
use crate::diagnostic::{Diagnostic, Severity};
use crate::generate::Generated;
use crate::progress::Progress;

/// Where tangle builds chapter binaries: apart from `target/release`, so that `cargo tangle`
/// (itself running from `target/release`) and `cargo test` never wait on each other's lock.
/// `TANGLE_TARGET_DIR` overrides it (the fixture tests share one across fixture books).
pub(crate) fn target_dir(layout: &Layout) -> PathBuf {
    match std::env::var_os("TANGLE_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => layout.work_dir(),
    }
}

/// `rustc -V` as cargo would run it from `dir` (`$RUSTC`, else `rustc` under rustup's choice
/// for that folder, a `rust-toolchain.toml` included): what a build with another compiler
/// would differ in, for the run caches' keys and the frozen records' hashes.
pub(crate) fn compiler_version(dir: &Path) -> anyhow::Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut cmd = Command::new(&rustc);
    cmd.arg("-V");
    if dir.is_dir() {
        cmd.current_dir(dir);
    }
    let out = cmd.output().map_err(|e| anyhow::anyhow!("`{} -V` does not run ({e})", rustc.to_string_lossy()))?;
    anyhow::ensure!(
        out.status.success(),
        "`{} -V` failed: {}",
        rustc.to_string_lossy(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The built binary of a chapter.
pub fn binary(layout: &Layout, chapter: &str) -> PathBuf {
    target_dir(layout).join("release").join(format!("{chapter}{}", std::env::consts::EXE_SUFFIX))
}

/// What a build found.
#[derive(Debug, Default)]
pub struct BuildReport {
    /// Errors and warnings, located in the chapters where rustc's spans allow.
    pub diagnostics: Vec<Diagnostic>,
}

impl BuildReport {
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.severity == Severity::Error)
    }

    pub fn failed(&self) -> bool {
        self.errors().next().is_some()
    }
}

/// Options a build takes from the command line.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuildOptions {
    /// Name the generated file and line beside each chapter location.
    pub verbose: bool,
    /// Refuse to update `code/Cargo.lock` (on CI).
    pub locked: bool,
    /// Build the run programs and the runtime's stack in the release profile itself, at full
    /// optimisation, as the chapter libraries are: the reference that the quick build's
    /// outputs are checked against.
    pub full_optimisation: bool,
}

/// What a build makes.
#[derive(Debug, Clone, Copy)]
pub enum Targets<'a> {
    /// The chapters' programs (their `chNN-run` packages, and so their libraries).
    Programs(&'a [String]),
    /// The chapters' test cells (`chNN/tests/cells.rs`), built as test executables; chapters
    /// without test cells are left out.
    TestCells(&'a [String]),
}

impl Targets<'_> {
    fn chapters(&self) -> &[String] {
        match self {
            Targets::Programs(c) | Targets::TestCells(c) => c,
        }
    }
}

/// Builds `targets` in the release profile. `on_built` hears each chapter whose program (or
/// test executable) is built, with the path of the executable. `Err` is a failure to run cargo
/// at all, or a failed build without a single compiler message (cargo's own output is then
/// in the error).
pub fn build(
    layout: &Layout,
    generated: &Generated,
    targets: Targets,
    options: BuildOptions,
    progress: &dyn Progress,
    on_built: &(dyn Fn(&str, &Path) + Sync),
) -> anyhow::Result<BuildReport> {
    let mut report = BuildReport::default();
    let chapters = targets.chapters();
    if chapters.is_empty() {
        return Ok(report);
    }
    // Every package of the workspace: a program links the libraries of the chapters before it.
    let packages: Vec<String> = generated
        .crates
        .iter()
        .flat_map(|c| [c.name().to_string(), crate::generate::run_package(c.name())])
        .chain([crate::config::RUNTIME.to_string()])
        .collect();
    let manifest = layout.root.join(generated.code.join("Cargo.toml"));
    claims::claim(&target_dir(layout), &manifest, "release", &packages)?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&layout.root);
    match targets {
        Targets::Programs(_) => cmd.args(["build", "--bins"]),
        Targets::TestCells(_) => cmd.args(["test", "--no-run", "--test", "cells"]),
    };
    cmd.arg("--manifest-path")
        .arg(generated.code.join("Cargo.toml"))
        .args(["--release", "--message-format=json"])
        .env("CARGO_TARGET_DIR", target_dir(layout))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if options.locked {
        cmd.arg("--locked");
    }
    let reset = |cmd: &mut Command, package: &str| {
        // cargo keeps both builds apart (the profile is part of an artifact's hash).
        for (key, value) in crate::generate::RUN_PROFILE_RESET {
            cmd.arg("--config").arg(format!("profile.release.package.{package:?}.{key}={value}"));
        }
    };
    if options.full_optimisation && matches!(targets, Targets::Programs(_)) {
        for package in crate::generate::RUNTIME_STACK {
            reset(&mut cmd, package);
        }
    }
    // Each package by name and version (every chapter package is 0.0.0): a chapter may share
    // its name with a crate of the lock file (`quote.md`), which the name alone would not tell
    // apart.
    for c in chapters {
        if let Targets::TestCells(_) = targets {
            cmd.arg("--package").arg(format!("{c}@0.0.0"));
            continue;
        }
        let package = crate::generate::run_package(c);
        if options.full_optimisation {
            reset(&mut cmd, &package);
        }
        cmd.arg("--package").arg(format!("{package}@0.0.0"));
    }
    let mut child = cmd.spawn().context("cannot run cargo (is a Rust toolchain installed?)")?;
    let stderr = child.stderr.take().expect("piped stderr");
    let stdout = child.stdout.take().expect("piped stdout");
    let mapper = rustc::Mapper {
        root: &layout.root,
        generated,
        verbose: options.verbose,
        examples_edition: None,
        declared: &[],
        manifest_package: None,
    };
    std::thread::scope(|scope| {
        let chatter = scope.spawn(|| relay_progress(stderr, progress));
        for message in Message::parse_stream(BufReader::new(stdout)) {
            match message? {
                Message::CompilerMessage(msg) => {
                    if let Some(d) = mapper.map(&msg.message) {
                        report.diagnostics.push(d);
                    }
                }
                Message::CompilerArtifact(artifact) => {
                    let Some(exe) = &artifact.executable else { continue };
                    let chapter = match targets {
                        Targets::Programs(_) => chapters.iter().find(|c| **c == artifact.target.name),
                        // `code/chNN/tests/cells.rs`: the chapter is the package's folder.
                        Targets::TestCells(_) => chapters.iter().find(|c| {
                            artifact
                                .target
                                .src_path
                                .as_std_path()
                                .ends_with(Path::new(c.as_str()).join("tests/cells.rs"))
                        }),
                    };
                    if let Some(chapter) = chapter {
                        on_built(chapter, exe.as_std_path());
                    }
                }
                _ => {}
            }
        }
        let status = child.wait()?;
        let kept = chatter.join().unwrap_or_default();
        if !status.success() && !report.failed() {
            if let Some(d) = unknown_dependency(layout, &kept) {
                return Err(d.into());
            }
            anyhow::bail!("cargo could not build the chapters ({status}):\n{}", kept.trim_end());
        }
        Ok(report)
    })
}

/// A dependency cargo cannot have, from its words when it stops: a crate crates.io does not
/// have (`itao = "1"`), or a version of one it does not (`rand = "99"`); the error at its line
/// of `book.toml`, where the author declared it.
pub(crate) fn unknown_dependency(layout: &Layout, cargo_said: &str) -> Option<Diagnostic> {
    let after = |marker: &str| cargo_said.split(marker).nth(1)?.split('`').next();
    let (name, message, hint) = if let Some(name) = after("no matching package named `") {
        let hint = cargo_said.lines().find(|l| l.contains("perhaps you meant")).map(str::trim);
        (name, format!("no crate named `{name}` in the registry: cargo cannot fetch this dependency"), hint)
    } else {
        // `failed to select a version for the requirement `rand = "^99"``
        let requirement = after("failed to select a version for the requirement `")?;
        let (name, version) = requirement.split_once(" = ")?;
        let hint = cargo_said.lines().find(|l| l.contains("candidate versions found")).map(str::trim);
        (name, format!("no version of `{name}` matches {version}: cargo cannot fetch this dependency"), hint)
    };
    let book_toml = layout.book_toml();
    let text = std::fs::read_to_string(layout.abs(&book_toml)).ok()?;
    let line = text.lines().position(|l| {
        let l = l.trim_start();
        l.strip_prefix(name).is_some_and(|rest| rest.trim_start().starts_with('='))
            || l.contains(&format!("package = \"{name}\""))
    })?;
    let mut d = Diagnostic::error(crate::diagnostic::Location::new(book_toml, line + 1), message);
    if let Some(hint) = hint {
        d = d.with_help(hint.to_string());
    }
    Some(d)
}

/// A crate of the examples' dependencies whose build script failed (a `-sys` crate whose
/// system library is missing): every example links every declared crate, so none can build.
/// cargo's words, under a headline that says so and what to do.
pub(crate) fn unbuildable_dependency(cargo_said: &str) -> Option<String> {
    let krate = cargo_said.split("failed to run custom build command for `").nth(1)?.split('`').next()?;
    Some(format!(
        "`{krate}`, a crate declared in book.toml or one such a crate needs, does not build on this machine \
         (its build script failed, below), and every example links every declared crate: install what it needs, \
         or mark the examples that use it `ignore` and remove it from [preprocessor.tangle.dependencies]"
    ))
}

/// Passes cargo's progress lines ("Compiling ch06 ...") on to the progress log and keeps the
/// rest, which matters only when the build fails without a compiler message (a broken lock
/// file, no network).
pub(crate) fn relay_progress(stderr: impl std::io::Read, progress: &dyn Progress) -> String {
    let mut kept = String::new();
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        let word = line.split_whitespace().next().unwrap_or("");
        let shown =
            matches!(word, "Compiling" | "Finished" | "Locking" | "Updating" | "Downloaded" | "Downloading" | "Adding");
        let noise = line.starts_with("error: could not compile") || line.starts_with("warning: build failed");
        if shown {
            progress.line(&line);
        } else if !noise {
            kept.push_str(&line);
            kept.push('\n');
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_dependency_is_shown_at_its_line_of_book_toml() {
        let root = tempfile::tempdir().unwrap();
        let toml = "[book]\ntitle = \"t\"\n\n[preprocessor.tangle.dependencies]\nitao = \"1\"\neither_crate = { package = \"eithr\", version = \"1\" }\n";
        std::fs::write(root.path().join("book.toml"), toml).unwrap();
        let config = crate::config::Config::parse(root.path(), Path::new(""), toml).unwrap();
        let said = |name: &str| {
            format!(
                "    Updating crates.io index\nerror: no matching package named `{name}` found\nlocation searched: crates.io index\nrequired by package `basics_e5 v0.0.0 (/r/target/tangle/examples/basics/basics_e5)`\n"
            )
        };
        let d = unknown_dependency(&config.layout, &said("itao")).unwrap();
        assert_eq!(d.location.as_ref().map(|l| (l.file.as_path(), l.line)), Some((Path::new("book.toml"), 5)));
        assert!(d.message.contains("`itao`"), "{}", d.message);
        let d = unknown_dependency(&config.layout, &said("eithr")).unwrap();
        assert_eq!(d.location.map(|l| l.line), Some(6), "a renamed dependency, at its line");
        assert!(unknown_dependency(&config.layout, "error: failed to download").is_none());
        // A version crates.io does not have, at its line, with cargo's list of those it does.
        let said = "error: failed to select a version for the requirement `itao = \"^99\"`\ncandidate versions found which didn't match: 1.0.15, 1.0.14\n";
        let d = unknown_dependency(&config.layout, said).unwrap();
        assert_eq!(d.location.as_ref().map(|l| l.line), Some(5));
        assert!(d.message.contains("no version of `itao` matches \"^99\""), "{}", d.message);
        assert!(d.notes.iter().any(|(_, n)| n.contains("1.0.15")), "{:?}", d.notes);
        let said = "error: failed to run custom build command for `alsa-sys v0.4.0`\n\nCaused by:\n  pkg-config exited";
        assert!(unbuildable_dependency(said).unwrap().contains("`alsa-sys v0.4.0`"));
        assert!(unbuildable_dependency("error: failed to download").is_none());
    }
}
