//! The typed payloads (`data`) of the 21 event types.
//!
//! Members and enumeration values follow `docs/events.md`. Every struct
//! rejects unknown members; optional members may be absent or `null`, and are
//! omitted when serialized.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::opaque::{JsonObject, OpaqueJson};

macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident => $text:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[non_exhaustive]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $text)] $variant ),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value as written in JSON.
            pub fn as_str(self) -> &'static str {
                match self { $( $name::$variant => $text ),+ }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum! {
    /// `run.finished.outcome`: the only successful outcome.
    pub enum Outcome { /// The run completed.
        Success => "success" }
}

/// The most bytes of a code that the parser takes where the contract gives
/// no closed set of values (`thread_state.durability`): the D19 bound of
/// codes and names. Such a code also holds no control character (D18).
pub const MAX_CODE_BYTES: usize = 128;

/// How durable the thread state is after the run (rule 13).
///
/// The value decides a rule, so it is not a closed enumeration (D19,
/// amended): any bounded code parses (at most [`MAX_CODE_BYTES`] bytes, no
/// control, bidi-control or line/paragraph separator character, D18), and a
/// value other than `committed` is a rule-13 violation in the validator's
/// full mode, not a parse error. Known values have their own variant; any
/// other is [`Durability::Other`].
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Durability {
    /// The final state is committed (`durable_revision`, `head_ref`).
    Committed,
    /// Not committed: only an adapter-side value; never valid in full mode.
    Uncommitted,
    /// Any other bounded code (`pending`, ...); never valid in full mode.
    Other(DurabilityCode),
}

/// A `thread_state.durability` code that is neither `committed` nor
/// `uncommitted` ([`Durability::Other`]): at most [`MAX_CODE_BYTES`] bytes,
/// no control character. Made only by [`Durability::from_code`], so a known
/// value is never held here.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DurabilityCode(Box<str>);

impl DurabilityCode {
    /// The code as written in JSON.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Durability {
    /// The named values, in declaration order.
    pub const ALL: &'static [Durability] = &[Durability::Committed, Durability::Uncommitted];

    /// The value as written in JSON.
    pub fn as_str(&self) -> &str {
        match self {
            Durability::Committed => "committed",
            Durability::Uncommitted => "uncommitted",
            Durability::Other(code) => code.as_str(),
        }
    }

    /// `true` for `committed`, the only value rule 13 accepts.
    pub fn is_committed(&self) -> bool {
        *self == Durability::Committed
    }

    /// The durability written `code`: a named value, else
    /// [`Durability::Other`]; `None` when `code` is not a bounded code
    /// (longer than [`MAX_CODE_BYTES`] or with a control character).
    pub fn from_code(code: &str) -> Option<Durability> {
        Some(match code {
            "committed" => Durability::Committed,
            "uncommitted" => Durability::Uncommitted,
            _ if is_bounded_code(code) => Durability::Other(DurabilityCode(code.into())),
            _ => return None,
        })
    }
}

impl std::fmt::Display for Durability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Durability {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Durability {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Code;
        impl serde::de::Visitor<'_> for Code {
            type Value = Durability;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            // Any string, borrowed or not, arrives here: nothing is
            // allocated for a named value.
            fn visit_str<E: serde::de::Error>(self, code: &str) -> Result<Durability, E> {
                Durability::from_code(code).ok_or_else(|| {
                    E::custom(crate::error::ErrorMarker::InvalidValue.message(&format!(
                        "durability must be a code of at most {MAX_CODE_BYTES} bytes without control characters"
                    )))
                })
            }
        }
        d.deserialize_str(Code)
    }
}

/// A code as D18 and D19 bound it: at most [`MAX_CODE_BYTES`] bytes, and
/// none of the characters D18 rejects in identifiers, codes and names (C0
/// and C1 controls, DEL, the bidirectional marks, embeddings, overrides and
/// isolates, the line and paragraph separators), as `lce-sanitize` checks
/// names.
pub(crate) fn is_bounded_code(code: &str) -> bool {
    code.len() <= MAX_CODE_BYTES
        && !code.chars().any(|c| {
            c.is_control()
                || matches!(
                    c,
                    '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
                )
        })
}

