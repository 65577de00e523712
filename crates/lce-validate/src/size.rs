//! The canonical JSON size of an event, without building the JSON.
//!
//! One function per payload, alike on purpose: each destructures its payload
//! (a field added to a payload fails to compile here until it is counted) and
//! lists the members in the order serde writes them, so each reads against
//! its type in `lce-types`; the tests compare every size with `to_json`.

use lce_types::{
    Event, FormField, InterruptRequested, NamespaceEntered, NamespaceExited, Payload,
    ProviderMetadata, RunCancelled, RunError, RunFinished, RunInterrupted, RunStarted, SpanDelta,
    SpanFinished, SpanStarted, ThreadState, ToolApproval, ToolArgumentsDelta, ToolError,
    ToolFinished, ToolStarted, UsageUpdated, Warning,
};
use lce_wire::json_string_len;

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
/// newline), computed without allocating and, for every payload of the 21
/// event types, by hand: member names and separators are constants, strings
/// are [`json_string_len`], opaque JSON (arguments, details, metadata, form values)
/// is written raw so it is its text's length. Only a payload type added to
/// `lce_types` later (the enumeration is non-exhaustive) would be serialized
/// into a counter.
///
/// `identity` is `identity_size(run_id, conversation_id)` when the caller
/// already knows the event carries the run's identity (measured once per
/// run), else `None` to measure it here.
pub(crate) fn canonical_size(event: &Event, identity: Option<u64>) -> u64 {
    match data_size(&event.payload) {
        Some(data) => envelope_size(event, identity) + data,
        None => {
            let mut c = Counter(0);
            // Serializing our own types cannot fail (see `Event::to_json`);
            // if it ever did, the bytes counted so far are a lower bound.
            let _ = serde_json::to_writer(&mut c, event);
            c.0
        }
    }
}

/// The size of the payload as the envelope's `data` value, as `lce_types`
/// serializes it (serde derive: members in declaration order, `None`
/// members skipped); `None` for a payload type this function does not know.
///
/// The common span payloads are counted here; each other payload by its own
/// function below. Every payload is destructured whole: a member added to
/// one of them stops the build instead of making the count wrong.
#[inline]
fn data_size(payload: &Payload) -> Option<u64> {
    const MESSAGE_ID: u64 = r#"{"message_id":"#.len() as u64;
    const DELTA: u64 = r#","delta":"#.len() as u64;
    Some(match payload {
        // The common span payloads, written out.
        Payload::TextDelta(SpanDelta { message_id, delta })
        | Payload::ReasoningDelta(SpanDelta { message_id, delta }) => {
            MESSAGE_ID + json_string_len(message_id) + DELTA + json_string_len(delta) + 1
        }
        Payload::ToolArgumentsDelta(ToolArgumentsDelta {
            tool_call_id,
            delta,
        }) => {
            r#"{"tool_call_id":"#.len() as u64
                + json_string_len(tool_call_id)
                + DELTA
                + json_string_len(delta)
                + 1
        }
        Payload::TextStarted(SpanStarted { message_id, role })
        | Payload::ReasoningStarted(SpanStarted { message_id, role }) => {
            MESSAGE_ID
                + json_string_len(message_id)
                + r#","role":"#.len() as u64
                + name_len(role.as_str())
                + 1
        }
        Payload::TextFinished(SpanFinished { message_id })
        | Payload::ReasoningFinished(SpanFinished { message_id }) => {
            MESSAGE_ID + json_string_len(message_id) + 1
        }
        Payload::ToolStarted(p) => tool_started_len(p),
        Payload::ToolFinished(p) => tool_finished_len(p),
        Payload::ToolError(p) => tool_error_len(p),
        Payload::NamespaceEntered(p) => namespace_entered_len(p),
        Payload::NamespaceExited(p) => namespace_exited_len(p),
        Payload::RunStarted(p) => run_started_len(p),
        Payload::RunFinished(p) => run_finished_len(p),
        Payload::RunInterrupted(p) => run_interrupted_len(p),
        Payload::RunCancelled(p) => run_cancelled_len(p),
        Payload::RunError(p) => run_error_len(p),
        Payload::InterruptRequested(p) => interrupt_len(p),
        Payload::Warning(p) => warning_len(p),
        Payload::UsageUpdated(p) => usage_len(p),
        Payload::ProviderMetadata(p) => metadata_len(p),
        _ => return None,
    })
}

