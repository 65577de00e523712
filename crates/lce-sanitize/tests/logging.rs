//! The `tracing` output of the whole hostile set: no payload text, no
//! secret. Alone in its binary: `tracing` caches callsite interest
//! process-wide, so a test running concurrently without a subscriber could
//! hide records from this one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use lce_sanitize::Sanitizer;
use lce_types::{Event, Limits};
use serde_json::Value;

fn dir() -> PathBuf {
    lce_testkit::fixtures::dir().join("hostile")
}

/// Every hostile fixture, parsed, sorted by name.
fn fixtures() -> Vec<(String, Event)> {
    lce_testkit::fixtures::hostile()
        .into_iter()
        .map(|(name, text)| {
            let event = Event::from_json(text.trim_end()).unwrap();
            (name, event)
        })
        .collect()
}

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Buf {
    type Writer = Buf;
    fn make_writer(&'a self) -> Buf {
        self.clone()
    }
}

#[test]
fn logs_carry_no_payload_text_and_no_secret() {
    let buf = Buf::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(buf.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .finish();
    let sanitizer = Sanitizer::new(Limits::default());
    let mut secrets: Vec<String> = Vec::new();
    let (mut rejected, mut cleaned) = (0, 0);
    let (mut want_rejected, mut want_cleaned) = (0, 0);
    tracing::subscriber::with_default(subscriber, || {
        for (name, event) in fixtures() {
            let want: Value = serde_json::from_str(
                &std::fs::read_to_string(dir().join(format!("{name}.expect"))).unwrap(),
            )
            .unwrap();
            let absent: Vec<String> = want
                .get("absent")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|s| s.as_str().unwrap().to_owned())
                .collect();
            // Every redaction is proven by a planted secret, and only those.
            let redactions = want["report"]["redactions"].as_u64().unwrap_or(0);
            assert_eq!(!absent.is_empty(), redactions > 0, "{name}: absent list");
            secrets.extend(absent);
            match want["outcome"].as_str().unwrap() {
                "rejected" => want_rejected += 1,
                "cleaned" => want_cleaned += 1,
                _ => {}
            }
            match sanitizer.sanitize(event) {
                Err(_) => rejected += 1,
                Ok(o) if !o.report.is_clean() => cleaned += 1,
                Ok(_) => {}
            }
        }
    });
    let log = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    assert_eq!((rejected, cleaned), (want_rejected, want_cleaned));
    assert_eq!(log.matches("event rejected").count(), rejected, "{log}");
    assert_eq!(log.matches("event cleaned").count(), cleaned, "{log}");
    assert_eq!(log.lines().count(), rejected + cleaned, "{log}");
    assert!(
        !log.contains("PAYLOADMARK"),
        "payload text in the log:\n{log}"
    );
    for s in &secrets {
        assert!(!log.contains(s.as_str()), "secret `{s}` in the log");
    }
    // What is there: correlation ids, rule, field, sizes; an invalid id is
    // described, not shown.
    assert_eq!(
        record(&log, "run_id=\"run-huge-text-delta\""),
        "WARN lce::sanitize: event rejected run_id=\"run-huge-text-delta\" conversation_id=\"conv-hostile\" sequence=5 event_type=\"text.delta\" rule=\"D19\" kind=\"text_too_long\" field=\"data.delta\" size=70011 limit=65536"
    );
    assert_eq!(
        record(&log, "run_id=\"<invalid id: 257 bytes>\""),
        "WARN lce::sanitize: event rejected run_id=\"<invalid id: 257 bytes>\" conversation_id=\"conv-hostile\" sequence=5 event_type=\"text.finished\" rule=\"D19\" kind=\"identifier_too_long\" field=\"run_id\" size=257 limit=256"
    );
    assert_eq!(
        record(&log, "run_id=\"run-warning-bearer-token\""),
        "INFO lce::sanitize: event cleaned run_id=\"run-warning-bearer-token\" conversation_id=\"conv-hostile\" sequence=5 event_type=\"warning\" replaced_chars=0 truncated_fields=0 truncated_bytes=0 redactions=1 dropped_metadata_keys=0 dropped_details=0 fields=[\"data.message\"]"
    );
    // No control character made it into the log (one record per line).
    assert!(!log.chars().any(|c| c.is_control() && c != '\n'));
}

/// The one log record holding `needle`, without its leading timestamp.
fn record<'a>(log: &'a str, needle: &str) -> &'a str {
    let lines: Vec<&str> = log.lines().filter(|l| l.contains(needle)).collect();
    assert_eq!(lines.len(), 1, "{needle}: {lines:?}");
    let (_time, rest) = lines[0].split_once(' ').unwrap();
    rest.trim_start()
}
