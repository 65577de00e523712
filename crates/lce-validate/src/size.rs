//! The canonical JSON size of an event, without building the JSON.

use lce_types::{Event, Payload};

/// An `io::Write` that only counts.
struct Counter(u64);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len() as u64);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The length in bytes of [`Event::to_json`] (compact canonical JSON, no
/// newline), computed without allocating: by hand for the deltas (the hot
/// path), else by serializing into a counter.
pub(crate) fn canonical_size(event: &Event) -> u64 {
    match &event.payload {
        Payload::TextDelta(d) | Payload::ReasoningDelta(d) => delta_size(
            event,
            r#"{"message_id":"#,
            &d.message_id,
            r#","delta":"#,
            &d.delta,
        ),
        Payload::ToolArgumentsDelta(d) => delta_size(
            event,
            r#"{"tool_call_id":"#,
            &d.tool_call_id,
            r#","delta":"#,
            &d.delta,
        ),
        _ => {
            let mut c = Counter(0);
            // Serializing our own types cannot fail (see `Event::to_json`);
            // if it ever did, the bytes counted so far are a lower bound.
            let _ = serde_json::to_writer(&mut c, event);
            c.0
        }
    }
}

/// `{"version":1,"type":T,"run_id":R,"conversation_id":C,"sequence":N,
/// "timestamp":S,"namespace":[..],"data":{K1:V1,K2:V2}}`
fn delta_size(event: &Event, k1: &str, v1: &str, k2: &str, v2: &str) -> u64 {
    let mut n = r#"{"version":1,"type":"#.len() as u64;
    n += str_len(event.event_type().as_str());
    n += r#","run_id":"#.len() as u64 + str_len(&event.run_id);
    n += r#","conversation_id":"#.len() as u64 + str_len(&event.conversation_id);
    n += r#","sequence":"#.len() as u64 + digits(event.sequence);
    n += r#","timestamp":"#.len() as u64 + str_len(event.timestamp.as_str());
    n += r#","namespace":["#.len() as u64;
    for (i, el) in event.namespace.iter().enumerate() {
        n += str_len(el) + u64::from(i > 0);
    }
    n += r#"],"data":"#.len() as u64;
    n += k1.len() as u64 + str_len(v1) + k2.len() as u64 + str_len(v2);
    n + "}}".len() as u64
}

/// The length of `s` as a JSON string written by `serde_json` (quotes
/// included): `"` and `\` and the short control escapes take 2 bytes, other
/// C0 controls 6 (`\u00XX`), everything else is written as is.
fn str_len(s: &str) -> u64 {
    let mut n = 2u64;
    for &b in s.as_bytes() {
        n += match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        };
    }
    n
}

fn digits(mut v: u64) -> u64 {
    let mut n = 1;
    while v >= 10 {
        v /= 10;
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn delta(ty: &str, id: &str, text: &str, seq: u64, ns: &[String]) -> Event {
        let data = if ty == "tool.arguments.delta" {
            serde_json::json!({"tool_call_id": id, "delta": text})
        } else {
            serde_json::json!({"message_id": id, "delta": text})
        };
        let v = serde_json::json!({
            "version": 1, "type": ty, "run_id": "r\"1", "conversation_id": "c\u{1}",
            "sequence": seq, "timestamp": "2026-08-17T00:00:00.5+02:00",
            "namespace": ns, "data": data,
        });
        Event::from_json(&v.to_string()).unwrap_or_else(|e| panic!("{e}"))
    }

    proptest! {
        #[test]
        fn fast_path_is_exact(
            text in any::<String>(),
            id in "[a-z\\-\"\\\\\u{7}\u{7f}é😀]{1,12}",
            seq in 0u64..=(1 << 53) - 1,
            ns in proptest::collection::vec("[a-z\"\t]{1,6}", 0..3),
            ty in prop::sample::select(vec!["text.delta", "reasoning.delta", "tool.arguments.delta"]),
        ) {
            let e = delta(ty, &id, &text, seq, &ns);
            prop_assert_eq!(canonical_size(&e), e.to_json().len() as u64);
        }
    }

    #[test]
    fn slow_path_is_exact() {
        let e = Event::from_json(r#"{"version":1,"type":"tool.finished","run_id":"r","conversation_id":"c","sequence":9,"timestamp":"2026-08-17T00:00:00Z","namespace":["a"],"data":{"tool_call_id":"t","result":"x\ny\u0001"}}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(canonical_size(&e), e.to_json().len() as u64);
    }
}