/// `tool.started`.
#[inline]
fn tool_started_len(p: &ToolStarted) -> u64 {
    let ToolStarted {
        tool_call_id,
        tool_name,
        arguments,
        parent_message_id,
    } = p;
    Obj::new()
        .member("tool_call_id", json_string_len(tool_call_id))
        .member("tool_name", json_string_len(tool_name))
        .member("arguments", raw_len(arguments.get()))
        .opt("parent_message_id", opt_str_len(parent_message_id))
        .end()
}

/// `tool.finished`.
#[inline]
fn tool_finished_len(p: &ToolFinished) -> u64 {
    let ToolFinished {
        tool_call_id,
        result,
        result_ref,
    } = p;
    Obj::new()
        .member("tool_call_id", json_string_len(tool_call_id))
        .member("result", json_string_len(result))
        .opt("result_ref", opt_str_len(result_ref))
        .end()
}

/// `tool.error`.
#[inline]
fn tool_error_len(p: &ToolError) -> u64 {
    let ToolError {
        tool_call_id,
        code,
        message,
        retryable,
    } = p;
    Obj::new()
        .member("tool_call_id", json_string_len(tool_call_id))
        .member("code", json_string_len(code))
        .member("message", json_string_len(message))
        .member("retryable", bool_len(*retryable))
        .end()
}

/// `namespace.entered`.
#[inline]
fn namespace_entered_len(p: &NamespaceEntered) -> u64 {
    let NamespaceEntered {
        agent_id,
        agent_name,
        parent_tool_call_id,
    } = p;
    Obj::new()
        .member("agent_id", json_string_len(agent_id))
        .member("agent_name", json_string_len(agent_name))
        .member("parent_tool_call_id", json_string_len(parent_tool_call_id))
        .end()
}

/// `namespace.exited`.
#[inline]
fn namespace_exited_len(p: &NamespaceExited) -> u64 {
    let NamespaceExited {
        agent_id,
        parent_tool_call_id,
        outcome,
    } = p;
    Obj::new()
        .member("agent_id", json_string_len(agent_id))
        .member("parent_tool_call_id", json_string_len(parent_tool_call_id))
        .member("outcome", name_len(outcome.as_str()))
        .end()
}

/// `run.started`.
#[inline]
fn run_started_len(p: &RunStarted) -> u64 {
    let RunStarted {
        message_id,
        harness_id,
        adapter_version,
        provider_run_id,
    } = p;
    Obj::new()
        .opt("message_id", opt_str_len(message_id))
        .member("harness_id", json_string_len(harness_id))
        .member("adapter_version", json_string_len(adapter_version))
        .opt("provider_run_id", opt_str_len(provider_run_id))
        .end()
}

/// `run.finished`, with its thread state.
#[inline]
fn run_finished_len(p: &RunFinished) -> u64 {
    let RunFinished {
        outcome,
        stop_reason,
        thread_state,
    } = p;
    Obj::new()
        .member("outcome", name_len(outcome.as_str()))
        .opt("stop_reason", opt_str_len(stop_reason))
        .opt("thread_state", thread_state.as_ref().map(thread_state_len))
        .end()
}

/// `run.interrupted`.
#[inline]
fn run_interrupted_len(p: &RunInterrupted) -> u64 {
    let RunInterrupted {
        interrupt_id,
        reason,
    } = p;
    Obj::new()
        .member("interrupt_id", json_string_len(interrupt_id))
        .member("reason", name_len(reason.as_str()))
        .end()
}

