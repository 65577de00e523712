//! What the validator is configured with.

use lce_types::Limits;

use crate::schemas::ToolSchemas;

/// Which boundary the validator guards (D10a).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// What the coordinator emits, stores and replays: every rule, including
    /// rule 13's committed `thread_state`. The default, and `lce check`'s.
    #[default]
    Full,
    /// An adapter's output, before the coordinator: `run.finished` may omit
    /// `thread_state` or say anything there (the coordinator replaces it, D10a),
    /// so rule 13 is skipped. Rule 14's matching of `run.interrupted` against
    /// the pending `interrupt.requested` still applies: the adapter emits both,
    /// and the coordinator needs that pending interrupt to commit it (D10).
    Adapter,
}

/// The validator's configuration; builder-style setters.
///
/// ```
/// use lce_validate::{Mode, ValidatorOptions};
/// let opts = ValidatorOptions::new().mode(Mode::Adapter).contiguous(true);
/// assert_eq!(opts.mode, Mode::Adapter);
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, Default)]
pub struct ValidatorOptions {
    /// Full (default) or adapter mode (D10a).
    pub mode: Mode,
    /// The harness is ephemeral (D10): in full mode `run.finished` must then
    /// come *without* `thread_state` (nothing was committed, rule 13).
    pub ephemeral: bool,
    /// The bounds of rule 11 (defaults: D19).
    pub limits: Limits,
    /// Also reject gaps in `sequence` (D3's opt-in check, rule id `D3`).
    pub contiguous: bool,
    /// JSON Schemas for tool arguments, by tool name (D6).
    pub schemas: ToolSchemas,
}

impl ValidatorOptions {
    /// Full mode, not ephemeral, default limits, gaps allowed, no schemas.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the mode.
    #[must_use]
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets whether the harness is ephemeral.
    #[must_use]
    pub fn ephemeral(mut self, ephemeral: bool) -> Self {
        self.ephemeral = ephemeral;
        self
    }

    /// Sets the limits.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets whether gaps in `sequence` are violations.
    #[must_use]
    pub fn contiguous(mut self, contiguous: bool) -> Self {
        self.contiguous = contiguous;
        self
    }

    /// Sets the tool schemas.
    #[must_use]
    pub fn schemas(mut self, schemas: ToolSchemas) -> Self {
        self.schemas = schemas;
        self
    }
}
