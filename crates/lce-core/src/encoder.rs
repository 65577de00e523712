//! The encoder trait: what the `encoded` stage drives.

use bytes::BytesMut;
use lce_types::Event;
use lce_wire::EncodeError;

/// An SSE encoder as the `encoded` adaptor drives it: one event in, zero or
/// more complete frames appended; and a chance to release held frames when
/// the upstream has nothing ready (D13a).
pub trait FrameEncoder {
    /// The encoder's error: the `encoded` adaptor yields it as
    /// `lce_stream::LceError::Encode`, an [`EncodeError`].
    type Error: std::error::Error + Into<EncodeError> + Send + Sync + 'static;

    /// Appends the frames for `event` to `dst`.
    fn encode_frame(&mut self, event: &Event, dst: &mut BytesMut) -> Result<(), Self::Error>;

    /// Called when the upstream would wait: append whatever may go out now.
    fn on_idle(&mut self, dst: &mut BytesMut) -> Result<(), Self::Error> {
        let _ = dst;
        Ok(())
    }
}
