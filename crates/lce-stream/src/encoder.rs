//! An encoder for a format chosen at run time (the trait and the format
//! enum are `lce-core`'s).

use bytes::BytesMut;
use lce_core::{FrameEncoder, WireFormat};
use lce_encode_agui::{AguiOptions, AguiSseEncoder};
use lce_encode_custom::{CustomOptions, CustomSseEncoder};
use lce_types::Event;
use lce_wire::EncodeError;

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
                WireEncoder::Agui(if format == WireFormat::Agui {
                    AguiSseEncoder::da(options)
                } else {
                    AguiSseEncoder::v1(options)
                })
            }
        }
    }
}

impl WireEncoder {
    /// The format this encoder writes.
    pub fn format(&self) -> WireFormat {
        match self {
            WireEncoder::Custom(_) => WireFormat::Custom,
            WireEncoder::Agui(e) => e.format(),
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
