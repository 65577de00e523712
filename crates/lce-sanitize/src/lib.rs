//! `lce-sanitize`: bounds, input hygiene and safe errors for Canonical
//! Lifecycle Events v1 (the "Validation and sanitation" section of the
//! contract; decisions D17-D20).
//!
//! What this layer does:
//! - loads [`Limits`] (the D19 bounds) from a TOML or JSON file and
//!   `LCE_LIMIT_*` environment variables, and validates them
//!   ([`load_limits`], [`validate_limits`]);
//! - checks and cleans one event at a time ([`Sanitizer`]): identifiers,
//!   codes and names are bounded and free of control characters (else the
//!   event is rejected); display text has D18's control and bidi characters
//!   replaced with U+FFFD, counted, and is rejected or cut (never inside a
//!   UTF-8 sequence) by each field's policy; warning `details` and
//!   `provider.metadata` are bounded; floats are finite ([`check_f64`]);
//!   messages are redacted ([`redact`]). The result is idempotent;
//! - gives adapters a closed set of safe typed errors ([`AdapterError`], D20)
//!   and the DA display truncation ([`truncate_display`], re-exported from
//!   `lce-wire`);
//! - logs rejected and cleaned events through `tracing` (target
//!   [`LOG_TARGET`]) with correlation ids, rule, field and sizes, never text.
//!
//! Policies per field are in `docs/sanitation.md`. State-machine rules
//! (including rule 11's per-run aggregates) are the validator's, not this
//! crate's.
//!
//! May depend on: `lce-types`, `lce-wire`, `serde`, `serde_json`, `toml`,
//! `tracing`, `thiserror`. No async, no validator.
//!
//! ```
//! use lce_sanitize::Sanitizer;
//! use lce_types::{Event, Limits, Payload};
//! let line = r#"{"version":1,"type":"text.delta","run_id":"r","conversation_id":"c","sequence":3,"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{"message_id":"m","delta":"a\u0007b"}}"#;
//! let out = Sanitizer::new(Limits::default()).sanitize(Event::from_json(line).unwrap()).unwrap();
//! assert!(matches!(&out.event.payload, Payload::TextDelta(d) if d.delta == "a\u{FFFD}b"));
//! assert_eq!(out.report.replaced_chars, 1);
//! ```

mod adapter_error;
mod limits;
mod log;
mod redact;
mod sanitize;
mod text;
mod trace;

pub use adapter_error::{AdapterError, AdapterErrorKind};
pub use lce_types::Limits;
pub use lce_wire::{DA_RESULT_DISPLAY_CHARS, truncate_display};
pub use limits::{
    LimitSource, LimitsError, load_limits, load_limits_from_process_env, validate_limits,
};
pub use log::LOG_TARGET;
pub use redact::{REDACTED, redact, redact_counted};
pub use sanitize::{CleanReport, RejectKind, Rejection, Sanitized, Sanitizer, check_f64};
