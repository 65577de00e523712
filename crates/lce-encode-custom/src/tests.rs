//! Unit tests: the frames of wire-formats §3, byte for byte.

use super::*;
use lce_testkit::RunBuilder;

fn encode_all(options: CustomOptions, events: &[Event]) -> String {
    let mut enc = CustomSseEncoder::new(options);
    let mut out = BytesMut::new();
    for e in events {
        enc.encode_event(e, &mut out).unwrap();
    }
    String::from_utf8(out.to_vec()).unwrap()
}

#[test]
fn spec_section_3_examples() {
    let mut r = RunBuilder::new("r", "c");
    let events = vec![
        r.run_started(),
        r.text_started("m"),
        r.text_delta("m", "Let me search"),
        r.text_delta("m", ""),
        r.text_finished("m"),
        r.tool_started("tc-1", "search", r#"{"q":"rbac"}"#),
        r.tool_finished("tc-1", "ok"),
        r.tool_started("tc-2", "fetch", "{}"),
        r.tool_error("tc-2", "tool_error", "HTTP 404: Not Found"),
        r.tool_started("toolu_1", "task", "{}"),
        r.namespace_entered("a", "A", "toolu_1"),
        r.at(["toolu_1"])
            .text_started("n"),
        r.text_delta("n", "Café"),
        r.event(
            "warning",
            r#"{"code":"w","message":"MCP down ✓","details":{"x":1}}"#,
        ),
        r.root().event(
            "usage.updated",
            r#"{"input_tokens":1}"#,
        ),
        r.event(
            "run.error",
            r#"{"code":"internal","message":"Agent execution failed. Check server logs for details.","retryable":false,"side_effect_status":"none"}"#,
        ),
        // Nothing after a terminal.
        r.text_delta("m", "late"),
    ];
    let got = encode_all(CustomOptions::default(), &events);
    let want = concat!(
        "event: content\ndata: {\"text\": \"Let me search\", \"namespace\": []}\n\n",
        "event: tool_start\ndata: {\"tool_name\": \"search\", \"tool_call_id\": \"tc-1\", \"args\": {\"q\": \"rbac\"}, \"namespace\": []}\n\n",
        "event: tool_end\ndata: {\"tool_call_id\": \"tc-1\", \"namespace\": [], \"result\": \"ok\"}\n\n",
        "event: tool_start\ndata: {\"tool_name\": \"fetch\", \"tool_call_id\": \"tc-2\", \"args\": {}, \"namespace\": []}\n\n",
        "event: tool_end\ndata: {\"tool_call_id\": \"tc-2\", \"namespace\": [], \"error\": \"ERROR: HTTP 404: Not Found\"}\n\n",
        "event: tool_start\ndata: {\"tool_name\": \"task\", \"tool_call_id\": \"toolu_1\", \"args\": {}, \"namespace\": []}\n\n",
        "event: content\ndata: {\"text\": \"Caf\\u00e9\", \"namespace\": [\"toolu_1\"]}\n\n",
        "event: warning\ndata: {\"message\": \"MCP down \\u2713\", \"namespace\": []}\n\n",
        "event: error\ndata: {\"error\": \"Agent execution failed. Check server logs for details.\"}\n\n",
    );
    assert_eq!(got, want);
}

fn approval(n: usize) -> String {
    let mut list = Vec::new();
    for k in 0..n {
        let decisions = if k == 1 {
            r#","allowed_decisions":["approve","reject"]"#
        } else {
            ""
        };
        list.push(format!(
            r#"{{"tool_call_id":"toolu_{k}","tool_name":"delete_file","tool_args":{{"path":"/tmp/a"}}{decisions}}}"#
        ));
    }
    format!(
        r#"{{"interrupt_id":"toolu_9","interrupt_type":"tool_approval","agent_id":"ops","tool_approvals":[{}]}}"#,
        list.join(",")
    )
}

#[test]
fn approval_input_required_single() {
    let mut r = RunBuilder::new("r", "c");
    let events = vec![
        r.at(["x"]).event("interrupt.requested", &approval(1)),
        r.root().event(
            "run.interrupted",
            r#"{"interrupt_id":"toolu_9","reason":"tool_approval"}"#,
        ),
    ];
    let got = encode_all(
        CustomOptions {
            agent_name: Some("My Agent".into()),
        },
        &events,
    );
    assert_eq!(
        got,
        "event: input_required\ndata: {\"type\": \"tool_approval\", \"interrupt_id\": \"toolu_9\", \"agent\": \"My Agent\", \"tool_name\": \"delete_file\", \"tool_args\": {\"path\": \"/tmp/a\"}, \"allowed_decisions\": [\"approve\", \"edit\", \"reject\"]}\n\n"
    );
}

#[test]
fn approval_input_required_many_lists_all_last() {
    let mut r = RunBuilder::new("r", "c");
    let events = vec![
        r.event("interrupt.requested", &approval(2)),
        r.event(
            "run.interrupted",
            r#"{"interrupt_id":"toolu_9","reason":"tool_approval"}"#,
        ),
    ];
    let got = encode_all(CustomOptions::default(), &events);
    assert_eq!(
        got,
        concat!(
            "event: input_required\ndata: {\"type\": \"tool_approval\", \"interrupt_id\": \"toolu_9\", \"agent\": \"ops\", ",
            "\"tool_name\": \"delete_file\", \"tool_args\": {\"path\": \"/tmp/a\"}, \"allowed_decisions\": [\"approve\", \"edit\", \"reject\"], ",
            "\"tool_approvals\": [",
            "{\"tool_name\": \"delete_file\", \"tool_args\": {\"path\": \"/tmp/a\"}, \"tool_call_id\": \"toolu_0\", \"allowed_decisions\": [\"approve\", \"edit\", \"reject\"]}, ",
            "{\"tool_name\": \"delete_file\", \"tool_args\": {\"path\": \"/tmp/a\"}, \"tool_call_id\": \"toolu_1\", \"allowed_decisions\": [\"approve\", \"reject\"]}",
            "]}\n\n"
        )
    );
}

#[test]
fn form_input_required_fields_in_fixed_order() {
    let mut r = RunBuilder::new("r", "c");
    // Members given in a scrambled order; the wire order is fixed.
    let data = r#"{"interrupt_id":"i1","interrupt_type":"form_input","agent_id":"a","prompt":"Fill ✓","fields":[{"placeholder":"p","default_value":1.0,"required":true,"field_values":["x","é"],"field_type":"select","field_description":"d","field_label":"L","field_name":"f"},{"field_type":"text","field_name":"g"}]}"#;
    let events = vec![
        r.event("interrupt.requested", data),
        r.event(
            "run.interrupted",
            r#"{"interrupt_id":"i1","reason":"human_input"}"#,
        ),
    ];
    assert_eq!(
        encode_all(CustomOptions::default(), &events),
        concat!(
            "event: input_required\ndata: {\"type\": \"form_input\", \"interrupt_id\": \"i1\", \"agent\": \"a\", \"prompt\": \"Fill \\u2713\", \"fields\": [",
            "{\"field_name\": \"f\", \"field_label\": \"L\", \"field_description\": \"d\", \"field_type\": \"select\", \"field_values\": [\"x\", \"\\u00e9\"], \"required\": true, \"default_value\": 1.0, \"placeholder\": \"p\"}, ",
            "{\"field_name\": \"g\", \"field_type\": \"text\"}",
            "]}\n\n"
        )
    );
}

#[test]
fn close_events_after_input_required_are_silent() {
    let mut r = RunBuilder::new("r", "c");
    let events = vec![
        r.tool_started("toolu_0", "delete_file", r#"{"path":"/tmp/a"}"#),
        r.event("interrupt.requested", &approval(1)),
        r.text_finished("m"),
        r.tool_finished("x", "r"),
        r.event(
            "run.interrupted",
            r#"{"interrupt_id":"toolu_9","reason":"tool_approval"}"#,
        ),
    ];
    let got = encode_all(CustomOptions::default(), &events);
    // The start, the approval; nothing after it (no `done`).
    assert_eq!(got, format!("{TOOL_START_0}{INPUT_REQUIRED}"));
}

/// The frames written after each event, one string per event.
fn encode_each(events: &[Event]) -> Vec<String> {
    let mut enc = CustomSseEncoder::new(CustomOptions::default());
    events
        .iter()
        .map(|e| {
            let mut out = BytesMut::new();
            enc.encode_event(e, &mut out).unwrap();
            String::from_utf8(out.to_vec()).unwrap()
        })
        .collect()
}

const TOOL_START_0: &str = "event: tool_start\ndata: {\"tool_name\": \"delete_file\", \"tool_call_id\": \"toolu_0\", \"args\": {\"path\": \"/tmp/a\"}, \"namespace\": []}\n\n";
const INPUT_REQUIRED: &str = "event: input_required\ndata: {\"type\": \"tool_approval\", \"interrupt_id\": \"toolu_9\", \"agent\": \"ops\", \"tool_name\": \"delete_file\", \"tool_args\": {\"path\": \"/tmp/a\"}, \"allowed_decisions\": [\"approve\", \"edit\", \"reject\"]}\n\n";

/// A run that asks for approval and then ends with `last` (after a close
/// event): what `last` writes. Before it, frame by frame, the held start
/// goes out at the interrupt and the close event writes nothing.
#[track_caller]
fn interrupt_then(last: (&str, &str)) -> String {
    let mut r = RunBuilder::new("r", "c");
    let events = vec![
        r.tool_started("toolu_0", "delete_file", r#"{"path":"/tmp/a"}"#),
        r.event("interrupt.requested", &approval(1)),
        r.text_finished("m"),
        r.event(last.0, last.1),
    ];
    let mut frames = encode_each(&events);
    let last = frames.pop().unwrap_or_default();
    assert_eq!(frames, ["", TOOL_START_0, ""]);
    last
}

#[test]
fn d4a_input_required_goes_out_with_run_interrupted() {
    let last = interrupt_then((
        "run.interrupted",
        r#"{"interrupt_id":"toolu_9","reason":"tool_approval"}"#,
    ));
    // The held start goes out at the interrupt; the interrupt itself only
    // once run.interrupted is accepted; the bytes are DA's.
    assert_eq!(last, INPUT_REQUIRED);
}

#[test]
fn d4a_an_error_instead_of_run_interrupted_never_shows_the_interrupt() {
    // A failed interrupt commit, a violation or closure: the coordinator's
    // run.error takes the place of run.interrupted.
    let last = interrupt_then((
        "run.error",
        r#"{"code":"thread_durability_uncertain","message":"State could not be saved.","retryable":false,"side_effect_status":"possible"}"#,
    ));
    assert_eq!(
        last,
        "event: error\ndata: {\"error\": \"State could not be saved.\"}\n\n"
    );
}

#[test]
fn d4a_cancellation_instead_of_run_interrupted_closes_silently() {
    let last = interrupt_then((
        "run.cancelled",
        r#"{"reason":"client_request","side_effect_status":"possible"}"#,
    ));
    assert_eq!(last, "");
}

#[test]
fn d4a_nothing_after_the_terminal_and_no_done_after_an_interrupt() {
    let mut r = RunBuilder::new("r", "c");
    let mut enc = CustomSseEncoder::new(CustomOptions::default());
    let mut out = BytesMut::new();
    for (ty, data) in [
        ("interrupt.requested", approval(1)),
        (
            "run.interrupted",
            r#"{"interrupt_id":"toolu_9","reason":"tool_approval"}"#.to_owned(),
        ),
        ("run.finished", r#"{"outcome":"success"}"#.to_owned()),
    ] {
        enc.encode_event(&r.event(ty, &data), &mut out).unwrap();
    }
    assert_eq!(&out[..], INPUT_REQUIRED.as_bytes());
    assert!(enc.is_closed());
}

#[test]
fn cancel_releases_held_starts_then_silence_and_done_only_on_finish() {
    let mut r = RunBuilder::new("r", "c");
    let events = vec![
        r.at(["n"]).tool_started("a", "t", r#"{"k":[1,2]}"#),
        r.root().event(
            "run.cancelled",
            r#"{"reason":"deadline","side_effect_status":"possible"}"#,
        ),
    ];
    assert_eq!(
        encode_all(CustomOptions::default(), &events),
        "event: tool_start\ndata: {\"tool_name\": \"t\", \"tool_call_id\": \"a\", \"args\": {\"k\": [1, 2]}, \"namespace\": [\"n\"]}\n\n"
    );
    let mut r = RunBuilder::new("r", "c");
    let events = vec![r.event("run.finished", r#"{"outcome":"success"}"#)];
    assert_eq!(
        encode_all(CustomOptions::default(), &events),
        "event: done\ndata: {}\n\n"
    );
}

#[test]
fn streamed_arguments_and_empty_result_and_truncation() {
    let mut r = RunBuilder::new("r", "c");
    let long: String = "é".repeat(2001) + "😀";
    let result = format!(r#"{{"tool_call_id":"b","result":"{long}"}}"#);
    let events = vec![
        r.tool_started("a", "t", "{}"),
        r.event(
            "tool.arguments.delta",
            r#"{"tool_call_id":"a","delta":"{\"x\":1e1"}"#,
        ),
        r.event("tool.arguments.delta", r#"{"tool_call_id":"a","delta":""}"#),
        r.event(
            "tool.arguments.delta",
            r#"{"tool_call_id":"a","delta":"6,\"s\":\"\\u00"}"#,
        ),
        r.event(
            "tool.arguments.delta",
            r#"{"tool_call_id":"a","delta":"e9\"}"}"#,
        ),
        r.tool_finished("a", ""),
        r.tool_started("b", "t", "{}"),
        r.event("tool.finished", &result),
    ];
    let got = encode_all(CustomOptions::default(), &events);
    let cut = "\\u00e9".repeat(2000) + "...[2 chars]";
    let want = format!(
        concat!(
            "event: tool_start\ndata: {{\"tool_name\": \"t\", \"tool_call_id\": \"a\", \"args\": {{\"x\": 1e+16, \"s\": \"\\u00e9\"}}, \"namespace\": []}}\n\n",
            "event: tool_end\ndata: {{\"tool_call_id\": \"a\", \"namespace\": []}}\n\n",
            "event: tool_start\ndata: {{\"tool_name\": \"t\", \"tool_call_id\": \"b\", \"args\": {{}}, \"namespace\": []}}\n\n",
            "event: tool_end\ndata: {{\"tool_call_id\": \"b\", \"namespace\": [], \"result\": \"{}\"}}\n\n",
        ),
        cut
    );
    assert_eq!(got, want);
}

#[test]
fn error_messages_are_never_truncated() {
    let mut r = RunBuilder::new("r", "c");
    let msg = "x".repeat(5000);
    let events =
        vec![
        r.tool_started("a", "t", "{}"),
        r.event("tool.error", &format!(
                r#"{{"tool_call_id":"a","code":"tool_error","message":"{msg}","retryable":false}}"#
            ),
        ),
    ];
    let got = encode_all(CustomOptions::default(), &events);
    assert_eq!(
        got,
        format!(
            "event: tool_start\ndata: {{\"tool_name\": \"t\", \"tool_call_id\": \"a\", \"args\": {{}}, \"namespace\": []}}\n\n\
             event: tool_end\ndata: {{\"tool_call_id\": \"a\", \"namespace\": [], \"error\": \"ERROR: {msg}\"}}\n\n"
        )
    );
}

/// Call `a` started with `{}`, one `tool.arguments.delta` of `data`, then
/// the call's `tool.finished`: the error that finish gives, once none of
/// the three wrote anything.
#[track_caller]
fn finished_after_one_delta(data: &str) -> EncodeError {
    let mut r = RunBuilder::new("r", "c");
    let mut enc = CustomSseEncoder::new(CustomOptions::default());
    let mut out = BytesMut::new();
    for e in [
        r.tool_started("a", "t", "{}"),
        r.event("tool.arguments.delta", data),
    ] {
        enc.encode_event(&e, &mut out).unwrap();
    }
    let err = enc
        .encode_event(&r.tool_finished("a", "r"), &mut out)
        .unwrap_err();
    assert!(out.is_empty());
    err
}

#[test]
fn incomplete_arguments_are_a_typed_error_and_leave_nothing() {
    let err = finished_after_one_delta(r#"{"tool_call_id":"a","delta":"{\"x\":"}"#);
    assert!(matches!(
        err,
        EncodeError::IncompleteArguments { sequence: 2 }
    ));
    // A syntactically broken but balanced object: the hold judges streamed
    // arguments strictly (D6, D17), so they never count as complete.
    let err = finished_after_one_delta(r#"{"tool_call_id":"a","delta":"{\"x\" 1}"}"#);
    assert!(
        matches!(err, EncodeError::IncompleteArguments { sequence: 2 }),
        "{err}"
    );
}

#[test]
fn release_ready_shows_running_tools() {
    let mut r = RunBuilder::new("r", "c");
    let mut enc = CustomSseEncoder::new(CustomOptions::default());
    let mut out = BytesMut::new();
    enc.encode_event(&r.tool_started("a", "t", r#"{"k":"v"}"#), &mut out)
        .unwrap();
    assert!(out.is_empty());
    enc.release_ready(&mut out).unwrap();
    assert_eq!(
        &out[..],
        b"event: tool_start\ndata: {\"tool_name\": \"t\", \"tool_call_id\": \"a\", \"args\": {\"k\": \"v\"}, \"namespace\": []}\n\n"
    );
    out.clear();
    // Already shown: the rejection is an ordinary tool_end now.
    enc.encode_event(&r.tool_error("a", "tool_rejected", "no"), &mut out)
        .unwrap();
    assert_eq!(
        &out[..],
        b"event: tool_end\ndata: {\"tool_call_id\": \"a\", \"namespace\": [], \"error\": \"ERROR: no\"}\n\n"
    );
}

#[test]
fn the_chain_drives_it_through_frame_encoder() {
    use lce_core::FrameEncoder;
    let mut r = RunBuilder::new("r", "c");
    let start = r.run_started();
    let tool = r.tool_started("t-1", "search", "{}");
    let done = r.event("run.finished", r#"{"outcome":"success"}"#);
    let mut enc = CustomSseEncoder::new(CustomOptions::default());
    let mut out = BytesMut::new();
    enc.encode_frame(&start, &mut out).unwrap();
    enc.encode_frame(&tool, &mut out).unwrap();
    assert!(out.is_empty(), "the `{{}}` start is held (D13)");
    // Idle: arguments not settled yet, so nothing is released (D13a).
    enc.on_idle(&mut out).unwrap();
    assert!(out.is_empty());
    enc.encode_frame(&done, &mut out).unwrap();
    assert!(out.ends_with(b"event: done\ndata: {}\n\n"), "{out:?}");
    assert!(enc.is_closed());
}

#[test]
fn open_until_the_terminal_also_while_an_interrupt_waits() {
    let mut r = RunBuilder::new("r", "c");
    let mut enc = CustomSseEncoder::new(CustomOptions::default());
    let mut out = BytesMut::new();
    assert!(!enc.is_closed(), "a new encoder is open");
    enc.encode_event(&r.run_started(), &mut out).unwrap();
    enc.encode_event(&r.text_delta("m", "x"), &mut out).unwrap();
    assert!(!enc.is_closed());
    enc.encode_event(&r.event("interrupt.requested", &approval(1)), &mut out)
        .unwrap();
    assert!(!enc.is_closed(), "the interrupt waits for its terminal");
    enc.encode_event(
        &r.event(
            "run.interrupted",
            r#"{"interrupt_id":"toolu_9","reason":"tool_approval"}"#,
        ),
        &mut out,
    )
    .unwrap();
    assert!(enc.is_closed());
}

#[test]
fn options_are_the_ones_given() {
    let options = CustomOptions {
        agent_name: Some("Ops".to_owned()),
    };
    let enc = CustomSseEncoder::new(options.clone());
    assert_eq!(enc.options(), &options);
}

#[test]
fn on_idle_releases_what_release_ready_does() {
    use lce_core::FrameEncoder;
    let mut r = RunBuilder::new("r", "c");
    let mut enc = CustomSseEncoder::new(CustomOptions::default());
    let mut out = BytesMut::new();
    enc.encode_frame(&r.tool_started("a", "t", r#"{"k":"v"}"#), &mut out)
        .unwrap();
    assert!(out.is_empty(), "held (D13)");
    enc.on_idle(&mut out).unwrap();
    assert_eq!(
        &out[..],
        b"event: tool_start\ndata: {\"tool_name\": \"t\", \"tool_call_id\": \"a\", \"args\": {\"k\": \"v\"}, \"namespace\": []}\n\n"
    );
}

#[test]
fn content_text_is_the_text_of_non_empty_text_deltas_only() {
    let mut r = RunBuilder::new("r", "c");
    assert_eq!(content_text(&r.text_delta("m", "x")), Some("x"));
    // D7: an empty delta renders no `content` frame, whether or not the
    // hold already dropped it.
    assert_eq!(content_text(&r.text_delta("m", "")), None);
    assert_eq!(content_text(&r.reasoning_delta("m", "x")), None);
}
