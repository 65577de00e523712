//! Helpers the run log's test binaries share: the run info they create
//! runs with, a lone subscription's bytes, and the pass-through of a test
//! log's methods to the log it wraps.
// Not every binary uses every helper.
#![allow(dead_code, unused_macros, unused_imports, clippy::unwrap_used)]

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use lce_runlog::{FrameId, RunInfo, RunLog, Subscription};
use lce_stream::{WireEncoder, WireFormat};

/// A run owned by `replica-a`.
pub(crate) fn info(run_id: &str, conversation_id: &str) -> RunInfo {
    RunInfo {
        run_id: run_id.to_owned(),
        conversation_id: conversation_id.to_owned(),
        owner: "replica-a".to_owned(),
        nonce: "nonce-1".to_owned(),
    }
}

/// Today's replay: the bytes of a lone subscription to `run_id` in
/// `format`, from the start or after the frame `after`, to the end.
pub(crate) async fn replay(
    log: &Arc<dyn RunLog>,
    run_id: &str,
    format: WireFormat,
    after: Option<FrameId>,
    ids: bool,
) -> Vec<u8> {
    let sub = Subscription::open(
        log.clone(),
        run_id,
        WireEncoder::new(format, None),
        after,
        ids,
    )
    .await
    .unwrap();
    let chunks: Vec<Result<Bytes, _>> = sub.into_stream().collect().await;
    chunks
        .into_iter()
        .flat_map(|c| c.unwrap().to_vec())
        .collect()
}

/// Methods of a test log (a struct with an `inner` log) that go to the
/// inner log as they are.
macro_rules! to_inner {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(fn $name(&self, $($arg: $ty),*) -> lce_runlog::LogFuture<$out> {
            self.inner.$name($($arg),*)
        })*
    };
}
pub(crate) use to_inner;
