//! `lce-wire`: the byte layer both wire encoders write through.
//!
//! It writes JSON text and SSE frames byte for byte as the wire formats
//! require (the wire-formats spec, sections 1, 2 and 6):
//!
//! - [`JsonWriter`] writes JSON straight into a [`bytes::BytesMut`] in one of
//!   three [`Style`]s: Python `json.dumps` with `ensure_ascii` on (DA
//!   `custom`) or off (DA `agui`), and serde_json's compact form (standard
//!   AG-UI 1.0). It places separators itself, prints floats as Python `repr`
//!   ([`write_py_float`]) or as serde_json does ([`write_compact_float`]), and
//!   re-lays already-valid JSON text kept byte-exact from input
//!   ([`JsonWriter::opaque`]) without building a tree.
//! - [`sse`] frames: `event: <name>\ndata: <json>\n\n`, `data: <json>\n\n`
//!   and comments, refusing CR/LF injection and leaving no partial frame on
//!   error.
//! - [`truncate_display`]: the 2000-code-point cut of tool results.
//! - [`json_string_len`]: how long a string is as compact JSON, without
//!   writing it (the validator's size rule), and [`block`], the padding the
//!   16-byte text scans here and in `lce-sanitize` share.
//! - [`hold`]: the D13 tool-start holding shared by both DA encoders, and
//!   [`write_interrupt_payload`]: DA's interrupt payload, which both DA
//!   protocols write (with [`write_form_field`], which `agui-v1` writes
//!   too). These are the parts of this crate that know canonical events.
//!
//! Dependencies: `bytes`, `memchr`, `thiserror` and `lce-types` (for
//! [`hold`] and the interrupt writers only); the byte writers themselves
//! know nothing of events, only of bytes.
//! Nothing here panics on any input, and there is no `unsafe`.

pub mod block;
mod error;
mod escape;
mod float;
pub mod hold;
mod interrupt;
mod key;
mod len;
mod opaque;
pub mod sse;
mod truncate;
mod writer;

pub use error::{EncodeError, WireError};
pub use float::{write_compact_float, write_py_float};
pub use interrupt::{AgentPlace, write_interrupt_payload};
pub use key::Key;
pub use len::json_string_len;
pub use sse::{
    write_comment, write_data_frame, write_data_json, write_event_frame, write_event_json,
};
pub use truncate::{DA_RESULT_DISPLAY_CHARS, truncate_display};
pub use writer::{JsonWriter, Member, Style, write_form_field};

/// Deepest nesting [`JsonWriter::opaque`] accepts; deeper input gives
/// [`WireError::TooDeep`].
pub const MAX_OPAQUE_DEPTH: usize = 128;

/// Appends `s` as a quoted JSON string escaped in `style`.
pub fn write_json_string(out: &mut bytes::BytesMut, s: &str, style: Style) {
    escape::write_quoted(out, s, style.ensure_ascii());
}

/// Re-lays one valid JSON value `raw_json` into `out` in `style` (see
/// [`JsonWriter::opaque`]); on error `out` is left as it was.
pub fn write_opaque(
    out: &mut bytes::BytesMut,
    raw_json: &str,
    style: Style,
) -> Result<(), WireError> {
    JsonWriter::new(out, style).opaque(raw_json)
}
