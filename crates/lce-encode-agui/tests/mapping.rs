//! Mapping rules of both dialects on small hand-written streams, including
//! the byte examples of wire-formats §4.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::BytesMut;
use lce_core::{FrameEncoder, WireFormat};
use lce_encode_agui::{AguiOptions, AguiSseEncoder, EncodeError};
use lce_testkit::RunBuilder;
use lce_types::Event;

/// The timestamp text `2026-08-17T00:00:{ss}Z`: `ss` (`SS.fff`) seconds
/// after 2026-08-17T00:00:00Z (= 1786924800), the instant the expected
/// frames count from; for [`RunBuilder::set_timestamp`], where events are
/// not a whole second apart (else [`by_seconds`]).
fn secs(ss: &str) -> String {
    format!("2026-08-17T00:00:{ss}Z")
}

/// A run `run_id` of `conv-1` whose clock starts at 2026-08-17T00:00:00Z
/// (= 1786924800, the instant the expected frames count from) and moves one
/// second per event: the run's event `n` is at `n` seconds.
fn by_seconds(run_id: &str) -> RunBuilder {
    let mut run = RunBuilder::new(run_id, "conv-1");
    run.set_time_ms(1_786_924_800_000).set_step_ms(1000);
    run
}

/// The `agui-v1` frame of [`by_seconds`]' `run.started` of `run-1`.
const V1_RUN_STARTED: &str = r#"{"type":"RUN_STARTED","timestamp":1786924800000,"threadId":"conv-1","runId":"run-1","protocolVersion":"1.0"}"#;

/// The encoder for `format` (`Agui` or `AguiV1`).
fn encoder(format: WireFormat, options: AguiOptions) -> AguiSseEncoder {
    let enc = match format {
        WireFormat::Agui => AguiSseEncoder::da(options),
        WireFormat::AguiV1 => AguiSseEncoder::v1(options),
        WireFormat::Custom => panic!("not an AG-UI format"),
    };
    assert_eq!(enc.format(), format);
    enc
}

/// Encodes `events` through the one encoder trait, as the chain drives it.
fn encode(format: WireFormat, options: AguiOptions, events: &[Event]) -> String {
    let mut enc = encoder(format, options);
    let mut out = BytesMut::new();
    for e in events {
        enc.encode_frame(e, &mut out).unwrap();
    }
    String::from_utf8(out.to_vec()).unwrap()
}

fn da(events: &[Event]) -> String {
    encode(WireFormat::Agui, AguiOptions::default(), events)
}

fn v1(events: &[Event]) -> String {
    encode(WireFormat::AguiV1, AguiOptions::default(), events)
}

/// The `event:` names in order.
fn names(sse: &str) -> Vec<&str> {
    sse.lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect()
}

/// The `data:` JSON of each frame.
fn datas(sse: &str) -> Vec<&str> {
    sse.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect()
}

