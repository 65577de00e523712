//! `lce-validate`: the state-machine rules of Canonical Lifecycle Events v1
//! as a streaming validator.
//!
//! [`RunValidator`] is fed the events of one run, one at a time
//! ([`RunValidator::push`]), and told when the input ends
//! ([`RunValidator::finish`]). It reports the first broken rule as a
//! [`Violation`]: the contract's rules 1-15, the checks of the project's
//! decisions that refine them, each reported as the rule it refines with the
//! decision as detail (D3's opt-in contiguity: rule 1; D4 close events: rule
//! 8; D5 spans open at a terminal: rule 5, 6 or 9 by the kind of span; D6
//! tool arguments: rule 6), and run identity (one `run_id` and
//! `conversation_id` per run, `X`), see [`Rule`]. Messages never carry
//! payload text: only event types, identifiers, member names and sizes.
//!
//! The validator runs in constant work per event and keeps bounded state: the
//! open spans, calls and namespaces, plus a window of the most recently
//! closed ids of each kind ([`ValidatorOptions::closed_window`], 256 by
//! default; [`ValidatorOptions::exact`] remembers all of them). It never
//! grows with the number of deltas, and it never panics. [`ValidatorOptions`] selects the full or adapter mode
//! (D10a), an ephemeral harness (rule 13), the limits of rule 11 (D19
//! defaults), the opt-in contiguity check (D3), and the JSON Schemas that tool
//! arguments must satisfy ([`ToolSchemas`], D6). `docs/validation.md` lists
//! every rule, what is checked, and the decision it rests on.
//!
//! May depend on: `lce-types`, `lce-wire` (the length of a string as compact
//! JSON, `json_string_len`, and the structural scan of streamed arguments),
//! `lce-core` (the `Rule` enum it reports, shared with the audit records),
//! `serde_json`, `jsonschema` (no network or file resolvers) and
//! `thiserror`. No async, no other lce crate: the stream combinators of
//! `lce-stream` wrap this synchronous core.
//!
//! ```
//! use lce_types::EventLines;
//! use lce_validate::{RunValidator, ValidatorOptions};
//!
//! let run = concat!(
//!     r#"{"version":1,"type":"run.started","run_id":"r","conversation_id":"c","sequence":0,"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{"harness_id":"h","adapter_version":"1"}}"#, "\n",
//!     r#"{"version":1,"type":"run.cancelled","run_id":"r","conversation_id":"c","sequence":1,"timestamp":"2026-08-17T00:00:01Z","namespace":[],"data":{"reason":"client_request","side_effect_status":"none"}}"#, "\n",
//! );
//! let mut v = RunValidator::new(ValidatorOptions::new());
//! for line in EventLines::new(run.as_bytes()) {
//!     v.push(&line.unwrap().unwrap()).unwrap();
//! }
//! v.finish().unwrap();
//! ```

mod options;
mod registry;
mod rule;
mod schemas;
mod size;
mod validator;

pub use options::{DEFAULT_CLOSED_WINDOW, Mode, ValidatorOptions};
pub use rule::{Rule, Violation};
pub use schemas::{SCHEMA_FILE_SUFFIX, SchemaError, ToolSchemas};
pub use size::canonical_json_len;
pub use validator::RunValidator;

/// Validates a whole run in one call: every event, then the end of input.
pub fn validate_run<'a>(
    events: impl IntoIterator<Item = &'a lce_types::Event>,
    options: ValidatorOptions,
) -> Result<(), Violation> {
    let mut v = RunValidator::new(options);
    for e in events {
        v.push(e)?;
    }
    v.finish()
}
