//! The `tracing` output of the whole hostile set: no payload text, no
//! secret. Alone in its binary: `tracing` caches callsite interest
//! process-wide, so a test running concurrently without a subscriber could
//! hide records from this one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use lce_sanitize::Sanitizer;
use lce_types::{Event, Limits};
use serde_json::Value;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/hostile")
}

fn fixtures() -> Vec<(String, Event)> {
    let mut v: Vec<(String, Event)> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_str().unwrap().to_owned();
            let text = std::fs::read_to_string(&p).unwrap();
            (name, Event::from_json(text.trim_end()).unwrap())
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
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
    let mut rejected = 0;
    let mut cleaned = 0;
    tracing::subscriber::with_default(subscriber, || {
        for (name, event) in fixtures() {
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
                secrets.push(s.as_str().unwrap().to_owned());
            }
            match sanitizer.sanitize(event) {
                Err(_) => rejected += 1,
                Ok(o) if !o.report.is_clean() => cleaned += 1,
                Ok(_) => {}
            }
        }
    });
    let log = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    assert_eq!(log.matches("event rejected").count(), rejected, "{log}");
    assert_eq!(log.matches("event cleaned").count(), cleaned, "{log}");
    assert!(rejected > 10 && cleaned > 10);
    assert!(
        !log.contains("PAYLOADMARK"),
        "payload text in the log:\n{log}"
    );
    assert!(secrets.len() >= 15);
    for s in &secrets {
        assert!(!log.contains(s.as_str()), "secret `{s}` in the log");
    }
    // What is there: correlation ids, rule, field, sizes.
    assert!(log.contains("run_id=\"run-huge-text-delta\""), "{log}");
    assert!(log.contains("conversation_id=\"conv-hostile\""));
    assert!(
        log.contains("kind=\"text_too_long\"") || log.contains("kind=text_too_long"),
        "{log}"
    );
    assert!(log.contains("<invalid id: 257 bytes>"));
    assert!(log.contains("lce::sanitize"));
    // No control character made it into the log (one record per line).
    assert!(!log.chars().any(|c| c.is_control() && c != '\n'));
}
