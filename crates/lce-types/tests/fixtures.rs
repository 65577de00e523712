//! Every scenario parses and round-trips; every malformed fixture is rejected
//! with the expected kind, at the expected line and JSON path.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};

use lce_types::{Event, EventLines, ParseErrorKind};

fn fixtures(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(dir);
    let mut files: Vec<PathBuf> = fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {}", root.display());
    files
}

#[test]
fn every_scenario_parses_and_round_trips() {
    let mut total = 0;
    for path in fixtures("scenarios") {
        let bytes = fs::read(&path).unwrap();
        for (i, item) in EventLines::new(&bytes[..]).enumerate() {
            let event = item
                .unwrap()
                .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
            let json = event.to_json();
            let again = Event::from_json(&json)
                .unwrap_or_else(|e| panic!("{}:{}: reparse: {e}", path.display(), i + 1));
            assert_eq!(again, event, "{}:{}", path.display(), i + 1);
            // serialize -> parse -> serialize is stable too
            assert_eq!(again.to_json(), json);
            total += 1;
        }
    }
    assert!(total > 100, "only {total} events in the scenarios");
}

#[test]
fn every_scenario_line_serializes_back_to_the_same_json() {
    // Nothing lost, nothing added: the serialized event is the same JSON
    // value as the line it came from (member order and escape spelling of
    // the envelope may differ; opaque values are compared byte for byte by
    // the typed round trip above).
    for path in fixtures("scenarios") {
        let text = fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let event = Event::from_json(line).unwrap();
            let a: serde_json::Value = serde_json::from_str(&event.to_json()).unwrap();
            let b: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(a, b, "{}:{}", path.display(), i + 1);
        }
    }
}

#[test]
fn every_malformed_fixture_is_rejected_as_expected() {
    for path in fixtures("malformed") {
        let expect: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(path.with_extension("expect")).unwrap())
                .unwrap();
        let want_line = expect["line"].as_u64().unwrap();
        let want_kind = ParseErrorKind::from_name(expect["kind"].as_str().unwrap())
            .unwrap_or_else(|| panic!("{}: unknown kind {}", path.display(), expect["kind"]));
        let bytes = fs::read(&path).unwrap();
        let errors: Vec<_> = EventLines::new(&bytes[..])
            .filter_map(|r| r.unwrap().err())
            .collect();
        assert_eq!(errors.len(), 1, "{}: {errors:?}", path.display());
        let e = &errors[0];
        assert_eq!(e.kind, want_kind, "{}: {e}", path.display());
        assert_eq!(e.line, Some(want_line), "{}: {e}", path.display());
        if let Some(want_path) = expect.get("path").and_then(|p| p.as_str()) {
            assert_eq!(e.path, want_path, "{}: {e}", path.display());
        }
        // Messages never carry payload text: nothing from the offending line
        // that is longer than a member name shows up in the message.
        let msg = e.to_string();
        assert!(
            msg.len() < 200,
            "{}: message too long: {msg}",
            path.display()
        );
    }
}

#[test]
fn every_error_kind_has_a_malformed_fixture() {
    let mut seen = std::collections::BTreeSet::new();
    for path in fixtures("malformed") {
        let expect: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(path.with_extension("expect")).unwrap())
                .unwrap();
        seen.insert(expect["kind"].as_str().unwrap().to_owned());
    }
    for kind in ParseErrorKind::ALL {
        if kind == ParseErrorKind::LineTooLong {
            continue; // covered by a unit test: a fixture would be megabytes
        }
        assert!(
            seen.contains(kind.as_str()),
            "no malformed fixture of kind {kind}"
        );
    }
}