string_enum! {
    /// `run.interrupted.reason`.
    pub enum InterruptReason {
        /// A form awaits the user's input.
        HumanInput => "human_input",
        /// Tool calls await approval.
        ToolApproval => "tool_approval",
    }
}

string_enum! {
    /// `interrupt.requested.interrupt_type`.
    pub enum InterruptType {
        /// A form to fill in.
        FormInput => "form_input",
        /// Tool calls to approve, edit or reject.
        ToolApproval => "tool_approval",
    }
}

impl InterruptType {
    /// The `run.interrupted` reason that matches this interrupt (rule 14).
    pub fn reason(self) -> InterruptReason {
        match self {
            InterruptType::FormInput => InterruptReason::HumanInput,
            InterruptType::ToolApproval => InterruptReason::ToolApproval,
        }
    }
}

string_enum! {
    /// `run.cancelled.reason` (D11).
    pub enum CancelReason {
        /// The client asked to stop.
        ClientRequest => "client_request",
        /// The client went away.
        Disconnect => "disconnect",
        /// The service is shutting down.
        Shutdown => "shutdown",
        /// The run's deadline passed.
        Deadline => "deadline",
    }
}

string_enum! {
    /// Whether side effects may have happened before a run ended (D8).
    pub enum SideEffectStatus {
        /// Nothing was forwarded.
        None => "none",
        /// Output or side effects may have happened.
        Possible => "possible",
        /// Side effects are known to have happened.
        Known => "known",
    }
}

string_enum! {
    /// The role of a text or reasoning span.
    pub enum Role { /// The assistant speaks.
        Assistant => "assistant" }
}

string_enum! {
    /// `namespace.exited.outcome`.
    pub enum NamespaceOutcome {
        /// The subagent finished.
        Success => "success",
        /// The subagent stopped on an interrupt.
        Interrupted => "interrupted",
        /// The subagent was cancelled.
        Cancelled => "cancelled",
        /// The subagent failed.
        Error => "error",
    }
}

string_enum! {
    /// A decision a user may take on a tool approval.
    pub enum Decision {
        /// Run the call as proposed.
        Approve => "approve",
        /// Run the call with edited arguments.
        Edit => "edit",
        /// Do not run the call.
        Reject => "reject",
    }
}

/// `run.started`: the first event of every stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunStarted {
    /// The root assistant message, when known up front.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Which harness produced the run (`deepagents`, `strands`, ...).
    pub harness_id: String,
    /// The adapter's version.
    pub adapter_version: String,
    /// The provider's own run id, opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_run_id: Option<String>,
}

/// The durable thread state the control plane committed (D10).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadState {
    /// Durability of the state.
    pub durability: Durability,
    /// The committed revision.
    pub durable_revision: u64,
    /// Opaque reference to the committed head.
    pub head_ref: String,
}

/// `run.finished`: terminal, successful.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunFinished {
    /// Always `success`.
    pub outcome: Outcome,
    /// The provider's stop reason (`end_turn`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Filled by the coordinator from its commit (D10, D10a).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_state: Option<ThreadState>,
}

/// `run.interrupted`: terminal for this stream, resumable later.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunInterrupted {
    /// The pending interrupt (rule 14).
    pub interrupt_id: String,
    /// Why the run waits; matches the interrupt's type.
    pub reason: InterruptReason,
}

/// `run.cancelled`: terminal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunCancelled {
    /// Who or what cancelled the run.
    pub reason: CancelReason,
    /// Whether side effects may have happened.
    pub side_effect_status: SideEffectStatus,
}

/// `run.error`: terminal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunError {
    /// A safe machine code (`harness_event_invalid`, `thread_durability_uncertain`, ...).
    pub code: String,
    /// A sanitized user-facing message.
    pub message: String,
    /// Whether retrying may help.
    pub retryable: bool,
    /// Seconds to wait before retrying, when known: any non-negative number
    /// up to a day, fractions included, kept as written (D19).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<RetryAfter>,
    /// Whether side effects may have happened.
    pub side_effect_status: SideEffectStatus,
}

