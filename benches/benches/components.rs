//! Each layer alone over a generated corpus: parse, sanitize, validate, and
//! the three encoders. Throughput in events (or bytes with
//! `LCE_BENCH_THROUGHPUT=bytes`).
#![allow(missing_docs)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use bytes::BytesMut;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use lce_benches::{Corpus, Mix, corpus, default_events, throughput_in_bytes};
use lce_encode_agui::{AguiOptions, AguiSseEncoder};
use lce_encode_custom::{CustomOptions, CustomSseEncoder};
use lce_sanitize::{Limits, Sanitizer};
use lce_types::EventParser;
use lce_validate::{RunValidator, ValidatorOptions};

fn throughput(c: &Corpus) -> Throughput {
    if throughput_in_bytes() {
        Throughput::Bytes(c.bytes.len() as u64)
    } else {
        Throughput::Elements(c.len() as u64)
    }
}

fn components(c: &mut Criterion) {
    let n = default_events();
    for mix in Mix::ALL {
        let corpus = corpus(mix, n);
        let events = corpus.events();
        let mut group = c.benchmark_group(format!("components/{}", mix.name()));
        group.throughput(throughput(&corpus));
        group.sample_size(20);

        group.bench_function("parse", |b| {
            b.iter(|| {
                // As the line readers parse: one parser for the stream.
                let mut parser = EventParser::new();
                for line in corpus.lines() {
                    black_box(parser.parse_slice(black_box(line)).unwrap());
                }
            });
        });

        let sanitizer = Sanitizer::new(Limits::default());
        group.bench_function("sanitize", |b| {
            b.iter_batched(
                || events.clone(),
                |events| {
                    events
                        .into_iter()
                        .map(|e| sanitizer.sanitize(e).unwrap())
                        .collect::<Vec<_>>()
                },
                BatchSize::LargeInput,
            );
        });

        group.bench_function("validate", |b| {
            b.iter(|| {
                let mut v = RunValidator::new(ValidatorOptions::new());
                for e in &events {
                    v.push(black_box(e)).unwrap();
                }
                v.finish().unwrap();
            });
        });

        let mut out = BytesMut::with_capacity(corpus.bytes.len() * 2);
        group.bench_function("encode/custom", |b| {
            b.iter(|| {
                out.clear();
                let mut enc = CustomSseEncoder::new(CustomOptions { agent_name: None });
                for e in &events {
                    enc.encode_event(e, &mut out).unwrap();
                }
                black_box(out.len())
            });
        });
        type New = fn(AguiOptions) -> AguiSseEncoder;
        let constructors: [(&str, New); 2] = [
            ("encode/agui", AguiSseEncoder::da),
            ("encode/agui-v1", AguiSseEncoder::v1),
        ];
        for (name, new) in constructors {
            group.bench_function(name, |b| {
                b.iter(|| {
                    out.clear();
                    let mut enc = new(AguiOptions::default());
                    for e in &events {
                        enc.encode_event(e, &mut out).unwrap();
                    }
                    black_box(out.len())
                });
            });
        }
        group.finish();
    }
}

criterion_group!(benches, components);
criterion_main!(benches);
