//! The whole pipeline (parse -> coordinator: sanitize, validate, commit ->
//! encode) per format, and in the same group the naive reference: the same
//! lines parsed by `serde_json` into `serde_json::Value` and written back
//! compact. The ratio of the two is the figure the issue asks for.
#![allow(missing_docs)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lce_benches::{
    Mix, check_pipeline, corpus, default_events, pipeline, reference, runtime, throughput_in_bytes,
};
use lce_stream::WireFormat;

fn pipelines(c: &mut Criterion) {
    let n = default_events();
    let rt = runtime();
    for mix in Mix::ALL {
        let corpus = corpus(mix, n);
        let (run_id, conversation_id) = corpus.ids();
        let mut group = c.benchmark_group(format!("pipeline/{}", mix.name()));
        group.throughput(if throughput_in_bytes() {
            Throughput::Bytes(corpus.bytes.len() as u64)
        } else {
            Throughput::Elements(corpus.len() as u64)
        });
        group.sample_size(20);
        let mut out = Vec::with_capacity(corpus.bytes.len() * 2);

        group.bench_function("serde_json-value-reference", |b| {
            b.iter(|| black_box(reference(&corpus, &mut out).unwrap()));
        });
        for format in WireFormat::ALL {
            check_pipeline(&rt, &corpus, format);
            group.bench_function(format.name(), |b| {
                b.iter(|| {
                    black_box(
                        pipeline(&rt, &corpus, &run_id, &conversation_id, format, &mut out)
                            .unwrap(),
                    )
                });
            });
        }
        group.finish();
    }
}

criterion_group!(benches, pipelines);
criterion_main!(benches);
