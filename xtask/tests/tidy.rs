//! Tidy checks that run as tests (in the style of rust-analyzer's xtask tidy
//! tests): every crate manifest follows the workspace conventions, so a
//! lockstep release and the MSRV declaration hold by construction.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `(section, compact line)` pairs of a manifest: whitespace removed,
/// comments and blank lines skipped.
fn entries(manifest: &str) -> Vec<(String, String)> {
    let mut section = String::new();
    let mut out = Vec::new();
    for line in manifest.lines() {
        let line = line.split(" #").next().unwrap_or("").trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with('[') {
            section = line.to_owned();
            continue;
        }
        out.push((
            section.clone(),
            line.chars().filter(|c| !c.is_whitespace()).collect(),
        ));
    }
    out
}

/// What is wrong with one member manifest (empty when nothing is).
fn problems(folder: &str, manifest: &str) -> Vec<String> {
    let entries = entries(manifest);
    let has = |section: &str, forms: &[&str]| {
        entries
            .iter()
            .any(|(s, l)| s == section && forms.iter().any(|f| l == f))
    };
    let mut out = Vec::new();
    for key in ["version", "edition", "rust-version"] {
        let dotted = format!("{key}.workspace=true");
        let inline = format!("{key}={{workspace=true}}");
        if !has("[package]", &[&dotted, &inline]) {
            out.push(format!("[package] lacks `{key}.workspace = true`"));
        }
    }
    if !has("[lints]", &["workspace=true"]) {
        out.push("lacks `[lints] workspace = true`".to_owned());
    }
    let name = entries
        .iter()
        .find(|(s, l)| s == "[package]" && l.starts_with("name="))
        .map(|(_, l)| l["name=".len()..].trim_matches('"').to_owned());
    match name {
        Some(name) if name == folder => {}
        Some(name) => out.push(format!(
            "package name `{name}` differs from its folder `{folder}`"
        )),
        None => out.push("[package] has no name".to_owned()),
    }
    out
}

#[test]
fn every_crate_manifest_follows_the_workspace_conventions() {
    let root = root();
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut folders: Vec<PathBuf> = fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    folders.push(root.join("xtask"));
    folders.sort();
    for folder in folders {
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        let Ok(manifest) = fs::read_to_string(folder.join("Cargo.toml")) else {
            failures.push(format!("{name}: a folder under crates/ without Cargo.toml breaks `members = [\"crates/*\"]`"));
            continue;
        };
        checked += 1;
        failures.extend(
            problems(&name, &manifest)
                .into_iter()
                .map(|p| format!("{name}: {p}")),
        );
    }
    assert!(checked > 1, "no crate manifest found");
    assert!(
        failures.is_empty(),
        "workspace conventions broken:\n  {}",
        failures.join("\n  ")
    );
}

