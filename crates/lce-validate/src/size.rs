//! The canonical JSON size of an event, without building the JSON.
//!
//! One [`JsonLen`] impl per payload, written by `object_len!` from the list
//! of its members in the order serde writes them, so each reads against its
//! type in `lce-types`; each destructures its payload (a field added to a
//! payload fails to compile here until it is counted), and each member's
//! value is measured by its type. The tests compare every size with
//! `to_json`.

use lce_types::{
    CancelReason, Decision, Durability, Event, FormField, InterruptReason, InterruptRequested,
    InterruptType, JsonObject, NamespaceEntered, NamespaceExited, NamespaceOutcome, OpaqueJson,
    Outcome, Payload, ProviderMetadata, RetryAfter, Role, RunCancelled, RunError, RunFinished,
    RunInterrupted, RunStarted, SideEffectStatus, SpanDelta, SpanFinished, SpanStarted,
    ThreadState, ToolApproval, ToolArgumentsDelta, ToolError, ToolFinished, ToolStarted,
    UsageUpdated, Warning,
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

/// The length in bytes of [`Event::to_json`] (compact canonical JSON),
/// computed without writing it: what the D19 bounds count, and what a
/// log keeping events in memory may account them by.
pub fn canonical_json_len(event: &Event) -> usize {
    usize::try_from(canonical_size(event, None)).unwrap_or(usize::MAX)
}

/// The size of the payload as the envelope's `data` value, as `lce_types`
/// serializes it (serde derive: members in declaration order, `None`
/// members skipped); `None` for a payload type this function does not know.
///
/// The common span payloads are counted here; each other payload by its
/// [`JsonLen`] impl below. Every payload is destructured whole: a member added to
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
        Payload::ToolStarted(p) => p.json_len(),
        Payload::ToolFinished(p) => p.json_len(),
        Payload::ToolError(p) => p.json_len(),
        Payload::NamespaceEntered(p) => p.json_len(),
        Payload::NamespaceExited(p) => p.json_len(),
        Payload::RunStarted(p) => p.json_len(),
        Payload::RunFinished(p) => p.json_len(),
        Payload::RunInterrupted(p) => p.json_len(),
        Payload::RunCancelled(p) => p.json_len(),
        Payload::RunError(p) => p.json_len(),
        Payload::InterruptRequested(p) => p.json_len(),
        Payload::Warning(p) => p.json_len(),
        Payload::UsageUpdated(p) => p.json_len(),
        Payload::ProviderMetadata(p) => p.json_len(),
        _ => return None,
    })
}

/// A value's size as `serde_json` writes it inside a payload.
trait JsonLen {
    /// The value's length in compact JSON.
    fn json_len(&self) -> u64;
}

/// A member's value size, `None` when `serde` skips the member (an absent
/// `Option`, `skip_serializing_if = "Option::is_none"`).
trait MemberLen {
    /// The member value's length in compact JSON, if it is written.
    fn member_len(&self) -> Option<u64>;
}

impl<T: JsonLen> MemberLen for T {
    #[inline]
    fn member_len(&self) -> Option<u64> {
        Some(self.json_len())
    }
}

impl<T: JsonLen> MemberLen for Option<T> {
    #[inline]
    fn member_len(&self) -> Option<u64> {
        self.as_ref().map(T::json_len)
    }
}

impl JsonLen for String {
    #[inline]
    fn json_len(&self) -> u64 {
        json_string_len(self)
    }
}

impl JsonLen for bool {
    #[inline]
    fn json_len(&self) -> u64 {
        bool_len(*self)
    }
}

impl JsonLen for u64 {
    #[inline]
    fn json_len(&self) -> u64 {
        digits(*self)
    }
}

impl JsonLen for f64 {
    #[inline]
    fn json_len(&self) -> u64 {
        f64_len(*self)
    }
}

impl JsonLen for JsonObject {
    #[inline]
    fn json_len(&self) -> u64 {
        raw_len(self.get())
    }
}

impl JsonLen for OpaqueJson {
    #[inline]
    fn json_len(&self) -> u64 {
        raw_len(self.get())
    }
}

/// `run.error.retry_after_seconds`: the exact number text, written as it
/// arrived.
impl JsonLen for RetryAfter {
    #[inline]
    fn json_len(&self) -> u64 {
        raw_len(self.as_str())
    }
}

/// `thread_state.durability`: a named value or any bounded code (D19),
/// which may hold a `"` or a `\`.
impl JsonLen for Durability {
    #[inline]
    fn json_len(&self) -> u64 {
        json_string_len(self.as_str())
    }
}

impl<T: JsonLen> JsonLen for Vec<T> {
    #[inline]
    fn json_len(&self) -> u64 {
        array_len(self, T::json_len)
    }
}