/// `run.cancelled`.
#[inline]
fn run_cancelled_len(p: &RunCancelled) -> u64 {
    let RunCancelled {
        reason,
        side_effect_status,
    } = p;
    Obj::new()
        .member("reason", name_len(reason.as_str()))
        .member("side_effect_status", name_len(side_effect_status.as_str()))
        .end()
}

/// `run.error`.
#[inline]
fn run_error_len(p: &RunError) -> u64 {
    let RunError {
        code,
        message,
        retryable,
        retry_after_seconds,
        side_effect_status,
    } = p;
    Obj::new()
        .member("code", json_string_len(code))
        .member("message", json_string_len(message))
        .member("retryable", bool_len(*retryable))
        // The exact number text, written as it arrived.
        .opt(
            "retry_after_seconds",
            retry_after_seconds.as_ref().map(|r| raw_len(r.as_str())),
        )
        .member("side_effect_status", name_len(side_effect_status.as_str()))
        .end()
}

/// `warning`.
#[inline]
fn warning_len(p: &Warning) -> u64 {
    let Warning {
        code,
        message,
        details,
    } = p;
    Obj::new()
        .member("code", json_string_len(code))
        .member("message", json_string_len(message))
        .opt("details", details.as_ref().map(|d| raw_len(d.get())))
        .end()
}

/// `usage.updated`.
#[inline]
fn usage_len(p: &UsageUpdated) -> u64 {
    let UsageUpdated {
        input_tokens,
        output_tokens,
        cached_input_tokens,
        cost,
        currency,
        is_final,
    } = p;
    Obj::new()
        .opt("input_tokens", input_tokens.map(digits))
        .opt("output_tokens", output_tokens.map(digits))
        .opt("cached_input_tokens", cached_input_tokens.map(digits))
        .opt("cost", cost.map(f64_len))
        .opt("currency", opt_str_len(currency))
        .opt("final", is_final.map(bool_len))
        .end()
}

/// `provider.metadata`.
#[inline]
fn metadata_len(p: &ProviderMetadata) -> u64 {
    let ProviderMetadata {
        provider,
        model,
        metadata,
    } = p;
    Obj::new()
        .member("provider", json_string_len(provider))
        .opt("model", opt_str_len(model))
        .member("metadata", raw_len(metadata.get()))
        .end()
}

/// `interrupt.requested`, with its form fields or tool approvals.
fn interrupt_len(p: &InterruptRequested) -> u64 {
    let InterruptRequested {
        interrupt_id,
        interrupt_type,
        agent_id,
        prompt,
        fields,
        tool_approvals,
    } = p;
    Obj::new()
        .member("interrupt_id", json_string_len(interrupt_id))
        .member("interrupt_type", name_len(interrupt_type.as_str()))
        .member("agent_id", json_string_len(agent_id))
        .opt("prompt", opt_str_len(prompt))
        .opt("fields", fields.as_deref().map(|f| array_len(f, field_len)))
        .opt(
            "tool_approvals",
            tool_approvals
                .as_deref()
                .map(|a| array_len(a, approval_len)),
        )
        .end()
}

/// One field of a form-input interrupt.
fn field_len(f: &FormField) -> u64 {
    let FormField {
        field_name,
        field_label,
        field_description,
        field_type,
        field_values,
        required,
        default_value,
        placeholder,
    } = f;
    Obj::new()
        .member("field_name", json_string_len(field_name))
        .opt("field_label", opt_str_len(field_label))
        .opt("field_description", opt_str_len(field_description))
        .member("field_type", json_string_len(field_type))
        .opt(
            "field_values",
            field_values.as_ref().map(|v| raw_len(v.get())),
        )
        .opt("required", required.map(bool_len))
        .opt(
            "default_value",
            default_value.as_ref().map(|v| raw_len(v.get())),
        )
        .opt("placeholder", opt_str_len(placeholder))
        .end()
}

