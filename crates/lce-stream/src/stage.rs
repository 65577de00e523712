//! What every stage of a chain shares: [`LifecycleStream`], a stream of
//! `Result<Event, LceError>` that says what its stages dropped or changed
//! ([`StageCounts`]). The adaptors (`ext`) and the coordinator both build
//! on it; it depends on neither.

use std::pin::Pin;

use futures::Stream;
use lce_types::Event;

use crate::error::LceError;

/// What the stages of a chain did to items besides passing them on: what
/// they dropped or changed. The coordinator adds them to its
/// [`RunCounters`](crate::RunCounters), so a run's audit record counts every
/// item the adapter sent, wherever it went.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageCounts {
    /// Empty deltas dropped (D7), by [`DropEmptyDeltas`](crate::DropEmptyDeltas).
    pub empty_deltas: u64,
    /// Events the sanitizer changed, by [`Sanitized`](crate::Sanitized).
    pub cleaned: u64,
    /// Items drained and dropped after the run's first error item (D8), by
    /// [`Validated`](crate::Validated).
    pub discarded: u64,
}

impl std::ops::Add for StageCounts {
    type Output = StageCounts;

    fn add(self, other: StageCounts) -> StageCounts {
        StageCounts {
            empty_deltas: self.empty_deltas + other.empty_deltas,
            cleaned: self.cleaned + other.cleaned,
            discarded: self.discarded + other.discarded,
        }
    }
}

/// A lifecycle stream that says what its stages dropped or changed: what
/// [`coordinated`](crate::LifecycleStreamExt::coordinated) takes. A chain starts
/// with [`events`](crate::events) (a stream of events) or [`source`](crate::source) (a stream of
/// `Result<Event, LceError>`), and every adaptor of [`LifecycleStreamExt`](crate::LifecycleStreamExt)
/// keeps it one; `Pin<Box<dyn LifecycleStream + Send>>` erases the type.
pub trait LifecycleStream: Stream<Item = Result<Event, LceError>> {
    /// What the stages of this chain dropped or changed so far.
    fn stage_counts(&self) -> StageCounts;
}

impl<T: LifecycleStream + ?Sized> LifecycleStream for Pin<Box<T>> {
    fn stage_counts(&self) -> StageCounts {
        (**self).stage_counts()
    }
}
