//! The hostile fixtures: each file's exact outcome, idempotence, and the
//! safety of what gets logged.
//!
//! Each `<name>.expect` must be, byte for byte, the outcome this test
//! computes in its one layout (keys sorted, two-space indent, the `absent`
//! list last, a final newline). The test only compares: after an intended
//! change, `cargo xtask bless --only hostile` rewrites the files (keeping
//! their `absent` lists) and prints a diff of every changed outcome, which
//! is reviewed by hand (see `fixtures/hostile/README.md`). It runs the
//! ignored `record_outcomes_for_bless` below, which writes only under the
//! target directory.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use lce_sanitize::Sanitizer;
use lce_types::{Event, Limits};
use serde_json::{Value, json};

fn dir() -> PathBuf {
    lce_testkit::fixtures::dir().join("hostile")
}

/// Every hostile fixture, `(name, text)`, sorted by name.
fn fixtures() -> Vec<(String, String)> {
    lce_testkit::fixtures::hostile()
}

fn event_of(name: &str, text: &str) -> Event {
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{name}: one event per file");
    Event::from_json(lines[0]).unwrap_or_else(|e| panic!("{name}: does not parse: {e}"))
}

/// What sanitizing produced, in the `.expect` format.
fn outcome(name: &str, sanitizer: &Sanitizer, event: Event) -> Value {
    match sanitizer.sanitize(event) {
        Err(r) => json!({
            "outcome": "rejected",
            "kind": r.kind.as_str(),
            "field": r.field,
            "index": r.index,
            "size": r.size,
            "limit": r.limit,
        }),
        Ok(out) => {
            let line = out.event.to_json();
            // Idempotent: a second pass changes and reports nothing.
            let again = sanitizer.sanitize(out.event.clone()).unwrap_or_else(|r| {
                panic!("{name}: second pass rejected: {r}");
            });
            assert_eq!(again.event, out.event, "{name}: not idempotent");
            assert!(
                again.report.is_clean(),
                "{name}: second report {:?}",
                again.report
            );
            // Canonical: the line parses back to the same event.
            assert_eq!(Event::from_json(&line).unwrap(), out.event, "{name}");
            json!({
                "outcome": if out.report.is_clean() { "unchanged" } else { "cleaned" },
                "report": serde_json::to_value(&out.report).unwrap(),
                "expected_line": line,
            })
        }
    }
}

/// `v` with the members of every object inserted in key order, so it
/// prints sorted whichever map `serde_json` was built with.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut members: Vec<(String, Value)> = map.into_iter().collect();
            members.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(members.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// The `.expect` text of an outcome: the outcome's members sorted, two-space
/// indent, then the `absent` list (kept from the reviewed file) as the last
/// member, and a final newline. The layout `generate.py` keeps when it adds
/// the `absent` lists (Python's `json.dumps(indent=2, ensure_ascii=False)`).
fn expect_text(outcome: &Value, absent: Option<&Value>) -> String {
    let mut text = serde_json::to_string_pretty(&sorted(outcome.clone())).unwrap();
    if let Some(absent) = absent {
        let list = serde_json::to_string_pretty(absent).unwrap();
        assert_eq!(text.pop(), Some('}'));
        text.truncate(text.trim_end().len());
        text.push_str(",\n  \"absent\": ");
        text.push_str(&list.replace('\n', "\n  "));
        text.push_str("\n}");
    }
    text.push('\n');
    text
}

/// The reviewed `.expect` of a fixture: its text and its `absent` list.
fn reviewed(name: &str) -> Option<(String, Option<Value>)> {
    let text = std::fs::read_to_string(dir().join(format!("{name}.expect"))).ok()?;
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}.expect: {e}"));
    let absent = v.get("absent").cloned();
    Some((text, absent))
}

#[test]
fn each_fixture_has_its_exact_outcome() {
    let sanitizer = Sanitizer::new(Limits::default());
    let mut failures = Vec::new();
    for (name, text) in fixtures() {
        let got = outcome(&name, &sanitizer, event_of(&name, &text));
        let Some((want, absent)) = reviewed(&name) else {
            failures.push(format!(
                "{name}: no .expect (write it with `cargo xtask bless --only hostile`, then review it)"
            ));
            continue;
        };
        // Texts listed under "absent" must be gone from the cleaned line.
        for s in absent.iter().flat_map(|a| a.as_array().unwrap()) {
            let s = s.as_str().unwrap();
            let line = got["expected_line"].as_str().unwrap_or("");
            assert!(!line.contains(s), "{name}: `{s}` survived");
        }
        let got = expect_text(&got, absent.as_ref());
        if want != got {
            failures.push(format!(
                "{name}:\n  want {}\n  got  {}",
                short(&want),
                short(&got)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} outcome(s) differ (if the change is intended, run `cargo xtask bless --only hostile` and review the diff):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every `.expect` belongs to a fixture.
#[test]
fn no_stray_expect_files() {
    let names: Vec<String> = fixtures().into_iter().map(|(name, _)| name).collect();
    for entry in std::fs::read_dir(dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "expect") {
            let stem = path.file_stem().unwrap().to_str().unwrap();
            assert!(
                names.iter().any(|n| n == stem),
                "{} has no fixture",
                path.display()
            );
        }
    }
}

/// What `cargo xtask bless --only hostile` reads: every fixture's outcome
/// in its `.expect` text, written to `<target>/tmp/bless/hostile/` (never
/// into the fixtures). Ignored: it records, it does not check.
#[test]
#[ignore = "run by `cargo xtask bless`"]
fn record_outcomes_for_bless() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bless/hostile");
    if out.exists() {
        std::fs::remove_dir_all(&out).unwrap();
    }
    std::fs::create_dir_all(&out).unwrap();
    let sanitizer = Sanitizer::new(Limits::default());
    for (name, text) in fixtures() {
        let got = outcome(&name, &sanitizer, event_of(&name, &text));
        let absent = reviewed(&name).and_then(|(_, absent)| absent);
        std::fs::write(
            out.join(format!("{name}.expect")),
            expect_text(&got, absent.as_ref()),
        )
        .unwrap();
    }
}

fn short(s: &str) -> String {
    if s.len() > 600 {
        format!(
            "{}... ({} bytes)",
            &s[..s.floor_char_boundary_compat(600)],
            s.len()
        )
    } else {
        s.to_owned()
    }
}

trait FloorCompat {
    fn floor_char_boundary_compat(&self, i: usize) -> usize;
}
impl FloorCompat for str {
    fn floor_char_boundary_compat(&self, mut i: usize) -> usize {
        while !self.is_char_boundary(i) {
            i -= 1;
        }
        i
    }
}

/// The `absent` lists are real: each text is planted in its fixture (so the
/// checks above are not vacuous).
#[test]
fn absent_texts_are_planted_in_fixtures() {
    for (name, text) in fixtures() {
        let want: Value = serde_json::from_str(
            &std::fs::read_to_string(dir().join(format!("{name}.expect"))).unwrap(),
        )
        .unwrap();
        for s in want
            .get("absent")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let s = s.as_str().unwrap();
            assert!(text.contains(s), "{name}: `{s}` is not in the fixture");
        }
    }
}