/// `run.error.retry_after_seconds` (D19, amended): a non-negative finite JSON
/// number, integer or fraction (providers send `0.25`), at most
/// [`RetryAfter::MAX_SECONDS`], kept as its exact JSON text: every wire
/// that carries it writes that text (`0.25`, `1e2`, `30.0` stay as they are).
///
/// Negative numbers (`-0` is zero, and taken), numbers above a day
/// (compared exactly, on the decimal text: `86400.0000001` is above), and
/// anything that is not a number (a string `"5"`, a boolean, `NaN`) are
/// parse errors at `data.retry_after_seconds`; `null` is "not given".
///
/// ```
/// use lce_types::RetryAfter;
/// let r = RetryAfter::parse("0.25").unwrap();
/// assert_eq!((r.as_str(), r.as_f64(), r.ceil_seconds()), ("0.25", 0.25, 1));
/// assert_eq!(RetryAfter::parse("1E2").unwrap().ceil_seconds(), 100);
/// assert!(RetryAfter::parse("86400.5").is_err());
/// assert!(RetryAfter::parse("-1").is_err());
/// assert_eq!(RetryAfter::saturating_from_seconds(90_000).as_str(), "86400");
/// ```
#[derive(Clone)]
pub struct RetryAfter(Box<serde_json::value::RawValue>);

impl RetryAfter {
    /// The largest delay: a day, 86,400 seconds (D19).
    pub const MAX_SECONDS: u64 = 86_400;

    /// Parses the exact JSON text of a delay (JSON whitespace around it
    /// aside), with the errors of [`Event::from_json`](crate::Event::from_json)
    /// (at `$`).
    pub fn parse(text: &str) -> Result<RetryAfter, crate::ParseError> {
        let t = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
        match check_retry_after(t) {
            Ok(()) => crate::opaque::raw_from_valid(t)
                .map(RetryAfter)
                .ok_or_else(|| {
                    crate::ParseError::new(
                        crate::ParseErrorKind::Syntax,
                        "$",
                        "retry_after_seconds is not a JSON number",
                    )
                }),
            Err((marker, what)) => Err(crate::ParseError::new(marker.kind(), "$", what)),
        }
    }

    /// `seconds` written as an integer; `None` above [`Self::MAX_SECONDS`].
    pub fn from_seconds(seconds: u64) -> Option<RetryAfter> {
        if seconds > Self::MAX_SECONDS {
            return None;
        }
        crate::opaque::raw_from_valid(&seconds.to_string()).map(RetryAfter)
    }

    /// `seconds` written as an integer, at most [`Self::MAX_SECONDS`]
    /// (a longer delay is cut to a day).
    pub fn saturating_from_seconds(seconds: u64) -> RetryAfter {
        match Self::from_seconds(seconds.min(Self::MAX_SECONDS)) {
            Some(r) => r,
            // Digits are always a valid JSON number; never reached.
            None => RetryAfter(max_number()),
        }
    }

    /// The JSON text, exactly as it arrived (`0.25`, `1e2`, `30`).
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The value as the nearest `f64` (exact for integers and for the usual
    /// fractions of a second written in binary-exact form such as `0.25`).
    pub fn as_f64(&self) -> f64 {
        self.as_str().parse().unwrap_or(0.0)
    }

    /// The delay rounded up to whole seconds, exactly (from the decimal
    /// text): what an integer-only header such as HTTP `Retry-After` carries
    /// (`0.25` -> 1, `30` -> 30, `1e-9` -> 1, `0` -> 0).
    pub fn ceil_seconds(&self) -> u64 {
        let Some(d) = Decimal::parse(self.as_str()) else {
            return 0;
        };
        if d.digits.is_empty() {
            return 0;
        }
        if d.point <= 0 {
            return 1;
        }
        // point <= 5 here: the value is at most 86,400.
        let point = usize::try_from(d.point).unwrap_or(usize::MAX);
        let mut whole: u64 = 0;
        for k in 0..point.min(20) {
            let digit = d
                .digits
                .as_bytes()
                .get(k)
                .map_or(0, |b| u64::from(b - b'0'));
            whole = whole.saturating_mul(10).saturating_add(digit);
        }
        whole.saturating_add(u64::from(d.digits.len() > point))
    }
}

/// [`RetryAfter::MAX_SECONDS`] as a raw value, by the slow constructor.
fn max_number() -> Box<serde_json::value::RawValue> {
    serde_json::value::RawValue::from_string(RetryAfter::MAX_SECONDS.to_string())
        .unwrap_or_default()
}

impl PartialEq for RetryAfter {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}
impl Eq for RetryAfter {}

impl std::hash::Hash for RetryAfter {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl std::fmt::Debug for RetryAfter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RetryAfter({})", self.as_str())
    }
}

