//! `cargo xtask msrv`: the minimum supported Rust version is declared once and
//! checked.
//!
//! ```text
//! cargo xtask msrv [--workspace DIR]
//! ```
//!
//! 1. `[workspace.package] rust-version` must be set in the root manifest.
//! 2. Every workspace member must inherit it (`rust-version.workspace = true`)
//!    and `cargo metadata` must report that same version for every member.
//! 3. When a toolchain of that version is installed (`rustup toolchain
//!    list`), `cargo +<toolchain> check --workspace` runs with it. Otherwise
//!    `cargo check --workspace` runs with the current toolchain, and the task
//!    says clearly that only the declaration was checked (toolchains are not
//!    downloaded).

use std::path::PathBuf;
use std::process::Command;

use crate::json::Json;
use crate::release::{package_inherits, workspace_package_value};
use crate::util::{self, run as run_command, workspace_root};

/// Runs the task with the arguments after `msrv`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut root = workspace_root();
    let mut build = true;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--workspace" => root = PathBuf::from(iter.next().ok_or("--workspace needs a folder")?),
            "--no-build" => build = false,
            other => {
                return Err(format!(
                    "msrv: unknown argument `{other}` (usage: cargo xtask msrv [--workspace DIR] [--no-build])"
                ));
            }
        }
    }
    let manifest = std::fs::read_to_string(root.join("Cargo.toml"))
        .map_err(|e| format!("cannot read Cargo.toml: {e}"))?;
    let declared = workspace_package_value(&manifest, "rust-version")
        .ok_or("Cargo.toml: no `rust-version` in [workspace.package]")?;

    let metadata = cargo_metadata(
        Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .current_dir(&root)
            .args(["metadata", "--format-version", "1", "--no-deps"]),
    )?;
    let mut problems = Vec::new();
    let packages = metadata
        .get("packages")
        .and_then(Json::as_array)
        .unwrap_or_default();
    for package in packages {
        let name = package.get("name").and_then(Json::as_str).unwrap_or("?");
        let manifest_path = package
            .get("manifest_path")
            .and_then(Json::as_str)
            .unwrap_or("");
        let text = std::fs::read_to_string(manifest_path).unwrap_or_default();
        if !inherits_rust_version(&text) {
            problems.push(format!(
                "{name}: {manifest_path} does not use `rust-version.workspace = true`"
            ));
        }
        let actual = package.get("rust_version").and_then(Json::as_str);
        if actual != Some(declared.as_str()) {
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

    check_dependencies(&root, &declared)?;
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

/// Runs `cmd` (a `cargo metadata` command line) and parses its output.
fn cargo_metadata(cmd: &mut Command) -> Result<Json, String> {
    Json::parse(&String::from_utf8_lossy(&util::cargo_metadata(cmd)?))
}

/// Every package in the locked dependency graph must declare a
/// `rust-version` no newer than ours (or none): the check this machine can
/// make without the old toolchain itself.
fn check_dependencies(root: &std::path::Path, declared: &str) -> Result<(), String> {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root)
        .args(["metadata", "--format-version", "1"]);
    // The graph that ships is the locked one; a workspace without a lock
    // file (a scratch one) is resolved as it stands.
    if root.join("Cargo.lock").is_file() {
        cmd.arg("--locked");
    }
    let metadata = cargo_metadata(&mut cmd)?;
    let ours = version_key(declared);
    let mut newer = Vec::new();
    let packages = metadata
        .get("packages")
        .and_then(Json::as_array)
        .unwrap_or_default();
    for package in packages {
        let Some(rv) = package.get("rust_version").and_then(Json::as_str) else {
            continue;
        };
        if version_key(rv) > ours {
            let name = package.get("name").and_then(Json::as_str).unwrap_or("?");
            let version = package.get("version").and_then(Json::as_str).unwrap_or("?");
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

/// `"1.85.0"` -> `[1, 85, 0]`, missing parts as 0, for comparison.
fn version_key(v: &str) -> [u64; 3] {
    let mut key = [0u64; 3];
    for (slot, part) in key.iter_mut().zip(v.split('.')) {
        *slot = part.parse().unwrap_or(0);
    }
    key
}

/// True when `[package]` has `rust-version.workspace = true`.
fn inherits_rust_version(manifest: &str) -> bool {
    package_inherits(manifest, "rust-version")
}

/// True when a `rustup toolchain list` name is that Rust version
/// (`1.85-x86_64-...`, `1.85.0-x86_64-...`, `1.85.1`, ...).
fn matches_version(toolchain: &str, version: &str) -> bool {
    let Some(rest) = toolchain.strip_prefix(version) else {
        return false;
    };
    if rest.is_empty() || rest.starts_with('-') {
        return true;
    }
    // `1.85` declared: any `1.85.<patch>` toolchain qualifies.
    rest.strip_prefix('.')
        .map(|r| {
            r.split('-')
                .next()
                .unwrap_or("")
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .unwrap_or(false)
        && version.matches('.').count() == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_number() {
        assert!(version_key("1.85.0") == version_key("1.85"));
        assert!(version_key("1.9") < version_key("1.85"));
        assert!(version_key("1.86") > version_key("1.85.9"));
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
        assert!(inherits_rust_version(
            "[package]\nname = \"a\"\nrust-version.workspace = true\n"
        ));
        assert!(inherits_rust_version(
            "[package]\nrust-version = { workspace = true }\n"
        ));
        assert!(!inherits_rust_version(
            "[package]\nrust-version = \"1.85\"\n"
        ));
        assert!(!inherits_rust_version(
            "[package]\n[x]\nrust-version.workspace = true\n"
        ));
    }
}