#[test]
fn wire_formats_section_4_examples() {
    let mut r = RunBuilder::new("run-1", "conv-1");
    let events = [
        r.set_timestamp(secs("00")).run_started(),
        r.set_timestamp(secs("00.2")).text_started("m-1"),
        r.set_timestamp(secs("00.5")).text_delta("m-1", "Café ✓"),
        r.set_timestamp(secs("01")).tool_started("tc-1", "search", r#"{"q":"café"}"#),
        r.set_timestamp(secs("02")).tool_finished("tc-1", "ok"),
        r.set_timestamp(secs("02.5")).tool_started("toolu_9", "delete_file", r#"{"path":"/tmp/a"}"#),
        r.set_timestamp(secs("02.7")).event(
            "interrupt.requested",
            r#"{"interrupt_id":"toolu_9","interrupt_type":"tool_approval","agent_id":"agent-x","tool_approvals":[{"tool_call_id":"toolu_9","tool_name":"delete_file","tool_args":{"path":"/tmp/a"}}]}"#,
        ),
        r.set_timestamp(secs("03")).event(
            "run.interrupted",
            r#"{"interrupt_id":"toolu_9","reason":"tool_approval"}"#,
        ),
    ];
    let out = encode(
        WireFormat::Agui,
        AguiOptions::default().with_agent_name("My Agent"),
        &events,
    );
    let expected = [
        "event: RUN_STARTED\ndata: {\"type\": \"RUN_STARTED\", \"runId\": \"run-1\", \"threadId\": \"conv-1\", \"timestamp\": 1786924800.0}\n\n",
        "event: TEXT_MESSAGE_CONTENT\ndata: {\"type\": \"TEXT_MESSAGE_CONTENT\", \"messageId\": \"m-1\", \"delta\": \"Café ✓\", \"timestamp\": 1786924800.5}\n\n",
        "event: TOOL_CALL_ARGS\ndata: {\"type\": \"TOOL_CALL_ARGS\", \"toolCallId\": \"tc-1\", \"delta\": \"{\\\"q\\\": \\\"caf\\\\u00e9\\\"}\", \"timestamp\": 1786924801.0}\n\n",
        "event: TOOL_CALL_RESULT\ndata: {\"type\": \"TOOL_CALL_RESULT\", \"message_id\": \"tc-1\", \"tool_call_id\": \"tc-1\", \"content\": \"ok\", \"role\": \"tool\", \"timestamp\": 1786924802.0}\n\n",
        "event: RUN_FINISHED\ndata: {\"type\": \"RUN_FINISHED\", \"runId\": \"run-1\", \"threadId\": \"conv-1\", \"outcome\": \"interrupt\", \"interrupt\": {\"id\": \"toolu_9\", \"reason\": \"tool_approval\", \"payload\": {\"tool_name\": \"delete_file\", \"tool_args\": {\"path\": \"/tmp/a\"}, \"allowed_decisions\": [\"approve\", \"edit\", \"reject\"], \"agent\": \"My Agent\"}}, \"timestamp\": 1786924803.0}\n\n",
    ];
    // The whole stream, exactly; `expected` (the §4 examples) are among
    // its frames.
    let whole = [
        r#"{"type": "RUN_STARTED", "runId": "run-1", "threadId": "conv-1", "timestamp": 1786924800.0}"#,
        r#"{"type": "TEXT_MESSAGE_START", "messageId": "m-1", "role": "assistant", "timestamp": 1786924800.2}"#,
        r#"{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1", "delta": "Café ✓", "timestamp": 1786924800.5}"#,
        r#"{"type": "TOOL_CALL_START", "toolCallId": "tc-1", "toolCallName": "search", "timestamp": 1786924801.0}"#,
        r#"{"type": "TOOL_CALL_ARGS", "toolCallId": "tc-1", "delta": "{\"q\": \"caf\\u00e9\"}", "timestamp": 1786924801.0}"#,
        r#"{"type": "TOOL_CALL_RESULT", "message_id": "tc-1", "tool_call_id": "tc-1", "content": "ok", "role": "tool", "timestamp": 1786924802.0}"#,
        r#"{"type": "TOOL_CALL_END", "toolCallId": "tc-1", "timestamp": 1786924802.0}"#,
        r#"{"type": "TOOL_CALL_START", "toolCallId": "toolu_9", "toolCallName": "delete_file", "timestamp": 1786924802.5}"#,
        r#"{"type": "TOOL_CALL_ARGS", "toolCallId": "toolu_9", "delta": "{\"path\": \"/tmp/a\"}", "timestamp": 1786924802.5}"#,
        r#"{"type": "TEXT_MESSAGE_END", "messageId": "m-1", "timestamp": 1786924803.0}"#,
        r#"{"type": "RUN_FINISHED", "runId": "run-1", "threadId": "conv-1", "outcome": "interrupt", "interrupt": {"id": "toolu_9", "reason": "tool_approval", "payload": {"tool_name": "delete_file", "tool_args": {"path": "/tmp/a"}, "allowed_decisions": ["approve", "edit", "reject"], "agent": "My Agent"}}, "timestamp": 1786924803.0}"#,
    ];
    assert_eq!(datas(&out), whole);
    for frame in expected {
        let data = frame.split_once("\ndata: ").unwrap().1.trim_end();
        assert!(whole.contains(&data), "{frame}");
    }
    assert_eq!(
        names(&out),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_RESULT",
            "TOOL_CALL_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            // the open text is closed before the interrupt finish
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ]
    );
    // Event names and data in `event: N\ndata: D\n\n` frames: the bytes.
    let stream: String = names(&out)
        .iter()
        .zip(whole)
        .map(|(n, d)| format!("event: {n}\ndata: {d}\n\n"))
        .collect();
    assert_eq!(out, stream);
    // D15: without the option, the interrupt's agent_id; nothing else changes.
    assert_eq!(
        da(&events),
        out.replace("\"agent\": \"My Agent\"", "\"agent\": \"agent-x\"")
    );
}

#[test]
fn da_namespace_context_only_on_change_and_never_before_text_end() {
    let mut r = by_seconds("run-1");
    let events = [
        r.run_started(),
        r.tool_started("tc-a", "task", "{}"),
        r.namespace_entered("a", "A", "tc-a"),
        r.at(["tc-a"]).text_started("m-a"),
        r.text_delta("m-a", "x"),
        // A warning does not change the announced namespace.
        r.warning("w", "careful"),
        r.text_delta("m-a", "y"),
        r.text_finished("m-a"),
        r.root().namespace_exited("a", "tc-a"),
        r.tool_finished("tc-a", "done"),
        r.run_finished(),
    ];
    let out = da(&events);
    assert_eq!(
        names(&out),
        [
            "RUN_STARTED",
            // released at namespace.entered, at root: no announcement
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "CUSTOM",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "CUSTOM",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "CUSTOM",
            "TOOL_CALL_RESULT",
            "TOOL_CALL_END",
            "RUN_FINISHED",
        ]
    );
    let d = datas(&out);
    assert_eq!(
        d[3],
        r#"{"type": "CUSTOM", "name": "NAMESPACE_CONTEXT", "value": {"namespace": ["tc-a"]}, "timestamp": 1786924803.0}"#
    );
    assert_eq!(
        d[6],
        r#"{"type": "CUSTOM", "name": "WARNING", "value": {"message": "careful", "namespace": []}, "timestamp": 1786924805.0}"#
    );
    // Back to root: announced, stamped with the tool.finished that caused it.
    assert_eq!(
        d[9],
        r#"{"type": "CUSTOM", "name": "NAMESPACE_CONTEXT", "value": {"namespace": []}, "timestamp": 1786924809.0}"#
    );
    // The streamed `{}` arguments as one TOOL_CALL_ARGS.
    assert_eq!(
        d[2],
        r#"{"type": "TOOL_CALL_ARGS", "toolCallId": "tc-a", "delta": "{}", "timestamp": 1786924801.0}"#
    );
}

#[test]
fn da_rejected_re_emission_is_suppressed_entirely() {
    let mut r = by_seconds("run-1");
    let events = [
        r.run_started(),
        r.tool_started("t-del", "delete_file", r#"{"path":"/x"}"#),
        r.tool_error("t-del", "tool_rejected", "rejected"),
        r.run_finished(),
    ];
    assert_eq!(names(&da(&events)), ["RUN_STARTED", "RUN_FINISHED"]);
    // agui-v1 has no hold: the call and its error are shown.
    let out = v1(&events);
    assert_eq!(
        datas(&out),
        [
            V1_RUN_STARTED,
            r#"{"type":"TOOL_CALL_START","timestamp":1786924801000,"toolCallId":"t-del","toolCallName":"delete_file"}"#,
            r#"{"type":"TOOL_CALL_ARGS","timestamp":1786924801000,"toolCallId":"t-del","delta":"{\"path\":\"/x\"}"}"#,
            r#"{"type":"TOOL_CALL_END","timestamp":1786924802000,"toolCallId":"t-del"}"#,
            r#"{"type":"TOOL_CALL_RESULT","timestamp":1786924802000,"metadata":{"lce":{"error":{"code":"tool_rejected"}}},"messageId":"t-del","toolCallId":"t-del","content":"ERROR: rejected","role":"tool"}"#,
            r#"{"type":"RUN_FINISHED","timestamp":1786924803000,"threadId":"conv-1","runId":"run-1","outcome":{"type":"success"}}"#,
        ]
    );
}

#[test]
fn da_streamed_arguments_become_one_args_frame_with_python_numbers() {
    let mut r = RunBuilder::new("run-1", "conv-1");
    let mut events = vec![
        r.set_timestamp(secs("00")).run_started(),
        r.set_timestamp(secs("01")).tool_started("t", "calc", "{}"),
    ];
    for piece in [
        r#"{"a": 1E2, "#,
        r#""b": 1e16, "c": "é"#,
        r#"", "d": 100000000000000000000}"#,
    ] {
        let d = serde_json::to_string(piece).unwrap();
        events.push(r.set_timestamp(secs("02")).event(
            "tool.arguments.delta",
            &format!(r#"{{"tool_call_id":"t","delta":{d}}}"#),
        ));
    }
    events.push(r.set_timestamp(secs("03")).tool_finished("t", ""));
    events.push(r.set_timestamp(secs("04")).run_finished());
    let out = da(&events);
    // Empty result: no TOOL_CALL_RESULT, only the end.
    assert_eq!(
        names(&out),
        [
            "RUN_STARTED",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "RUN_FINISHED"
        ]
    );
    assert_eq!(
        datas(&out)[2],
        r#"{"type": "TOOL_CALL_ARGS", "toolCallId": "t", "delta": "{\"a\": 100.0, \"b\": 1e+16, \"c\": \"\\u00e9\", \"d\": 100000000000000000000}", "timestamp": 1786924801.0}"#
    );
    // agui-v1: every delta as it came (compact text is not re-laid); an
    // empty result is still a TOOL_CALL_RESULT.
    assert_eq!(
        datas(&v1(&events)),
        [
            V1_RUN_STARTED,
            r#"{"type":"TOOL_CALL_START","timestamp":1786924801000,"toolCallId":"t","toolCallName":"calc"}"#,
            r#"{"type":"TOOL_CALL_ARGS","timestamp":1786924802000,"toolCallId":"t","delta":"{\"a\": 1E2, "}"#,
            r#"{"type":"TOOL_CALL_ARGS","timestamp":1786924802000,"toolCallId":"t","delta":"\"b\": 1e16, \"c\": \"é"}"#,
            r#"{"type":"TOOL_CALL_ARGS","timestamp":1786924802000,"toolCallId":"t","delta":"\", \"d\": 100000000000000000000}"}"#,
            r#"{"type":"TOOL_CALL_END","timestamp":1786924803000,"toolCallId":"t"}"#,
            r#"{"type":"TOOL_CALL_RESULT","timestamp":1786924803000,"messageId":"t","toolCallId":"t","content":"","role":"tool"}"#,
            r#"{"type":"RUN_FINISHED","timestamp":1786924804000,"threadId":"conv-1","runId":"run-1","outcome":{"type":"success"}}"#,
        ]
    );
}

#[test]
fn da_error_result_is_truncated_and_run_error_leaves_text_open() {
    let mut r = by_seconds("run-1");
    let long = "é".repeat(2005);
    let events = [
        r.run_started(),
        r.text_started("m"),
        r.tool_started("t", "x", r#"{"k":1}"#),
        r.event("tool.error", &format!(
                r#"{{"tool_call_id":"t","code":"tool_error","message":"{long}","retryable":true}}"#
            ),
        ),
        r.event(
            "run.error",
            r#"{"code":"internal","message":"Agent failed.","retryable":false,"side_effect_status":"possible"}"#,
        ),
    ];
    let out = da(&events);
    assert_eq!(
        names(&out),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_RESULT",
            "TOOL_CALL_END",
            "RUN_ERROR"
        ]
    );
    let d = datas(&out);
    // 2000 characters shown: `ERROR: ` and 1993 of the 2005, then DA's
    // marker of the 12 left out.
    assert_eq!(
        d[4],
        format!(
            r#"{{"type": "TOOL_CALL_RESULT", "message_id": "t", "tool_call_id": "t", "content": "ERROR: {}...[12 chars]", "role": "tool", "timestamp": 1786924803.0}}"#,
            "é".repeat(1993)
        )
    );
    assert_eq!(
        d[6],
        r#"{"type": "RUN_ERROR", "message": "Agent failed.", "timestamp": 1786924804.0}"#
    );
    // agui-v1: RUN_ERROR with code; internal fields never appear.
    let out = v1(&events);
    assert_eq!(
        datas(&out),
        [
            V1_RUN_STARTED.to_owned(),
            r#"{"type":"TEXT_MESSAGE_START","timestamp":1786924801000,"messageId":"m","role":"assistant"}"#.to_owned(),
            r#"{"type":"TOOL_CALL_START","timestamp":1786924802000,"toolCallId":"t","toolCallName":"x"}"#.to_owned(),
            r#"{"type":"TOOL_CALL_ARGS","timestamp":1786924802000,"toolCallId":"t","delta":"{\"k\":1}"}"#.to_owned(),
            r#"{"type":"TOOL_CALL_END","timestamp":1786924803000,"toolCallId":"t"}"#.to_owned(),
            format!(
                r#"{{"type":"TOOL_CALL_RESULT","timestamp":1786924803000,"metadata":{{"lce":{{"error":{{"code":"tool_error"}}}}}},"messageId":"t","toolCallId":"t","content":"ERROR: {long}","role":"tool"}}"#
            ),
            r#"{"type":"RUN_ERROR","timestamp":1786924804000,"message":"Agent failed.","code":"internal"}"#.to_owned(),
        ]
    );
}

#[test]
fn da_cancel_releases_held_starts_then_goes_silent() {
    let mut r = by_seconds("run-1");
    let events = [
        r.run_started(),
        r.text_started("m"),
        r.tool_started("t", "x", r#"{"k":1}"#),
        r.event(
            "run.cancelled",
            r#"{"reason":"disconnect","side_effect_status":"none"}"#,
        ),
        r.warning("late", "after the end"),
    ];
    assert_eq!(
        names(&da(&events)),
        [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS"
        ]
    );
    // agui-v1: everything open is closed, then a cancelled outcome.
    let out = v1(&events);
    let d = datas(&out);
    assert_eq!(
        &d[d.len() - 3..],
        [
            r#"{"type":"TEXT_MESSAGE_END","timestamp":1786924803000,"messageId":"m"}"#,
            r#"{"type":"TOOL_CALL_END","timestamp":1786924803000,"toolCallId":"t"}"#,
            r#"{"type":"RUN_FINISHED","timestamp":1786924803000,"threadId":"conv-1","runId":"run-1","outcome":{"type":"cancelled"}}"#,
        ]
    );
}

#[test]
fn da_open_texts_closed_in_opening_order_at_finish() {
    let mut r = by_seconds("run-1");
    let events = [
        r.run_started(),
        r.text_started("m2"),
        r.text_started("m1"),
        r.run_finished(),
    ];
    let out = da(&events);
    let d = datas(&out);
    assert_eq!(
        &d[3..],
        [
            r#"{"type": "TEXT_MESSAGE_END", "messageId": "m2", "timestamp": 1786924803.0}"#,
            r#"{"type": "TEXT_MESSAGE_END", "messageId": "m1", "timestamp": 1786924803.0}"#,
            r#"{"type": "RUN_FINISHED", "runId": "run-1", "threadId": "conv-1", "outcome": "success", "timestamp": 1786924803.0}"#,
        ]
    );
}

#[test]
fn incomplete_arguments_are_an_error_and_write_nothing() {
    let mut r = by_seconds("run-1");
    let start = r.run_started();
    let tool = r.tool_started("t", "x", "{}");
    let delta = r.event(
        "tool.arguments.delta",
        r#"{"tool_call_id":"t","delta":"{\"k\":"}"#,
    );
    let fin = r.tool_finished("t", "x");
    let mut enc = AguiSseEncoder::da(AguiOptions::default());
    let mut out = BytesMut::new();
    for e in [&start, &tool, &delta] {
        enc.encode_event(e, &mut out).unwrap();
    }
    let before = out.len();
    let err = enc.encode_event(&fin, &mut out).unwrap_err();
    assert!(matches!(
        err,
        EncodeError::IncompleteArguments { sequence: 3 }
    ));
    assert_eq!(out.len(), before);
}

#[test]
fn release_ready_lets_complete_starts_out_while_the_tool_runs() {
    let mut r = by_seconds("run-1");
    let mut enc = AguiSseEncoder::da(AguiOptions::default());
    let mut out = BytesMut::new();
    enc.encode_frame(&r.run_started(), &mut out).unwrap();
    enc.encode_frame(&r.tool_started("t", "x", r#"{"k":1}"#), &mut out)
        .unwrap();
    assert!(enc.has_held());
    let before = out.len();
    // Through the encoder trait, as the chain's `encoded` stage calls it
    // when the upstream waits.
    enc.on_idle(&mut out).unwrap();
    assert!(!enc.has_held());
    let released = String::from_utf8(out[before..].to_vec()).unwrap();
    assert_eq!(names(&released), ["TOOL_CALL_START", "TOOL_CALL_ARGS"]);
    // The finish later brings only the result pair.
    let before = out.len();
    enc.encode_frame(&r.tool_finished("t", "ok"), &mut out)
        .unwrap();
    let rest = String::from_utf8(out[before..].to_vec()).unwrap();
    assert_eq!(names(&rest), ["TOOL_CALL_RESULT", "TOOL_CALL_END"]);
}

#[test]
fn v1_reasoning_usage_and_result_ref() {
    let mut r = by_seconds("run-1");
    let events = [
        r.run_started(),
        r.reasoning_started("r1"),
        r.reasoning_delta("r1", ""),
        r.reasoning_delta("r1", "think"),
        r.reasoning_finished("r1"),
        r.event(
            "tool.started",
            r#"{"tool_call_id":"t","tool_name":"x","arguments":{"k":1.50},"parent_message_id":"m0"}"#,
        ),
        r.event(
            "tool.finished",
            r#"{"tool_call_id":"t","result":"ok","result_ref":"res-9"}"#,
        ),
        r.usage_updated(9007199254740992, 5),
        r.event(
            "provider.metadata",
            r#"{"provider":"p","model":"m","metadata":{"request_id":"secret-ish"}}"#,
        ),
        r.run_finished(),
    ];
    let out = v1(&events);
    assert_eq!(
        datas(&out),
        [
            V1_RUN_STARTED,
            r#"{"type":"REASONING_START","timestamp":1786924801000,"messageId":"r1"}"#,
            r#"{"type":"REASONING_MESSAGE_START","timestamp":1786924801000,"messageId":"r1","role":"reasoning"}"#,
            r#"{"type":"REASONING_MESSAGE_CONTENT","timestamp":1786924803000,"messageId":"r1","delta":"think"}"#,
            r#"{"type":"REASONING_MESSAGE_END","timestamp":1786924804000,"messageId":"r1"}"#,
            r#"{"type":"REASONING_END","timestamp":1786924804000,"messageId":"r1"}"#,
            r#"{"type":"TOOL_CALL_START","timestamp":1786924805000,"toolCallId":"t","toolCallName":"x","parentMessageId":"m0"}"#,
            r#"{"type":"TOOL_CALL_ARGS","timestamp":1786924805000,"toolCallId":"t","delta":"{\"k\":1.50}"}"#,
            r#"{"type":"TOOL_CALL_END","timestamp":1786924806000,"toolCallId":"t"}"#,
            r#"{"type":"TOOL_CALL_RESULT","timestamp":1786924806000,"messageId":"res-9","toolCallId":"t","content":"ok","role":"tool"}"#,
            // An input count above 2^53-1 cannot be written validly: omitted.
            r#"{"type":"RUN_FINISHED","timestamp":1786924809000,"threadId":"conv-1","runId":"run-1","outcome":{"type":"success"},"usage":[{"provider":"p","model":"m","outputTokens":5}]}"#,
        ]
    );
    assert!(!out.contains("secret-ish"));
    // DA: reasoning, usage and metadata produce no frames.
    assert_eq!(
        names(&da(&events)),
        [
            "RUN_STARTED",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_RESULT",
            "TOOL_CALL_END",
            "RUN_FINISHED"
        ]
    );
}

#[test]
fn v1_nested_subagents_and_suspension_close_everything_for_verify_events() {
    let mut r = by_seconds("run-1");
    let events = [
        r.run_started(),
        r.event(
            "tool.started",
            r#"{"tool_call_id":"tc-a","tool_name":"task","arguments":{},"parent_message_id":"m0"}"#,
        ),
        r.namespace_entered("a", "A", "tc-a"),
        r.at(["tc-a"]).tool_started("tc-b", "task", "{}"),
        r.namespace_entered("b", "B", "tc-b"),
        r.at(["tc-a", "tc-b"]).event(
            "interrupt.requested",
            r#"{"interrupt_id":"i-1","interrupt_type":"form_input","agent_id":"b","prompt":"Why?","fields":[{"field_name":"why","field_type":"text"}]}"#,
        ),
        r.at(["tc-a"]).event(
            "namespace.exited",
            r#"{"agent_id":"b","parent_tool_call_id":"tc-b","outcome":"interrupted"}"#,
        ),
        r.root().event(
            "run.interrupted",
            r#"{"interrupt_id":"i-1","reason":"human_input"}"#,
        ),
    ];
    let out = encode(
        WireFormat::AguiV1,
        AguiOptions::default().with_agent_name("Root"),
        &events,
    );
    assert_eq!(
        datas(&out),
        [
            V1_RUN_STARTED,
            r#"{"type":"TOOL_CALL_START","timestamp":1786924801000,"toolCallId":"tc-a","toolCallName":"task","parentMessageId":"m0"}"#,
            r#"{"type":"SUBAGENT_STARTED","timestamp":1786924802000,"subagentRunId":"tc-a","name":"A","parentToolCallId":"tc-a","parentMessageId":"m0"}"#,
            r#"{"type":"TOOL_CALL_START","timestamp":1786924803000,"subagentRunId":"tc-a","toolCallId":"tc-b","toolCallName":"task"}"#,
            r#"{"type":"SUBAGENT_STARTED","timestamp":1786924804000,"subagentRunId":"tc-b","name":"B","parentSubagentRunId":"tc-a","parentToolCallId":"tc-b"}"#,
            r#"{"type":"SUBAGENT_FINISHED","timestamp":1786924806000,"subagentRunId":"tc-b","outcome":{"type":"suspended","interruptIds":["i-1"]}}"#,
            r#"{"type":"TOOL_CALL_END","timestamp":1786924807000,"subagentRunId":"tc-a","toolCallId":"tc-b"}"#,
            r#"{"type":"SUBAGENT_FINISHED","timestamp":1786924807000,"subagentRunId":"tc-a","outcome":{"type":"suspended"}}"#,
            r#"{"type":"TOOL_CALL_END","timestamp":1786924807000,"toolCallId":"tc-a"}"#,
            r#"{"type":"RUN_FINISHED","timestamp":1786924807000,"threadId":"conv-1","runId":"run-1","outcome":{"type":"interrupt","interrupts":[{"id":"i-1","reason":"human_input","message":"Why?","metadata":{"lce":{"interruptId":"i-1","agentId":"b","agent":"Root","fields":[{"field_name":"why","field_type":"text"}]}},"subagentRunId":"tc-b"}]}}"#,
        ]
    );
}

#[test]
fn v1_subagent_error_and_warning_in_subagent() {
    let mut r = by_seconds("run-1");
    let events = [
        r.run_started(),
        r.tool_started("tc-a", "task", r#"{"x":"y"}"#),
        r.namespace_entered("a", "A", "tc-a"),
        r.at(["tc-a"]).event(
            "warning",
            r#"{"code":"slow","message":"Slow.","details":{"ms":1E3}}"#,
        ),
        r.root().event(
            "namespace.exited",
            r#"{"agent_id":"a","parent_tool_call_id":"tc-a","outcome":"error"}"#,
        ),
        r.tool_error("tc-a", "subagent_failed", "Child failed."),
        r.run_finished(),
    ];
    let d: Vec<String> = datas(&v1(&events)).into_iter().map(str::to_owned).collect();
    assert_eq!(
        d[4],
        r#"{"type":"CUSTOM","timestamp":1786924803000,"subagentRunId":"tc-a","name":"WARNING","value":{"code":"slow","message":"Slow.","details":{"ms":1E3}}}"#
    );
    assert_eq!(
        d[5],
        r#"{"type":"SUBAGENT_ERROR","timestamp":1786924804000,"subagentRunId":"tc-a","message":"The subagent failed.","code":"subagent_error"}"#
    );
}

#[test]
fn multi_approval_interrupts_keep_every_call() {
    let mut r = by_seconds("run-1");
    let events = [
        r.run_started(),
        r.event(
            "interrupt.requested",
            r#"{"interrupt_id":"i","interrupt_type":"tool_approval","agent_id":"ag","tool_approvals":[{"tool_call_id":"c1","tool_name":"a","tool_args":{"n":1}},{"tool_call_id":"c2","tool_name":"b","tool_args":{"s":"ü"},"allowed_decisions":["approve","reject"]}]}"#,
        ),
        r.event(
            "run.interrupted",
            r#"{"interrupt_id":"i","reason":"tool_approval"}"#,
        ),
    ];
    assert_eq!(
        datas(&v1(&events)),
        [
            V1_RUN_STARTED,
            r#"{"type":"RUN_FINISHED","timestamp":1786924802000,"threadId":"conv-1","runId":"run-1","outcome":{"type":"interrupt","interrupts":[{"id":"i:c1","reason":"tool_approval","toolCallId":"c1","metadata":{"lce":{"interruptId":"i","agentId":"ag","agent":"ag","toolName":"a","toolArgs":{"n":1},"allowedDecisions":["approve","edit","reject"]}}},{"id":"i:c2","reason":"tool_approval","toolCallId":"c2","metadata":{"lce":{"interruptId":"i","agentId":"ag","agent":"ag","toolName":"b","toolArgs":{"s":"ü"},"allowedDecisions":["approve","reject"]}}}]}}"#,
        ]
    );
    assert_eq!(
        datas(&da(&events)),
        [
            r#"{"type": "RUN_STARTED", "runId": "run-1", "threadId": "conv-1", "timestamp": 1786924800.0}"#,
            r#"{"type": "RUN_FINISHED", "runId": "run-1", "threadId": "conv-1", "outcome": "interrupt", "interrupt": {"id": "i", "reason": "tool_approval", "payload": {"tool_name": "a", "tool_args": {"n": 1}, "allowed_decisions": ["approve", "edit", "reject"], "agent": "ag", "tool_approvals": [{"tool_name": "a", "tool_args": {"n": 1}, "tool_call_id": "c1", "allowed_decisions": ["approve", "edit", "reject"]}, {"tool_name": "b", "tool_args": {"s": "ü"}, "tool_call_id": "c2", "allowed_decisions": ["approve", "reject"]}]}}, "timestamp": 1786924802.0}"#,
        ]
    );
}

/// A frame of a text or a call carries the subagent the text or call was
/// opened in (its opener's), whichever namespace the later event names,
/// with other texts and calls open at the same time.
#[test]
fn v1_text_and_call_frames_carry_their_openers_subagent() {
    let mut r = by_seconds("run-1");
    let events = [
        r.run_started(),
        r.tool_started("tc-a", "task", "{}"),
        r.namespace_entered("a", "A", "tc-a"),
        r.root().text_started("m-root"),
        r.at(["tc-a"]).text_started("m-a"),
        r.tool_started("t-in", "x", "{}"),
        r.root().tool_started("t-root", "y", "{}"),
        r.at(["tc-a"]).text_delta("m-a", "x"),
        r.root().text_delta("m-root", "y"),
        // Named at the root, but opened in `tc-a`.
        r.tool_arguments_delta("t-in", r#"{"k":1}"#),
        r.tool_arguments_delta("t-root", r#"{"j":2}"#),
        r.run_finished(),
    ];
    assert_eq!(
        datas(&v1(&events)),
        [
            V1_RUN_STARTED,
            r#"{"type":"TOOL_CALL_START","timestamp":1786924801000,"toolCallId":"tc-a","toolCallName":"task"}"#,
            r#"{"type":"SUBAGENT_STARTED","timestamp":1786924802000,"subagentRunId":"tc-a","name":"A","parentToolCallId":"tc-a"}"#,
            r#"{"type":"TEXT_MESSAGE_START","timestamp":1786924803000,"messageId":"m-root","role":"assistant"}"#,
            r#"{"type":"TEXT_MESSAGE_START","timestamp":1786924804000,"subagentRunId":"tc-a","messageId":"m-a","role":"assistant"}"#,
            r#"{"type":"TOOL_CALL_START","timestamp":1786924805000,"subagentRunId":"tc-a","toolCallId":"t-in","toolCallName":"x"}"#,
            r#"{"type":"TOOL_CALL_START","timestamp":1786924806000,"toolCallId":"t-root","toolCallName":"y"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","timestamp":1786924807000,"subagentRunId":"tc-a","messageId":"m-a","delta":"x"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","timestamp":1786924808000,"messageId":"m-root","delta":"y"}"#,
            r#"{"type":"TOOL_CALL_ARGS","timestamp":1786924809000,"subagentRunId":"tc-a","toolCallId":"t-in","delta":"{\"k\":1}"}"#,
            r#"{"type":"TOOL_CALL_ARGS","timestamp":1786924810000,"toolCallId":"t-root","delta":"{\"j\":2}"}"#,
            // Closed at the run's end: texts in opening order, then the
            // calls and subagents from the innermost out.
            r#"{"type":"TEXT_MESSAGE_END","timestamp":1786924811000,"messageId":"m-root"}"#,
            r#"{"type":"TEXT_MESSAGE_END","timestamp":1786924811000,"subagentRunId":"tc-a","messageId":"m-a"}"#,
            r#"{"type":"TOOL_CALL_END","timestamp":1786924811000,"subagentRunId":"tc-a","toolCallId":"t-in"}"#,
            r#"{"type":"SUBAGENT_FINISHED","timestamp":1786924811000,"subagentRunId":"tc-a","outcome":{"type":"success"}}"#,
            r#"{"type":"TOOL_CALL_END","timestamp":1786924811000,"toolCallId":"tc-a"}"#,
            r#"{"type":"TOOL_CALL_END","timestamp":1786924811000,"toolCallId":"t-root"}"#,
            r#"{"type":"RUN_FINISHED","timestamp":1786924811000,"threadId":"conv-1","runId":"run-1","outcome":{"type":"success"}}"#,
        ]
    );
}

/// `namespace.exited` finishes the subagent of its own call (not a sibling
/// in the same namespace), by its outcome: `success` as finished,
/// `cancelled` as a `subagent_cancelled` error.
#[test]
fn v1_sibling_subagents_finish_by_their_own_call_and_outcome() {
    let mut r = by_seconds("run-1");
    let events = [
        r.run_started(),
        r.tool_started("tc-a", "task", "{}"),
        r.tool_started("tc-b", "task", "{}"),
        r.namespace_entered("a", "A", "tc-a"),
        r.namespace_entered("b", "B", "tc-b"),
        r.namespace_exited("b", "tc-b"),
        r.event(
            "namespace.exited",
            r#"{"agent_id":"a","parent_tool_call_id":"tc-a","outcome":"cancelled"}"#,
        ),
        r.run_finished(),
    ];
    assert_eq!(
        datas(&v1(&events)),
        [
            V1_RUN_STARTED,
            r#"{"type":"TOOL_CALL_START","timestamp":1786924801000,"toolCallId":"tc-a","toolCallName":"task"}"#,
            r#"{"type":"TOOL_CALL_START","timestamp":1786924802000,"toolCallId":"tc-b","toolCallName":"task"}"#,
            r#"{"type":"SUBAGENT_STARTED","timestamp":1786924803000,"subagentRunId":"tc-a","name":"A","parentToolCallId":"tc-a"}"#,
            r#"{"type":"SUBAGENT_STARTED","timestamp":1786924804000,"subagentRunId":"tc-b","name":"B","parentToolCallId":"tc-b"}"#,
            r#"{"type":"SUBAGENT_FINISHED","timestamp":1786924805000,"subagentRunId":"tc-b","outcome":{"type":"success"}}"#,
            r#"{"type":"SUBAGENT_ERROR","timestamp":1786924806000,"subagentRunId":"tc-a","message":"The subagent was cancelled.","code":"subagent_cancelled"}"#,
            r#"{"type":"TOOL_CALL_END","timestamp":1786924807000,"toolCallId":"tc-a"}"#,
            r#"{"type":"TOOL_CALL_END","timestamp":1786924807000,"toolCallId":"tc-b"}"#,
            r#"{"type":"RUN_FINISHED","timestamp":1786924807000,"threadId":"conv-1","runId":"run-1","outcome":{"type":"success"}}"#,
        ]
    );
}

/// D7 in both dialects: an empty text delta writes no frame.
#[test]
fn empty_text_deltas_write_nothing() {
    let mut r = RunBuilder::new("run-1", "conv-1");
    let events = [
        r.run_started(),
        r.text_started("m"),
        r.text_delta("m", ""),
        r.text_delta("m", "a"),
        r.text_delta("m", ""),
        r.text_finished("m"),
        r.run_finished(),
    ];
    let expected = [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ];
    assert_eq!(names(&da(&events)), expected);
    let types: Vec<String> = datas(&v1(&events))
        .iter()
        .map(|d| {
            let v: serde_json::Value = serde_json::from_str(d).unwrap();
            v["type"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(types, expected);
}

/// The `usage` of the `RUN_FINISHED` that ends `events` in AG-UI 1.0.
fn v1_usage(events: &[Event]) -> serde_json::Value {
    let out = v1(events);
    let last = *datas(&out).last().unwrap();
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    assert_eq!(v["type"], "RUN_FINISHED");
    v["usage"].clone()
}

/// A `provider.metadata` without a model keeps the model known for the
/// same provider and forgets it for another.
#[test]
fn v1_a_model_is_kept_for_the_same_provider_only() {
    for (second, want) in [
        (
            r#"{"provider":"p","metadata":{}}"#,
            serde_json::json!([{"provider": "p", "model": "m", "inputTokens": 1, "outputTokens": 2}]),
        ),
        (
            r#"{"provider":"q","metadata":{}}"#,
            serde_json::json!([{"provider": "q", "inputTokens": 1, "outputTokens": 2}]),
        ),
        (
            r#"{"provider":"q","model":"n","metadata":{}}"#,
            serde_json::json!([{"provider": "q", "model": "n", "inputTokens": 1, "outputTokens": 2}]),
        ),
    ] {
        let mut r = RunBuilder::new("run-1", "conv-1");
        let events = [
            r.run_started(),
            r.usage_updated(1, 2),
            r.event(
                "provider.metadata",
                r#"{"provider":"p","model":"m","metadata":{}}"#,
            ),
            r.event("provider.metadata", second),
            r.run_finished(),
        ];
        assert_eq!(v1_usage(&events), want, "{second}");
    }
}

/// One encoder for two runs: the second `run.started` starts from nothing
/// (no usage, provider or open spans of the first run carry over).
#[test]
fn v1_a_second_run_starts_from_nothing() {
    let mut first = RunBuilder::new("run-1", "conv-1");
    let mut second = by_seconds("run-2");
    let events = [
        first.run_started(),
        first.usage_updated(5, 6),
        first.event(
            "provider.metadata",
            r#"{"provider":"p","model":"m","metadata":{}}"#,
        ),
        first.text_started("m-1"),
        first.run_cancelled(),
        second.run_started(),
        second.event("usage.updated", r#"{"output_tokens":2}"#),
        second.run_finished(),
    ];
    let out = v1(&events);
    let frames = datas(&out);
    assert_eq!(
        frames[frames.len() - 2..],
        [
            r#"{"type":"RUN_STARTED","timestamp":1786924800000,"threadId":"conv-1","runId":"run-2","protocolVersion":"1.0"}"#,
            r#"{"type":"RUN_FINISHED","timestamp":1786924802000,"threadId":"conv-1","runId":"run-2","outcome":{"type":"success"},"usage":[{"outputTokens":2}]}"#,
        ]
    );
}
