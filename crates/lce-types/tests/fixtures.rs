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
    let (mut total, mut lines) = (0, 0);
    for path in fixtures("scenarios") {
        let bytes = fs::read(&path).unwrap();
        lines += bytes.iter().filter(|&&b| b == b'\n').count();
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
    // One event per line, none skipped.
    assert_eq!(total, lines);
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
    let mut seen = 0;
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
        // The whole message, exactly: it names the line, the kind, the
        // member and the byte, never payload text.
        let name = path.file_stem().unwrap().to_str().unwrap();
        let want = MESSAGES
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name}: no message in MESSAGES"))
            .1;
        assert_eq!(e.to_string(), want, "{name}");
        seen += 1;
    }
    assert_eq!(
        seen,
        MESSAGES.len(),
        "MESSAGES names a fixture that is gone"
    );
}

/// Every malformed fixture's exact error message.
const MESSAGES: &[(&str, &str)] = &[
    (
        "duplicate-key-envelope",
        "line 3: duplicate_key at sequence (byte 109): member `sequence` appears twice",
    ),
    (
        "duplicate-key-in-data",
        "line 4: duplicate_key at data.delta: member `delta` appears twice",
    ),
    (
        "duplicate-key-in-tool-arguments-nested",
        "line 6: duplicate_key at data.arguments: duplicate key in opaque value",
    ),
    (
        "empty-line-in-middle",
        "line 4: empty_line at $: empty line",
    ),
    (
        "invalid-timestamp-hour-25",
        "line 5: invalid_timestamp at timestamp (byte 140): expected RFC 3339 date-time with offset, like 2026-08-17T09:00:00Z",
    ),
    (
        "invalid-timestamp-month-13",
        "line 3: invalid_timestamp at timestamp (byte 133): expected RFC 3339 date-time with offset, like 2026-08-17T09:00:00Z",
    ),
    (
        "invalid-timestamp-without-offset",
        "line 4: invalid_timestamp at timestamp (byte 132): expected RFC 3339 date-time with offset, like 2026-08-17T09:00:00Z",
    ),
    (
        "invalid-utf8-bytes-ff-fe",
        "line 3: invalid_utf8 at $ (byte 195): input is not valid UTF-8",
    ),
    (
        "invalid-utf8-encoded-surrogate",
        "line 3: invalid_utf8 at $ (byte 195): input is not valid UTF-8",
    ),
    (
        "invalid-utf8-overlong-slash",
        "line 6: invalid_utf8 at $ (byte 231): input is not valid UTF-8",
    ),
    (
        "invalid-utf8-truncated-sequence",
        "line 4: invalid_utf8 at $ (byte 196): input is not valid UTF-8",
    ),
    (
        "invalid-value-cancel-reason-timeout",
        "line 8: invalid_value at data.reason: value is not one of the allowed names",
    ),
    (
        "invalid-value-role-user",
        "line 2: invalid_value at data.role: value is not one of the allowed names",
    ),
    (
        "lone-surrogate-in-argument-key",
        "line 6: lone_surrogate at data.arguments: lone surrogate escape in opaque value",
    ),
    (
        "lone-surrogate-in-text-delta",
        "line 3: lone_surrogate at data.delta: unpaired surrogate escape",
    ),
    (
        "lone-surrogate-reversed-pair",
        "line 4: lone_surrogate at data.delta: unpaired surrogate escape",
    ),
    (
        "missing-field-delta-message-id",
        "line 3: missing_field at data: missing member `message_id`",
    ),
    (
        "missing-field-envelope-sequence",
        "line 5: missing_field at $ (byte 173): missing member `sequence`",
    ),
    (
        "missing-field-tool-result",
        "line 7: missing_field at data: missing member `result`",
    ),
    (
        "not-an-object-array",
        "line 4: not_an_object at $ (byte 0): an event must be a JSON object",
    ),
    (
        "not-an-object-string",
        "line 3: not_an_object at $ (byte 0): an event must be a JSON object",
    ),
    (
        "number-out-of-range-argument-1e400",
        "line 6: number_out_of_range at data.arguments: number is not a finite float",
    ),
    (
        "number-out-of-range-sequence-2-pow-53",
        "line 3: number_out_of_range at sequence (byte 113): sequence above 2^53-1",
    ),
    (
        "number-out-of-range-sequence-2-pow-64",
        "line 3: number_out_of_range at sequence (byte 117): sequence above 2^53-1",
    ),
    (
        "number-out-of-range-sequence-negative",
        "line 4: number_out_of_range at sequence (byte 99): sequence is negative",
    ),
    (
        "syntax-trailing-comma",
        "line 4: syntax at data (byte 201): key must be a string",
    ),
    (
        "syntax-truncated-line",
        "line 3: syntax at data (byte 194): unexpected end of input",
    ),
    (
        "syntax-unquoted-key",
        "line 5: syntax at data (byte 165): key must be a string",
    ),
    (
        "too-deep-tool-arguments-200-levels",
        "line 6: too_deep at data.arguments: opaque value nested too deep",
    ),
    (
        "unknown-field-in-data",
        "line 3: unknown_field at data.index: unknown member `index`",
    ),
    (
        "unknown-field-in-envelope",
        "line 4: unknown_field at trace_id (byte 163): unknown member `trace_id`",
    ),
    (
        "unknown-field-in-thread-state",
        "line 8: unknown_field at data.thread_state.committed_at: unknown member `committed_at`",
    ),
    (
        "unknown-type-text-deltas",
        "line 3: unknown_type at type: `text.deltas` is not an event type of the contract",
    ),
    (
        "unsupported-version-2",
        "line 2: unsupported_version at version: version 2 is not supported (only 1)",
    ),
    (
        "wrong-type-delta-number",
        "line 4: wrong_type at data.delta: expected a string, found integer",
    ),
    (
        "wrong-type-sequence-string",
        "line 3: wrong_type at sequence (byte 100): expected a JSON number, found string",
    ),
    (
        "wrong-type-version-string",
        "line 3: wrong_type at version (byte 13): expected a JSON number, found string",
    ),
];

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
