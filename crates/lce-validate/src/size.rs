//! The canonical JSON size of an event, without building the JSON.

use lce_types::{Event, Payload, SpanDelta, SpanFinished, SpanStarted, ToolArgumentsDelta};

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
/// path) and the span starts and finishes, else by serializing into a
/// counter.
///
/// `identity` is `identity_size(run_id, conversation_id)` when the caller
/// already knows the event carries the run's identity (measured once per
/// run), else `None` to measure it here.
pub(crate) fn canonical_size(event: &Event, identity: Option<u64>) -> u64 {
    const MESSAGE_ID: u64 = r#"{"message_id":"#.len() as u64;
    const DELTA: u64 = r#","delta":"#.len() as u64;
    // The payloads are destructured whole: a member added to one of them
    // stops the build here instead of making the count wrong.
    let data = match &event.payload {
        Payload::TextDelta(SpanDelta { message_id, delta })
        | Payload::ReasoningDelta(SpanDelta { message_id, delta }) => {
            MESSAGE_ID + str_len(message_id) + DELTA + str_len(delta) + 1
        }
        Payload::ToolArgumentsDelta(ToolArgumentsDelta {
            tool_call_id,
            delta,
        }) => {
            r#"{"tool_call_id":"#.len() as u64 + str_len(tool_call_id) + DELTA + str_len(delta) + 1
        }
        Payload::TextStarted(SpanStarted { message_id, role })
        | Payload::ReasoningStarted(SpanStarted { message_id, role }) => {
            MESSAGE_ID
                + str_len(message_id)
                + r#","role":"#.len() as u64
                + str_len(role.as_str())
                + 1
        }
        Payload::TextFinished(SpanFinished { message_id })
        | Payload::ReasoningFinished(SpanFinished { message_id }) => {
            MESSAGE_ID + str_len(message_id) + 1
        }
        _ => {
            let mut c = Counter(0);
            // Serializing our own types cannot fail (see `Event::to_json`);
            // if it ever did, the bytes counted so far are a lower bound.
            let _ = serde_json::to_writer(&mut c, event);
            return c.0;
        }
    };
    envelope_size(event, identity) + data
}

/// [`canonical_size`] of a `text.delta` or `reasoning.delta` that carries
/// the run's identity (of JSON size `identity`), whose `message_id` has the
/// JSON size `id_size` (quotes included) and whose text is `delta`.
#[inline]
pub(crate) fn span_delta_size(event: &Event, identity: u64, id_size: u64, delta: &str) -> u64 {
    const DATA: u64 = r#"{"message_id":"#.len() as u64 + r#","delta":"#.len() as u64 + 1;
    envelope_size(event, Some(identity)) + DATA + id_size + str_len(delta)
}

/// The JSON sizes of a run's `run_id` and `conversation_id` strings, quotes
/// included: what [`canonical_size`] takes as `identity`.
pub(crate) fn identity_size(run_id: &str, conversation_id: &str) -> u64 {
    str_len(run_id) + str_len(conversation_id)
}

/// `{"version":1,"type":T,"run_id":R,"conversation_id":C,"sequence":N,
/// "timestamp":S,"namespace":[..],"data":` and the closing `}`: the event's
/// size without its `data` value.
fn envelope_size(event: &Event, identity: Option<u64>) -> u64 {
    const FIXED: usize = r#"{"version":1,"type":"#.len()
        + r#","run_id":"#.len()
        + r#","conversation_id":"#.len()
        + r#","sequence":"#.len()
        + r#","timestamp":"#.len()
        + r#","namespace":["#.len()
        + r#"],"data":"#.len()
        + "}".len();
    // Event type names and RFC 3339 timestamps (digits, `-:.+TZtz`, checked
    // by `Timestamp::parse`) never need escaping: their length plus quotes.
    let mut n = FIXED as u64;
    n += event.event_type().as_str().len() as u64 + 2;
    n += event.timestamp.as_str().len() as u64 + 2;
    n += match identity {
        Some(len) => len,
        None => identity_size(&event.run_id, &event.conversation_id),
    };
    n += digits(event.sequence);
    for (i, el) in event.namespace.iter().enumerate() {
        n += str_len(el) + u64::from(i > 0);
    }
    n
}

/// `0x01` in every byte of a `u64`.
const LO: u64 = 0x0101_0101_0101_0101;
/// `0x80` in every byte of a `u64`.
const HI: u64 = 0x8080_8080_8080_8080;

/// `true` when one of the eight bytes of `x` is a C0 control, `"` or `\`
/// (the bytes `serde_json` escapes). Exact: the SWAR "has byte less than"
/// and "has zero byte" tests have no false negatives; a false positive
/// would only cost a closer look.
#[inline]
fn any_escaped(x: u64) -> bool {
    let control = x.wrapping_sub(LO * 0x20) & !x;
    let q = x ^ (LO * u64::from(b'"'));
    let quote = q.wrapping_sub(LO) & !q;
    let b = x ^ (LO * u64::from(b'\\'));
    let backslash = b.wrapping_sub(LO) & !b;
    (control | quote | backslash) & HI != 0
}

/// The eight bytes at `i` as a `u64`; `0` (a block looked at closely) if
/// there are not eight.
#[inline]
fn word(b: &[u8], i: usize) -> u64 {
    b.get(i..i.wrapping_add(8))
        .and_then(|w| <[u8; 8]>::try_from(w).ok())
        .map_or(0, u64::from_le_bytes)
}

