//! The envelope and the event enumeration.

use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

use crate::error::{ErrorMarker, ParseError, ParseErrorKind, from_serde_str};
use crate::payload::*;
use crate::timestamp::Timestamp;

/// The only supported envelope version.
pub const VERSION: u64 = 1;

/// The largest `sequence` accepted: 2^53 - 1, so every consumer, JavaScript
/// included, reads it exactly.
pub const MAX_SEQUENCE: u64 = (1 << 53) - 1;

macro_rules! event_types {
    ($( $(#[$meta:meta])* $variant:ident($payload:ty) => $text:literal ),+ $(,)?) => {
        /// The 21 event types of the contract (D21).
        #[non_exhaustive]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventType {
            $( $(#[$meta])* $variant ),+
        }

        impl EventType {
            /// Every event type, in the contract's order.
            pub const ALL: &'static [EventType] = &[$(EventType::$variant),+];

            /// The `type` string.
            pub fn as_str(self) -> &'static str {
                match self { $( EventType::$variant => $text ),+ }
            }

            /// The event type named `name`.
            pub fn from_name(name: &str) -> Option<EventType> {
                match name { $( $text => Some(EventType::$variant), )+ _ => None }
            }
        }

        /// A typed payload: the envelope's `data` for each event type.
        #[non_exhaustive]
        #[derive(Clone, Debug, PartialEq)]
        pub enum Payload {
            $( $(#[$meta])* $variant($payload) ),+
        }

        impl Payload {
            /// The event type of this payload.
            pub fn event_type(&self) -> EventType {
                match self { $( Payload::$variant(_) => EventType::$variant ),+ }
            }

            fn parse(ty: EventType, data: &str) -> Result<Payload, ParseError> {
                Ok(match ty { $( EventType::$variant => Payload::$variant(from_serde_str(data)?) ),+ })
            }

            /// The payload of type `ty` read by serde from the cursor on, in
            /// the fast path.
            pub(crate) fn read_fast(ty: EventType, c: &mut crate::fast::Cursor<'_>) -> Option<Payload> {
                Some(match ty { $( EventType::$variant => Payload::$variant(c.serde_value()?) ),+ })
            }

            fn serialize_data<S: serde::ser::SerializeStruct>(&self, s: &mut S) -> Result<(), S::Error> {
                match self { $( Payload::$variant(p) => s.serialize_field("data", p) ),+ }
            }
        }
    };
}

event_types! {
    /// `run.started`
    RunStarted(RunStarted) => "run.started",
    /// `run.finished`
    RunFinished(RunFinished) => "run.finished",
    /// `run.interrupted`
    RunInterrupted(RunInterrupted) => "run.interrupted",
    /// `run.cancelled`
    RunCancelled(RunCancelled) => "run.cancelled",
    /// `run.error`
    RunError(RunError) => "run.error",
    /// `text.started`
    TextStarted(SpanStarted) => "text.started",
    /// `text.delta`
    TextDelta(SpanDelta) => "text.delta",
    /// `text.finished`
    TextFinished(SpanFinished) => "text.finished",
    /// `reasoning.started`
    ReasoningStarted(SpanStarted) => "reasoning.started",
    /// `reasoning.delta`
    ReasoningDelta(SpanDelta) => "reasoning.delta",
    /// `reasoning.finished`
    ReasoningFinished(SpanFinished) => "reasoning.finished",
    /// `tool.started`
    ToolStarted(ToolStarted) => "tool.started",
    /// `tool.arguments.delta`
    ToolArgumentsDelta(ToolArgumentsDelta) => "tool.arguments.delta",
    /// `tool.finished`
    ToolFinished(ToolFinished) => "tool.finished",
    /// `tool.error`
    ToolError(ToolError) => "tool.error",
    /// `interrupt.requested`
    InterruptRequested(InterruptRequested) => "interrupt.requested",
    /// `namespace.entered`
    NamespaceEntered(NamespaceEntered) => "namespace.entered",
    /// `namespace.exited`
    NamespaceExited(NamespaceExited) => "namespace.exited",
    /// `warning`
    Warning(Warning) => "warning",
    /// `usage.updated`
    UsageUpdated(UsageUpdated) => "usage.updated",
    /// `provider.metadata`
    ProviderMetadata(ProviderMetadata) => "provider.metadata",
}

impl EventType {
    /// `true` for the four run terminals.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            EventType::RunFinished
                | EventType::RunInterrupted
                | EventType::RunCancelled
                | EventType::RunError
        )
    }
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One canonical event: the envelope with its typed payload.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// The run, stable for the whole stream. Shared: an [`EventParser`]
    /// gives consecutive events of one run the same allocation.
    pub run_id: Arc<str>,
    /// The conversation (thread) the run belongs to; shared like `run_id`.
    pub conversation_id: Arc<str>,
    /// Strictly increasing per run, from 0.
    pub sequence: u64,
    /// When the event happened (never used for ordering).
    pub timestamp: Timestamp,
    /// The subagent path; empty for root (D1).
    pub namespace: Vec<String>,
    /// The typed payload; its variant is the event type.
    pub payload: Payload,
}

impl Event {
    /// The event's type.
    pub fn event_type(&self) -> EventType {
        self.payload.event_type()
    }

    /// `true` for a text, reasoning or argument delta with no text: D7 says
    /// such an event is dropped (not rejected) and never reaches a wire.
    pub fn is_empty_delta(&self) -> bool {
        match &self.payload {
            Payload::TextDelta(d) | Payload::ReasoningDelta(d) => d.delta.is_empty(),
            Payload::ToolArgumentsDelta(d) => d.delta.is_empty(),
            _ => false,
        }
    }

    /// Parses one canonical event from bytes, strictly (D17).
    ///
    /// To parse a stream of lines, an [`EventParser`] does the same and
    /// shares the ids between consecutive events.
    pub fn from_slice(bytes: &[u8]) -> Result<Event, ParseError> {
        EventParser::new().parse_slice(bytes)
    }

    /// Parses one canonical event from a JSON text, strictly (D17).
    pub fn from_json(text: &str) -> Result<Event, ParseError> {
        EventParser::new().parse_json(text)
    }

    /// The strict serde path: decides every input the fast path does not
    /// accept, and makes the located errors.
    pub(crate) fn from_json_serde(text: &str, ids: &mut SharedIds) -> Result<Event, ParseError> {
        let trimmed = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
        if trimmed.is_empty() {
            return Err(ParseError::new(
                ParseErrorKind::EmptyLine,
                "$",
                "empty line",
            ));
        }
        if !trimmed.starts_with('{') {
            // Tell a JSON non-object from plain garbage.
            let kind = match serde_json::from_str::<serde::de::IgnoredAny>(trimmed) {
                Ok(_) => ParseErrorKind::NotAnObject,
                Err(_) => ParseErrorKind::Syntax,
            };
            return Err(ParseError::new(kind, "$", "an event must be a JSON object").at_offset(0));
        }
        let env: RawEnvelope<'_> = from_serde_str(text)?;
        env.into_event(ids)
    }

    /// Writes the event as one line of canonical JSON (compact, no newline).
    pub fn to_json(&self) -> String {
        // Serializing our own types to a String cannot fail: every value is a
        // string, integer, bool, finite float or already-valid raw JSON.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Writes the event as canonical JSON (the bytes of [`Event::to_json`])
    /// to `out`, a `&mut Vec<u8>` or any other writer: no intermediate
    /// string. Fails only when `out` does.
    pub fn write_json<W: std::io::Write>(&self, out: W) -> Result<(), serde_json::Error> {
        serde_json::to_writer(out, self)
    }
}

/// Parses events one line at a time, strictly (D17), like
/// [`Event::from_slice`], remembering the last run and conversation ids and
/// the last text or reasoning span's message id: an event with the same ids
/// as the one before shares them (an [`Arc`] clone) instead of allocating
/// its own.
///
/// This is what [`crate::EventLines`] and the async line decoder use; the
/// result of every call is the same as [`Event::from_slice`]'s.
///
/// ```
/// use std::sync::Arc;
/// use lce_types::EventParser;
/// let line = |seq: u32| format!(r#"{{"version":1,"type":"text.delta","run_id":"r","conversation_id":"c","sequence":{seq},"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{{"message_id":"m","delta":"hi"}}}}"#);
/// let mut parser = EventParser::new();
/// let a = parser.parse_json(&line(1)).unwrap();
/// let b = parser.parse_json(&line(2)).unwrap();
/// assert!(Arc::ptr_eq(&a.run_id, &b.run_id));
/// ```
#[derive(Clone, Debug, Default)]
pub struct EventParser {
    ids: SharedIds,
}

impl EventParser {
    /// A parser that has seen no event yet.
    pub fn new() -> Self {
        EventParser::default()
    }

    /// Parses one canonical event from bytes (see [`Event::from_slice`]).
    pub fn parse_slice(&mut self, bytes: &[u8]) -> Result<Event, ParseError> {
        // The line is checked whole with simdutf8's accept-only check
        // (vector instructions; one pass instead of one per string), and
        // only a line it refuses is checked again by the standard library
        // for the offset the error reports.
        let text = match simdutf8::basic::from_utf8(bytes) {
            Ok(text) => text,
            Err(_) => std::str::from_utf8(bytes).map_err(|e| {
                ParseError::new(ParseErrorKind::InvalidUtf8, "$", "input is not valid UTF-8")
                    .at_offset(e.valid_up_to())
            })?,
        };
        self.parse_json(text)
    }

    /// Parses one canonical event from a JSON text (see [`Event::from_json`]).
    pub fn parse_json(&mut self, text: &str) -> Result<Event, ParseError> {
        if let Some(event) = crate::fast::parse(text, &mut self.ids) {
            return Ok(event);
        }
        Event::from_json_serde(text, &mut self.ids)
    }
}

/// The last run, conversation and span message ids seen, handed out again
/// while they stay the same ([`LastId::share`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedIds {
    pub(crate) run_id: LastId,
    pub(crate) conversation_id: LastId,
    pub(crate) message_id: LastId,
    /// The date and minute of the last timestamp in the usual form.
    pub(crate) minute: crate::timestamp::LastMinute,
}

/// One remembered id.
#[derive(Clone, Debug, Default)]
pub(crate) struct LastId {
    id: Option<Arc<str>>,
    /// The id as a JSON string literal (`"` id `"`), when writing it needs
    /// no escape: then the same bytes in a line are exactly this id, and
    /// the fast path can compare them without scanning the string.
    literal: Option<Box<[u8]>>,
}

impl LastId {
    /// `id` as an `Arc`: the remembered one when equal, else a new one,
    /// remembered.
    #[inline]
    pub(crate) fn share(&mut self, id: &str) -> Arc<str> {
        if let Some(prev) = &self.id {
            if **prev == *id {
                return Arc::clone(prev);
            }
        }
        self.remember(id)
    }

    #[cold]
    fn remember(&mut self, id: &str) -> Arc<str> {
        let new: Arc<str> = Arc::from(id);
        self.id = Some(Arc::clone(&new));
        let plain = id.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\');
        self.literal = plain.then(|| {
            let mut l = Vec::with_capacity(id.len() + 2);
            l.push(b'"');
            l.extend_from_slice(id.as_bytes());
            l.push(b'"');
            l.into_boxed_slice()
        });
        new
    }

    /// The remembered id, when `bytes` starts with it as a string literal
    /// without escapes; and the literal's length.
    #[inline]
    pub(crate) fn at_start_of(&self, bytes: &[u8]) -> Option<(Arc<str>, usize)> {
        let literal = self.literal.as_deref()?;
        let id = self.id.as_ref()?;
        (bytes.get(..literal.len())? == literal).then(|| (Arc::clone(id), literal.len()))
    }
}

impl Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Event", 8)?;
        st.serialize_field("version", &VERSION)?;
        st.serialize_field("type", self.event_type().as_str())?;
        st.serialize_field("run_id", &*self.run_id)?;
        st.serialize_field("conversation_id", &*self.conversation_id)?;
        st.serialize_field("sequence", &self.sequence)?;
        st.serialize_field("timestamp", &self.timestamp)?;
        st.serialize_field("namespace", &self.namespace)?;
        self.payload.serialize_data(&mut st)?;
        st.end()
    }
}