/// One tool call awaiting approval.
fn approval_len(a: &ToolApproval) -> u64 {
    let ToolApproval {
        tool_call_id,
        tool_name,
        tool_args,
        allowed_decisions,
    } = a;
    Obj::new()
        .member("tool_call_id", json_string_len(tool_call_id))
        .member("tool_name", json_string_len(tool_name))
        .member("tool_args", raw_len(tool_args.get()))
        .opt(
            "allowed_decisions",
            allowed_decisions
                .as_deref()
                .map(|d| array_len(d, |d| name_len(d.as_str()))),
        )
        .end()
}

/// `run.finished.thread_state`.
fn thread_state_len(t: &ThreadState) -> u64 {
    let ThreadState {
        durability,
        durable_revision,
        head_ref,
    } = t;
    Obj::new()
        // Any bounded code (D19), which may hold a `"` or a `\`.
        .member("durability", json_string_len(durability.as_str()))
        .member("durable_revision", digits(*durable_revision))
        .member("head_ref", json_string_len(head_ref))
        .end()
}

/// The size of a JSON object as `serde_json` writes a struct, member by
/// member: `{`, the members written as `"name":value` separated by commas,
/// `}`. Each member is counted with a comma after it; the last one's comma
/// stands for the `}`.
#[derive(Clone, Copy)]
struct Obj(u64);

impl Obj {
    /// `{`.
    #[inline]
    fn new() -> Obj {
        Obj(1)
    }

    /// `"name":` and a value of `value` bytes, and a comma. Member names
    /// are plain snake_case: never escaped.
    #[inline]
    fn member(self, name: &'static str, value: u64) -> Obj {
        Obj(self.0 + name.len() as u64 + 4 + value)
    }

    /// A member skipped when absent (`skip_serializing_if = "Option::is_none"`).
    #[inline]
    fn opt(self, name: &'static str, value: Option<u64>) -> Obj {
        match value {
            Some(v) => self.member(name, v),
            None => self,
        }
    }

    /// The object's size: `{}` when no member was written.
    #[inline]
    fn end(self) -> u64 {
        self.0.max(2)
    }
}

/// A JSON array of `items`: `[`, the items separated by commas, `]`.
fn array_len<T>(items: &[T], len: impl Fn(&T) -> u64) -> u64 {
    let sum: u64 = items.iter().map(len).sum();
    2 + sum + (items.len() as u64).saturating_sub(1)
}

/// An optional string member's value size.
#[inline]
fn opt_str_len(s: &Option<String>) -> Option<u64> {
    s.as_deref().map(json_string_len)
}

/// A value of one of the payloads' string enumerations (`as_str`): plain
/// snake_case, never escaped.
#[inline]
fn name_len(s: &'static str) -> u64 {
    s.len() as u64 + 2
}

/// Opaque JSON: `serde_json` writes a `RawValue` as it is.
#[inline]
fn raw_len(s: &str) -> u64 {
    s.len() as u64
}

/// `true` or `false`.
#[inline]
fn bool_len(b: bool) -> u64 {
    if b { 4 } else { 5 }
}

/// A float as `serde_json` writes it (shortest round-trip form; `null` if
/// not finite), counted by writing it: rare (`usage.updated.cost`).
fn f64_len(x: f64) -> u64 {
    let mut c = Counter(0);
    let _ = serde_json::to_writer(&mut c, &x);
    c.0
}

/// [`canonical_size`] of a `text.delta` or `reasoning.delta` that carries
/// the run's identity (of JSON size `identity`), whose `message_id` has the
/// JSON size `id_size` (quotes included) and whose text is `delta`.
#[inline]
pub(crate) fn span_delta_size(event: &Event, identity: u64, id_size: u64, delta: &str) -> u64 {
    const DATA: u64 = r#"{"message_id":"#.len() as u64 + r#","delta":"#.len() as u64 + 1;
    envelope_size(event, Some(identity)) + DATA + id_size + json_string_len(delta)
}

