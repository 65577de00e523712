//! Replays every committed fuzz input through its harness in a normal
//! `cargo test`: the seed corpora (`fuzz/corpus/<target>/seed-*`, derived
//! from `fixtures/` by `cargo xtask fuzz --seeds-only`) and every crash
//! artifact kept under `fuzz/artifacts/<target>/` (each one a bug that was
//! fixed; an unfixed one is listed in [`KNOWN_UNFIXED`] and skipped here, with
//! an `#[ignore]`d test that still runs it on demand).
//!
//! The harnesses live in `lce_testkit::fuzzing` behind the `fuzzing` feature;
//! this crate's dev-dependencies enable it on itself, so `cargo test
//! --workspace` runs this file with no extra flags. What libFuzzer adds to a
//! corpus locally (hash-named files) is not committed and not replayed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use lce_testkit::fuzzing;

/// Artifacts of bugs not fixed yet: (target, file name, why).
const KNOWN_UNFIXED: &[(&str, &str, &str)] = &[];

fn committed_inputs(target: &str) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let list = |dir: &str, keep: &dyn Fn(&str) -> bool| -> Vec<PathBuf> {
        let d = root.join(dir).join(target);
        let Ok(entries) = std::fs::read_dir(&d) else {
            return Vec::new();
        };
        let mut paths: Vec<PathBuf> = entries
            .map(|e| e.unwrap().path())
            .filter(|p| keep(&p.file_name().unwrap().to_string_lossy()))
            .collect();
        paths.sort();
        paths
    };
    let seeds = list("corpus", &|n| n.starts_with("seed-"));
    let artifacts = list("artifacts", &|n| {
        ["crash-", "oom-", "timeout-"]
            .iter()
            .any(|p| n.starts_with(p))
            && !KNOWN_UNFIXED
                .iter()
                .any(|(t, f, _)| *t == target && *f == n)
    });
    (seeds, artifacts)
}

fn replay(target: &str, harness: fn(&[u8])) {
    let (seeds, artifacts) = committed_inputs(target);
    assert!(!seeds.is_empty(), "no seed corpus for {target}");
    let mut failures = Vec::new();
    for p in seeds.iter().chain(&artifacts) {
        let data = std::fs::read(p).unwrap();
        if std::panic::catch_unwind(|| harness(&data)).is_err() {
            failures.push(p.display().to_string());
        }
    }
    assert!(
        failures.is_empty(),
        "{target}: {} of {} inputs fail:\n{}",
        failures.len(),
        seeds.len() + artifacts.len(),
        failures.join("\n")
    );
}

#[test]
fn parse_line() {
    replay("parse_line", fuzzing::parse_line);
}

#[test]
fn validator() {
    replay("validator", fuzzing::validator);
}

#[test]
fn sanitizer() {
    replay("sanitizer", fuzzing::sanitizer);
}

#[test]
fn encode_custom() {
    replay("encode_custom", fuzzing::encode_custom);
}

#[test]
fn encode_agui() {
    replay("encode_agui", fuzzing::encode_agui);
}

#[test]
fn coordinator() {
    replay("coordinator", fuzzing::coordinator);
}

#[test]
fn sse_decoder() {
    replay("sse_decoder", fuzzing::sse_decoder);
}

#[test]
fn id_check() {
    replay("id_check", fuzzing::id_check);
}

#[test]
fn last_event_id() {
    replay("last_event_id", fuzzing::last_event_id);
}

#[test]
fn upstream_reader() {
    replay("upstream_reader", fuzzing::upstream_reader);
}

/// The artifacts of bugs not fixed yet, on demand:
/// `cargo test -p lce-stream --test fuzz_corpus -- --ignored`.
#[test]
#[ignore = "known unfixed fuzz findings (see KNOWN_UNFIXED and docs/reliability.md)"]
fn known_unfixed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/artifacts");
    for (target, file, why) in KNOWN_UNFIXED {
        let data = std::fs::read(root.join(target).join(file)).unwrap();
        let harness: fn(&[u8]) = match *target {
            "parse_line" => fuzzing::parse_line,
            "validator" => fuzzing::validator,
            "sanitizer" => fuzzing::sanitizer,
            "encode_custom" => fuzzing::encode_custom,
            "encode_agui" => fuzzing::encode_agui,
            "coordinator" => fuzzing::coordinator,
            "sse_decoder" => fuzzing::sse_decoder,
            "id_check" => fuzzing::id_check,
            "last_event_id" => fuzzing::last_event_id,
            "upstream_reader" => fuzzing::upstream_reader,
            other => panic!("unknown target {other}"),
        };
        eprintln!("{target}/{file}: {why}");
        harness(&data);
    }
}
