// Test data shared by `tests/properties.rs` and `src/fast.rs`' unit tests,
// each of which `include!`s this file: a unit test cannot read an
// integration test's data without it becoming public API, and the two start
// from the same payloads on purpose (the unit tests add odd spellings:
// escapes, member order, white space).

/// One representative `(type, data)` per event type (the scenarios hold
/// many more).
const PAYLOADS: &[(&str, &str)] = &[
    ("run.started", r#"{"harness_id":"h","adapter_version":"1"}"#),
    (
        "run.finished",
        r#"{"outcome":"success","thread_state":{"durability":"committed","durable_revision":3,"head_ref":"h"}}"#,
    ),
    (
        "run.interrupted",
        r#"{"interrupt_id":"i","reason":"human_input"}"#,
    ),
    (
        "run.cancelled",
        r#"{"reason":"deadline","side_effect_status":"none"}"#,
    ),
    (
        "run.error",
        r#"{"code":"c","message":"m","retryable":true,"retry_after_seconds":5,"side_effect_status":"possible"}"#,
    ),
    ("text.started", r#"{"message_id":"m","role":"assistant"}"#),
    ("text.delta", r#"{"message_id":"m","delta":"d"}"#),
    ("text.finished", r#"{"message_id":"m"}"#),
    (
        "reasoning.started",
        r#"{"message_id":"m","role":"assistant"}"#,
    ),
    ("reasoning.delta", r#"{"message_id":"m","delta":"d"}"#),
    ("reasoning.finished", r#"{"message_id":"m"}"#),
    (
        "tool.started",
        r#"{"tool_call_id":"t","tool_name":"n","arguments":{"b":1e16,"a":[1.0,-0]},"parent_message_id":"m"}"#,
    ),
    (
        "tool.arguments.delta",
        r#"{"tool_call_id":"t","delta":"{\"a"}"#,
    ),
    (
        "tool.finished",
        r#"{"tool_call_id":"t","result":"","result_ref":"ref"}"#,
    ),
    (
        "tool.error",
        r#"{"tool_call_id":"t","code":"tool_rejected","message":"no","retryable":false}"#,
    ),
    (
        "interrupt.requested",
        r#"{"interrupt_id":"i","interrupt_type":"form_input","agent_id":"a","prompt":"p","fields":[{"field_name":"f","field_type":"select","field_values":["x",2],"required":true,"default_value":"x"}]}"#,
    ),
    (
        "namespace.entered",
        r#"{"agent_id":"a","agent_name":"A","parent_tool_call_id":"t"}"#,
    ),
    (
        "namespace.exited",
        r#"{"agent_id":"a","parent_tool_call_id":"t","outcome":"interrupted"}"#,
    ),
    (
        "warning",
        r#"{"code":"w","message":"m","details":{"z":{"y":[true,null]}}}"#,
    ),
    (
        "usage.updated",
        r#"{"input_tokens":1,"cost":0.25,"currency":"USD","final":true}"#,
    ),
    (
        "provider.metadata",
        r#"{"provider":"p","model":"m","metadata":{"region":"eu"}}"#,
    ),
];