impl std::fmt::Display for RetryAfter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for RetryAfter {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Written as it arrived: the exact number text.
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RetryAfter {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        check_retry_after(raw.get())
            .map_err(|(marker, what)| D::Error::custom(marker.message(what)))?;
        Ok(RetryAfter(raw))
    }
}

/// What is wrong with the JSON text of a `retry_after_seconds`, if anything.
fn check_retry_after(text: &str) -> Result<(), (crate::error::ErrorMarker, &'static str)> {
    use crate::error::ErrorMarker;
    let wrong = |found| Err((ErrorMarker::WrongType, found));
    match text.as_bytes().first() {
        Some(b'"') => return wrong("retry_after_seconds must be a number, found a string"),
        Some(b't' | b'f') => return wrong("retry_after_seconds must be a number, found a boolean"),
        Some(b'{') => return wrong("retry_after_seconds must be a number, found an object"),
        Some(b'[') => return wrong("retry_after_seconds must be a number, found an array"),
        Some(b'n') => return wrong("retry_after_seconds must be a number, found null"),
        _ => {}
    }
    let Some(d) = Decimal::parse(text) else {
        return Err((
            ErrorMarker::Syntax,
            "retry_after_seconds is not a JSON number",
        ));
    };
    if d.is_zero() {
        return Ok(());
    }
    if d.negative {
        return Err((
            ErrorMarker::NumberOutOfRange,
            "retry_after_seconds is negative",
        ));
    }
    // 86,400 = 0.864 x 10^5, compared on the decimal digits: exact.
    let above = match d.point.cmp(&5) {
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Equal => d.digits.as_str() > "864",
    };
    if above {
        return Err((
            ErrorMarker::NumberOutOfRange,
            "retry_after_seconds is above 86400 (a day)",
        ));
    }
    Ok(())
}

/// A JSON number's exact decimal value: `0.DIGITS x 10^point`, the digits
/// without leading or trailing zeros (none for zero), and the sign.
struct Decimal {
    negative: bool,
    digits: String,
    point: i64,
}

impl Decimal {
    /// `None` when `text` is not exactly one JSON number.
    fn parse(text: &str) -> Option<Decimal> {
        let b = text.as_bytes();
        let digits_from = |mut i: usize| {
            while matches!(b.get(i), Some(b'0'..=b'9')) {
                i += 1;
            }
            i
        };
        let negative = b.first() == Some(&b'-');
        let int_start = usize::from(negative);
        let int_end = match b.get(int_start) {
            Some(b'0') => int_start + 1,
            Some(b'1'..=b'9') => digits_from(int_start + 1),
            _ => return None,
        };
        let mut i = int_end;
        let (frac_start, frac_end) = if b.get(i) == Some(&b'.') {
            let end = digits_from(i + 1);
            if end == i + 1 {
                return None;
            }
            let span = (i + 1, end);
            i = end;
            span
        } else {
            (i, i)
        };
        let mut exp: i64 = 0;
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            let minus = match b.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let start = i;
            while let Some(&c @ b'0'..=b'9') = b.get(i) {
                exp = exp.saturating_mul(10).saturating_add(i64::from(c - b'0'));
                i += 1;
            }
            if i == start {
                return None;
            }
            if minus {
                exp = -exp;
            }
        }
        if i != b.len() {
            return None;
        }
        let mut all = String::with_capacity(int_end - int_start + frac_end - frac_start);
        all.push_str(text.get(int_start..int_end)?);
        all.push_str(text.get(frac_start..frac_end)?);
        let significant = all.trim_start_matches('0');
        let leading = all.len() - significant.len();
        let len = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        let point = len(int_end - int_start)
            .saturating_add(exp)
            .saturating_sub(len(leading));
        Some(Decimal {
            negative,
            digits: significant.trim_end_matches('0').to_owned(),
            point,
        })
    }

    fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }
}

