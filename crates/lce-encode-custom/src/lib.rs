//! `lce-encode-custom`: canonical lifecycle events to DA's `custom` SSE
//! protocol, byte for byte (wire-formats §2, §3, §6, §7; decisions D6, D7,
//! D12, D13, D15).
//!
//! [`CustomSseEncoder`] is a stateful encoder of [`Event`]s: each event
//! appends zero or more whole frames `event: <name>\ndata: <json>\n\n` to a
//! [`BytesMut`], the JSON written as Python's `json.dumps` writes it
//! (`", "`/`": "`, `ensure_ascii=True`). It needs no async runtime: call
//! [`CustomSseEncoder::encode_event`] directly, or let the chain's `encoded`
//! stage drive it through [`lce_core::FrameEncoder`], the one encoder trait.
//!
//! | canonical | frame |
//! |---|---|
//! | `text.delta` (non-empty) | `content{text, namespace}` |
//! | `tool.started` (+ deltas) | `tool_start{tool_name, tool_call_id, args, namespace}`, held (D13, see [`lce_wire::hold`]) |
//! | `tool.finished` | `tool_end{tool_call_id, namespace[, result]}` (result cut to 2000 code points, omitted when empty) |
//! | `tool.error` | `tool_end{tool_call_id, namespace, error: "ERROR: " + message}` (never cut) |
//! | `warning` | `warning{message, namespace: []}` |
//! | `interrupt.requested` | `input_required` (form or approval), written when `run.interrupted` is accepted (D4a), then silence |
//! | `run.error` | `error{error}` |
//! | `run.finished` | `done{}` |
//! | everything else | nothing (`run.cancelled` closes silently) |
//!
//! Tool starts are held until their arguments are complete, and the
//! duplicate starts a resumed run re-emits before a `tool_rejected` error are
//! never shown (D13). The starts still held go out before any other frame,
//! even before the silence of `run.cancelled`. Nothing is written after a run
//! terminal.
//!
//! An interrupt is shown only once it holds (D4a): the `input_required`
//! frame is rendered at `interrupt.requested` but kept back until
//! `run.interrupted` (which the coordinator forwards only after the interrupt
//! commit, rule 14). Nothing is written between the two (the close events
//! the contract allows there have no frame after an interrupt, as in DA), so
//! a valid run's bytes are DA's. When the run ends any other way instead (a
//! failed commit, a violation, closure: `run.error`; cancellation:
//! `run.cancelled`) the kept frame is dropped and the client gets that
//! terminal's frame (`error`, or the silent close), never an interrupt it
//! could not resume.
//!
//! Errors ([`EncodeError`]) never carry payload text. On error nothing of the
//! failing call is left in the buffer.
//!
//! [`invoke`]: DA's non-streaming invoke. [`InvokeAccumulator`] collects a
//! run's `content` / `thinking` from the very frame decisions this encoder
//! makes (one shared decision step, D13 included) and maps the run's
//! terminal to DA's invoke answer.
//!
//! May depend on: `lce-types`, `lce-wire` (all JSON and SSE bytes are written
//! through it), `lce-core` (the `FrameEncoder` trait), `bytes` and
//! `thiserror`.
//!
//! ```
//! use bytes::BytesMut;
//! use lce_encode_custom::{CustomOptions, CustomSseEncoder};
//! use lce_types::Event;
//!
//! let line = r#"{"version":1,"type":"text.delta","run_id":"r","conversation_id":"c","sequence":1,"timestamp":"2026-08-17T00:00:00Z","namespace":["toolu_1"],"data":{"message_id":"m","delta":"Café"}}"#;
//! let mut enc = CustomSseEncoder::new(CustomOptions::default());
//! let mut out = BytesMut::new();
//! enc.encode_event(&Event::from_json(line).unwrap(), &mut out).unwrap();
//! assert_eq!(
//!     &out[..],
//!     b"event: content\ndata: {\"text\": \"Caf\\u00e9\", \"namespace\": [\"toolu_1\"]}\n\n"
//! );
//! ```