/// The JSON sizes of a run's `run_id` and `conversation_id` strings, quotes
/// included: what [`canonical_size`] takes as `identity`.
pub(crate) fn identity_size(run_id: &str, conversation_id: &str) -> u64 {
    json_string_len(run_id) + json_string_len(conversation_id)
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
    n += event.timestamp.text_len() as u64 + 2;
    n += match identity {
        Some(len) => len,
        None => identity_size(&event.run_id, &event.conversation_id),
    };
    n += digits(event.sequence);
    for (i, el) in event.namespace.iter().enumerate() {
        n += json_string_len(el) + u64::from(i > 0);
    }
    n
}

fn digits(v: u64) -> u64 {
    v.checked_ilog10().map_or(1, |d| u64::from(d) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lce_types::{
        CancelReason, Decision, Durability, InterruptReason, InterruptType, JsonObject,
        NamespaceOutcome, OpaqueJson, Outcome, Role, SideEffectStatus,
    };
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

    #[test]
    fn digits_are_exact() {
        for v in [0, 1, 9, 10, 99, 100, 12345, u64::MAX / 10, u64::MAX] {
            assert_eq!(digits(v), v.to_string().len() as u64);
        }
    }

    #[test]
    fn tool_finished_with_escapes_is_exact() {
        let e = Event::from_json(r#"{"version":1,"type":"tool.finished","run_id":"r","conversation_id":"c","sequence":9,"timestamp":"2026-08-17T00:00:00Z","namespace":["a"],"data":{"tool_call_id":"t","result":"x\ny\u0001"}}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(canonical_size(&e, None), e.to_json().len() as u64);
    }

    fn name_len_of(s: &str) -> u64 {
        s.len() as u64 + 2
    }

    /// A `run.error.retry_after_seconds`, as its exact text: integers,
    /// fractions, exponents, `-0`.
    fn retry_after() -> BoxedStrategy<lce_types::RetryAfter> {
        prop_oneof![
            (0u64..=86_400).prop_map(|s| s.to_string()),
            "(0|[1-9][0-9]{0,3})(\\.[0-9]{1,6})?([eE][+-]?[0-2])?",
            Just("-0".to_owned()),
            Just("0.25".to_owned()),
            Just("8.64e4".to_owned()),
        ]
        .prop_filter_map("a delay of at most a day", |t| {
            lce_types::RetryAfter::parse(&t).ok()
        })
        .boxed()
    }

    /// A `thread_state.durability`: a named value, or any other bounded code
    /// (escapes included).
    fn durability() -> BoxedStrategy<Durability> {
        prop_oneof![
            prop::sample::select(Durability::ALL),
            "[a-z_\"\\\\é😀 ]{0,20}"
                .prop_filter_map("a bounded code", |s| Durability::from_code(&s)),
        ]
        .boxed()
    }

    #[test]
    fn enumeration_values_are_never_escaped() {
        fn check<T: serde::Serialize + Copy>(all: &[T], as_str: fn(T) -> &'static str) {
            for &v in all {
                let json = serde_json::to_string(&v).unwrap_or_default();
                assert_eq!(name_len(as_str(v)), json.len() as u64, "{json}");
            }
        }
        check(Outcome::ALL, Outcome::as_str);
        for d in Durability::ALL {
            let json = serde_json::to_string(d).unwrap_or_default();
            assert_eq!(name_len_of(d.as_str()), json.len() as u64, "{json}");
        }
        check(InterruptReason::ALL, InterruptReason::as_str);
        check(InterruptType::ALL, InterruptType::as_str);
        check(CancelReason::ALL, CancelReason::as_str);
        check(SideEffectStatus::ALL, SideEffectStatus::as_str);
        check(Role::ALL, Role::as_str);
        check(NamespaceOutcome::ALL, NamespaceOutcome::as_str);
        check(Decision::ALL, Decision::as_str);
    }

    /// Strings for any member: arbitrary Unicode, escape-heavy, empty, or
    /// big (up to ~9 KiB, like a tool result).
    fn text() -> BoxedStrategy<String> {
        prop_oneof![
            4 => any::<String>(),
            4 => "[a-z \"\\\\\u{0}-\u{1f}\u{7f}\u{80}é😀]{0,24}",
            1 => Just(String::new()),
            1 => proptest::collection::vec("[a-z\"\\\\\n\u{1}é😀 ]{0,16}", 0..1200)
                .prop_map(|v| v.concat()),
        ]
        .boxed()
    }

    fn opt_text() -> BoxedStrategy<Option<String>> {
        proptest::option::of(text()).boxed()
    }

    /// Any JSON value, small strings inside.
    fn json_value() -> BoxedStrategy<serde_json::Value> {
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e300f64..1e300).prop_map(Value::from),
            "[a-z \"\\\\\u{0}-\u{1f}é😀]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
                proptest::collection::btree_map("[a-z\"é]{0,6}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .boxed()
    }

    /// The text of a JSON object: compact, pretty (whitespace is kept as
    /// received), or big (a 4 KiB string inside).
    fn object_text() -> BoxedStrategy<String> {
        let members = proptest::collection::btree_map("[a-z\"é]{0,6}", json_value(), 0..6);
        prop_oneof![
            (members, any::<bool>()).prop_map(|(m, pretty)| {
                let v = serde_json::Value::Object(m.into_iter().collect());
                if pretty {
                    serde_json::to_string_pretty(&v).unwrap_or_default()
                } else {
                    v.to_string()
                }
            }),
            "[a-zé😀\"\n]{4096}".prop_map(|s| serde_json::json!({ "body": s }).to_string()),
        ]
        .boxed()
    }

    fn json_object() -> BoxedStrategy<JsonObject> {
        object_text()
            .prop_map(|t| JsonObject::from_json(&t).unwrap_or_else(|e| panic!("{e}")))
            .boxed()
    }

    fn opaque() -> BoxedStrategy<OpaqueJson> {
        prop_oneof![json_value().prop_map(|v| v.to_string()), object_text(),]
            .prop_map(|t| OpaqueJson::from_json(&t).unwrap_or_else(|e| panic!("{e}")))
            .boxed()
    }

    fn one_of<T: Copy + std::fmt::Debug + 'static>(all: &'static [T]) -> BoxedStrategy<T> {
        prop::sample::select(all).boxed()
    }

    fn form_field() -> BoxedStrategy<FormField> {
        (
            text(),
            opt_text(),
            opt_text(),
            text(),
            proptest::option::of(opaque()),
            proptest::option::of(any::<bool>()),
            proptest::option::of(opaque()),
            opt_text(),
        )
            .prop_map(
                |(
                    field_name,
                    field_label,
                    field_description,
                    field_type,
                    field_values,
                    required,
                    default_value,
                    placeholder,
                )| FormField {
                    field_name,
                    field_label,
                    field_description,
                    field_type,
                    field_values,
                    required,
                    default_value,
                    placeholder,
                },
            )
            .boxed()
    }

    fn tool_approval() -> BoxedStrategy<ToolApproval> {
        (
            text(),
            text(),
            json_object(),
            proptest::option::of(proptest::collection::vec(one_of(Decision::ALL), 0..4)),
        )
            .prop_map(
                |(tool_call_id, tool_name, tool_args, allowed_decisions)| ToolApproval {
                    tool_call_id,
                    tool_name,
                    tool_args,
                    allowed_decisions,
                },
            )
            .boxed()
    }

    /// Every payload type, with arbitrary member values (each type as
    /// likely as any other: each family weighs its number of types).
    fn payload() -> BoxedStrategy<Payload> {
        prop_oneof![
            5 => run_payload(),
            6 => span_payload(),
            4 => tool_payload(),
            6 => other_payload(),
        ]
        .boxed()
    }

    /// The five run payloads.
    fn run_payload() -> BoxedStrategy<Payload> {
        prop_oneof![
            (opt_text(), text(), text(), opt_text()).prop_map(
                |(message_id, harness_id, adapter_version, provider_run_id)| {
                    Payload::RunStarted(RunStarted {
                        message_id,
                        harness_id,
                        adapter_version,
                        provider_run_id,
                    })
                }
            ),
            (
                one_of(Outcome::ALL),
                opt_text(),
                proptest::option::of((durability(), any::<u64>(), text()))
            )
                .prop_map(|(outcome, stop_reason, state)| {
                    Payload::RunFinished(RunFinished {
                        outcome,
                        stop_reason,
                        thread_state: state.map(|(durability, durable_revision, head_ref)| {
                            ThreadState {
                                durability,
                                durable_revision,
                                head_ref,
                            }
                        }),
                    })
                }),
            (text(), one_of(InterruptReason::ALL)).prop_map(|(interrupt_id, reason)| {
                Payload::RunInterrupted(RunInterrupted {
                    interrupt_id,
                    reason,
                })
            }),
            (one_of(CancelReason::ALL), one_of(SideEffectStatus::ALL)).prop_map(
                |(reason, side_effect_status)| Payload::RunCancelled(RunCancelled {
                    reason,
                    side_effect_status,
                })
            ),
            (
                text(),
                text(),
                any::<bool>(),
                proptest::option::of(retry_after()),
                one_of(SideEffectStatus::ALL)
            )
                .prop_map(
                    |(code, message, retryable, retry_after_seconds, side_effect_status)| {
                        Payload::RunError(RunError {
                            code,
                            message,
                            retryable,
                            retry_after_seconds,
                            side_effect_status,
                        })
                    }
                ),
        ]
        .boxed()
    }

    /// The six text and reasoning span payloads.
    fn span_payload() -> BoxedStrategy<Payload> {
        let span_started = (text(), one_of(Role::ALL)).prop_map(|(message_id, role)| SpanStarted {
            message_id: message_id.into(),
            role,
        });
        let span_delta = (text(), text()).prop_map(|(message_id, delta)| SpanDelta {
            message_id: message_id.into(),
            delta,
        });
        let span_finished = text().prop_map(|message_id| SpanFinished {
            message_id: message_id.into(),
        });
        prop_oneof![
            span_started.clone().prop_map(Payload::TextStarted),
            span_delta.clone().prop_map(Payload::TextDelta),
            span_finished.clone().prop_map(Payload::TextFinished),
            span_started.prop_map(Payload::ReasoningStarted),
            span_delta.prop_map(Payload::ReasoningDelta),
            span_finished.prop_map(Payload::ReasoningFinished),
        ]
        .boxed()
    }

    /// The four tool call payloads.
    fn tool_payload() -> BoxedStrategy<Payload> {
        prop_oneof![
            (text(), text(), json_object(), opt_text()).prop_map(
                |(tool_call_id, tool_name, arguments, parent_message_id)| {
                    Payload::ToolStarted(ToolStarted {
                        tool_call_id,
                        tool_name,
                        arguments,
                        parent_message_id,
                    })
                }
            ),
            (text(), text()).prop_map(|(tool_call_id, delta)| {
                Payload::ToolArgumentsDelta(ToolArgumentsDelta {
                    tool_call_id,
                    delta,
                })
            }),
            (text(), text(), opt_text()).prop_map(|(tool_call_id, result, result_ref)| {
                Payload::ToolFinished(ToolFinished {
                    tool_call_id,
                    result,
                    result_ref,
                })
            }),
            (text(), text(), text(), any::<bool>()).prop_map(
                |(tool_call_id, code, message, retryable)| Payload::ToolError(ToolError {
                    tool_call_id,
                    code,
                    message,
                    retryable,
                })
            ),
        ]
        .boxed()
    }

    /// Interrupts, namespaces, warnings, usage and provider metadata.
    fn other_payload() -> BoxedStrategy<Payload> {
        prop_oneof![
            (
                text(),
                one_of(InterruptType::ALL),
                text(),
                opt_text(),
                proptest::option::of(proptest::collection::vec(form_field(), 0..3)),
                proptest::option::of(proptest::collection::vec(tool_approval(), 0..3))
            )
                .prop_map(
                    |(interrupt_id, interrupt_type, agent_id, prompt, fields, tool_approvals)| {
                        Payload::InterruptRequested(InterruptRequested {
                            interrupt_id,
                            interrupt_type,
                            agent_id,
                            prompt,
                            fields,
                            tool_approvals,
                        })
                    }
                ),
            (text(), text(), text()).prop_map(|(agent_id, agent_name, parent_tool_call_id)| {
                Payload::NamespaceEntered(NamespaceEntered {
                    agent_id,
                    agent_name,
                    parent_tool_call_id,
                })
            }),
            (text(), text(), one_of(NamespaceOutcome::ALL)).prop_map(
                |(agent_id, parent_tool_call_id, outcome)| {
                    Payload::NamespaceExited(NamespaceExited {
                        agent_id,
                        parent_tool_call_id,
                        outcome,
                    })
                }
            ),
            (text(), text(), proptest::option::of(json_object())).prop_map(
                |(code, message, details)| Payload::Warning(Warning {
                    code,
                    message,
                    details,
                })
            ),
            (
                proptest::option::of(any::<u64>()),
                proptest::option::of(any::<u64>()),
                proptest::option::of(any::<u64>()),
                proptest::option::of(prop_oneof![any::<f64>(), -1e6f64..1e6]),
                opt_text(),
                proptest::option::of(any::<bool>())
            )
                .prop_map(
                    |(
                        input_tokens,
                        output_tokens,
                        cached_input_tokens,
                        cost,
                        currency,
                        is_final,
                    )| {
                        Payload::UsageUpdated(UsageUpdated {
                            input_tokens,
                            output_tokens,
                            cached_input_tokens,
                            cost,
                            currency,
                            is_final,
                        })
                    }
                ),
            (text(), opt_text(), json_object()).prop_map(|(provider, model, metadata)| {
                Payload::ProviderMetadata(ProviderMetadata {
                    provider,
                    model,
                    metadata,
                })
            }),
        ]
        .boxed()
    }

    proptest! {
        #[test]
        fn nested_members_are_exact(
            field in form_field(),
            approval in tool_approval(),
            state in (durability(), any::<u64>(), text()),
        ) {
            let json = serde_json::to_string(&field).unwrap_or_default();
            prop_assert_eq!(field_len(&field), json.len() as u64);
            let json = serde_json::to_string(&approval).unwrap_or_default();
            prop_assert_eq!(approval_len(&approval), json.len() as u64);
            let (durability, durable_revision, head_ref) = state;
            let state = ThreadState { durability, durable_revision, head_ref };
            let json = serde_json::to_string(&state).unwrap_or_default();
            prop_assert_eq!(thread_state_len(&state), json.len() as u64);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn every_payload_is_exact(
            payload in payload(),
            run_id in text(),
            conversation_id in text(),
            sequence in 0u64..=(1 << 53) - 1,
            namespace in proptest::collection::vec(text(), 0..3),
            ts in prop::sample::select(vec![
                "2026-08-17T00:00:00Z", "2026-08-17T00:00:00.5+02:00", "1999-12-31T23:59:59.123456789-11:30",
            ]),
        ) {
            let timestamp = lce_types::Timestamp::parse(ts).unwrap_or_else(|e| panic!("{e:?}"));
            let e = Event { run_id: run_id.into(), conversation_id: conversation_id.into(), sequence, timestamp, namespace, payload };
            prop_assert!(data_size(&e.payload).is_some(), "{:?} is not sized by hand", e.event_type());
            let exact = e.to_json().len() as u64;
            prop_assert_eq!(canonical_size(&e, None), exact, "{}", e.event_type());
            let identity = identity_size(&e.run_id, &e.conversation_id);
            prop_assert_eq!(canonical_size(&e, Some(identity)), exact);
        }
    }
}
