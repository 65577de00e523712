//! Compose the pipeline over your own adapter stream: canonical events in,
//! DA's `custom` SSE bytes out, with the coordinator guaranteeing the
//! contract in between.
//!
//! Run with `cargo run -p lce --example compose` (add `agui` or `agui-v1` to
//! pick another wire format).
#![allow(clippy::print_stdout, clippy::expect_used)]

use futures::StreamExt;
use lce::prelude::*;

fn main() {
    let format = std::env::args().nth(1).unwrap_or_else(|| "custom".into());
    let format = WireFormat::from_name(&format).expect("custom, agui or agui-v1");

    // Your adapter: any `Stream<Item = Event>` (here: a canned answer).
    let event = |seq: u64, ty: &str, data: &str| {
        Event::from_json(&format!(
            r#"{{"version":1,"type":"{ty}","run_id":"run-1","conversation_id":"conv-1","sequence":{seq},"timestamp":"2026-08-17T00:00:0{seq}Z","namespace":[],"data":{data}}}"#
        ))
        .expect("a canonical event")
    };
    let adapter = futures::stream::iter([
        event(
            0,
            "run.started",
            r#"{"harness_id":"demo","adapter_version":"1.0.0"}"#,
        ),
        event(
            1,
            "text.started",
            r#"{"message_id":"m-1","role":"assistant"}"#,
        ),
        event(
            2,
            "text.delta",
            r#"{"message_id":"m-1","delta":"Hello from lce"}"#,
        ),
        event(3, "text.finished", r#"{"message_id":"m-1"}"#),
        event(4, "run.finished", r#"{"outcome":"success"}"#),
    ]);

    // The chain, stage by stage, exactly as `lce encode` builds it
    // (`.enforced(coordinator)` is the four middle stages in one call).
    let options = CoordinatorOptions::new("run-1", "conv-1");
    let sanitizer = Sanitizer::new(options.limits.clone());
    let validator = options.validator_options(); // adapter mode, this run's ids
    let frames = lce::stream::events(adapter)
        .drop_empty_deltas() // D7
        .sanitized(sanitizer) // bounds and hygiene; a rejection becomes an error item
        .validated(validator) // the rules; a violation becomes an error item
        .coordinated(Coordinator::new(options)) // error items -> terminals, commits, audit
        .encoded(WireEncoder::new(format, None)); // one chunk per SSE frame

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    runtime.block_on(frames.for_each(|frame| {
        let frame = frame.expect("the coordinator's output always encodes");
        print!("{}", String::from_utf8_lossy(&frame));
        futures::future::ready(())
    }));
}