use bytes::BytesMut;
use lce_types::{Event, InterruptRequested, InterruptType, Payload};
use lce_wire::hold::{Action, Released, ToolStartHold};
use lce_wire::{
    AgentPlace, DA_RESULT_DISPLAY_CHARS, JsonWriter, Key, Member, Style, WireError,
    truncate_display, write_event_frame, write_event_json, write_interrupt_payload,
};

/// A [`Key`] built at compile time, as a `&'static` reference.
macro_rules! k {
    ($text:literal) => {
        &const { Key::new($text) }
    };
}

/// Options of the `custom` encoder.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CustomOptions {
    /// The root agent's display name, written as `agent` in `input_required`
    /// (D15). `None`: the interrupt's `agent_id`.
    pub agent_name: Option<String>,
}

/// Why an event could not be encoded (shared by every wire encoder).
pub use lce_wire::EncodeError;

/// Where the stream is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Frames go out.
    Open,
    /// `interrupt.requested` was seen: nothing goes out until the run's
    /// terminal, whose frame decides the interrupt's fate (D4a).
    Interrupting,
    /// A run terminal was seen: silence.
    Closed,
}

/// The `custom` wire's frame decisions: which tool starts go out when (the
/// D13 hold) and whether the stream is still open. One procedure for both
/// the [`CustomSseEncoder`] (which renders the frames) and the
/// [`InvokeAccumulator`] (which collects the text of the `content` frames
/// between the `tool_start` frames), so the two can never disagree.
#[derive(Debug)]
pub(crate) struct FrameCore {
    hold: ToolStartHold,
    state: State,
}

/// What the `custom` wire writes for one event, once the `tool_start`
/// frames of the starts it released are out.
pub(crate) struct Decision {
    /// Whether the event's own frame (if its type has one) is written.
    pub(crate) emit: bool,
    /// Whether the stream falls silent once the event's frame is out (a run
    /// terminal): call [`FrameCore::close`] then.
    pub(crate) closes: bool,
}

impl FrameCore {
    pub(crate) fn new() -> Self {
        FrameCore {
            hold: ToolStartHold::new(),
            state: State::Open,
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// The decision for `event`: first each held start it releases goes to
    /// `start`, in order (the first error stops there and is returned: the
    /// rest are discarded), then what becomes of the event's own frame.
    /// `None` while the stream is silent (after a terminal, and between an
    /// interrupt and its terminal).
    #[inline]
    pub(crate) fn decide<E>(
        &mut self,
        event: &Event,
        mut start: impl FnMut(&Released) -> Result<(), E>,
    ) -> Result<Option<Decision>, E> {
        let terminal = event.event_type().is_terminal();
        match self.state {
            State::Closed => return Ok(None),
            // The close events the contract allows before `run.interrupted`
            // have no frame once an interrupt was asked for; the terminal
            // decides what the client sees. Nothing was held meanwhile: the
            // interrupt itself released every held start.
            State::Interrupting if !terminal => return Ok(None),
            State::Interrupting | State::Open => {}
        }
        if let Payload::InterruptRequested(i) = &event.payload {
            if matches!(
                i.interrupt_type,
                InterruptType::FormInput | InterruptType::ToolApproval
            ) {
                self.state = State::Interrupting;
            }
        }
        let step = self.hold.feed(event);
        for call in step.released {
            start(&call)?;
        }
        Ok(Some(Decision {
            emit: step.action == Action::Emit,
            closes: terminal,
        }))
    }

    /// D13a: the held starts that may go out now (none once silent).
    pub(crate) fn release_ready(&mut self) -> Option<std::vec::Drain<'_, Released>> {
        if self.state != State::Open {
            return None;
        }
        Some(self.hold.release_ready())
    }

    /// Silence from now on.
    pub(crate) fn close(&mut self) {
        self.state = State::Closed;
    }
}

/// Whether the `custom` wire can write `call`'s `tool_start` frame: its
/// arguments must be one complete JSON object (D6). `seq` is the event that
/// released it.
pub(crate) fn check_start(call: &Released, seq: u64) -> Result<(), EncodeError> {
    if call.args.is_complete() {
        Ok(())
    } else {
        Err(EncodeError::IncompleteArguments { sequence: seq })
    }
}

/// The text of the `content` frame `event` renders when the hold lets it out
/// (a non-empty `text.delta`, in any namespace).
pub(crate) fn content_text(event: &Event) -> Option<&str> {
    match &event.payload {
        Payload::TextDelta(d) if !d.delta.is_empty() => Some(&d.delta),
        _ => None,
    }
}

/// The stateful `custom` encoder; see the [crate docs](crate).
#[derive(Debug)]
pub struct CustomSseEncoder {
    options: CustomOptions,
    core: FrameCore,
    /// The `input_required` frame kept back until `run.interrupted` (D4a).
    interrupt_frame: BytesMut,
}

const STYLE: Style = Style::PY_ASCII;

impl CustomSseEncoder {
    /// A new encoder for one run.
    pub fn new(options: CustomOptions) -> Self {
        CustomSseEncoder {
            options,
            core: FrameCore::new(),
            interrupt_frame: BytesMut::new(),
        }
    }

