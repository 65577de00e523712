//! The bounds of D19, as one value shared by the sanitizer and the validator.
//!
//! This crate only holds the numbers and their defaults; loading them from
//! a file or the environment lives in `lce-sanitize`.

use serde::{Deserialize, Serialize};

/// Every configurable bound (D19). Sizes are in bytes unless named otherwise.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Identifiers (`run_id`, `message_id`, `tool_call_id`, ...).
    pub identifier_bytes: usize,
    /// Codes, tool names, agent names and other short names.
    pub name_bytes: usize,
    /// Display text per event (deltas, messages, prompts).
    pub display_bytes: usize,
    /// Tool arguments per call (given at start or assembled from deltas).
    pub tool_arguments_bytes: usize,
    /// A tool result.
    pub tool_result_bytes: usize,
    /// Warning `details`, serialized.
    pub warning_details_bytes: usize,
    /// Nesting depth of warning `details`.
    pub warning_details_depth: usize,
    /// Members per object (and elements per array) in warning `details`.
    pub warning_details_members: usize,
    /// Keys in `provider.metadata.metadata`.
    pub metadata_keys: usize,
    /// Serialized size of one metadata value.
    pub metadata_value_bytes: usize,
    /// Provider metadata keys that are kept; others are dropped and counted.
    pub metadata_allowlist: Vec<String>,
    /// Namespace depth.
    pub namespace_depth: usize,
    /// Events per run.
    pub events_per_run: u64,
    /// Bytes of canonical JSON per run.
    pub bytes_per_run: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            identifier_bytes: 256,
            name_bytes: 128,
            display_bytes: 64 * 1024,
            tool_arguments_bytes: 256 * 1024,
            tool_result_bytes: 64 * 1024,
            warning_details_bytes: 8 * 1024,
            warning_details_depth: 4,
            warning_details_members: 32,
            metadata_keys: 32,
            metadata_value_bytes: 1024,
            metadata_allowlist: [
                "request_id",
                "response_id",
                "model_version",
                "region",
                "latency_ms",
                "finish_reason",
                "service_tier",
                "system_fingerprint",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            namespace_depth: 8,
            events_per_run: 1_000_000,
            bytes_per_run: 256 * 1024 * 1024,
        }
    }
}
