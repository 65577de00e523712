//! Mapping rules of both dialects on small hand-written streams, including
//! the byte examples of wire-formats §4.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::BytesMut;
use lce_encode_agui::{AguiOptions, AguiSseEncoder, Dialect, EncodeError};
use lce_types::Event;
use tokio_util::codec::Encoder;

/// Builds events of one run; `at` is seconds after 2026-08-17T00:00:00Z
/// (= 1786924800) as `SS.fff`.
struct Run {
    seq: u64,
}

impl Run {
    fn new() -> Self {
        Run { seq: 0 }
    }

    fn ev(&mut self, at: &str, ty: &str, ns: &[&str], data: &str) -> Event {
        let ns: Vec<String> = ns.iter().map(|s| format!("\"{s}\"")).collect();
        let line = format!(
            r#"{{"version":1,"type":"{ty}","run_id":"run-1","conversation_id":"conv-1","sequence":{},"timestamp":"2026-08-17T00:00:{at}Z","namespace":[{}],"data":{data}}}"#,
            self.seq,
            ns.join(",")
        );
        self.seq += 1;
        Event::from_json(&line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    fn started(&mut self) -> Event {
        self.ev(
            "00",
            "run.started",
            &[],
            r#"{"harness_id":"h","adapter_version":"1"}"#,
        )
    }

    fn finished(&mut self, at: &str) -> Event {
        self.ev(
            at,
            "run.finished",
            &[],
            r#"{"outcome":"success","thread_state":{"durability":"committed","durable_revision":1,"head_ref":"h"}}"#,
        )
    }
}

fn encode(dialect: Dialect, options: AguiOptions, events: &[Event]) -> String {
    let mut enc = AguiSseEncoder::new(dialect, options);
    let mut out = BytesMut::new();
    for e in events {
        enc.encode(e, &mut out).unwrap();
    }
    String::from_utf8(out.to_vec()).unwrap()
}

fn da(events: &[Event]) -> String {
    encode(Dialect::Da, AguiOptions::default(), events)
}

fn v1(events: &[Event]) -> String {
    encode(Dialect::V1, AguiOptions::default(), events)
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
    let mut r = Run::new();
    let events = [
        r.started(),
        r.ev(
            "00.2",
            "text.started",
            &[],
            r#"{"message_id":"m-1","role":"assistant"}"#,
        ),
        r.ev(
            "00.5",
            "text.delta",
            &[],
            r#"{"message_id":"m-1","delta":"Café ✓"}"#,
        ),
        r.ev(
            "01",
            "tool.started",
            &[],
            r#"{"tool_call_id":"tc-1","tool_name":"search","arguments":{"q":"café"}}"#,
        ),
        r.ev(
            "02",
            "tool.finished",
            &[],
            r#"{"tool_call_id":"tc-1","result":"ok"}"#,
        ),
        r.ev(
            "02.5",
            "tool.started",
            &[],
            r#"{"tool_call_id":"toolu_9","tool_name":"delete_file","arguments":{"path":"/tmp/a"}}"#,
        ),
        r.ev(
            "02.7",
            "interrupt.requested",
            &[],
            r#"{"interrupt_id":"toolu_9","interrupt_type":"tool_approval","agent_id":"agent-x","tool_approvals":[{"tool_call_id":"toolu_9","tool_name":"delete_file","tool_args":{"path":"/tmp/a"}}]}"#,
        ),
        r.ev(
            "03",
            "run.interrupted",
            &[],
            r#"{"interrupt_id":"toolu_9","reason":"tool_approval"}"#,
        ),
    ];
    let out = encode(
        Dialect::Da,
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
    let mut r = Run::new();
    let events = [
        r.started(),
        r.ev(
            "01",
            "tool.started",
            &[],
            r#"{"tool_call_id":"tc-a","tool_name":"task","arguments":{}}"#,
        ),
        r.ev(
            "02",
            "namespace.entered",
            &[],
            r#"{"agent_id":"a","agent_name":"A","parent_tool_call_id":"tc-a"}"#,
        ),
        r.ev(
            "03",
            "text.started",
            &["tc-a"],
            r#"{"message_id":"m-a","role":"assistant"}"#,
        ),
        r.ev(
            "04",
            "text.delta",
            &["tc-a"],
            r#"{"message_id":"m-a","delta":"x"}"#,
        ),
        // A warning does not change the announced namespace.
        r.ev(
            "05",
            "warning",
            &["tc-a"],
            r#"{"code":"w","message":"careful"}"#,
        ),
        r.ev(
            "06",
            "text.delta",
            &["tc-a"],
            r#"{"message_id":"m-a","delta":"y"}"#,
        ),
        r.ev("07", "text.finished", &["tc-a"], r#"{"message_id":"m-a"}"#),
        r.ev(
            "08",
            "namespace.exited",
            &[],
            r#"{"agent_id":"a","parent_tool_call_id":"tc-a","outcome":"success"}"#,
        ),
        r.ev(
            "09",
            "tool.finished",
            &[],
            r#"{"tool_call_id":"tc-a","result":"done"}"#,
        ),
        r.finished("10"),
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
    let mut r = Run::new();
    let events = [
        r.started(),
        r.ev(
            "01",
            "tool.started",
            &[],
            r#"{"tool_call_id":"t-del","tool_name":"delete_file","arguments":{"path":"/x"}}"#,
        ),
        r.ev(
            "02",
            "tool.error",
            &[],
            r#"{"tool_call_id":"t-del","code":"tool_rejected","message":"rejected","retryable":false}"#,
        ),
        r.finished("03"),
    ];
    assert_eq!(names(&da(&events)), ["RUN_STARTED", "RUN_FINISHED"]);
    // agui-v1 has no hold: the call and its error are shown.
    let out = v1(&events);
    assert_eq!(
        datas(&out),
        [
            r#"{"type":"RUN_STARTED","timestamp":1786924800000,"threadId":"conv-1","runId":"run-1","protocolVersion":"1.0"}"#,
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
    let mut r = Run::new();
    let mut events = vec![
        r.started(),
        r.ev(
            "01",
            "tool.started",
            &[],
            r#"{"tool_call_id":"t","tool_name":"calc","arguments":{}}"#,
        ),
    ];
    for piece in [
        r#"{"a": 1E2, "#,
        r#""b": 1e16, "c": "é"#,
        r#"", "d": 100000000000000000000}"#,
    ] {
        let d = serde_json::to_string(piece).unwrap();
        events.push(r.ev(
            "02",
            "tool.arguments.delta",
            &[],
            &format!(r#"{{"tool_call_id":"t","delta":{d}}}"#),
        ));
    }
    events.push(r.ev(
        "03",
        "tool.finished",
        &[],
        r#"{"tool_call_id":"t","result":""}"#,
    ));
    events.push(r.finished("04"));
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
            r#"{"type":"RUN_STARTED","timestamp":1786924800000,"threadId":"conv-1","runId":"run-1","protocolVersion":"1.0"}"#,
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
    let mut r = Run::new();
    let long = "é".repeat(2005);
    let events = [
        r.started(),
        r.ev(
            "01",
            "text.started",
            &[],
            r#"{"message_id":"m","role":"assistant"}"#,
        ),
        r.ev(
            "02",
            "tool.started",
            &[],
            r#"{"tool_call_id":"t","tool_name":"x","arguments":{"k":1}}"#,
        ),
        r.ev(
            "03",
            "tool.error",
            &[],
            &format!(
                r#"{{"tool_call_id":"t","code":"tool_error","message":"{long}","retryable":true}}"#
            ),
        ),
        r.ev(
            "04",
            "run.error",
            &[],
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
            r#"{"type":"RUN_STARTED","timestamp":1786924800000,"threadId":"conv-1","runId":"run-1","protocolVersion":"1.0"}"#.to_owned(),
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
    let mut r = Run::new();
    let events = [
        r.started(),
        r.ev(
            "01",
            "text.started",
            &[],
            r#"{"message_id":"m","role":"assistant"}"#,
        ),
        r.ev(
            "02",
            "tool.started",
            &[],
            r#"{"tool_call_id":"t","tool_name":"x","arguments":{"k":1}}"#,
        ),
        r.ev(
            "03",
            "run.cancelled",
            &[],
            r#"{"reason":"disconnect","side_effect_status":"none"}"#,
        ),
        r.ev(
            "04",
            "warning",
            &[],
            r#"{"code":"late","message":"after the end"}"#,
        ),
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
    let mut r = Run::new();
    let events = [
        r.started(),
        r.ev(
            "01",
            "text.started",
            &[],
            r#"{"message_id":"m2","role":"assistant"}"#,
        ),
        r.ev(
            "02",
            "text.started",
            &[],
            r#"{"message_id":"m1","role":"assistant"}"#,
        ),
        r.finished("03"),
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
    let mut r = Run::new();
    let start = r.started();
    let tool = r.ev(
        "01",
        "tool.started",
        &[],
        r#"{"tool_call_id":"t","tool_name":"x","arguments":{}}"#,
    );
    let delta = r.ev(
        "02",
        "tool.arguments.delta",
        &[],
        r#"{"tool_call_id":"t","delta":"{\"k\":"}"#,
    );
    let fin = r.ev(
        "03",
        "tool.finished",
        &[],
        r#"{"tool_call_id":"t","result":"x"}"#,
    );
    let mut enc = AguiSseEncoder::new(Dialect::Da, AguiOptions::default());
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
    let mut r = Run::new();
    let mut enc = AguiSseEncoder::new(Dialect::Da, AguiOptions::default());
    let mut out = BytesMut::new();
    enc.encode(r.started(), &mut out).unwrap();
    enc.encode(
        r.ev(
            "01",
            "tool.started",
            &[],
            r#"{"tool_call_id":"t","tool_name":"x","arguments":{"k":1}}"#,
        ),
        &mut out,
    )
    .unwrap();
    assert!(enc.has_held());
    let before = out.len();
    enc.release_ready(&mut out).unwrap();
    assert!(!enc.has_held());
    let released = String::from_utf8(out[before..].to_vec()).unwrap();
    assert_eq!(names(&released), ["TOOL_CALL_START", "TOOL_CALL_ARGS"]);
    // The finish later brings only the result pair.
    let before = out.len();
    enc.encode(
        r.ev(
            "05",
            "tool.finished",
            &[],
            r#"{"tool_call_id":"t","result":"ok"}"#,
        ),
        &mut out,
    )
    .unwrap();
    let rest = String::from_utf8(out[before..].to_vec()).unwrap();
    assert_eq!(names(&rest), ["TOOL_CALL_RESULT", "TOOL_CALL_END"]);
}

#[test]
fn v1_reasoning_usage_and_result_ref() {
    let mut r = Run::new();
    let events = [
        r.started(),
        r.ev(
            "01",
            "reasoning.started",
            &[],
            r#"{"message_id":"r1","role":"assistant"}"#,
        ),
        r.ev(
            "02",
            "reasoning.delta",
            &[],
            r#"{"message_id":"r1","delta":""}"#,
        ),
        r.ev(
            "03",
            "reasoning.delta",
            &[],
            r#"{"message_id":"r1","delta":"think"}"#,
        ),
        r.ev("04", "reasoning.finished", &[], r#"{"message_id":"r1"}"#),
        r.ev(
            "05",
            "tool.started",
            &[],
            r#"{"tool_call_id":"t","tool_name":"x","arguments":{"k":1.50},"parent_message_id":"m0"}"#,
        ),
        r.ev(
            "06",
            "tool.finished",
            &[],
            r#"{"tool_call_id":"t","result":"ok","result_ref":"res-9"}"#,
        ),
        r.ev(
            "07",
            "usage.updated",
            &[],
            r#"{"input_tokens":9007199254740992,"output_tokens":5}"#,
        ),
        r.ev(
            "08",
            "provider.metadata",
            &[],
            r#"{"provider":"p","model":"m","metadata":{"request_id":"secret-ish"}}"#,
        ),
        r.finished("09"),
    ];
    let out = v1(&events);
    assert_eq!(
        datas(&out),
        [
            r#"{"type":"RUN_STARTED","timestamp":1786924800000,"threadId":"conv-1","runId":"run-1","protocolVersion":"1.0"}"#,
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
    let mut r = Run::new();
    let events = [
        r.started(),
        r.ev(
            "01",
            "tool.started",
            &[],
            r#"{"tool_call_id":"tc-a","tool_name":"task","arguments":{},"parent_message_id":"m0"}"#,
        ),
        r.ev(
            "02",
            "namespace.entered",
            &[],
            r#"{"agent_id":"a","agent_name":"A","parent_tool_call_id":"tc-a"}"#,
        ),
        r.ev(
            "03",
            "tool.started",
            &["tc-a"],
            r#"{"tool_call_id":"tc-b","tool_name":"task","arguments":{}}"#,
        ),
        r.ev(
            "04",
            "namespace.entered",
            &["tc-a"],
            r#"{"agent_id":"b","agent_name":"B","parent_tool_call_id":"tc-b"}"#,
        ),
        r.ev(
            "05",
            "interrupt.requested",
            &["tc-a", "tc-b"],
            r#"{"interrupt_id":"i-1","interrupt_type":"form_input","agent_id":"b","prompt":"Why?","fields":[{"field_name":"why","field_type":"text"}]}"#,
        ),
        r.ev(
            "06",
            "namespace.exited",
            &["tc-a"],
            r#"{"agent_id":"b","parent_tool_call_id":"tc-b","outcome":"interrupted"}"#,
        ),
        r.ev(
            "07",
            "run.interrupted",
            &[],
            r#"{"interrupt_id":"i-1","reason":"human_input"}"#,
        ),
    ];
    let out = encode(
        Dialect::V1,
        AguiOptions::default().with_agent_name("Root"),
        &events,
    );
    assert_eq!(
        datas(&out),
        [
            r#"{"type":"RUN_STARTED","timestamp":1786924800000,"threadId":"conv-1","runId":"run-1","protocolVersion":"1.0"}"#,
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
    let mut r = Run::new();
    let events = [
        r.started(),
        r.ev(
            "01",
            "tool.started",
            &[],
            r#"{"tool_call_id":"tc-a","tool_name":"task","arguments":{"x":"y"}}"#,
        ),
        r.ev(
            "02",
            "namespace.entered",
            &[],
            r#"{"agent_id":"a","agent_name":"A","parent_tool_call_id":"tc-a"}"#,
        ),
        r.ev(
            "03",
            "warning",
            &["tc-a"],
            r#"{"code":"slow","message":"Slow.","details":{"ms":1E3}}"#,
        ),
        r.ev(
            "04",
            "namespace.exited",
            &[],
            r#"{"agent_id":"a","parent_tool_call_id":"tc-a","outcome":"error"}"#,
        ),
        r.ev(
            "05",
            "tool.error",
            &[],
            r#"{"tool_call_id":"tc-a","code":"subagent_failed","message":"Child failed.","retryable":false}"#,
        ),
        r.finished("06"),
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
    let mut r = Run::new();
    let events = [
        r.started(),
        r.ev(
            "01",
            "interrupt.requested",
            &[],
            r#"{"interrupt_id":"i","interrupt_type":"tool_approval","agent_id":"ag","tool_approvals":[{"tool_call_id":"c1","tool_name":"a","tool_args":{"n":1}},{"tool_call_id":"c2","tool_name":"b","tool_args":{"s":"ü"},"allowed_decisions":["approve","reject"]}]}"#,
        ),
        r.ev(
            "02",
            "run.interrupted",
            &[],
            r#"{"interrupt_id":"i","reason":"tool_approval"}"#,
        ),
    ];
    assert_eq!(
        datas(&v1(&events)),
        [
            r#"{"type":"RUN_STARTED","timestamp":1786924800000,"threadId":"conv-1","runId":"run-1","protocolVersion":"1.0"}"#,
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
