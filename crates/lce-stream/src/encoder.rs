//! The encoders a lifecycle stream can be encoded with, behind one trait.

use bytes::BytesMut;
use lce_encode_agui::{AguiOptions, AguiSseEncoder, Dialect};
use lce_encode_custom::{CustomOptions, CustomSseEncoder};
use lce_types::Event;
use lce_wire::EncodeError;

/// An SSE encoder as the `encoded` adaptor drives it: one event in, zero or
/// more complete frames appended; and a chance to release held frames when
/// the upstream has nothing ready (D13a).
pub trait FrameEncoder {
    /// The encoder's error: the `encoded` adaptor yields it as
    /// [`LceError::Encode`](crate::LceError::Encode), an [`EncodeError`].
    type Error: std::error::Error + Into<EncodeError> + Send + Sync + 'static;

    /// Appends the frames for `event` to `dst`.
    fn encode_frame(&mut self, event: &Event, dst: &mut BytesMut) -> Result<(), Self::Error>;

    /// Called when the upstream would wait: append whatever may go out now.
    fn on_idle(&mut self, dst: &mut BytesMut) -> Result<(), Self::Error> {
        let _ = dst;
        Ok(())
    }
}

impl FrameEncoder for CustomSseEncoder {
    type Error = EncodeError;

    fn encode_frame(&mut self, event: &Event, dst: &mut BytesMut) -> Result<(), Self::Error> {
        self.encode_event(event, dst)
    }

    fn on_idle(&mut self, dst: &mut BytesMut) -> Result<(), Self::Error> {
        self.release_ready(dst)
    }
}

impl FrameEncoder for AguiSseEncoder {
    type Error = EncodeError;

    fn encode_frame(&mut self, event: &Event, dst: &mut BytesMut) -> Result<(), Self::Error> {
        self.encode_event(event, dst)
    }

    fn on_idle(&mut self, dst: &mut BytesMut) -> Result<(), Self::Error> {
        self.release_ready(dst)
    }
}

/// The three wire formats.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WireFormat {
    /// DA's `custom` protocol.
    Custom,
    /// DA's AG-UI dialect.
    Agui,
    /// Standard AG-UI 1.0.
    AguiV1,
}

impl WireFormat {
    /// Every format.
    pub const ALL: [WireFormat; 3] = [WireFormat::Custom, WireFormat::Agui, WireFormat::AguiV1];

    /// The name used on the command line, in requests and in golden paths.
    pub fn name(self) -> &'static str {
        match self {
            WireFormat::Custom => "custom",
            WireFormat::Agui => "agui",
            WireFormat::AguiV1 => "agui-v1",
        }
    }

    /// The format named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The `Content-Type` of a response in this format (wire-formats §2).
    pub fn content_type(self) -> &'static str {
        match self {
            WireFormat::Custom | WireFormat::Agui => "text/event-stream; charset=utf-8",
            WireFormat::AguiV1 => "text/event-stream",
        }
    }
}

impl std::fmt::Display for WireFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An encoder for a format chosen at run time.
#[derive(Debug)]
#[non_exhaustive]
pub enum WireEncoder {
    /// DA's `custom` protocol.
    Custom(CustomSseEncoder),
    /// DA's `agui` or standard `agui-v1`.
    Agui(AguiSseEncoder),
}

impl WireEncoder {
    /// An encoder for `format`; `agent_name` is the root agent's display
    /// name for DA interrupts (D15).
    pub fn new(format: WireFormat, agent_name: Option<String>) -> Self {
        match format {
            WireFormat::Custom => {
                WireEncoder::Custom(CustomSseEncoder::new(CustomOptions { agent_name }))
            }
            WireFormat::Agui | WireFormat::AguiV1 => {
                let mut options = AguiOptions::default();
                if let Some(name) = agent_name {
                    options = options.with_agent_name(name);
                }
                let dialect = if format == WireFormat::Agui {
                    Dialect::Da
                } else {
                    Dialect::V1
                };
                WireEncoder::Agui(AguiSseEncoder::new(dialect, options))
            }
        }
    }
}

impl FrameEncoder for WireEncoder {
    type Error = EncodeError;

    fn encode_frame(&mut self, event: &Event, dst: &mut BytesMut) -> Result<(), Self::Error> {
        match self {
            WireEncoder::Custom(e) => e.encode_frame(event, dst),
            WireEncoder::Agui(e) => e.encode_frame(event, dst),
        }
    }

    fn on_idle(&mut self, dst: &mut BytesMut) -> Result<(), Self::Error> {
        match self {
            WireEncoder::Custom(e) => FrameEncoder::on_idle(e, dst),
            WireEncoder::Agui(e) => FrameEncoder::on_idle(e, dst),
        }
    }
}
