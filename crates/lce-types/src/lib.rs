//! `lce-types`: the envelope and payloads of Canonical Lifecycle Events v1,
//! with strict parsing.
//!
//! This is the bottom layer. It defines [`Event`] (the envelope), [`Payload`]
//! (one typed payload per each of the 21 event types), the enumerations of
//! the contract, [`OpaqueJson`] for the values the contract does not
//! interpret (kept byte-exact), [`Timestamp`] (RFC 3339, D3), [`Limits`]
//! (the bounds of D19, shared by the layers above) and [`ParseError`].
//!
//! Parsing is strict (D17): valid UTF-8 only, `version` 1, known `type`,
//! unknown members rejected at every level, duplicate keys rejected at any
//! depth, lone surrogate escapes rejected, opaque nesting bounded, integers
//! range-checked, floats finite. Errors say what and where, never the payload.
//!
//! May depend on: `serde` (with `rc`, for the shared ids), `serde_json`
//! (with `raw_value`), `serde_path_to_error`, `thiserror` and `simdutf8`
//! (the fast parser's UTF-8 check of long strings). No other lce crate, no
//! async.
//!
//! ```
//! use lce_types::{Event, EventType, Payload};
//! let line = r#"{"version":1,"type":"text.delta","run_id":"r","conversation_id":"c","sequence":3,"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{"message_id":"m","delta":"hi"}}"#;
//! let event = Event::from_json(line).unwrap();
//! assert_eq!(event.event_type(), EventType::TextDelta);
//! assert!(matches!(&event.payload, Payload::TextDelta(d) if d.delta == "hi"));
//! assert_eq!(Event::from_json(&event.to_json()).unwrap(), event);
//! ```

mod error;
mod event;
pub mod excerpt;
mod fast;
mod last_line;
mod limits;
mod lines;
mod opaque;
pub mod payload;
#[cfg(test)]
mod test_util;
mod timestamp;

pub use error::{ParseError, ParseErrorKind, safe_name};
pub use event::{Event, EventParser, EventType, MAX_SEQUENCE, Payload, VERSION};
pub use last_line::{KeptLine, LastLine};
pub use limits::Limits;
pub use lines::{DEFAULT_MAX_LINE_BYTES, EventLines, LineParser};
pub use opaque::{JsonObject, MAX_OPAQUE_DEPTH, OpaqueJson};
pub use payload::*;
pub use timestamp::{Timestamp, TimestampError};
