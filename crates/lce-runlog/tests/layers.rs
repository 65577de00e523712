//! The layering of `docs/architecture.md`: neither the run log, nor the
//! Redis log, nor anything under them depends on an HTTP stack (only
//! `lce-gateway` and above serve HTTP), and no lower crate depends on a
//! higher one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

/// The crates from the bottom up: each may depend only on those before it.
const LAYERS: [&str; 10] = [
    "lce-types",
    "lce-wire",
    "lce-core",
    "lce-validate",
    "lce-sanitize",
    "lce-encode-custom",
    "lce-encode-agui",
    "lce-stream",
    "lce-runlog",
    "lce-redis",
];

/// The names in a manifest's `[dependencies]` table.
fn dependencies(krate: &str) -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("Cargo.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut section = String::new();
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_owned();
        } else if section == "[dependencies]" && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['.', '=', ' ']).next().unwrap();
            out.push(name.to_owned());
        }
    }
    out
}

#[test]
fn no_http_stack_at_or_below_the_run_log() {
    for krate in LAYERS {
        let deps = dependencies(krate);
        assert!(
            !deps.is_empty() || krate == "lce-types",
            "{krate}: no dependencies read"
        );
        for http in [
            "axum",
            "hyper",
            "hyper-util",
            "tower",
            "http",
            "reqwest",
            "ureq",
        ] {
            assert!(!deps.iter().any(|d| d == http), "{krate} depends on {http}");
        }
    }
}

#[test]
fn lower_crates_never_depend_on_higher_ones() {
    for (i, krate) in LAYERS.iter().enumerate() {
        for dep in dependencies(krate) {
            if let Some(j) = LAYERS.iter().position(|l| *l == dep) {
                assert!(j < i, "{krate} depends on {dep}, a layer above it");
            }
            assert!(
                !["lce", "lce-gateway", "lce-cli"].contains(&dep.as_str()),
                "{krate} depends on {dep}"
            );
        }
    }
}