/// The envelope before its payload is typed: `data` stays raw until `type`
/// is known, since members may come in any order.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEnvelope<'a> {
    #[serde(deserialize_with = "version")]
    version: u64,
    #[serde(rename = "type", borrow)]
    ty: std::borrow::Cow<'a, str>,
    #[serde(deserialize_with = "identifier")]
    run_id: String,
    #[serde(deserialize_with = "identifier")]
    conversation_id: String,
    #[serde(deserialize_with = "sequence")]
    sequence: u64,
    timestamp: Timestamp,
    namespace: Vec<String>,
    #[serde(borrow)]
    data: &'a RawValue,
}

impl RawEnvelope<'_> {
    fn into_event(self, ids: &mut SharedIds) -> Result<Event, ParseError> {
        if self.version != VERSION {
            return Err(ParseError::new(
                ParseErrorKind::UnsupportedVersion,
                "version",
                format!("version {} is not supported (only 1)", self.version),
            ));
        }
        let Some(ty) = EventType::from_name(&self.ty) else {
            return Err(ParseError::new(
                ParseErrorKind::UnknownType,
                "type",
                format!(
                    "`{}` is not an event type of the contract",
                    crate::error::safe_name(&self.ty, "name")
                ),
            ));
        };
        if !self.data.get().trim_start().starts_with('{') {
            return Err(ParseError::new(
                ParseErrorKind::WrongType,
                "data",
                "expected an object",
            ));
        }
        let payload = Payload::parse(ty, self.data.get()).map_err(|e| {
            let mut e = e.under("data");
            e.offset = None; // offsets inside `data` are relative to it
            e
        })?;
        check_payload(&payload)?;
        Ok(Event {
            run_id: ids.run_id.share(&self.run_id),
            conversation_id: ids.conversation_id.share(&self.conversation_id),
            sequence: self.sequence,
            timestamp: self.timestamp,
            namespace: self.namespace,
            payload,
        })
    }
}

