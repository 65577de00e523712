//! `lce-encode-agui`: canonical lifecycle events to AG-UI over SSE, in two
//! dialects.
//!
//! - [`AguiSseEncoder::da`] (`agui`): DA's own AG-UI dialect, byte for byte
//!   (wire-formats §4, §6, §7): `event: <TYPE>\ndata: <json>\n\n` frames whose
//!   JSON is Python's `json.dumps(..., ensure_ascii=False)`, `type` first and
//!   a float Unix-seconds `timestamp` last; `CUSTOM NAMESPACE_CONTEXT` when
//!   the namespace changes; tool starts held until their arguments are
//!   complete and rejected re-emissions suppressed (D13, through the shared
//!   [`lce_wire::hold::ToolStartHold`]); snake_case `TOOL_CALL_RESULT`; open
//!   text closed before a success or interrupt finish; `RUN_FINISHED` with
//!   `outcome: "interrupt"` and DA's `interrupt` payload.
//! - [`AguiSseEncoder::v1`] (`agui-v1`): standard AG-UI 1.0 (wire-formats §5):
//!   `data: <compact json>\n\n`, official key order, integer-millisecond
//!   timestamps, reasoning events, subagents as `SUBAGENT_*`, interrupts as
//!   `outcome: {type: "interrupt", interrupts: [...]}`, final usage on the
//!   finish. Output passes the official `@ag-ui/client` 1.0.0 `verifyEvents`
//!   and `@ag-ui/core` `EventSchemas` (`cargo xtask conformance`).
//!
//! The mapping decisions are documented in `docs/wire.md` (`## agui`,
//! `## agui-v1`).
//!
//! An [`AguiSseEncoder`] is a stateful value for one stream, appending frames
//! to a [`BytesMut`]; it needs no async runtime. The chain's `encoded` stage
//! drives it through [`lce_core::FrameEncoder`], the one encoder trait. Input is expected to satisfy
//! the contract (the coordinator validates it); a stream that does not never
//! makes the encoder panic: it writes what it can, and the few impossible
//! cases (a tool start whose arguments never formed one JSON object) are
//! [`EncodeError`]s.
//!
//! Layering: this crate may depend on `lce-types` (events), `lce-wire` (every
//! JSON byte and SSE frame goes through it; no JSON escaping here),
//! `lce-core` (the `FrameEncoder` trait and `WireFormat`), `bytes` and
//! `thiserror`. It knows nothing of HTTP,
//! keep-alives or validation.
//!
//! ```
//! use bytes::BytesMut;
//! use lce_encode_agui::{AguiOptions, AguiSseEncoder};
//! use lce_types::Event;
//!
//! let ev = Event::from_json(r#"{"version":1,"type":"run.started","run_id":"run-1","conversation_id":"conv-1","sequence":0,"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{"harness_id":"h","adapter_version":"1"}}"#).unwrap();
//! let mut da = AguiSseEncoder::da(AguiOptions::default());
//! let mut out = BytesMut::new();
//! da.encode_event(&ev, &mut out).unwrap();
//! assert_eq!(&out[..], &b"event: RUN_STARTED\ndata: {\"type\": \"RUN_STARTED\", \"runId\": \"run-1\", \"threadId\": \"conv-1\", \"timestamp\": 1786924800.0}\n\n"[..]);
//!
//! let mut v1 = AguiSseEncoder::v1(AguiOptions::default());
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
use lce_core::WireFormat;
use lce_types::Event;

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
    inner: Inner,
}

impl AguiSseEncoder {
    /// A new encoder writing DA's AG-UI dialect, [`WireFormat::Agui`].
    pub fn da(options: AguiOptions) -> Self {
        AguiSseEncoder {
            inner: Inner::Da(da::DaEncoder::new(options)),
        }
    }

    /// A new encoder writing standard AG-UI 1.0, [`WireFormat::AguiV1`].
    pub fn v1(options: AguiOptions) -> Self {
        AguiSseEncoder {
            inner: Inner::V1(v1::V1Encoder::new(options)),
        }
    }

    /// The format this encoder writes: [`WireFormat::Agui`] or
    /// [`WireFormat::AguiV1`].
    pub fn format(&self) -> WireFormat {
        match self.inner {
            Inner::Da(_) => WireFormat::Agui,
            Inner::V1(_) => WireFormat::AguiV1,
        }
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
    /// In DA's dialect, appends the start frames of held tool calls whose
    /// arguments are already complete; in AG-UI 1.0 nothing is ever held. Never call it when reading from a file (output would depend on
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

/// What the chain's `encoded` stage drives: [`encode_event`](AguiSseEncoder::encode_event)
/// per event, [`release_ready`](AguiSseEncoder::release_ready) whenever the upstream
/// would wait (D13a).
impl lce_core::FrameEncoder for AguiSseEncoder {
    type Error = EncodeError;

    fn encode_frame(&mut self, event: &Event, dst: &mut BytesMut) -> Result<(), EncodeError> {
        self.encode_event(event, dst)
    }

    fn on_idle(&mut self, dst: &mut BytesMut) -> Result<(), EncodeError> {
        self.release_ready(dst)
    }
}