/// The `run.error` code of a failed final commit (rule 15).
pub const THREAD_DURABILITY_UNCERTAIN: &str = "thread_durability_uncertain";

/// DA's generic failure text, the one home of it: what DA's clients already
/// show for a run that failed. It is the `run.error.message` of every
/// terminal the coordinator writes itself (so clients see no new text; the
/// `code` tells the cases apart) and the `error` of the invoke endpoint's
/// generic 500 answer. Here, in the bottom layer, so every layer that writes
/// it (`lce-stream`'s coordinator, `lce-encode-custom`'s invoke, the CLI's
/// server) shares one spelling.
pub const AGENT_EXECUTION_FAILED: &str = "Agent execution failed. Check server logs for details.";

/// `text.started` / `reasoning.started`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpanStarted {
    /// The span's message id.
    pub message_id: Arc<str>,
    /// The speaker.
    pub role: Role,
}

/// `text.delta` / `reasoning.delta`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpanDelta {
    /// The span's message id.
    pub message_id: Arc<str>,
    /// The next piece of text (empty deltas are dropped, D7).
    pub delta: String,
}

/// `text.finished` / `reasoning.finished`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpanFinished {
    /// The span's message id.
    pub message_id: Arc<str>,
}

/// `tool.started`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolStarted {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The arguments; `{}` when streamed later as `tool.arguments.delta` (D6).
    pub arguments: JsonObject,
    /// The assistant message that made the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<String>,
}

/// `tool.arguments.delta`: a fragment of the arguments' JSON text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolArgumentsDelta {
    /// The call's id.
    pub tool_call_id: String,
    /// The next fragment of JSON text.
    pub delta: String,
}

/// `tool.finished`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolFinished {
    /// The call's id.
    pub tool_call_id: String,
    /// A bounded display projection of the result (may be empty).
    pub result: String,
    /// An engine reference to the full result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_ref: Option<String>,
}

/// `tool.error`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolError {
    /// The call's id.
    pub tool_call_id: String,
    /// A safe machine code (`tool_error`, `tool_rejected`, ...).
    pub code: String,
    /// A bounded, sanitized message.
    pub message: String,
    /// Whether retrying may help.
    pub retryable: bool,
}

/// The `tool.error` code of a rejected approval (D13).
pub const TOOL_REJECTED: &str = "tool_rejected";

/// A field of a form-input interrupt. Members keep DA's wire order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormField {
    /// The field's name.
    pub field_name: String,
    /// A label to show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_label: Option<String>,
    /// A description to show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_description: Option<String>,
    /// The input type (`text`, `select`, ...).
    pub field_type: String,
    /// Allowed values, opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_values: Option<OpaqueJson>,
    /// Whether a value is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// The default value, opaque.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_value: Option<OpaqueJson>,
    /// A placeholder to show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
}

/// One tool call awaiting approval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolApproval {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The proposed arguments.
    pub tool_args: JsonObject,
    /// What the user may decide; absent means approve, edit and reject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_decisions: Option<Vec<Decision>>,
}

impl ToolApproval {
    /// The default decisions, in DA's order.
    pub const DEFAULT_DECISIONS: [Decision; 3] =
        [Decision::Approve, Decision::Edit, Decision::Reject];

    /// The allowed decisions, defaults applied.
    pub fn decisions(&self) -> &[Decision] {
        self.allowed_decisions
            .as_deref()
            .unwrap_or(&Self::DEFAULT_DECISIONS)
    }
}

/// `interrupt.requested`: a form or tool approvals; followed by `run.interrupted`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterruptRequested {
    /// The interrupt's id.
    pub interrupt_id: String,
    /// Form or approval.
    pub interrupt_type: InterruptType,
    /// The agent that raised it.
    pub agent_id: String,
    /// The form's prompt (forms only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The form's fields (forms only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<FormField>>,
    /// The calls awaiting approval (approvals only, at least one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_approvals: Option<Vec<ToolApproval>>,
}

