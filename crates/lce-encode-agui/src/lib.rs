//! `lce-encode-agui`: canonical lifecycle events to AG-UI over SSE, in two
//! dialects.
//!
//! - [`Dialect::Da`] (`agui`): DA's own AG-UI dialect, byte for byte
//!   (wire-formats §4, §6, §7): `event: <TYPE>\ndata: <json>\n\n` frames whose
//!   JSON is Python's `json.dumps(..., ensure_ascii=False)`, `type` first and
//!   a float Unix-seconds `timestamp` last; `CUSTOM NAMESPACE_CONTEXT` when
//!   the namespace changes; tool starts held until their arguments are
//!   complete and rejected re-emissions suppressed (D13, through the shared
//!   [`lce_wire::hold::ToolStartHold`]); snake_case `TOOL_CALL_RESULT`; open
//!   text closed before a success or interrupt finish; `RUN_FINISHED` with
//!   `outcome: "interrupt"` and DA's `interrupt` payload.
//! - [`Dialect::V1`] (`agui-v1`): standard AG-UI 1.0 (wire-formats §5):
//!   `data: <compact json>\n\n`, official key order, integer-millisecond
//!   timestamps, reasoning events, subagents as `SUBAGENT_*`, interrupts as
//!   `outcome: {type: "interrupt", interrupts: [...]}`, final usage on the
//!   finish. Output passes the official `@ag-ui/client` 1.0.0 `verifyEvents`
//!   and `@ag-ui/core` `EventSchemas` (`cargo xtask conformance`).
//!
//! The mapping decisions are documented in `docs/wire.md` (`## agui`,
//! `## agui-v1`).
//!
//! An [`AguiSseEncoder`] is a stateful value for one stream. It implements
//! [`tokio_util::codec::Encoder`] for `&Event` and `Event`, appending frames
//! to a [`BytesMut`]; it needs no async runtime. Input is expected to satisfy
//! the contract (the coordinator validates it); a stream that does not never
//! makes the encoder panic: it writes what it can, and the few impossible
//! cases (a tool start whose arguments never formed one JSON object) are
//! [`EncodeError`]s.
//!
//! Layering: this crate may depend on `lce-types` (events), `lce-wire` (every
//! JSON byte and SSE frame goes through it; no JSON escaping here), `bytes`,
//! `tokio-util` (codec only) and `thiserror`. It knows nothing of HTTP,
//! keep-alives or validation.
//!
//! ```
//! use bytes::BytesMut;
//! use lce_encode_agui::{AguiOptions, AguiSseEncoder, Dialect};
//! use lce_types::Event;
//!
//! let ev = Event::from_json(r#"{"version":1,"type":"run.started","run_id":"run-1","conversation_id":"conv-1","sequence":0,"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{"harness_id":"h","adapter_version":"1"}}"#).unwrap();
//! let mut da = AguiSseEncoder::new(Dialect::Da, AguiOptions::default());
//! let mut out = BytesMut::new();
//! da.encode_event(&ev, &mut out).unwrap();
//! assert_eq!(&out[..], &b"event: RUN_STARTED\ndata: {\"type\": \"RUN_STARTED\", \"runId\": \"run-1\", \"threadId\": \"conv-1\", \"timestamp\": 1786924800.0}\n\n"[..]);
//!
//! let mut v1 = AguiSseEncoder::new(Dialect::V1, AguiOptions::default());
//! let mut out = BytesMut::new();
//! v1.encode_event(&ev, &mut out).unwrap();
//! assert_eq!(&out[..], &b"data: {\"type\":\"RUN_STARTED\",\"timestamp\":1786924800000,\"threadId\":\"conv-1\",\"runId\":\"run-1\",\"protocolVersion\":\"1.0\"}\n\n"[..]);
//! ```

/// A [`lce_wire::Key`] built at compile time, as a `&'static` reference.
macro_rules! k {
    ($text:literal) => {
        &const { lce_wire::Key::new($text) }
    };
}

mod da;
mod frame;
mod v1;

use bytes::BytesMut;
use lce_types::Event;

