//! The DA golden files (`custom`, and `agui` when present) parsed with a real
//! SSE parser (`eventsource-stream`, not our code) give exactly the frames
//! written: one event per frame, each with its event name and one JSON
//! object as data, nothing lost, merged or added.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};

use futures::StreamExt;

fn golden(format: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/golden")
        .join(format);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sse"))
        .collect();
    v.sort();
    v
}

/// Parses `bytes` as an SSE stream fed in chunks of `chunk` bytes.
fn parse(bytes: &[u8], chunk: usize) -> Vec<(String, String)> {
    let chunks: Vec<Result<Vec<u8>, std::convert::Infallible>> =
        bytes.chunks(chunk).map(|c| Ok(c.to_vec())).collect();
    let stream = eventsource_stream::EventStream::new(futures::stream::iter(chunks));
    futures::executor::block_on(stream.collect::<Vec<_>>())
        .into_iter()
        .map(|r| {
            let e = r.unwrap();
            assert!(e.id.is_empty() && e.retry.is_none(), "no id or retry lines");
            (e.event, e.data)
        })
        .collect()
}

fn check(format: &str, names: &[&str]) -> usize {
    let files = golden(format);
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let frames = parse(&bytes, bytes.len().max(1));
        // Re-writing the parsed frames gives back the file: same frames,
        // same order, one `data:` line each.
        let mut rewritten = String::new();
        for (event, data) in &frames {
            assert!(
                names.contains(&event.as_str()),
                "{}: event {event}",
                path.display()
            );
            let v: serde_json::Value = serde_json::from_str(data).unwrap();
            assert!(v.is_object(), "{}: data is an object", path.display());
            rewritten.push_str(&format!("event: {event}\ndata: {data}\n\n"));
        }
        assert_eq!(rewritten.as_bytes(), &bytes[..], "{}", path.display());
        // Byte-at-a-time delivery (split inside UTF-8 and inside `\n\n`)
        // parses the same.
        assert_eq!(parse(&bytes, 1), frames, "{}", path.display());
    }
    files.len()
}

#[test]
fn custom_golden_parses_into_the_frames_written() {
    let n = check(
        "custom",
        &[
            "content",
            "tool_start",
            "tool_end",
            "warning",
            "input_required",
            "error",
            "done",
        ],
    );
    assert!(n > 0, "no custom golden files");
}

#[test]
fn agui_golden_parses_into_the_frames_written() {
    check(
        "agui",
        &[
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_RESULT",
            "TOOL_CALL_END",
            "CUSTOM",
            "RUN_FINISHED",
            "RUN_ERROR",
        ],
    );
}