/// `impl JsonLen` for the payloads' string enumerations: their `as_str`,
/// never escaped.
macro_rules! enum_len {
    ($($ty:ident),* $(,)?) => {$(
        impl JsonLen for $ty {
            #[inline]
            fn json_len(&self) -> u64 {
                name_len(self.as_str())
            }
        }
    )*};
}

enum_len!(
    Role,
    Outcome,
    InterruptReason,
    InterruptType,
    CancelReason,
    SideEffectStatus,
    NamespaceOutcome,
    Decision,
);

/// `impl JsonLen` for payload structs, each the object serde derive writes
/// for it: `Type { field, field as "json name", ... }` lists its members in
/// declaration order (the order serde writes them), each named as its field
/// unless renamed; attributes go on the `json_len` method. Each struct is
/// destructured whole: a member added to one stops the build here instead
/// of making the count wrong.
macro_rules! object_len {
    (@name $field:ident $json:literal) => {
        $json
    };
    (@name $field:ident) => {
        stringify!($field)
    };
    ($($(#[$attr:meta])* $ty:ident { $($field:ident $(as $json:literal)?),* $(,)? })*) => {$(
        impl JsonLen for $ty {
            $(#[$attr])*
            fn json_len(&self) -> u64 {
                let $ty { $($field),* } = self;
                Obj::new()
                    $(.member_of(object_len!(@name $field $($json)?), $field))*
                    .end()
            }
        }
    )*};
}

object_len! {
    /// `tool.started`.
    #[inline]
    ToolStarted { tool_call_id, tool_name, arguments, parent_message_id }
    /// `tool.finished`.
    #[inline]
    ToolFinished { tool_call_id, result, result_ref }
    /// `tool.error`.
    #[inline]
    ToolError { tool_call_id, code, message, retryable }
    /// `namespace.entered`.
    #[inline]
    NamespaceEntered { agent_id, agent_name, parent_tool_call_id }
    /// `namespace.exited`.
    #[inline]
    NamespaceExited { agent_id, parent_tool_call_id, outcome }
    /// `run.started`.
    #[inline]
    RunStarted { message_id, harness_id, adapter_version, provider_run_id }
    /// `run.finished`, with its thread state.
    #[inline]
    RunFinished { outcome, stop_reason, thread_state }
    /// `run.interrupted`.
    #[inline]
    RunInterrupted { interrupt_id, reason }
    /// `run.cancelled`.
    #[inline]
    RunCancelled { reason, side_effect_status }
    /// `run.error`.
    #[inline]
    RunError { code, message, retryable, retry_after_seconds, side_effect_status }
    /// `warning`.
    #[inline]
    Warning { code, message, details }
    /// `usage.updated`.
    #[inline]
    UsageUpdated {
        input_tokens,
        output_tokens,
        cached_input_tokens,
        cost,
        currency,
        is_final as "final",
    }
    /// `provider.metadata`.
    #[inline]
    ProviderMetadata { provider, model, metadata }
    /// `interrupt.requested`, with its form fields or tool approvals.
    InterruptRequested { interrupt_id, interrupt_type, agent_id, prompt, fields, tool_approvals }
    /// One field of a form-input interrupt.
    FormField {
        field_name,
        field_label,
        field_description,
        field_type,
        field_values,
        required,
        default_value,
        placeholder,
    }
    /// One tool call awaiting approval.
    ToolApproval { tool_call_id, tool_name, tool_args, allowed_decisions }
    /// `run.finished.thread_state`.
    ThreadState { durability, durable_revision, head_ref }
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

    /// A member of any value [`MemberLen`] measures (skipped when absent).
    #[inline]
    fn member_of(self, name: &'static str, value: &impl MemberLen) -> Obj {
        self.opt(name, value.member_len())
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

    /// `strategy!(Type { field: strategy, ... })`: a strategy for a `Type`
    /// each of whose fields (all of them, as a struct literal needs) is drawn
    /// from its own strategy.
    macro_rules! strategy {
        ($ty:ident { $($field:ident: $strategy:expr),* $(,)? }) => {
            ($($strategy,)*).prop_map(|($($field,)*)| $ty { $($field),* })
        };
    }

    fn form_field() -> BoxedStrategy<FormField> {
        strategy!(FormField {
            field_name: text(),
            field_label: opt_text(),
            field_description: opt_text(),
            field_type: text(),
            field_values: proptest::option::of(opaque()),
            required: proptest::option::of(any::<bool>()),
            default_value: proptest::option::of(opaque()),
            placeholder: opt_text(),
        })
        .boxed()
    }

    fn tool_approval() -> BoxedStrategy<ToolApproval> {
        strategy!(ToolApproval {
            tool_call_id: text(),
            tool_name: text(),
            tool_args: json_object(),
            allowed_decisions: proptest::option::of(proptest::collection::vec(
                one_of(Decision::ALL),
                0..4
            )),
        })
        .boxed()
    }

    fn thread_state() -> BoxedStrategy<ThreadState> {
        strategy!(ThreadState {
            durability: durability(),
            durable_revision: any::<u64>(),
            head_ref: text(),
        })
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
            strategy!(RunStarted {
                message_id: opt_text(),
                harness_id: text(),
                adapter_version: text(),
                provider_run_id: opt_text(),
            })
            .prop_map(Payload::RunStarted),
            strategy!(RunFinished {
                outcome: one_of(Outcome::ALL),
                stop_reason: opt_text(),
                thread_state: proptest::option::of(thread_state()),
            })
            .prop_map(Payload::RunFinished),
            strategy!(RunInterrupted {
                interrupt_id: text(),
                reason: one_of(InterruptReason::ALL),
            })
            .prop_map(Payload::RunInterrupted),
            strategy!(RunCancelled {
                reason: one_of(CancelReason::ALL),
                side_effect_status: one_of(SideEffectStatus::ALL),
            })
            .prop_map(Payload::RunCancelled),
            strategy!(RunError {
                code: text(),
                message: text(),
                retryable: any::<bool>(),
                retry_after_seconds: proptest::option::of(retry_after()),
                side_effect_status: one_of(SideEffectStatus::ALL),
            })
            .prop_map(Payload::RunError),
        ]
        .boxed()
    }

    /// The six text and reasoning span payloads.
    fn span_payload() -> BoxedStrategy<Payload> {
        let id = || text().prop_map(std::sync::Arc::<str>::from);
        let span_started = strategy!(SpanStarted {
            message_id: id(),
            role: one_of(Role::ALL),
        });
        let span_delta = strategy!(SpanDelta {
            message_id: id(),
            delta: text(),
        });
        let span_finished = strategy!(SpanFinished { message_id: id() });
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
            strategy!(ToolStarted {
                tool_call_id: text(),
                tool_name: text(),
                arguments: json_object(),
                parent_message_id: opt_text(),
            })
            .prop_map(Payload::ToolStarted),
            strategy!(ToolArgumentsDelta {
                tool_call_id: text(),
                delta: text(),
            })
            .prop_map(Payload::ToolArgumentsDelta),
            strategy!(ToolFinished {
                tool_call_id: text(),
                result: text(),
                result_ref: opt_text(),
            })
            .prop_map(Payload::ToolFinished),
            strategy!(ToolError {
                tool_call_id: text(),
                code: text(),
                message: text(),
                retryable: any::<bool>(),
            })
            .prop_map(Payload::ToolError),
        ]
        .boxed()
    }

    /// Interrupts, namespaces, warnings, usage and provider metadata.
    fn other_payload() -> BoxedStrategy<Payload> {
        prop_oneof![
            strategy!(InterruptRequested {
                interrupt_id: text(),
                interrupt_type: one_of(InterruptType::ALL),
                agent_id: text(),
                prompt: opt_text(),
                fields: proptest::option::of(proptest::collection::vec(form_field(), 0..3)),
                tool_approvals: proptest::option::of(proptest::collection::vec(
                    tool_approval(),
                    0..3
                )),
            })
            .prop_map(Payload::InterruptRequested),
            strategy!(NamespaceEntered {
                agent_id: text(),
                agent_name: text(),
                parent_tool_call_id: text(),
            })
            .prop_map(Payload::NamespaceEntered),
            strategy!(NamespaceExited {
                agent_id: text(),
                parent_tool_call_id: text(),
                outcome: one_of(NamespaceOutcome::ALL),
            })
            .prop_map(Payload::NamespaceExited),
            strategy!(Warning {
                code: text(),
                message: text(),
                details: proptest::option::of(json_object()),
            })
            .prop_map(Payload::Warning),
            strategy!(UsageUpdated {
                input_tokens: proptest::option::of(any::<u64>()),
                output_tokens: proptest::option::of(any::<u64>()),
                cached_input_tokens: proptest::option::of(any::<u64>()),
                cost: proptest::option::of(prop_oneof![any::<f64>(), -1e6f64..1e6]),
                currency: opt_text(),
                is_final: proptest::option::of(any::<bool>()),
            })
            .prop_map(Payload::UsageUpdated),
            strategy!(ProviderMetadata {
                provider: text(),
                model: opt_text(),
                metadata: json_object(),
            })
            .prop_map(Payload::ProviderMetadata),
        ]
        .boxed()
    }

    proptest! {
        #[test]
        fn nested_members_are_exact(
            field in form_field(),
            approval in tool_approval(),
            state in thread_state(),
        ) {
            let json = serde_json::to_string(&field).unwrap_or_default();
            prop_assert_eq!(field.json_len(), json.len() as u64);
            let json = serde_json::to_string(&approval).unwrap_or_default();
            prop_assert_eq!(approval.json_len(), json.len() as u64);
            let json = serde_json::to_string(&state).unwrap_or_default();
            prop_assert_eq!(state.json_len(), json.len() as u64);
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