/// Which AG-UI wire to write.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// DA's AG-UI dialect (`"protocol": "agui"`), byte for byte.
    Da,
    /// Standard AG-UI 1.0.
    V1,
}

impl Dialect {
    /// The format's name on the command line: `agui` or `agui-v1`.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Da => "agui",
            Dialect::V1 => "agui-v1",
        }
    }

    /// The `Content-Type` the format is served with (wire-formats §2).
    pub fn content_type(self) -> &'static str {
        match self {
            Dialect::Da => "text/event-stream; charset=utf-8",
            Dialect::V1 => "text/event-stream",
        }
    }
}

/// Encoder options.
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AguiOptions {
    /// The root agent's display name (D15): DA's interrupt `agent` field,
    /// and `metadata.lce.agent` of `agui-v1` interrupts. `None`: the
    /// interrupt's `agent_id`.
    pub agent_name: Option<String>,
}

impl AguiOptions {
    /// Options with the root agent's display name set (D15).
    pub fn with_agent_name(mut self, name: impl Into<String>) -> Self {
        self.agent_name = Some(name.into());
        self
    }
}

/// Why an event could not be encoded (shared by every wire encoder).
pub use lce_wire::EncodeError;

#[derive(Debug)]
enum Inner {
    Da(da::DaEncoder),
    V1(v1::V1Encoder),
}

/// The stateful AG-UI SSE encoder for one stream; see the [crate docs](crate).
#[derive(Debug)]
pub struct AguiSseEncoder {
    dialect: Dialect,
    inner: Inner,
}

impl AguiSseEncoder {
    /// A new encoder writing `dialect`.
    pub fn new(dialect: Dialect, options: AguiOptions) -> Self {
        let inner = match dialect {
            Dialect::Da => Inner::Da(da::DaEncoder::new(options)),
            Dialect::V1 => Inner::V1(v1::V1Encoder::new(options)),
        };
        AguiSseEncoder { dialect, inner }
    }

    /// The dialect this encoder writes.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Appends the frames for `event` to `dst` (possibly none).
    ///
    /// On error `dst` is left as it was before the call.
    pub fn encode_event(&mut self, event: &Event, dst: &mut BytesMut) -> Result<(), EncodeError> {
        let start = dst.len();
        let r = match &mut self.inner {
            Inner::Da(e) => e.encode(event, dst),
            Inner::V1(e) => e.encode(event, dst).map_err(|source| EncodeError::Wire {
                sequence: event.sequence,
                source,
            }),
        };
        if r.is_err() {
            dst.truncate(start);
        }
        r
    }

    /// D13a, for live streams: call when the upstream has no event ready.
    /// In [`Dialect::Da`], appends the start frames of held tool calls whose
    /// arguments are already complete; in [`Dialect::V1`] nothing is ever
    /// held. Never call it when reading from a file (output would depend on
    /// timing).
    ///
    /// On error `dst` is left as it was before the call.
    pub fn release_ready(&mut self, dst: &mut BytesMut) -> Result<(), EncodeError> {
        let start = dst.len();
        let r = match &mut self.inner {
            Inner::Da(e) => e.release_ready(dst),
            Inner::V1(_) => Ok(()),
        };
        if r.is_err() {
            dst.truncate(start);
        }
        r
    }

    /// `true` when tool starts are held back (D13), so a live stream knows
    /// [`release_ready`](Self::release_ready) may have work to do.
    pub fn has_held(&self) -> bool {
        match &self.inner {
            Inner::Da(e) => e.has_held(),
            Inner::V1(_) => false,
        }
    }
}

impl tokio_util::codec::Encoder<&Event> for AguiSseEncoder {
    type Error = EncodeError;

    fn encode(&mut self, item: &Event, dst: &mut BytesMut) -> Result<(), EncodeError> {
        self.encode_event(item, dst)
    }
}

impl tokio_util::codec::Encoder<Event> for AguiSseEncoder {
    type Error = EncodeError;

    fn encode(&mut self, item: Event, dst: &mut BytesMut) -> Result<(), EncodeError> {
        self.encode_event(&item, dst)
    }
}
