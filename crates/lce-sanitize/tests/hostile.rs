//! The hostile fixtures: each file's exact outcome, idempotence, and the
//! safety of what gets logged.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};

use lce_sanitize::Sanitizer;
use lce_types::{Event, Limits};
use serde_json::{Value, json};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/hostile")
}

fn fixtures() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_str().unwrap().to_owned();
            let text = std::fs::read_to_string(&p).unwrap();
            (name, text)
        })
        .collect();
    v.sort();
    assert!(v.len() >= 40, "hostile fixtures missing");
    v
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

#[test]
fn each_fixture_has_its_exact_outcome() {
    let sanitizer = Sanitizer::new(Limits::default());
    let bless = std::env::var_os("LCE_BLESS_HOSTILE").is_some();
    let mut failures = Vec::new();
    for (name, text) in fixtures() {
        let got = outcome(&name, &sanitizer, event_of(&name, &text));
        let path = dir().join(format!("{name}.expect"));
        let want: Value = match std::fs::read_to_string(&path) {
            Ok(t) => serde_json::from_str(&t).unwrap(),
            Err(_) if bless => {
                let mut f = std::fs::File::create(&path).unwrap();
                writeln!(f, "{}", serde_json::to_string_pretty(&got).unwrap()).unwrap();
                continue;
            }
            Err(e) => panic!("{name}: no .expect ({e})"),
        };
        // Secrets listed under "absent" must be gone from the cleaned line.
        if let Some(absent) = want.get("absent").and_then(Value::as_array) {
            let line = got["expected_line"].as_str().unwrap_or("");
            for s in absent {
                let s = s.as_str().unwrap();
                assert!(!line.contains(s), "{name}: `{s}` survived");
            }
        }
        let mut want_cmp = want.clone();
        if let Some(o) = want_cmp.as_object_mut() {
            o.remove("absent");
        }
        if want_cmp != got {
            failures.push(format!(
                "{name}:\n  want {}\n  got  {}",
                short(&want_cmp),
                short(&got)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 600 {
        format!(
            "{}... ({} bytes)",
            &s[..s.floor_char_boundary_compat(600)],
            s.len()
        )
    } else {
        s
    }
}

trait FloorCompat {
    fn floor_char_boundary_compat(&self, i: usize) -> usize;
}
impl FloorCompat for String {
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