/// Cross-member rules serde cannot express.
pub(crate) fn check_payload(p: &Payload) -> Result<(), ParseError> {
    if let Payload::InterruptRequested(i) = p {
        match i.interrupt_type {
            InterruptType::FormInput => {
                if i.prompt.is_none() {
                    return Err(missing("data.prompt", "a form needs `prompt`"));
                }
                if i.fields.is_none() {
                    return Err(missing("data.fields", "a form needs `fields`"));
                }
                if i.tool_approvals.is_some() {
                    return Err(ParseError::new(
                        ParseErrorKind::UnknownField,
                        "data.tool_approvals",
                        "a form has no `tool_approvals`",
                    ));
                }
            }
            InterruptType::ToolApproval => {
                match &i.tool_approvals {
                    None => {
                        return Err(missing(
                            "data.tool_approvals",
                            "an approval needs `tool_approvals`",
                        ));
                    }
                    Some(v) if v.is_empty() => {
                        return Err(ParseError::new(
                            ParseErrorKind::InvalidValue,
                            "data.tool_approvals",
                            "at least one tool approval",
                        ));
                    }
                    Some(_) => {}
                }
                for (name, present) in [
                    ("prompt", i.prompt.is_some()),
                    ("fields", i.fields.is_some()),
                ] {
                    if present {
                        return Err(ParseError::new(
                            ParseErrorKind::UnknownField,
                            format!("data.{name}"),
                            format!("an approval has no `{name}`"),
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

fn missing(path: &str, detail: &str) -> ParseError {
    ParseError::new(ParseErrorKind::MissingField, path, detail)
}

fn version<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let n = serde_json::Number::deserialize(d)?;
    n.as_u64().ok_or_else(|| {
        D::Error::custom(ErrorMarker::UnsupportedVersion.message("version must be the integer 1"))
    })
}

fn sequence<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let n = serde_json::Number::deserialize(d)?;
    match n.as_u64() {
        Some(v) if v <= MAX_SEQUENCE => Ok(v),
        Some(_) => Err(D::Error::custom(
            ErrorMarker::NumberOutOfRange.message("sequence above 2^53-1"),
        )),
        None if n.is_i64() => Err(D::Error::custom(
            ErrorMarker::NumberOutOfRange.message("sequence is negative"),
        )),
        // Beyond `i64`/`u64` an integer arrives as a float: it is out of
        // range; any other float (`1.5`, `7.0`) is not an integer.
        None => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f > MAX_SEQUENCE as f64 => Err(D::Error::custom(
                ErrorMarker::NumberOutOfRange.message("sequence above 2^53-1"),
            )),
            Some(f) if f.fract() == 0.0 && f < 0.0 => Err(D::Error::custom(
                ErrorMarker::NumberOutOfRange.message("sequence is negative"),
            )),
            _ => Err(D::Error::custom(
                ErrorMarker::WrongType.message("sequence must be an integer"),
            )),
        },
    }
}

fn identifier<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = String::deserialize(d)?;
    if s.is_empty() {
        return Err(D::Error::custom(
            ErrorMarker::InvalidValue.message("must not be empty"),
        ));
    }
    Ok(s)
}
