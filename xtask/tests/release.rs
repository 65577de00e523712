//! `cargo xtask release --dry-run` and `cargo xtask msrv` on a small synthetic
//! workspace (three crates, no external dependency, so cargo runs offline):
//! the bump, the changelog move, packaging in dependency order, the feature
//! checks, the printed plan, and that the real tree is left alone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const CHANGELOG: &str = "# Changelog\n\nAll notable changes.\n\n## Unreleased\n\n### Added\n\n- `zeta-core`: the core.\n- `alpha-app`: the app.\n\n## 0.0.1 - 2026-01-01\n\n- First cut.\n";

/// Writes `text` to `root/rel`, creating folders.
fn put(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A fresh synthetic workspace named `name`: `zeta-core` (no deps),
/// `alpha-app` (depends on zeta-core, has features), `internal-tool`
/// (publish = false). Alphabetical order is the reverse of dependency order.
fn workspace(name: &str, rust_version_of_app: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    if root.exists() {
        fs::remove_dir_all(&root).unwrap();
    }
    put(
        &root,
        "Cargo.toml",
        r#"[workspace]
resolver = "3"
members = ["crates/*"]

[workspace.package]
version = "0.1.0"
edition = "2021"
rust-version = "1.85"
license = "MIT"
description = "A synthetic crate for the release test."
repository = "https://example.invalid/mini"

[workspace.dependencies]
zeta-core = { path = "crates/zeta-core", version = "0.1.0" }
alpha-app = { path = "crates/alpha-app", version = "0.1.0" }
"#,
    );
    let package = |name: &str, rust_version: &str, extra: &str| {
        format!(
            "[package]\nname = \"{name}\"\nversion.workspace = true\nedition.workspace = true\n{rust_version}\nlicense.workspace = true\ndescription.workspace = true\nrepository.workspace = true\n{extra}\n"
        )
    };
    put(
        &root,
        "crates/zeta-core/Cargo.toml",
        &package("zeta-core", "rust-version.workspace = true", ""),
    );
    put(
        &root,
        "crates/zeta-core/src/lib.rs",
        "//! Core.\n/// Two.\npub fn two() -> u32 { 2 }\n",
    );
    put(
        &root,
        "crates/alpha-app/Cargo.toml",
        &package(
            "alpha-app",
            rust_version_of_app,
            "\n[dependencies]\nzeta-core.workspace = true\n\n[features]\ndefault = [\"loud\"]\nloud = []\nquiet = []\n",
        ),
    );
    put(
        &root,
        "crates/alpha-app/src/lib.rs",
        "//! App.\n/// Four.\npub fn four() -> u32 { zeta_core::two() * 2 }\n#[cfg(feature = \"loud\")]\n/// Loud.\npub fn loud() {}\n#[cfg(all(feature = \"quiet\", feature = \"loud\"))]\ncompile_error!(\"never both in this test\");\n",
    );
    put(
        &root,
        "crates/internal-tool/Cargo.toml",
        &package(
            "internal-tool",
            "rust-version.workspace = true",
            "publish = false\n\n[dependencies]\nalpha-app.workspace = true\n",
        ),
    );
    put(
        &root,
        "crates/internal-tool/src/main.rs",
        "fn main() { let _ = alpha_app::four(); }\n",
    );
    put(&root, "CHANGELOG.md", CHANGELOG);
    root
}

/// Runs `xtask <args>`.
fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("run xtask")
}

