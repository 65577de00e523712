//! Secrets never leave: a property test over the whole server path.
//!
//! Secrets of every kind the sanitizer recognises (`docs/sanitation.md`,
//! "Redaction"), and stack traces of every language it knows, are planted in
//! the free text adapters may fill — `warning.message`, `tool.error.message`,
//! `run.error.message`, at the root or inside a subagent's namespace — with
//! random text around them and `\n` or `\r\n` line endings. Raw provider
//! error text goes the two ways an adapter may hand it over: through
//! `AdapterError::from_error` (D20), or as the error item of its stream. Each
//! run goes through the coordinator (sanitizer inside) and each encoder, with
//! every `tracing` event captured at TRACE level; no secret, stack frame or
//! raw provider text may appear in any output or in the logs.
//!
//! Not in scope, by the contract: text deltas, tool results, prompts and
//! opaque values are content the user sees, not error text, and are not
//! redacted (`docs/sanitation.md`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use lce_sanitize::{AdapterError, AdapterErrorKind};
use lce_stream::{
    Coordinator, CoordinatorOptions, LceError, LifecycleStreamExt, WireEncoder, WireFormat,
};
use lce_types::{Event, SideEffectStatus};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A planted text and the parts of it that must never come out.
struct Secret {
    kind: &'static str,
    text: &'static str,
    cores: &'static [&'static str],
}

/// The [`Secret`] of that `kind`: `text`, and `cores` that must never come out.
const fn secret(kind: &'static str, text: &'static str, cores: &'static [&'static str]) -> Secret {
    Secret { kind, text, cores }
}

