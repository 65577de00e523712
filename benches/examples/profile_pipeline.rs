//! Runs the bench's whole pipeline (the same function criterion times) a few
//! times over one generated corpus, for a profiler such as callgrind:
//!
//! ```sh
//! cargo build --release -p lce-benches --example profile_pipeline
//! valgrind --tool=callgrind target/release/examples/profile_pipeline text custom 3
//! ```
//!
//! Arguments: mix (`text`, `tools`, `mixed`), format (`custom`, `agui`,
//! `agui-v1`, or `reference` for the serde_json `Value` reference), passes
//! (default 3). Prints the frames (lines, for the reference) and bytes of one
//! pass.
#![allow(missing_docs)]
#![allow(clippy::print_stdout, clippy::panic)]

use lce_benches::{Mix, check_pipeline, corpus, default_events, pipeline, reference, runtime};
use lce_stream::WireFormat;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mix = match args.first().map(String::as_str).unwrap_or("text") {
        "tools" => Mix::Tools,
        "mixed" => Mix::Mixed,
        _ => Mix::Text,
    };
    let corpus = corpus(mix, default_events());
    let mut out = Vec::with_capacity(corpus.bytes.len() * 2);
    if args.get(1).map(String::as_str) == Some("reference") {
        let passes: usize = args.get(2).and_then(|p| p.parse().ok()).unwrap_or(3);
        let mut lines = 0;
        for _ in 0..passes {
            lines = reference(&corpus, &mut out).unwrap_or_else(|e| panic!("reference: {e}"));
        }
        println!(
            "{} events, {lines} lines, {} bytes per pass, {passes} passes (reference)",
            corpus.len(),
            out.len()
        );
        return;
    }
    let format = args
        .get(1)
        .and_then(|f| WireFormat::ALL.into_iter().find(|w| w.name() == f))
        .unwrap_or(WireFormat::Custom);
    let passes: usize = args.get(2).and_then(|p| p.parse().ok()).unwrap_or(3);
    let rt = runtime();
    check_pipeline(&rt, &corpus, format);
    let (run_id, conversation_id) = corpus.ids();
    let mut frames = 0;
    for _ in 0..passes {
        frames = pipeline(&rt, &corpus, &run_id, &conversation_id, format, &mut out)
            .unwrap_or_else(|e| panic!("pipeline: {e}"));
    }
    println!(
        "{} events, {frames} frames, {} bytes per pass, {passes} passes",
        corpus.len(),
        out.len()
    );
}