/// `namespace.entered`: a subagent starts (D1, D2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamespaceEntered {
    /// The child agent.
    pub agent_id: String,
    /// The child's display name.
    pub agent_name: String,
    /// The delegation call; also the new namespace path element.
    pub parent_tool_call_id: String,
}

/// `namespace.exited`: a subagent ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamespaceExited {
    /// The child agent (same as the entry).
    pub agent_id: String,
    /// The delegation call (same as the entry).
    pub parent_tool_call_id: String,
    /// How the subagent ended.
    pub outcome: NamespaceOutcome,
}

/// `warning`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Warning {
    /// A safe machine code.
    pub code: String,
    /// A sanitized user-facing message.
    pub message: String,
    /// Bounded, schema-specific details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<JsonObject>,
}

/// `usage.updated`. Missing metrics stay absent: never invented (zero only
/// when known to be zero).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct UsageUpdated {
    /// Input tokens so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Cached input tokens so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// Cost so far; finite.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::payload::finite_f64"
    )]
    pub cost: Option<f64>,
    /// The currency of `cost`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// Whether this is the run's last usage update (absent means `false`).
    #[serde(default, rename = "final", skip_serializing_if = "Option::is_none")]
    pub is_final: Option<bool>,
}

impl UsageUpdated {
    /// `true` when this update is marked final.
    pub fn is_final(&self) -> bool {
        self.is_final == Some(true)
    }
}

fn finite_f64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    use serde::de::Error as _;
    let v = Option::<f64>::deserialize(d)?;
    match v {
        Some(x) if !x.is_finite() => Err(D::Error::custom(
            crate::error::ErrorMarker::NumberOutOfRange.message("cost must be finite"),
        )),
        _ => Ok(v),
    }
}

/// `provider.metadata`: internal/observability only; never on a public wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderMetadata {
    /// The provider.
    pub provider: String,
    /// The model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Allowlisted scalar metadata (the sanitizer enforces the allowlist).
    pub metadata: JsonObject,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    /// Only `committed` is committed.
    #[test]
    fn only_committed_is_committed() {
        use super::Durability;
        assert!(Durability::Committed.is_committed());
        for other in ["uncommitted", "pending", "Committed"] {
            assert!(
                !Durability::from_code(other).unwrap().is_committed(),
                "{other}"
            );
        }
    }

    use serde::de::{IntoDeserializer, Visitor};

    /// A deserializer of `Some(v)`: what a non-JSON source (a Python float,
    /// say) can hand over, infinities included.
    struct SomeF64(f64);

    impl<'de> serde::Deserializer<'de> for SomeF64 {
        type Error = serde::de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
            v.visit_f64(self.0)
        }

        fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Self::Error> {
            v.visit_some(self.0.into_deserializer())
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf unit unit_struct newtype_struct seq tuple
            tuple_struct map struct enum identifier ignored_any
        }
    }

    /// A decimal point needs digits after it: the number check refuses
    /// `1.` itself (not only the JSON parse behind it).
    #[test]
    fn a_point_needs_digits_after_it() {
        for t in ["1.", "1.e5", "-0.", "2.E1"] {
            assert_eq!(
                super::check_retry_after(t).map_err(|(m, _)| m),
                Err(crate::error::ErrorMarker::Syntax),
                "{t}"
            );
        }
        for t in ["1.5", "0.25", "1e2", "0"] {
            assert_eq!(super::check_retry_after(t), Ok(()), "{t}");
        }
    }

    /// JSON cannot carry a non-finite number, other sources can: a cost
    /// must be finite whatever deserializes it.
    #[test]
    fn a_cost_must_be_finite() {
        assert_eq!(super::finite_f64(SomeF64(1.5)).unwrap(), Some(1.5));
        for v in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
            let e = super::finite_f64(SomeF64(v)).unwrap_err();
            assert!(e.to_string().contains("cost must be finite"), "{e}");
        }
    }
}
