//! DA's non-streaming answer for a coordinated run, shared by `lce invoke`
//! and `POST /api/v1/chat/invoke`.

use futures::{FutureExt as _, Stream, StreamExt as _};
use lce_encode_custom::invoke::{InvokeAccumulator, InvokeOptions};
use lce_stream::LceError;
use lce_types::Event;

/// Drives a coordinated run to its end through an [`InvokeAccumulator`]
/// (DA's non-streaming answer: `lce invoke` and `POST /api/v1/chat/invoke`).
/// `live`: call the D13a release whenever the run would wait, as the
/// `custom` stream does; input read in place (a file) is always ready, so
/// `lce invoke` passes `false`.
pub async fn accumulate<S>(run: S, live: bool) -> InvokeAccumulator
where
    S: Stream<Item = Result<Event, LceError>>,
{
    let mut run = std::pin::pin!(run);
    let mut acc = InvokeAccumulator::new(InvokeOptions::default());
    loop {
        let next = match run.next().now_or_never() {
            Some(next) => next,
            None => {
                if live {
                    acc.release_ready();
                }
                run.next().await
            }
        };
        match next {
            None => break,
            Some(Ok(event)) => {
                if let Err(e) = acc.feed(&event) {
                    // Payload-free; the answer becomes the generic failure.
                    tracing::error!(target: "lce::invoke", error = %e, "the custom encoder would refuse this run");
                }
            }
            Some(Err(e)) => {
                // The coordinator yields events only; should it not, the run
                // has no terminal and the answer is the generic failure.
                tracing::error!(target: "lce::invoke", rule = %e.cause(), "run failed");
                break;
            }
        }
    }
    acc
}
