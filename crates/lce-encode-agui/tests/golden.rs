//! Both dialects' output parses with a real SSE parser into exactly the
//! frames written, for every scenario, and equals the scenario's golden
//! bytes.
//!
//! The golden files themselves are the bytes of the whole pipeline
//! (sanitizer and coordinator included), so they are blessed in one place:
//! `crates/lce-cli/tests/golden.rs` (rewrite with `cargo xtask bless`). Here
//! the encoder alone is held to them, for the scenarios where it alone
//! writes them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};

use bytes::BytesMut;
use futures::StreamExt;
use lce_core::WireFormat;
use lce_encode_agui::{AguiOptions, AguiSseEncoder};
use lce_types::EventLines;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn scenarios() -> Vec<PathBuf> {
    let dir = root().join("scenarios");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    files
}

fn encode(path: &Path, format: WireFormat) -> Vec<u8> {
    let bytes = fs::read(path).unwrap();
    let mut enc = match format {
        WireFormat::Agui => AguiSseEncoder::da(AguiOptions::default()),
        WireFormat::AguiV1 => AguiSseEncoder::v1(AguiOptions::default()),
        WireFormat::Custom => panic!("not an AG-UI format"),
    };
    assert_eq!(enc.format(), format);
    let mut out = BytesMut::new();
    for (i, item) in EventLines::new(&bytes[..]).enumerate() {
        let event = item
            .unwrap()
            .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
        enc.encode_event(&event, &mut out)
            .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
    }
    out.to_vec()
}

/// One frame as written: (event name, data).
fn split_frames(bytes: &[u8], with_event_line: bool) -> Vec<(String, String)> {
    let text = std::str::from_utf8(bytes).unwrap();
    // Every scenario writes frames, each ending in a blank line.
    assert!(text.ends_with("\n\n"), "{text}");
    assert!(!text.contains('\r'));
    text.split_terminator("\n\n")
        .map(|frame| {
            let lines: Vec<&str> = frame.split('\n').collect();
            if with_event_line {
                assert_eq!(lines.len(), 2, "frame {frame:?}");
                let name = lines[0].strip_prefix("event: ").unwrap();
                let data = lines[1].strip_prefix("data: ").unwrap();
                (name.to_owned(), data.to_owned())
            } else {
                assert_eq!(lines.len(), 1, "frame {frame:?}");
                (
                    "message".to_owned(),
                    lines[0].strip_prefix("data: ").unwrap().to_owned(),
                )
            }
        })
        .collect()
}

/// Parses with the `eventsource-stream` crate, feeding the bytes in small
/// chunks (splitting frames and UTF-8 sequences).
fn parse_sse(bytes: &[u8]) -> Vec<(String, String)> {
    let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = bytes
        .chunks(7)
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
        .collect();
    let stream = eventsource_stream::EventStream::new(futures::stream::iter(chunks));
    futures::executor::block_on(stream.collect::<Vec<_>>())
        .into_iter()
        .map(|ev| {
            let ev = ev.unwrap();
            (ev.event, ev.data)
        })
        .collect()
}

fn check_parse(format: WireFormat) {
    for scenario in scenarios() {
        let bytes = encode(&scenario, format);
        let written = split_frames(&bytes, format == WireFormat::Agui);
        let parsed = parse_sse(&bytes);
        assert_eq!(parsed, written, "{}", scenario.display());
        for (name, data) in &written {
            let v: serde_json::Value = serde_json::from_str(data)
                .unwrap_or_else(|e| panic!("{}: {e}: {data}", scenario.display()));
            let ty = v.get("type").and_then(|t| t.as_str()).unwrap();
            if format == WireFormat::Agui {
                assert_eq!(ty, name);
                assert!(v.get("timestamp").unwrap().is_f64(), "{data}");
            } else {
                assert!(v.get("timestamp").unwrap().is_i64(), "{data}");
            }
        }
    }
}

#[test]
fn agui_parses_with_a_real_sse_parser() {
    check_parse(WireFormat::Agui);
}

#[test]
fn agui_v1_parses_with_a_real_sse_parser() {
    check_parse(WireFormat::AguiV1);
}

/// The scenario whose events the sanitizer changes (control characters in
/// text become escapes it rewrites), so its golden bytes are not the
/// encoder's alone.
const SANITIZED: &str = "json-escapes-in-text";

/// The encoder alone writes each scenario's golden bytes, in both dialects:
/// the scenarios are valid runs, so the coordinator adds nothing, and the
/// sanitizer leaves all but [`SANITIZED`] as they are. (The golden files
/// are the whole pipeline's bytes and are blessed in
/// `crates/lce-cli/tests/golden.rs`; this is the crate's own check of its
/// share of them.)
#[test]
fn the_encoder_alone_writes_the_golden_bytes() {
    for format in [WireFormat::Agui, WireFormat::AguiV1] {
        let dir = root().join("golden").join(format.name());
        for scenario in scenarios() {
            let stem = scenario.file_stem().unwrap().to_str().unwrap();
            let golden = dir.join(format!("{stem}.sse"));
            let want = fs::read(&golden).unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
            let got = encode(&scenario, format);
            if stem == SANITIZED {
                assert_ne!(got, want, "{stem} is no longer changed by the sanitizer");
            } else {
                assert!(
                    got == want,
                    "{}: the encoder's bytes differ from {}",
                    scenario.display(),
                    golden.display()
                );
            }
        }
    }
}