/// Every file under `root` (except `target/`) with its bytes, sorted.
fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().unwrap() == "target" {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.clone(), fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn dry_run_bumps_moves_the_changelog_packages_and_prints_the_plan() {
    let root = workspace("release-dry-run", "rust-version.workspace = true");
    let before = snapshot(&root);
    let output = xtask(&[
        "release",
        "0.2.0-rc.1",
        "--dry-run",
        "--offline",
        "--date",
        "2026-08-17",
        "--workspace",
        root.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "release failed:\n{stdout}\n{stderr}"
    );

    // Every step, then the plan: publishable crates only (not
    // `internal-tool`), dependencies first, with the version.
    let copy = root.join("target/xtask-release/workspace");
    assert_eq!(
        stdout,
        format!(
            "release 0.2.0-rc.1 (dry run in {copy})\n\
             \x20 Cargo.toml: [workspace.package] version 0.1.0 -> 0.2.0-rc.1\n\
             \x20 Cargo.toml: 2 internal dependency version(s) -> 0.2.0-rc.1\n\
             \x20 CHANGELOG.md: 4 line(s) of Unreleased notes moved under `## 0.2.0-rc.1 - 2026-08-17`\n\
             \x20 cargo package (verified, in dependency order): ok\n\
             \x20 alpha-app: builds with no default features and with each of: loud, quiet\n\
             would publish, in order:\n\
             \x20 1. zeta-core 0.2.0-rc.1\n\
             \x20 2. alpha-app 0.2.0-rc.1\n\
             stopped before publishing; to publish, in this order:\n\
             \x20 cargo publish -p zeta-core\n\
             \x20 cargo publish -p alpha-app\n\
             (dry run: the real tree is unchanged; the prepared copy is {copy})\n",
            copy = copy.display()
        )
    );

    // The real tree is untouched.
    assert_eq!(snapshot(&root), before, "the dry run changed the real tree");

    // The scratch copy carries the release: the versions bumped,
    // rust-version untouched.
    let manifest = fs::read_to_string(copy.join("Cargo.toml")).unwrap();
    assert_eq!(
        manifest,
        "[workspace]\nresolver = \"3\"\nmembers = [\"crates/*\"]\n\n[workspace.package]\nversion = \"0.2.0-rc.1\"\nedition = \"2021\"\nrust-version = \"1.85\"\nlicense = \"MIT\"\ndescription = \"A synthetic crate for the release test.\"\nrepository = \"https://example.invalid/mini\"\n\n[workspace.dependencies]\nzeta-core = { path = \"crates/zeta-core\", version = \"0.2.0-rc.1\" }\nalpha-app = { path = \"crates/alpha-app\", version = \"0.2.0-rc.1\" }\n"
    );
    let lock = fs::read_to_string(copy.join("Cargo.lock")).unwrap();
    assert!(
        lock.contains("name = \"zeta-core\"\nversion = \"0.2.0-rc.1\""),
        "{lock}"
    );
    let changelog = fs::read_to_string(copy.join("CHANGELOG.md")).unwrap();
    assert_eq!(
        changelog,
        "# Changelog\n\nAll notable changes.\n\n## Unreleased\n\n## 0.2.0-rc.1 - 2026-08-17\n\n### Added\n\n- `zeta-core`: the core.\n- `alpha-app`: the app.\n\n## 0.0.1 - 2026-01-01\n\n- First cut.\n"
    );
    assert!(
        !copy.join("target").exists() || copy.join("target").read_dir().unwrap().next().is_none()
    );
    // The packages were built (verified) in the release's own target folder.
    let packaged = root.join("target/xtask-release/target/package");
    assert!(
        packaged.join("zeta-core-0.2.0-rc.1.crate").is_file(),
        "no zeta-core .crate"
    );
    assert!(
        packaged.join("alpha-app-0.2.0-rc.1.crate").is_file(),
        "no alpha-app .crate"
    );
}

#[test]
fn refuses_bad_versions_and_empty_notes() {
    let root = workspace("release-refusals", "rust-version.workspace = true");
    let ws = root.to_str().unwrap();
    let dry_run = |version: &str| {
        xtask(&[
            "release",
            version,
            "--dry-run",
            "--offline",
            "--workspace",
            ws,
        ])
    };
    // Not a version to release: refused by the command line, naming it.
    for (version, why) in [
        (
            "1.2",
            "unexpected end of input while parsing minor version number",
        ),
        ("1.2.3+build", "build metadata (`+...`) is not allowed"),
        ("01.2.3", "invalid leading zero in major version number"),
    ] {
        let out = dry_run(version);
        assert!(!out.status.success(), "{version}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with(&format!("error: invalid value '{version}' for '<MAJOR.MINOR.PATCH[-pre]>': `{version}`: {why}\n")),
            "{stderr}"
        );
    }
    // Not greater than the current version.
    for version in ["0.1.0", "0.1.0-rc.1"] {
        let out = dry_run(version);
        assert!(!out.status.success(), "{version}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("xtask: {version} is not greater than the current version 0.1.0\n")
        );
    }
    put(
        &root,
        "CHANGELOG.md",
        "# Changelog\n\n## Unreleased\n\n## 0.1.0 - 2026-01-01\n\n- x\n",
    );
    let out = xtask(&[
        "release",
        "0.2.0",
        "--dry-run",
        "--offline",
        "--workspace",
        ws,
    ]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "xtask: CHANGELOG.md: the Unreleased section is empty; nothing to release\n"
    );
}

#[test]
fn msrv_checks_the_declaration() {
    let bad = workspace("msrv-inconsistent", "rust-version = \"1.80\"");
    let out = xtask(&["msrv", "--workspace", bad.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "an inconsistent rust-version must fail"
    );
    assert_eq!(
        stderr,
        format!(
            "xtask: msrv: the declaration is inconsistent:\n  alpha-app: {} does not use `rust-version.workspace = true`\n  alpha-app: rust-version is Some(\"1.80.0\"), the workspace declares 1.85\n",
            bad.join("crates/alpha-app/Cargo.toml").display()
        )
    );

    let good = workspace("msrv-consistent", "rust-version.workspace = true");
    let out = xtask(&["msrv", "--workspace", good.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[..2],
        [
            "msrv: rust-version 1.85 declared once and inherited by all 3 members",
            "msrv: all 3 packages of the locked graph accept Rust 1.85",
        ]
    );
    // The rest depends on whether a Rust 1.85 toolchain is installed.
    assert!(
        stdout.contains("the workspace builds with Rust 1.85")
            || stdout.contains("ONLY THE DECLARATION WAS CHECKED"),
        "{stdout}"
    );
}