    /// The options in use.
    pub fn options(&self) -> &CustomOptions {
        &self.options
    }

    /// `true` once the stream is over for the client: after a run terminal
    /// (`input_required` goes out with `run.interrupted`, D4a).
    pub fn is_closed(&self) -> bool {
        self.core.is_closed()
    }

    /// Appends the frames for `event` to `dst` (possibly none).
    ///
    /// On error `dst` is left as it was before the call.
    pub fn encode_event(&mut self, event: &Event, dst: &mut BytesMut) -> Result<(), EncodeError> {
        let start = dst.len();
        let r = self.encode_inner(event, dst);
        if r.is_err() {
            dst.truncate(start);
        }
        r
    }

    /// D13a, for live streams: call when the upstream has no event ready.
    /// Appends the start frames of held calls whose arguments are already
    /// complete. Never call it when reading from a file (output would depend
    /// on timing).
    ///
    /// On error `dst` is left as it was before the call.
    pub fn release_ready(&mut self, dst: &mut BytesMut) -> Result<(), EncodeError> {
        let Some(ready) = self.core.release_ready() else {
            return Ok(());
        };
        let start = dst.len();
        let mut r = Ok(());
        for call in ready {
            if let Err(e) = write_tool_start(dst, &call, 0) {
                r = Err(e);
                break;
            }
        }
        if r.is_err() {
            dst.truncate(start);
        }
        r
    }

    fn encode_inner(&mut self, event: &Event, dst: &mut BytesMut) -> Result<(), EncodeError> {
        let seq = event.sequence;
        let decision = self
            .core
            .decide(event, |call| write_tool_start(dst, call, seq))?;
        let Some(Decision { emit, closes }) = decision else {
            return Ok(());
        };
        if !emit {
            return Ok(());
        }
        match &event.payload {
            // D4a: kept back until the run's terminal says it holds.
            Payload::InterruptRequested(_) => {
                let mut frame = std::mem::take(&mut self.interrupt_frame);
                frame.clear();
                let r = self.render(event, &mut frame);
                self.interrupt_frame = frame;
                r?;
            }
            Payload::RunInterrupted(_) => dst.extend_from_slice(&self.interrupt_frame),
            _ => self.render(event, dst)?,
        }
        if closes {
            // Any other terminal drops a kept interrupt: the client gets
            // that terminal's frame instead.
            self.interrupt_frame.clear();
            self.core.close();
        }
        Ok(())
    }

