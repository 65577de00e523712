//! The whole chain `lce encode` runs, built in one place for every caller
//! (the CLI, the Python package): canonical items in, SSE frames out.

use std::pin::Pin;

use futures::{Stream, StreamExt as _};
use lce_core::WireFormat;
use lce_types::{Event, Limits};

use crate::coordinator::{Coordinator, CoordinatorOptions};
use crate::encoder::WireEncoder;
use crate::error::LceError;
use crate::ext::{Encoded, Enforced, LifecycleStreamExt, Source, source};

/// What [`encode_chain`] is configured with.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct EncodeOptions {
    /// The wire format.
    pub format: WireFormat,
    /// The agent name in the stream, where the format has one.
    pub agent_name: Option<String>,
    /// A run whose thread state is not committed (D10: no store).
    pub ephemeral: bool,
    /// The per-run bounds (D19).
    pub limits: Limits,
}

impl EncodeOptions {
    /// `format`, no agent name, committed, the default limits.
    pub fn new(format: WireFormat) -> Self {
        EncodeOptions {
            format,
            agent_name: None,
            ephemeral: false,
            limits: Limits::default(),
        }
    }
}

/// The chain [`encode_chain`] builds over the items `S`.
pub type EncodeChain<S> = Encoded<Enforced<Source<futures::stream::Peekable<S>>>, WireEncoder>;

/// `items` through the whole pipeline (drop empty deltas, sanitize,
/// validate, coordinate, encode), the coordinator's run and conversation
/// ids taken from the first item when it is an event (waits for it). The
/// output is always a well-formed stream; afterwards `get_mut()` gives the
/// coordinator (its `intervention()`, `take_error()`).
pub async fn encode_chain<S>(items: S, options: EncodeOptions) -> EncodeChain<S>
where
    S: Stream<Item = Result<Event, LceError>> + Unpin,
{
    let mut items = items.peekable();
    let first = Pin::new(&mut items).peek().await;
    let coordinator = Coordinator::new(
        CoordinatorOptions::for_first_item(first)
            .ephemeral(options.ephemeral)
            .limits(options.limits),
    );
    source(items)
        .enforced(coordinator)
        .encoded(WireEncoder::new(options.format, options.agent_name))
}