/// A string shorter than eight bytes as a `u64`, padded with `a` (never
/// escaped).
#[inline]
fn padded(b: &[u8]) -> u64 {
    let mut x = LO * u64::from(b'a');
    for (k, &c) in b.iter().enumerate().take(8) {
        let shift = 8 * k;
        x = (x & !(0xFF << shift)) | (u64::from(c) << shift);
    }
    x
}

/// The length of `s` as a JSON string written by `serde_json` (quotes
/// included): `"` and `\` and the short control escapes take 2 bytes, other
/// C0 controls 6 (`\u00XX`), everything else is written as is. Blocks of
/// eight bytes with nothing to escape (the common case) are counted whole,
/// in a loop that needs no saved registers; from the first block with
/// something to escape on, [`str_len_escaped`] counts. The last partial
/// block is tested as the string's last eight bytes (or padded, when the
/// string is shorter).
#[inline]
pub(crate) fn str_len(s: &str) -> u64 {
    let b = s.as_bytes();
    let n = b.len();
    let len = 2 + n as u64;
    let mut blocks = b.chunks_exact(8);
    let mut i = 0;
    for block in &mut blocks {
        if let Ok(w) = <[u8; 8]>::try_from(block) {
            if any_escaped(u64::from_le_bytes(w)) {
                return len + str_len_escaped(b, i);
            }
        }
        i += 8;
    }
    if i < n {
        let x = match n.checked_sub(8) {
            Some(last) => word(b, last),
            None => padded(b),
        };
        if any_escaped(x) {
            return len + str_len_escaped(b, i);
        }
    }
    len
}

/// The escape bytes `serde_json` adds to `b[i..]` (`i` a multiple of 8),
/// block by block like [`str_len`], the last partial block byte by byte.
#[inline(never)]
fn str_len_escaped(b: &[u8], mut i: usize) -> u64 {
    let n = b.len();
    let mut len = 0;
    while i + 8 <= n {
        if any_escaped(word(b, i)) {
            len += extra(b, i, i + 8);
        }
        i += 8;
    }
    if i < n && any_escaped(word(b, n.saturating_sub(8))) {
        len += extra(b, i, n);
    }
    len
}

/// The escape bytes `serde_json` adds to `b[from..to]`.
#[inline]
fn extra(b: &[u8], from: usize, to: usize) -> u64 {
    b.get(from..to)
        .unwrap_or_default()
        .iter()
        .map(|&c| escape_extra(c))
        .sum()
}

/// The bytes `serde_json` adds when it writes the byte `c` in a string.
#[inline]
fn escape_extra(c: u8) -> u64 {
    match c {
        b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
        0..=0x1f => 5,
        _ => 0,
    }
}

fn digits(v: u64) -> u64 {
    v.checked_ilog10().map_or(1, |d| u64::from(d) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn delta(ty: &str, id: &str, text: &str, seq: u64, ns: &[String]) -> Event {
        let data = match ty {
            "tool.arguments.delta" => serde_json::json!({"tool_call_id": id, "delta": text}),
            "text.started" | "reasoning.started" => {
                serde_json::json!({"message_id": id, "role": "assistant"})
            }
            "text.finished" | "reasoning.finished" => serde_json::json!({"message_id": id}),
            _ => serde_json::json!({"message_id": id, "delta": text}),
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
            ty in prop::sample::select(vec![
                "text.delta", "reasoning.delta", "tool.arguments.delta",
                "text.started", "reasoning.started", "text.finished", "reasoning.finished",
            ]),
        ) {
            let e = delta(ty, &id, &text, seq, &ns);
            let exact = e.to_json().len() as u64;
            prop_assert_eq!(canonical_size(&e, None), exact);
            let identity = identity_size(&e.run_id, &e.conversation_id);
            prop_assert_eq!(canonical_size(&e, Some(identity)), exact);
        }
    }

    proptest! {
        #[test]
        fn str_len_is_exact(
            s in "[a-z \"\\\\\u{0}-\u{1f}\u{7f}\u{80}é😀]{0,40}",
            t in any::<String>(),
        ) {
            for s in [&s, &t] {
                let json = serde_json::to_string(s).unwrap_or_default();
                prop_assert_eq!(str_len(s), json.len() as u64);
            }
        }
    }

    #[test]
    fn str_len_every_ascii_at_every_position() {
        // Strings of 0 to 17 bytes (under eight, whole blocks, a partial
        // last block), each ASCII character and a few others at each
        // position, among bytes next to the escaped ones.
        let others = ['é', '😀', '\u{7f}', '\u{80}'];
        for n in 0..=17usize {
            for at in 0..n.max(1) {
                for c in ('\0'..='\u{7f}').chain(others) {
                    let s: String = (0..n)
                        .map(|i| {
                            if i == at {
                                c
                            } else {
                                ['!', '#', '[', ']'][i % 4]
                            }
                        })
                        .collect();
                    let json = serde_json::to_string(&s).unwrap_or_default();
                    assert_eq!(str_len(&s), json.len() as u64, "{s:?}");
                }
            }
        }
    }

    #[test]
    fn digits_are_exact() {
        for v in [0, 1, 9, 10, 99, 100, 12345, u64::MAX / 10, u64::MAX] {
            assert_eq!(digits(v), v.to_string().len() as u64);
        }
    }

    #[test]
    fn slow_path_is_exact() {
        let e = Event::from_json(r#"{"version":1,"type":"tool.finished","run_id":"r","conversation_id":"c","sequence":9,"timestamp":"2026-08-17T00:00:00Z","namespace":["a"],"data":{"tool_call_id":"t","result":"x\ny\u0001"}}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(canonical_size(&e, None), e.to_json().len() as u64);
    }
}
