//! What the validator is configured with.

use std::sync::Arc;

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
    /// `thread_state` or say anything there, any `durability` (`pending`)
    /// included (the coordinator replaces it, D10a), so rule 13 is skipped. Rule 14's matching of `run.interrupted` against
    /// the pending `interrupt.requested` still applies: the adapter emits both,
    /// and the coordinator needs that pending interrupt to commit it (D10).
    Adapter,
}

/// How many closed ids of each kind the validator remembers by default
/// (see [`ValidatorOptions::closed_window`]).
pub const DEFAULT_CLOSED_WINDOW: usize = 256;

/// The validator's configuration; builder-style setters.
///
/// ```
/// use lce_validate::{Mode, ValidatorOptions};
/// let opts = ValidatorOptions::new().mode(Mode::Adapter).contiguous(true);
/// assert_eq!(opts.mode, Mode::Adapter);
/// ```
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct ValidatorOptions {
    /// Full (default) or adapter mode (D10a).
    pub mode: Mode,
    /// The harness is ephemeral (D10): in full mode `run.finished` must then
    /// come *without* `thread_state` (nothing was committed, rule 13).
    pub ephemeral: bool,
    /// The bounds of rule 11 (defaults: D19).
    pub limits: Limits,
    /// Also reject gaps in `sequence` (D3's opt-in check, reported as rule 1
    /// with decision D3: [`Rule::D3Contiguous`](crate::Rule::D3Contiguous)).
    pub contiguous: bool,
    /// JSON Schemas for tool arguments, by tool name (D6).
    pub schemas: ToolSchemas,
    /// How many *closed* ids of each kind (text spans, reasoning spans, tool
    /// calls, namespaces) are remembered, most recent first; default
    /// [`DEFAULT_CLOSED_WINDOW`]. `usize::MAX`: all of them (exact, memory
    /// grows with the run).
    ///
    /// Open spans, calls and namespaces are always remembered exactly (they
    /// are live state), so the validator's memory is bounded by what is open
    /// plus four windows, whatever the length of the run. An event that
    /// names an id that is not open is the same violation either way (rule
    /// 5, 6, 9 or 10): while the id is remembered the message says it
    /// already finished (ended, exited), after that it says it was never
    /// started "(or finished long ago)". What a bounded window cannot catch
    /// is a *second start* of an id that closed more than `closed_window`
    /// closes (of its kind) ago: it is accepted as a new span, call or
    /// namespace. Duplicate finishes, late deltas and restarts within the
    /// window are caught.
    pub closed_window: usize,
    /// The run this validator expects (`run_id`, `conversation_id`): every
    /// event, the first included, must carry these ids (rule X). `None`
    /// (default): the first event's ids are the run's. A coordinator sets it,
    /// because its own events carry the ids it was given.
    pub identity: Option<(Arc<str>, Arc<str>)>,
}

impl Default for ValidatorOptions {
    fn default() -> Self {
        ValidatorOptions {
            mode: Mode::default(),
            ephemeral: false,
            limits: Limits::default(),
            contiguous: false,
            schemas: ToolSchemas::default(),
            closed_window: DEFAULT_CLOSED_WINDOW,
            identity: None,
        }
    }
}

impl ValidatorOptions {
    /// Full mode, not ephemeral, default limits, gaps allowed, no schemas,
    /// the last [`DEFAULT_CLOSED_WINDOW`] closed ids of each kind remembered.
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

    /// Sets how many closed ids of each kind are remembered
    /// ([`closed_window`](ValidatorOptions::closed_window)).
    #[must_use]
    pub fn closed_window(mut self, closed_window: usize) -> Self {
        self.closed_window = closed_window;
        self
    }

    /// Expects the run `run_id` of `conversation_id` from the first event on
    /// ([`identity`](ValidatorOptions::identity)).
    #[must_use]
    pub fn identity(
        mut self,
        run_id: impl Into<Arc<str>>,
        conversation_id: impl Into<Arc<str>>,
    ) -> Self {
        self.identity = Some((run_id.into(), conversation_id.into()));
        self
    }

    /// Remembers every closed id (`closed_window = usize::MAX`): a restart
    /// of any id is caught, and memory grows with the spans, calls and
    /// namespaces of the run. For checking stored runs of bounded size.
    #[must_use]
    pub fn exact(self) -> Self {
        self.closed_window(usize::MAX)
    }
}