    /// Writes the event's own frame (the hold said it goes out).
    fn render(&self, event: &Event, dst: &mut BytesMut) -> Result<(), EncodeError> {
        let seq = event.sequence;
        let wire = |source| EncodeError::Wire {
            sequence: seq,
            source,
        };
        let ns = &event.namespace;
        if let Some(text) = content_text(event) {
            return flat_frame(
                dst,
                k!("content"),
                &[
                    Member::Str(k!("text"), text),
                    Member::StrList(k!("namespace"), ns),
                ],
            )
            .map_err(wire);
        }
        match &event.payload {
            Payload::ToolFinished(f) => frame(dst, "tool_end", |w| {
                w.field_str("tool_call_id", &f.tool_call_id);
                namespace(w, ns);
                if !f.result.is_empty() {
                    w.field_str(
                        "result",
                        &truncate_display(&f.result, DA_RESULT_DISPLAY_CHARS),
                    );
                }
                Ok(())
            })
            .map_err(wire),
            Payload::ToolError(e) => frame(dst, "tool_end", |w| {
                w.field_str("tool_call_id", &e.tool_call_id);
                namespace(w, ns);
                w.key("error");
                let mut text = String::with_capacity(7 + e.message.len());
                text.push_str("ERROR: ");
                text.push_str(&e.message);
                w.string(&text);
                Ok(())
            })
            .map_err(wire),
            Payload::Warning(warn) => frame(dst, "warning", |w| {
                w.field_str("message", &warn.message);
                namespace(w, &[]);
                Ok(())
            })
            .map_err(wire),
            Payload::InterruptRequested(i) => {
                if !matches!(
                    i.interrupt_type,
                    InterruptType::FormInput | InterruptType::ToolApproval
                ) {
                    return Err(EncodeError::Unsupported { sequence: seq });
                }
                let agent = self.options.agent_name.as_deref().unwrap_or(&i.agent_id);
                frame(dst, "input_required", |w| input_required(w, i, agent)).map_err(wire)
            }
            Payload::RunError(e) => frame(dst, "error", |w| {
                w.field_str("error", &e.message);
                Ok(())
            })
            .map_err(wire),
            Payload::RunFinished(_) => frame(dst, "done", |_| Ok(())).map_err(wire),
            // `run.cancelled`, `run.interrupted` and the rest: no frame.
            _ => Ok(()),
        }
    }
}

/// One frame whose data is the flat JSON object of `members`: the bytes
/// [`frame`] would write for them, through one [`JsonWriter::object`] call.
fn flat_frame(dst: &mut BytesMut, name: &Key, members: &[Member<'_>]) -> Result<(), WireError> {
    write_event_json(dst, name, STYLE, |w| w.object(members))
}

/// One frame whose data is a JSON object; `body` writes its members.
fn frame(
    dst: &mut BytesMut,
    name: &str,
    body: impl FnOnce(&mut JsonWriter<'_>) -> Result<(), WireError>,
) -> Result<(), WireError> {
    write_event_frame(dst, name, |out| {
        let mut w = JsonWriter::new(out, STYLE);
        w.begin_object();
        body(&mut w)?;
        w.end_object();
        Ok(())
    })
}

fn namespace(w: &mut JsonWriter<'_>, ns: &[String]) {
    w.field_str_array("namespace", ns);
}

fn write_tool_start(dst: &mut BytesMut, call: &Released, seq: u64) -> Result<(), EncodeError> {
    check_start(call, seq)?;
    frame(dst, "tool_start", |w| {
        w.field_str("tool_name", &call.tool_name);
        w.field_str("tool_call_id", &call.tool_call_id);
        w.field_opaque("args", call.args.json())?;
        namespace(w, &call.namespace);
        Ok(())
    })
    .map_err(|source| EncodeError::Wire {
        sequence: seq,
        source,
    })
}

/// The `input_required` frame's members: `type` and `interrupt_id`, then
/// DA's interrupt payload with `agent` first. Only a form or an approval
/// gets here ([`CustomSseEncoder`] refuses other kinds before the frame).
fn input_required(
    w: &mut JsonWriter<'_>,
    i: &InterruptRequested,
    agent: &str,
) -> Result<(), WireError> {
    w.field_str("type", i.interrupt_type.as_str());
    w.field_str("interrupt_id", &i.interrupt_id);
    write_interrupt_payload(w, i, agent, AgentPlace::First)
}

/// What the chain's `encoded` stage drives: [`encode_event`](CustomSseEncoder::encode_event)
/// per event, [`release_ready`](CustomSseEncoder::release_ready) whenever the upstream
/// would wait (D13a).
impl lce_core::FrameEncoder for CustomSseEncoder {
    type Error = EncodeError;

    fn encode_frame(&mut self, event: &Event, dst: &mut BytesMut) -> Result<(), EncodeError> {
        self.encode_event(event, dst)
    }

    fn on_idle(&mut self, dst: &mut BytesMut) -> Result<(), EncodeError> {
        self.release_ready(dst)
    }
}

pub mod invoke;
pub use invoke::InvokeAccumulator;

#[cfg(test)]
mod tests;
