//! `cargo xtask msrv`: the minimum supported Rust version is declared once and
//! checked.
//!
//! 1. `[workspace.package] rust-version` must be set in the root manifest.
//! 2. Every workspace member must inherit it (`rust-version.workspace = true`)
//!    and `cargo metadata` must report that same version for every member.
//! 3. When a toolchain of that version is installed (`rustup toolchain
//!    list`), `cargo +<toolchain> check --workspace` runs with it. Otherwise
//!    `cargo check --workspace` runs with the current toolchain, and the task
//!    says clearly that only the declaration was checked (toolchains are not
//!    downloaded).

use std::path::{Path, PathBuf};
use std::process::Command;

use cargo_metadata::{Metadata, MetadataCommand};
use semver::{Version, VersionReq};
use toml_edit::DocumentMut;

use crate::release::{package_inherits, workspace_package_value};
use crate::util::{read, run as run_command, workspace_root};

/// What the command line asked for.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The workspace to check (this one by default).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Check the declaration and the dependencies only, build nothing.
    #[arg(long)]
    no_build: bool,
}

/// Runs the task with the arguments after `msrv`.
pub(crate) fn run(args: Args) -> Result<(), String> {
    let root = args.workspace.unwrap_or_else(workspace_root);
    let build = !args.no_build;
    let manifest = parse_manifest(&root.join("Cargo.toml"))?;
    let declared = workspace_package_value(&manifest, "rust-version")
        .ok_or("Cargo.toml: no `rust-version` in [workspace.package]")?;
    let ours = rust_version(&declared)
        .ok_or_else(|| format!("Cargo.toml: rust-version `{declared}` is not a version"))?;

    let metadata = cargo_metadata(&root, &[])?;
    let mut problems = Vec::new();
    let packages = metadata.workspace_packages();
    for package in &packages {
        let name = &package.name;
        let manifest_path = &package.manifest_path;
        let inherits = parse_manifest(manifest_path.as_std_path())
            .is_ok_and(|m| package_inherits(&m, "rust-version"));
        if !inherits {
            problems.push(format!(
                "{name}: {manifest_path} does not use `rust-version.workspace = true`"
            ));
        }
        let actual = package.rust_version.as_ref().map(ToString::to_string);
        if package.rust_version.as_ref() != Some(&ours) {
            problems.push(format!(
                "{name}: rust-version is {actual:?}, the workspace declares {declared}"
            ));
        }
    }
    if !problems.is_empty() {
        return Err(format!(
            "msrv: the declaration is inconsistent:\n  {}",
            problems.join("\n  ")
        ));
    }
    println!(
        "msrv: rust-version {declared} declared once and inherited by all {} members",
        packages.len()
    );

    check_dependencies(&root, &declared, &ours)?;
    if !build {
        return Ok(());
    }

    let toolchains = Command::new("rustup")
        .args(["toolchain", "list"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let installed = toolchains
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .find(|t| matches_version(t, &declared))
        .map(str::to_owned);
    match installed {
        Some(toolchain) => {
            println!("msrv: checking the workspace with toolchain {toolchain}");
            run_command(
                Command::new("rustup")
                    .current_dir(&root)
                    .env_remove("RUSTUP_TOOLCHAIN")
                    .env_remove("CARGO")
                    .env_remove("RUSTC")
                    .args(["run", &toolchain, "cargo", "check", "--workspace"]),
            )?;
            println!("msrv: the workspace builds with Rust {declared}");
        }
        None => {
            let current = Command::new("rustc")
                .arg("--version")
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
                .unwrap_or_else(|_| "rustc (unknown version)".into());
            println!(
                "msrv: NOTE no Rust {declared} toolchain is installed (this machine cannot download one); \
                 ONLY THE DECLARATION WAS CHECKED. Building with the current toolchain ({current}) instead."
            );
            run_command(
                Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
                    .current_dir(&root)
                    .args(["check", "--workspace"]),
            )?;
            println!(
                "msrv: the workspace builds with {current}; Rust {declared} itself was not tried"
            );
        }
    }
    Ok(())
}

/// Reads and parses a manifest.
fn parse_manifest(path: &Path) -> Result<DocumentMut, String> {
    let text = read(path)?;
    text.parse().map_err(|e| format!("{}: {e}", path.display()))
}

/// `cargo metadata` in `root` (`--no-deps` unless `options` are given).
fn cargo_metadata(root: &Path, options: &[&str]) -> Result<Metadata, String> {
    let mut cmd = MetadataCommand::new();
    cmd.current_dir(root);
    if options.is_empty() {
        cmd.no_deps();
    }
    cmd.other_options(options.iter().map(|o| (*o).to_owned()).collect::<Vec<_>>());
    cmd.exec().map_err(|e| format!("cargo metadata: {e}"))
}

/// Every package in the locked dependency graph must declare a
/// `rust-version` no newer than ours (or none): the check this machine can
/// make without the old toolchain itself.
fn check_dependencies(root: &Path, declared: &str, ours: &Version) -> Result<(), String> {
    // The graph that ships is the locked one; a workspace without a lock
    // file (a scratch one) is resolved as it stands.
    let locked: &[&str] = if root.join("Cargo.lock").is_file() {
        &["--locked"]
    } else {
        &[]
    };
    let metadata = cargo_metadata(root, locked)?;
    let mut newer = Vec::new();
    let packages = &metadata.packages;
    for package in packages {
        let Some(rv) = &package.rust_version else {
            continue;
        };
        if rv > ours {
            let (name, version) = (&package.name, &package.version);
            newer.push(format!("{name} {version} needs Rust {rv}"));
        }
    }
    if !newer.is_empty() {
        return Err(format!(
            "msrv: dependencies need a newer Rust than {declared}:\n  {}",
            newer.join("\n  ")
        ));
    }
    println!(
        "msrv: all {} packages of the locked graph accept Rust {declared}",
        packages.len()
    );
    Ok(())
}

/// A `rust-version` (`1.85`, `1.85.1`) as a version, a missing patch as 0.
fn rust_version(text: &str) -> Option<Version> {
    let padded = if text.matches('.').count() == 1 {
        format!("{text}.0")
    } else {
        text.to_owned()
    };
    Version::parse(&padded).ok()
}

/// True when a `rustup toolchain list` name is that Rust version
/// (`1.85-x86_64-...`, `1.85.0-x86_64-...`, `1.85.1`, ...): `1.85` declared
/// takes any `1.85.<patch>`, `1.85.0` only itself.
fn matches_version(toolchain: &str, declared: &str) -> bool {
    let wanted = VersionReq::parse(&format!("={declared}"));
    let named = toolchain.split('-').next().and_then(rust_version);
    matches!((wanted, named), (Ok(w), Some(v)) if w.matches(&v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_number() {
        let v = |t| rust_version(t).unwrap();
        assert!(v("1.85.0") == v("1.85"));
        assert!(v("1.9") < v("1.85"));
        assert!(v("1.86") > v("1.85.9"));
        assert!(rust_version("1.x").is_none());
    }

    #[test]
    fn toolchain_names() {
        assert!(matches_version("1.85-x86_64-unknown-linux-gnu", "1.85"));
        assert!(matches_version("1.85.0-x86_64-unknown-linux-gnu", "1.85"));
        assert!(matches_version("1.85.1", "1.85"));
        assert!(matches_version("1.85.0", "1.85.0"));
        assert!(!matches_version("1.850.0", "1.85"));
        assert!(!matches_version("1.95.0-x86_64-unknown-linux-gnu", "1.85"));
        assert!(!matches_version("stable-x86_64-unknown-linux-gnu", "1.85"));
        assert!(!matches_version("1.85.1", "1.85.0"));
    }

    #[test]
    fn inheritance() {
        let inherits = |text: &str| package_inherits(&text.parse().unwrap(), "rust-version");
        assert!(inherits(
            "[package]\nname = \"a\"\nrust-version.workspace = true\n"
        ));
        assert!(inherits("[package]\nrust-version = { workspace = true }\n"));
        assert!(!inherits("[package]\nrust-version = \"1.85\"\n"));
        assert!(!inherits("[package]\n[x]\nrust-version.workspace = true\n"));
    }
}
