//! Latency: the time from one canonical line arriving to its SSE bytes, in a
//! steady stream (the events of a `mixed` run, one after another, the run
//! restarted at its end). Per event: parse, sanitize, validate (adapter
//! mode, as the coordinator does), encode.
//!
//! Criterion reports the distribution of its sample means; before that, the
//! bench times every single event with `Instant` over two passes of the
//! corpus and prints percentiles, overall and for the common event types
//! (the `Instant` pair itself costs some 20-40 ns).
#![allow(missing_docs)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lce_benches::{Mix, corpus, default_events};
use lce_sanitize::{Limits, Sanitizer};
use lce_stream::{FrameEncoder, WireEncoder, WireFormat};
use lce_types::Event;
use lce_validate::{Mode, RunValidator, ValidatorOptions};

/// One stream, fed one line at a time.
struct Steady<'a> {
    lines: Vec<&'a [u8]>,
    next: usize,
    format: WireFormat,
    sanitizer: Sanitizer,
    validator: RunValidator,
    encoder: WireEncoder,
    out: BytesMut,
}

fn validator() -> RunValidator {
    RunValidator::new(ValidatorOptions::new().mode(Mode::Adapter))
}

impl<'a> Steady<'a> {
    fn new(lines: Vec<&'a [u8]>, format: WireFormat) -> Self {
        Steady {
            lines,
            next: 0,
            format,
            sanitizer: Sanitizer::new(Limits::default()),
            validator: validator(),
            encoder: WireEncoder::new(format, None),
            out: BytesMut::with_capacity(64 * 1024),
        }
    }

    /// The line [`step`](Self::step) handles next, restarting the run at its end.
    fn line(&mut self) -> &'a [u8] {
        if self.next == self.lines.len() {
            self.next = 0;
            self.validator = validator();
            self.encoder = WireEncoder::new(self.format, None);
        }
        let line = self.lines[self.next];
        self.next += 1;
        line
    }

    /// One event through; returns the bytes written for it.
    fn step(&mut self, line: &[u8]) -> (lce_types::EventType, usize) {
        let event = Event::from_slice(line).unwrap();
        let event = self.sanitizer.sanitize(event).unwrap().event;
        self.validator.push(&event).unwrap();
        self.encoder.encode_frame(&event, &mut self.out).unwrap();
        let n = self.out.len();
        self.out.clear();
        (event.event_type(), n)
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn report(format: WireFormat, lines: &[&[u8]]) {
    let mut s = Steady::new(lines.to_vec(), format);
    let mut all = Vec::with_capacity(lines.len() * 2);
    let mut by_type: BTreeMap<&'static str, Vec<Duration>> = BTreeMap::new();
    // A warm-up pass, then two timed passes.
    for _ in 0..lines.len() {
        let line = s.line();
        black_box(s.step(line));
    }
    for _ in 0..2 * lines.len() {
        let line = s.line();
        let t = Instant::now();
        let (ty, n) = s.step(line);
        let d = t.elapsed();
        black_box(n);
        all.push(d);
        by_type.entry(ty.as_str()).or_default().push(d);
    }
    let line = |name: &str, v: &mut Vec<Duration>| {
        v.sort_unstable();
        eprintln!(
            "  {name:<22} n={:<7} p50={:>8.2?} p90={:>8.2?} p99={:>8.2?} p99.9={:>8.2?} max={:>8.2?}",
            v.len(),
            percentile(v, 0.50),
            percentile(v, 0.90),
            percentile(v, 0.99),
            percentile(v, 0.999),
            v.last().copied().unwrap_or_default()
        );
    };
    eprintln!("latency per event, {format}, steady mixed stream (parse+sanitize+validate+encode):");
    line("all", &mut all);
    for (ty, v) in &mut by_type {
        if v.len() >= 100 {
            line(ty, v);
        }
    }
}

fn latency(c: &mut Criterion) {
    let corpus = corpus(Mix::Mixed, default_events());
    let lines: Vec<&[u8]> = corpus.lines().collect();
    let mut group = c.benchmark_group("latency/mixed");
    group.throughput(Throughput::Elements(1));
    for format in WireFormat::ALL {
        report(format, &lines);
        let mut s = Steady::new(lines.clone(), format);
        group.bench_function(format!("one-event/{format}"), |b| {
            b.iter(|| {
                let line = s.line();
                black_box(s.step(line))
            });
        });
    }
    group.finish();
}

criterion_group!(benches, latency);
criterion_main!(benches);