/// One secret a line: its kind, the planted text, its cores.
#[rustfmt::skip]
const SECRETS: &[Secret] = &[
    secret("pem", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAzPemBodySecret42\nQ29yZUxpbmVUd28=\n-----END RSA PRIVATE KEY-----", &["MIIEpAIBAAKCAQEAzPemBodySecret42", "Q29yZUxpbmVUd28="]),
    secret("pem-openssh-unterminated", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAOpenSshBody", &["b3BlbnNzaC1rZXktdjEAAAAAOpenSshBody"]),
    secret("authorization-header", "Authorization: Basic QWxhZGRpbjpvcGVuU2VzYW1l", &["QWxhZGRpbjpvcGVuU2VzYW1l"]),
    secret("proxy-authorization-quoted", "{'Proxy-Authorization': 'Digest pxyAuthValue77'}", &["pxyAuthValue77"]),
    secret("cookie", "Cookie: sessionid=Zm9vYmFyYmF6cXV4; csrftoken=k9k9k9", &["Zm9vYmFyYmF6cXV4", "k9k9k9"]),
    secret("set-cookie", "set-cookie: auth=SetCookieSecret99; Path=/", &["SetCookieSecret99"]),
    secret("x-api-key", "X-Api-Key=k3yV4lu3SecretX", &["k3yV4lu3SecretX"]),
    secret("password-kv", "db_password=CorrectHorse9Battery", &["CorrectHorse9Battery"]),
    secret("client-secret-quoted", "client_secret: \"S3cr3tValue With Spaces\"", &["S3cr3tValue With Spaces", "S3cr3tValue"]),
    secret("github-token-env", "GITHUB_TOKEN=envTokenValue123", &["envTokenValue123"]),
    secret("aws-secret-kv", "aws_secret_access_key=wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY", &["wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY"]),
    secret("credentials-json", "{\"credentials\": \"CredJsonValue55\"}", &["CredJsonValue55"]),
    secret("bearer", "Bearer abcDEF123456ghiJKL", &["abcDEF123456ghiJKL"]),
    secret("url-credentials", "postgres://aliceuser9:pa55wordXYZ@db.example.com:5432/app", &["pa55wordXYZ", "aliceuser9"]),
    secret("openai", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv", &["Ab3dEf6hIj9kLm2nOp5qRs8tUv"]),
    secret("anthropic", "sk-ant-api03-abcdefghijklmnopqrstuvwxAnth", &["abcdefghijklmnopqrstuvwxAnth"]),
    secret("aws-key-id", "AKIAIOSFODNN7EXAMPLE", &["IOSFODNN7EXAMPLE"]),
    secret("aws-sts-key-id", "ASIAY34FZKBOKMUTVV7A", &["Y34FZKBOKMUTVV7A"]),
    secret("github", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", &["abcdefghijklmnopqrstuvwxyz0123456789"]),
    secret("github-pat", "github_pat_11ABCDEFG0123456789_abcdefghijPAT", &["11ABCDEFG0123456789_abcdefghijPAT"]),
    secret("gitlab", "glpat-abcdefghij0123456789GL", &["abcdefghij0123456789GL"]),
    secret("slack", "xoxb-1234567890-abcdefghijSLK", &["1234567890-abcdefghijSLK"]),
    secret("google", "AIzaSyA1234567890abcdefghijklmnopqrstuv", &["SyA1234567890abcdefghijklmnopqrstuv"]),
    secret("stripe", "sk_live_abcdefghij0123STR", &["abcdefghij0123STR"]),
    secret("stripe-webhook", "whsec_abcdefghij0123WHK", &["abcdefghij0123WHK"]),
    secret("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sflKxwRJSMeKKF2QT4fwpM", &["eyJzdWIiOiIxMjM0In0", "sflKxwRJSMeKKF2QT4fwpM"]),
    secret("long-hex", "deadbeefcafebabe0123456789abcdef42", &["deadbeefcafebabe0123456789abcdef42"]),
    secret("long-base64", "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0123456789ab", &["QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0123456789ab"]),
    secret("python-trace", "Traceback (most recent call last):\n  File \"/srv/app/handlers/billing_internal.py\", line 42, in charge\n    stripe.Charge.create(amount=amount)\nValueError: declined", &["billing_internal.py", "stripe.Charge.create"]),
    secret("java-trace", "java.lang.IllegalStateException: boom\n\tat com.acme.internal.Vault.open(Vault.java:17)\n\tat com.acme.Main.main(Main.java:3)\nCaused by: java.io.IOException: disk\n\tat com.acme.internal.Disk.read(Disk.java:88)\n\t... 2 more", &["com.acme.internal.Vault.open", "Disk.java:88"]),
    secret("js-trace", "TypeError: x is undefined\n    at handler (/srv/app/internal/router.js:10:5)\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)", &["/srv/app/internal/router.js", "processTicksAndRejections"]),
    secret("rust-trace", "thread 'tokio-runtime-worker' panicked at src/vault/keys.rs:55:9:\ncalled `Option::unwrap()` on a `None` value\nstack backtrace:\n   0: rust_begin_unwind\n   1: vault::keys::load_master_key\nnote: run with `RUST_BACKTRACE=full` for a verbose backtrace.", &["src/vault/keys.rs", "load_master_key"]),
    secret("go-trace", "panic: runtime error\n\ngoroutine 1 [running]:\nmain.loadSecretStore(0x0)\n\t/home/build/app/store.go:23 +0x1d\nmain.main()\n\t/home/build/app/main.go:9 +0x25", &["loadSecretStore", "/home/build/app/store.go"]),
];

/// Raw provider error text: what a provider library says when it fails.
const RAW_PROVIDER: &str = "openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect key for org-RawProviderOrg77', 'type': 'invalid_request_error'}}";
const RAW_MARKER: &str = "RawProviderOrg77";

/// Where in the run a planted text goes.
#[derive(Clone, Copy, Debug)]
enum Field {
    Warning,
    WarningInSubagent,
    ToolError,
    ToolErrorInSubagent,
    RunError,
}

/// How the run ends.
#[derive(Clone, Copy, Debug)]
enum End {
    Finished,
    RunError,
    /// The adapter's stream yields an error item carrying raw provider text.
    StreamError,
    /// A `run.error` built with `AdapterError::from_error` from a provider error.
    AdapterError,
}

fn event(seq: u64, ty: &str, ns: &[&str], data: Value) -> Event {
    let v = json!({"version": 1, "type": ty, "run_id": "run-s", "conversation_id": "conv-s",
        "sequence": seq, "timestamp": "2026-08-17T09:00:00.000Z", "namespace": ns, "data": data});
    Event::from_json(&v.to_string()).unwrap_or_else(|e| panic!("{ty}: {e}"))
}

#[derive(Debug)]
struct ProviderError;

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(RAW_PROVIDER)
    }
}

impl std::error::Error for ProviderError {}

/// A valid adapter run with `texts` planted in `fields`.
fn run(plants: &[(Field, String)], end: End) -> Vec<Result<Event, LceError>> {
    let mut seq = 0;
    let mut next = || {
        seq += 1;
        seq
    };
    let mut items = vec![event(
        0,
        "run.started",
        &[],
        json!({"harness_id": "h", "adapter_version": "1"}),
    )];
    let mut run_error_text = None;
    for (i, (field, text)) in plants.iter().enumerate() {
        let tc = format!("tc-{i}");
        let sub = format!("tc-sub-{i}");
        match field {
            Field::Warning => items.push(event(
                next(),
                "warning",
                &[],
                json!({"code": "w", "message": text}),
            )),
            Field::ToolError => {
                items.push(event(
                    next(),
                    "tool.started",
                    &[],
                    json!({"tool_call_id": tc, "tool_name": "fetch", "arguments": {}}),
                ));
                items.push(event(
                    next(),
                    "tool.error",
                    &[],
                    json!({"tool_call_id": tc, "code": "tool_error", "message": text, "retryable": false}),
                ));
            }
            Field::WarningInSubagent | Field::ToolErrorInSubagent => {
                items.push(event(
                    next(),
                    "tool.started",
                    &[],
                    json!({"tool_call_id": sub, "tool_name": "task", "arguments": {}}),
                ));
                items.push(event(
                    next(),
                    "namespace.entered",
                    &[],
                    json!({"agent_id": "helper", "agent_name": "Helper", "parent_tool_call_id": sub}),
                ));
                let ns = [sub.as_str()];
                if matches!(field, Field::WarningInSubagent) {
                    items.push(event(
                        next(),
                        "warning",
                        &ns,
                        json!({"code": "w", "message": text}),
                    ));
                } else {
                    items.push(event(
                        next(),
                        "tool.started",
                        &ns,
                        json!({"tool_call_id": tc, "tool_name": "fetch", "arguments": {}}),
                    ));
                    items.push(event(
                        next(),
                        "tool.error",
                        &ns,
                        json!({"tool_call_id": tc, "code": "tool_error", "message": text, "retryable": true}),
                    ));
                }
                items.push(event(
                    next(),
                    "namespace.exited",
                    &[],
                    json!({"agent_id": "helper", "parent_tool_call_id": sub, "outcome": "success"}),
                ));
                items.push(event(
                    next(),
                    "tool.finished",
                    &[],
                    json!({"tool_call_id": sub, "result": "done"}),
                ));
            }
            Field::RunError => run_error_text = Some(text.clone()),
        }
    }
    items.push(event(
        next(),
        "text.started",
        &[],
        json!({"message_id": "m1", "role": "assistant"}),
    ));
    items.push(event(
        next(),
        "text.delta",
        &[],
        json!({"message_id": "m1", "delta": "Working on it."}),
    ));
    items.push(event(
        next(),
        "text.finished",
        &[],
        json!({"message_id": "m1"}),
    ));
    let mut items: Vec<Result<Event, LceError>> = items.into_iter().map(Ok).collect();
    let run_error = |message: String| {
        json!({"code": "internal", "message": message, "retryable": false,
            "side_effect_status": "possible"})
    };
    match (run_error_text, end) {
        (Some(text), _) => items.push(Ok(event(next(), "run.error", &[], run_error(text)))),
        (None, End::Finished) => items.push(Ok(event(
            next(),
            "run.finished",
            &[],
            json!({"outcome": "success"}),
        ))),
        (None, End::RunError) => items.push(Ok(event(
            next(),
            "run.error",
            &[],
            run_error(RAW_PROVIDER.to_owned()).clone(),
        ))),
        (None, End::StreamError) => {
            items.push(Err(LceError::Io(std::io::Error::other(RAW_PROVIDER))))
        }
        (None, End::AdapterError) => {
            let e = AdapterError::from_error(AdapterErrorKind::Authentication, &ProviderError);
            let payload = e.to_run_error(SideEffectStatus::None);
            let mut ev = event(next(), "run.error", &[], run_error(String::new()));
            ev.payload = lce_types::Payload::RunError(payload);
            items.push(Ok(ev));
        }
    }
    items
}

/// A writer into a shared buffer, for the captured logs.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs the items through the coordinator and `format`'s encoder; returns
/// the wire bytes and everything logged meanwhile.
fn serve(items: Vec<Result<Event, LceError>>, format: WireFormat) -> (String, String) {
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let wire = tracing::subscriber::with_default(subscriber, || {
        let coordinator = Coordinator::new(CoordinatorOptions::new("run-s", "conv-s"));
        runtime.block_on(async {
            let chunks: Vec<_> = lce_stream::source(futures::stream::iter(items))
                .enforced(coordinator)
                .encoded(WireEncoder::new(format, None))
                .collect()
                .await;
            let mut wire = Vec::new();
            for c in chunks {
                wire.extend_from_slice(&c.expect("the coordinator's output encodes"));
            }
            wire
        })
    });
    let logs = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    (String::from_utf8(wire).unwrap(), logs)
}

fn field() -> impl Strategy<Value = Field> {
    prop_oneof![
        Just(Field::Warning),
        Just(Field::WarningInSubagent),
        Just(Field::ToolError),
        Just(Field::ToolErrorInSubagent),
        Just(Field::RunError),
    ]
}

fn end() -> impl Strategy<Value = End> {
    prop_oneof![
        Just(End::Finished),
        Just(End::RunError),
        Just(End::StreamError),
        Just(End::AdapterError),
    ]
}

/// One planted text: a secret between random words, with a line ending.
fn plant() -> impl Strategy<Value = (Field, usize, String, String, bool)> {
    (
        field(),
        0..SECRETS.len(),
        "[A-Za-z .,:]{0,24}",
        "[A-Za-z .,:]{0,24}",
        any::<bool>(),
    )
}

fn check(out: &str, what: &str, plants: &[(Field, usize)], end: End, format: WireFormat) {
    for (field, k) in plants {
        let s = &SECRETS[*k];
        for core in s.cores {
            assert!(
                !out.contains(core),
                "{what} ({format}) holds {core:?} of a {} secret planted in {field:?}:\n{out}",
                s.kind
            );
        }
    }
    if !matches!(end, End::Finished) {
        assert!(
            !out.contains(RAW_MARKER) || matches!(end, End::RunError),
            "{what} ({format}) holds raw provider text ({end:?}):\n{out}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn planted_secrets_never_reach_a_wire_or_a_log(
        plants in proptest::collection::vec(plant(), 1..4),
        end in end(),
    ) {
        let texts: Vec<(Field, String)> = plants
            .iter()
            .map(|(f, k, before, after, crlf)| {
                let mut t = format!("{before} {} {after}", SECRETS[*k].text);
                if *crlf {
                    t = t.replace('\n', "\r\n");
                }
                (*f, t)
            })
            .collect();
        let planted: Vec<(Field, usize)> = plants.iter().map(|(f, k, ..)| (*f, *k)).collect();
        for format in WireFormat::ALL {
            let (wire, logs) = serve(run(&texts, end), format);
            check(&wire, "the wire", &planted, end, format);
            check(&logs, "the logs", &planted, end, format);
        }
    }
}

/// Every kind, alone, in every field: a deterministic sweep the random
/// property may not cover in its few cases.
#[test]
fn every_kind_in_every_field() {
    let fields = [
        Field::Warning,
        Field::WarningInSubagent,
        Field::ToolError,
        Field::ToolErrorInSubagent,
        Field::RunError,
    ];
    for (k, s) in SECRETS.iter().enumerate() {
        for field in fields {
            let texts = vec![(field, format!("upstream said: {} (retrying)", s.text))];
            let (wire, logs) = serve(run(&texts, End::Finished), WireFormat::Custom);
            check(
                &wire,
                "the wire",
                &[(field, k)],
                End::Finished,
                WireFormat::Custom,
            );
            check(
                &logs,
                "the logs",
                &[(field, k)],
                End::Finished,
                WireFormat::Custom,
            );
        }
    }
}

/// Raw provider text handed over as a stream error or through
/// `AdapterError` reaches neither the wire nor the logs.
#[test]
fn raw_provider_text_never_leaves() {
    for end in [End::StreamError, End::AdapterError] {
        for format in WireFormat::ALL {
            let (wire, logs) = serve(run(&[], end), format);
            assert!(!wire.contains(RAW_MARKER), "{end:?} {format}: {wire}");
            assert!(
                !logs.contains(RAW_MARKER),
                "{end:?} {format}: logs hold it:\n{logs}"
            );
        }
    }
}

/// What a stage drops is logged as a count, once, and only when something
/// was dropped: empty deltas (D7) and events after the terminal.
#[test]
fn drops_are_logged_as_counts_only_when_there_are_some() {
    let text = |seq, ty: &str, data: Value| Ok(event(seq, ty, &[], data));
    let mut terminal = run(&[], End::Finished).pop().unwrap().unwrap();
    terminal.sequence = 5;
    let with = |empty: bool, extra: usize| {
        let mut items = vec![
            run(&[], End::Finished).remove(0),
            text(
                1,
                "text.started",
                json!({"message_id": "m", "role": "assistant"}),
            ),
            text(
                2,
                "text.delta",
                json!({"message_id": "m", "delta": if empty { "" } else { "b" }}),
            ),
            text(3, "text.delta", json!({"message_id": "m", "delta": "a"})),
            text(4, "text.finished", json!({"message_id": "m"})),
        ];
        items.push(Ok(terminal.clone()));
        for i in 0..extra {
            items.push(text(
                6 + i as u64,
                "warning",
                json!({"code": "w", "message": "late"}),
            ));
        }
        items
    };
    let lines = |logs: &str, what: &str| -> Vec<String> {
        logs.lines()
            .filter(|l| l.contains(what))
            .map(str::to_owned)
            .collect()
    };
    let (_, logs) = serve(with(true, 2), WireFormat::Custom);
    let d7 = lines(&logs, "empty deltas dropped (D7)");
    assert_eq!(d7.len(), 1, "{logs}");
    assert!(d7[0].contains("dropped=1"), "{logs}");
    let late = lines(&logs, "events after the terminal dropped");
    assert_eq!(late.len(), 1, "{logs}");
    assert!(late[0].contains("dropped=2"), "{logs}");
    // The default audit sink writes one record, at `lce::audit`, of counts.
    let audit = lines(&logs, "lce::audit");
    assert_eq!(audit.len(), 1, "{logs}");
    for field in [
        "run ended",
        "run_id=run-s",
        "terminal=\"run.finished\"",
        "events_in=8",
        "after_terminal=2",
    ] {
        assert!(audit[0].contains(field), "{field}: {}", audit[0]);
    }
    let (_, logs) = serve(with(false, 0), WireFormat::Custom);
    assert!(lines(&logs, "empty deltas dropped").is_empty(), "{logs}");
    assert!(
        lines(&logs, "after the terminal dropped").is_empty(),
        "{logs}"
    );
}
