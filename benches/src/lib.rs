//! `lce-benches`: what the criterion benches of lce share.
//!
//! - [`corpus`]: a generated canonical run ([`lce_testkit::corpus`], the
//!   generator behind `cargo xtask corpus`), made in memory on every bench
//!   start (20000 `mixed` events take about 30 ms in the bench build);
//! - [`pipeline`]: the whole server path over a corpus (parse, then the
//!   coordinator: drop empty deltas, sanitize, validate in adapter mode,
//!   commit; then a wire encoder), polled on a current-thread tokio runtime
//!   (the coordinator's commit timeout is a tokio timer);
//! - [`reference()`]: the naive pass the pipeline is compared with: every line
//!   parsed by `serde_json` into a `serde_json::Value` and written back
//!   compact.
//!
//! Sizes come from the environment so a run stays short on a shared machine:
//! `LCE_BENCH_EVENTS` (default 20000 events per corpus) and
//! `LCE_BENCH_THROUGHPUT=bytes` to report bytes/s instead of events/s.
//! See `docs/performance.md`.
//!
//! Benchmark setup that cannot go on (no corpus, no runtime) panics with a
//! message: there is no caller to hand an error to.
#![allow(clippy::panic)]

use std::ops::Range;

use futures::StreamExt as _;
use lce_stream::{
    Coordinator, CoordinatorOptions, LceError, LifecycleStreamExt, WireEncoder, WireFormat,
};
use lce_types::{Event, EventParser};

/// The corpus mixes (`docs/corpus.md`): [`Mix::ALL`], [`Mix::name`].
pub use lce_testkit::corpus::Mix;

/// Events per generated corpus: `LCE_BENCH_EVENTS`, else 20000.
pub fn default_events() -> usize {
    std::env::var("LCE_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n >= 2)
        .unwrap_or(20_000)
}

/// Whether throughput is reported in bytes (`LCE_BENCH_THROUGHPUT=bytes`)
/// rather than events.
pub fn throughput_in_bytes() -> bool {
    std::env::var("LCE_BENCH_THROUGHPUT").is_ok_and(|v| v == "bytes")
}

/// One generated run: its bytes and where each line is.
#[derive(Debug)]
pub struct Corpus {
    /// The mix it was generated with.
    pub mix: Mix,
    /// The whole file.
    pub bytes: Vec<u8>,
    /// Each line (without its newline).
    ranges: Vec<Range<usize>>,
}

impl Corpus {
    /// Splits `bytes` into lines.
    pub fn from_bytes(mix: Mix, bytes: Vec<u8>) -> Self {
        let mut ranges = Vec::new();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' {
                if i > start {
                    ranges.push(start..i);
                }
                start = i + 1;
            }
        }
        if start < bytes.len() {
            ranges.push(start..bytes.len());
        }
        Corpus { mix, bytes, ranges }
    }

    /// The lines, in order.
    pub fn lines(&self) -> impl Iterator<Item = &[u8]> + Clone + '_ {
        self.ranges.iter().map(|r| &self.bytes[r.clone()])
    }

    /// How many events (lines).
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether there is no line at all.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Every event, parsed. Panics on a malformed line: the generator's
    /// output is valid by construction.
    pub fn events(&self) -> Vec<Event> {
        self.lines()
            .map(|l| Event::from_slice(l).unwrap_or_else(|e| panic!("corpus line: {e}")))
            .collect()
    }

    /// The run's `run_id` and `conversation_id` (from the first line).
    pub fn ids(&self) -> (String, String) {
        let first = self.events_head();
        (first.run_id.to_string(), first.conversation_id.to_string())
    }

    fn events_head(&self) -> Event {
        let line = self.lines().next().unwrap_or_default();
        Event::from_slice(line).unwrap_or_else(|e| panic!("corpus line 1: {e}"))
    }
}

/// The corpus of `events` events of `mix` with seed 1: the bytes
/// `cargo xtask corpus --events N --mix M --seed 1` writes, generated in
/// memory by [`lce_testkit::corpus`].
pub fn corpus(mix: Mix, events: usize) -> Corpus {
    let options = lce_testkit::corpus::Options {
        events: events as u64,
        mix,
        seed: 1,
    };
    let bytes = lce_testkit::corpus::to_vec(&options)
        .unwrap_or_else(|e| panic!("corpus of {events} {mix} events: {e}"));
    Corpus::from_bytes(mix, bytes)
}

/// The runtime [`pipeline`] runs on: current-thread, timers enabled.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"))
}

/// The whole pipeline over `corpus`: every line parsed, coordinated
/// (sanitize, validate in adapter mode, commit to the in-memory store) and
/// encoded in `format`; the SSE bytes appended to `out` (cleared first).
/// Returns the number of frames.
pub fn pipeline(
    rt: &tokio::runtime::Runtime,
    corpus: &Corpus,
    run_id: &str,
    conversation_id: &str,
    format: WireFormat,
    out: &mut Vec<u8>,
) -> Result<usize, LceError> {
    out.clear();
    // One parser for the stream, as the line decoders hold: consecutive
    // events share their run and conversation ids.
    let mut parser = EventParser::new();
    let lines = corpus
        .lines()
        .map(move |l| parser.parse_slice(l).map_err(LceError::from));
    let coordinator = Coordinator::new(CoordinatorOptions::new(run_id, conversation_id));
    let mut frames = lce_stream::source(futures::stream::iter(lines))
        .enforced(coordinator)
        .encoded(WireEncoder::new(format, None));
    rt.block_on(async {
        let mut n = 0;
        while let Some(frame) = frames.next().await {
            out.extend_from_slice(&frame?);
            n += 1;
        }
        Ok(n)
    })
}

/// The naive reference over the same bytes: each line parsed into a
/// `serde_json::Value` and written back compact, one line each, into `out`
/// (cleared first). Returns the number of lines.
pub fn reference(corpus: &Corpus, out: &mut Vec<u8>) -> Result<usize, serde_json::Error> {
    out.clear();
    let mut n = 0;
    for line in corpus.lines() {
        let value: serde_json::Value = serde_json::from_slice(line)?;
        serde_json::to_writer(&mut *out, &value)?;
        out.push(b'\n');
        n += 1;
    }
    Ok(n)
}

/// Runs the pipeline once and panics unless the run went through whole: no
/// coordinator-made error terminal, and the format's end-of-run frame last.
pub fn check_pipeline(rt: &tokio::runtime::Runtime, corpus: &Corpus, format: WireFormat) {
    let (run_id, conversation_id) = corpus.ids();
    let mut out = Vec::new();
    let frames = pipeline(rt, corpus, &run_id, &conversation_id, format, &mut out)
        .unwrap_or_else(|e| panic!("pipeline {format} on {}: {e}", corpus.mix.name()));
    let text = String::from_utf8_lossy(&out);
    for bad in [
        "harness_event_invalid",
        "provider_stream_closed",
        "thread_durability_uncertain",
    ] {
        assert!(
            !text.contains(bad),
            "pipeline {format} on {}: the coordinator ended the run with {bad}",
            corpus.mix.name()
        );
    }
    let last = text.trim_end().rsplit("\n\n").next().unwrap_or("");
    let ok = match format {
        WireFormat::Custom => last.starts_with("event: done"),
        _ => last.contains("RUN_FINISHED"),
    };
    assert!(
        ok && frames > 0,
        "pipeline {format} on {}: last frame is not the run's end: {last:.200}",
        corpus.mix.name()
    );
}