#[test]
fn the_root_declares_version_edition_and_msrv_once() {
    let manifest = fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let entries = entries(&manifest);
    let value = |key: &str| {
        entries
            .iter()
            .find(|(s, l)| s == "[workspace.package]" && l.starts_with(&format!("{key}=")))
            .map(|(_, l)| l[key.len() + 1..].trim_matches('"').to_owned())
    };
    let msrv = value("rust-version").expect("[workspace.package] rust-version");
    let parts: Vec<&str> = msrv.split('.').collect();
    assert!(
        (2..=3).contains(&parts.len()) && parts.iter().all(|p| p.parse::<u32>().is_ok()),
        "rust-version `{msrv}` is not MAJOR.MINOR[.PATCH]"
    );
    assert!(value("version").is_some(), "[workspace.package] version");
    assert!(value("edition").is_some(), "[workspace.package] edition");
    // Internal crates in [workspace.dependencies] carry the workspace version,
    // so the lockstep bump of `cargo xtask release` finds them; except an
    // unpublished one (`publish = false`, lce-testkit), which has none, so
    // that a published crate's dev-dependency on it is dropped on packaging.
    let version = value("version").unwrap();
    for (section, line) in &entries {
        if section == "[workspace.dependencies]" && line.contains("path=") {
            let path = line
                .split("path=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap();
            let member = fs::read_to_string(root().join(path).join("Cargo.toml"))
                .unwrap_or_else(|e| panic!("{path}/Cargo.toml: {e}"));
            let unpublished = crate::entries(&member)
                .iter()
                .any(|(s, l)| s == "[package]" && l == "publish=false");
            if unpublished {
                assert!(
                    !line.contains("version="),
                    "unpublished crate with a version (a published dev-dependent could not be packaged): {line}"
                );
            } else {
                assert!(
                    line.contains(&format!("version=\"{version}\"")),
                    "internal dependency without version {version}: {line}"
                );
            }
        }
    }
}

#[test]
fn the_checker_catches_what_it_should() {
    let good = "[package]\nname = \"a\"\nversion.workspace = true\nedition.workspace = true\nrust-version = { workspace = true }\n\n[lints]\nworkspace = true\n";
    assert!(problems("a", good).is_empty(), "{:?}", problems("a", good));
    let bad = "[package]\nname = \"b\"\nversion = \"0.1.0\"\nedition.workspace = true\n\n[lints.rust]\nunsafe_code = \"forbid\"\n";
    let found = problems("a", bad);
    assert_eq!(found.len(), 4, "{found:?}");
}

/// The `lce-*` crates a manifest's `[dependencies]` names, besides the facade.
fn layer_dependencies(manifest: &str) -> Vec<String> {
    entries(manifest)
        .into_iter()
        .filter(|(section, _)| section == "[dependencies]")
        .filter_map(|(_, line)| {
            let name = line.split(['.', '=']).next()?.to_owned();
            name.starts_with("lce-").then_some(name)
        })
        .collect()
}

#[test]
fn the_cli_reaches_the_layers_through_the_facade_only() {
    // Issue 17: lce-cli depends on `lce` (plus clap, axum, tokio, ...), never
    // on a layer crate, so the binary uses exactly what a library user gets.
    let manifest = fs::read_to_string(root().join("crates/lce-cli/Cargo.toml")).unwrap();
    // `lce.workspace = true`, or with features (the CLI turns on `redis`).
    assert!(
        entries(&manifest).iter().any(|(s, l)| s == "[dependencies]"
            && (l == "lce.workspace=true" || l.starts_with("lce={workspace=true,"))),
        "lce-cli does not depend on the facade"
    );
    assert_eq!(layer_dependencies(&manifest), Vec::<String>::new());
    // The check itself sees a layer dependency.
    let bad = "[dependencies]\nlce.workspace = true\nlce-types = { workspace = true }\n";
    assert_eq!(layer_dependencies(bad), ["lce-types"]);
}

/// Every name in a manifest's `[dependencies]`.
fn dependencies(manifest: &str) -> Vec<String> {
    entries(manifest)
        .into_iter()
        .filter(|(section, _)| section == "[dependencies]")
        .filter_map(|(_, line)| Some(line.split(['.', '=']).next()?.to_owned()))
        .collect()
}

#[test]
fn nothing_at_or_below_the_run_log_serves_http() {
    // docs/architecture.md: only lce-gateway and above serve HTTP; the run
    // log, the Redis log and every layer under them pull no HTTP stack and
    // never reach up to the gateway, the facade or the binary.
    let manifest = |krate: &str| {
        fs::read_to_string(root().join("crates").join(krate).join("Cargo.toml")).unwrap()
    };
    let mut todo = vec!["lce-runlog".to_owned(), "lce-redis".to_owned()];
    let mut seen = Vec::new();
    while let Some(krate) = todo.pop() {
        if seen.contains(&krate) {
            continue;
        }
        for dep in dependencies(&manifest(&krate)) {
            assert!(
                !["axum", "hyper", "hyper-util", "tower", "http", "ureq"].contains(&dep.as_str()),
                "{krate} depends on {dep}, an HTTP crate"
            );
            assert!(
                !["lce-gateway", "lce", "lce-cli"].contains(&dep.as_str()),
                "{krate} depends on {dep}, a layer above the run log"
            );
            if dep.starts_with("lce-") {
                todo.push(dep);
            }
        }
        seen.push(krate);
    }
    // The walk reached the layers below (the check saw what it should).
    for below in ["lce-stream", "lce-core", "lce-types", "lce-wire"] {
        assert!(
            seen.iter().any(|s| s == below),
            "{below} not reached: {seen:?}"
        );
    }
    // And it sees an HTTP dependency where there is one.
    assert!(
        dependencies(&manifest("lce-gateway"))
            .iter()
            .any(|d| d == "axum")
    );
}
