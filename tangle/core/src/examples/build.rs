//! The `cargo build` of the examples workspace, and the `cargo check` of its crates that are
//! only checked (`no_run` and `compile_fail` examples, which rustdoc compiles with
//! `--emit=metadata` and never links): `--keep-going`, so that a crate that fails (a
//! `compile_fail` example, a mistake) stops none of the others; rustc's messages mapped to the
//! chapters by the build stage's mapper, and sorted by the binary they came from.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use anyhow::Context;
use cargo_metadata::Message;
use cargo_metadata::diagnostic::DiagnosticLevel;

use super::crates::Workspace;
use crate::build::rustc::Mapper;
use crate::config::Layout;
use crate::diagnostic::{Diagnostic, Location, Severity};
use crate::model::Chapter;
use crate::progress::Progress;

/// What the build said about one binary target.
#[derive(Debug, Default)]
pub struct Target {
    /// The executable, when it was built.
    pub exe: Option<PathBuf>,
    /// Its errors, located in the chapters where rustc's spans allow.
    pub errors: Vec<Diagnostic>,
    /// The error codes rustc gave (`E0382`).
    pub codes: Vec<String>,
}

/// Builds the packages `binaries` of `workspace` (each package has one binary of its name),
/// or only checks those placed so; returns what happened to each. A checked package that
/// compiles counts as built: its `exe` is its metadata file, never run.
pub fn build(
    layout: &Layout,
    workspace: &Workspace,
    binaries: &[String],
    progress: &dyn Progress,
) -> anyhow::Result<BTreeMap<String, Target>> {
    let mut targets: BTreeMap<String, Target> = binaries.iter().map(|b| (b.clone(), Target::default())).collect();
    let manifest = layout.root.join(workspace.dir.join("Cargo.toml"));
    crate::build::claims::claim(&crate::build::target_dir(layout), &manifest, "debug", binaries)?;
    let checked: BTreeSet<&String> =
        workspace.placements.values().filter(|p| p.checked_only).map(|p| &p.binary).collect();
    let (check, build): (Vec<String>, Vec<String>) = binaries.iter().cloned().partition(|b| checked.contains(b));
    for (verb, packages) in [("build", build), ("check", check)] {
        if !packages.is_empty() {
            cargo(layout, workspace, verb, &packages, progress, &mut targets)?;
        }
    }
    Ok(targets)
}

/// One `cargo VERB` (`build` or `check`) of `packages`, its findings added to `targets`.
fn cargo(
    layout: &Layout,
    workspace: &Workspace,
    verb: &str,
    packages: &[String],
    progress: &dyn Progress,
    targets: &mut BTreeMap<String, Target>,
) -> anyhow::Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&layout.root)
        .arg(verb)
        .arg("--manifest-path")
        .arg(workspace.dir.join("Cargo.toml"))
        .args(["--keep-going", "--message-format=json"])
        .env("CARGO_TARGET_DIR", crate::build::target_dir(layout))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for b in packages {
        cmd.arg("--package").arg(b);
    }
    // Messages name the binary target, which is the package's name unless an example named
    // its crate.
    let package_of: BTreeMap<&str, &str> =
        workspace.placements.values().map(|p| (p.target.as_str(), p.binary.as_str())).collect();
    let package_of = |target: &str| package_of.get(target).copied().unwrap_or(target).to_string();
    let mut child = cmd.spawn().context("cannot run cargo (is a Rust toolchain installed?)")?;
    let stderr = child.stderr.take().expect("piped stderr");
    let stdout = child.stdout.take().expect("piped stdout");
    let mapper = Mapper {
        root: &layout.root,
        generated: &workspace.generated,
        verbose: false,
        examples_edition: Some(&workspace.edition),
        declared: &workspace.declared,
        manifest_package: workspace.manifest_package.as_ref().map(|(n, p)| (n.as_str(), p.as_str())),
    };
    let mut dependency_errors: Vec<(String, String)> = Vec::new();
    std::thread::scope(|scope| {
        let chatter = scope.spawn(|| crate::build::relay_progress(stderr, progress));
        for message in Message::parse_stream(BufReader::new(stdout)) {
            match message? {
                Message::CompilerMessage(msg) => {
                    let Some(target) = targets.get_mut(&package_of(&msg.target.name)) else {
                        // A crate the examples use (the project's own, by path) that does not
                        // compile: its errors are the reason, in its own files.
                        if matches!(msg.message.level, DiagnosticLevel::Error | DiagnosticLevel::Ice)
                            && let Some(rendered) = &msg.message.rendered
                        {
                            dependency_errors.push((msg.target.name.clone(), rendered.trim_end().to_string()));
                        }
                        continue;
                    };
                    // Lints have codes too (their names); only errors say why it did not compile.
                    if let Some(code) = &msg.message.code
                        && matches!(msg.message.level, DiagnosticLevel::Error | DiagnosticLevel::Ice)
                    {
                        target.codes.push(code.code.clone());
                    }
                    if let Some(d) = mapper.map(&msg.message).filter(|d| d.severity == Severity::Error) {
                        target.errors.push(d);
                    }
                }
                Message::CompilerArtifact(artifact) => {
                    let made = match verb {
                        "check" => artifact.filenames.first(),
                        _ => artifact.executable.as_ref(),
                    };
                    if let (Some(made), Some(target)) = (made, targets.get_mut(&package_of(&artifact.target.name))) {
                        target.exe = Some(made.clone().into_std_path_buf());
                    }
                }
                _ => {}
            }
        }
        let status = child.wait()?;
        let kept = chatter.join().unwrap_or_default();
        let explained = packages
            .iter()
            .filter_map(|p| targets.get(p))
            .any(|t| t.exe.is_some() || !t.errors.is_empty() || !t.codes.is_empty());
        if !status.success() && !explained {
            if let Some(d) = crate::build::unknown_dependency(layout, &kept) {
                return Err(d.into());
            }
            if let Some(why) = crate::build::unbuildable_dependency(&kept) {
                anyhow::bail!("{why}:\n{}", kept.trim_end());
            }
            if let Some((name, _)) = dependency_errors.first() {
                let rendered: Vec<&str> = dependency_errors.iter().map(|(_, r)| r.as_str()).collect();
                anyhow::bail!(
                    "the crate `{name}`, which the examples use, does not compile, so no example can be built:\n{}",
                    rendered.join("\n")
                );
            }
            anyhow::bail!("cargo could not {verb} the examples ({status}):\n{}", kept.trim_end());
        }
        Ok(())
    })
}

/// Where a panic's `FILE:LINE:COL` is, if it is in an example: the example's chapter, the
/// place (in the chapter, or in the file the line was included from, where it is fixed), and
/// for an included line the chapter line of its `{{#include}}`.
pub(crate) fn panic_position<'w>(
    workspace: &'w Workspace,
    file: &Path,
    line: usize,
    column: usize,
) -> Option<(&'w Arc<Chapter>, Location, Option<Location>)> {
    let file = crate::generate::lexically_normal(&workspace.dir.join(file));
    let generated = &workspace.generated;
    let (chapter, at, column_there) = generated.chapter_position(&file, line, column)?;
    Some(match generated.included_position(&file, line, column) {
        Some((path, line, column)) => {
            (chapter, Location::new(path, line).with_column(column), Some(chapter.location(at)))
        }
        None => (chapter, Location::new(&chapter.path, at).with_column(column_there), None),
    })
}
