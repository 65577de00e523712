//! Every route of the gateway in-process, through `tower::ServiceExt::
//! oneshot` on `Gateway::router()`: no socket, no process. The
//! process-level suites (signals, replicas, Redis) live in
//! `crates/lce-cli/tests`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use futures::future::BoxFuture;
use http_body_util::BodyExt as _;
use lce_gateway::{
    EventStream, Forwarded, Gateway, GatewayBuilder, RunInput, RunRequest, Upstream, UpstreamError,
};
use tower::ServiceExt as _;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const SECRET: &[u8] = b"a test secret of 32 bytes, fixed";
const INGEST: &str = "ingest-token-0123456789";

async fn gateway() -> Gateway {
    GatewayBuilder::new()
        .scenarios(root().join("fixtures/scenarios"))
        .speed(0.0)
        .token_secret(SECRET.to_vec())
        .ingest_token(INGEST)
        .build()
        .await
        .unwrap()
}

struct Answer {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }
    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

async fn send(router: &Router, request: Request<Body>) -> Answer {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    Answer {
        status,
        headers,
        body,
    }
}

fn post(path: &str, body: impl Into<Body>) -> Request<Body> {
    Request::post(path)
        .header("content-type", "application/json")
        .body(body.into())
        .unwrap()
}

fn start_body(agent: &str, protocol: &str, conversation: &str) -> String {
    serde_json::json!({
        "message": "hello", "conversation_id": conversation, "agent_id": agent, "protocol": protocol,
    })
    .to_string()
}

/// The golden bytes of `name` in `protocol`, under the served run id.
fn golden(name: &str, protocol: &str, run_id: &str) -> String {
    let golden =
        std::fs::read_to_string(root().join(format!("fixtures/golden/{protocol}/{name}.sse")))
            .unwrap();
    let scenario =
        std::fs::read_to_string(root().join(format!("fixtures/scenarios/{name}.jsonl"))).unwrap();
    let first: serde_json::Value = serde_json::from_str(scenario.lines().next().unwrap()).unwrap();
    golden.replace(first["run_id"].as_str().unwrap(), run_id)
}

/// A DA start of the scenario `name` (under its own conversation id) at
/// `path`.
async fn start(router: &Router, path: &str, name: &str, protocol: &str) -> Answer {
    let body = start_body(name, protocol, &conversation_of(name));
    send(router, post(path, body)).await
}

fn conversation_of(name: &str) -> String {
    let scenario =
        std::fs::read_to_string(root().join(format!("fixtures/scenarios/{name}.jsonl"))).unwrap();
    let first: serde_json::Value = serde_json::from_str(scenario.lines().next().unwrap()).unwrap();
    first["conversation_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_start_answers_the_golden_bytes_in_every_protocol_with_its_run_headers() {
    let gw = gateway().await;
    let router = gw.router();
    for name in [
        "tool-approval-interrupt",
        "parallel-tool-calls",
        "unicode-everywhere",
    ] {
        for protocol in ["custom", "agui", "agui-v1"] {
            let conversation = conversation_of(name);
            let answer = send(
                &router,
                post(
                    "/api/v1/chat/stream/start",
                    start_body(name, protocol, &conversation),
                ),
            )
            .await;
            assert_eq!(answer.status, 200, "{name} {protocol}");
            let run_id = answer.header("x-run-id").unwrap().to_owned();
            assert_eq!(run_id.len(), 32);
            assert_eq!(
                answer.header("x-run-token"),
                gw.read_token(&run_id).await.unwrap().as_deref()
            );
            assert_eq!(
                answer.text(),
                golden(name, protocol, &run_id),
                "{name} {protocol}"
            );
        }
    }
    assert_eq!(gw.running(), 0, "every run ended and was unregistered");
}

#[tokio::test]
async fn the_gateway_nests_under_a_prefix_beside_the_hosts_routes_and_layers() {
    let gw = gateway().await;
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let recorder = seen.clone();
    let app: Router = Router::new()
        .nest("/agents", gw.router())
        .route("/mine", axum::routing::get(|| async { "the host's own" }))
        .layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                let recorder = recorder.clone();
                async move {
                    recorder.lock().unwrap().push(req.uri().path().to_owned());
                    let mut response = next.run(req).await;
                    response
                        .headers_mut()
                        .insert("x-host-layer", "1".parse().unwrap());
                    response
                }
            },
        ));
    let answer = start(
        &app,
        "/agents/api/v1/chat/stream/start",
        "plain-text-answer",
        "custom",
    )
    .await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("x-host-layer"), Some("1"));
    let run_id = answer.header("x-run-id").unwrap().to_owned();
    assert_eq!(
        answer.text(),
        golden("plain-text-answer", "custom", &run_id)
    );
    let mine = send(&app, Request::get("/mine").body(Body::empty()).unwrap()).await;
    assert_eq!(mine.text(), "the host's own");
    // Without the prefix the gateway's routes are not there.
    let bare = send(
        &app,
        post(
            "/api/v1/chat/stream/start",
            start_body("plain-text-answer", "custom", "c"),
        ),
    )
    .await;
    assert_eq!(bare.status, 404);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "/agents/api/v1/chat/stream/start",
            "/mine",
            "/api/v1/chat/stream/start"
        ]
    );
}

#[tokio::test]
async fn a_run_reads_back_from_the_log_with_its_token_and_resumes_after_a_frame() {
    let gw = gateway().await;
    let router = gw.router();
    let live = start(
        &router,
        "/api/v1/chat/stream/start",
        "tool-approval-interrupt",
        "agui",
    )
    .await;
    let run_id = live.header("x-run-id").unwrap().to_owned();
    let token = live.header("x-run-token").unwrap().to_owned();
    let path = format!("/api/v1/runs/{run_id}/stream?protocol=agui");
    let get = |headers: &[(&str, &str)]| {
        let mut req = Request::get(&path);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.body(Body::empty()).unwrap()
    };
    // A missing or wrong token is the same 404 as an unknown run.
    for headers in [vec![], vec![("x-run-token", "00")]] {
        let answer = send(&router, get(&headers)).await;
        assert_eq!(answer.status, 404);
        assert_eq!(answer.json()["code"], "unknown_run");
    }
    let replay = send(&router, get(&[("x-run-token", &token)])).await;
    assert_eq!(replay.status, 200);
    let text = replay.text();
    let stripped: String = text
        .split_inclusive('\n')
        .filter(|l| !l.starts_with("id: "))
        .collect();
    assert_eq!(stripped, live.text());
    // After the first frame: exactly the bytes that followed it.
    let first_end = text.find("\n\n").unwrap() + 2;
    let first_id = text.lines().next().unwrap().strip_prefix("id: ").unwrap();
    let resumed = send(
        &router,
        get(&[("x-run-token", &token), ("last-event-id", first_id)]),
    )
    .await;
    assert_eq!(resumed.text(), text[first_end..]);
    for (id, code) in [
        ("x", "bad_last_event_id"),
        ("9999.0", "unknown_last_event_id"),
    ] {
        let answer = send(
            &router,
            get(&[("x-run-token", &token), ("last-event-id", id)]),
        )
        .await;
        assert_eq!(answer.status, 400);
        assert_eq!(answer.json()["code"], code);
    }
}

/// Events a harness sends after its terminal are dropped and counted, as
/// `docs/upstream.md` says: the push summary's `dropped`, and the audit
/// record's `after_terminal` with the rule the first of them broke (4).
#[tokio::test]
async fn events_after_the_terminal_are_dropped_and_counted() {
    let audit = Arc::new(lce_stream::MemoryAudit::new());
    let gw = GatewayBuilder::new()
        .scenarios(root().join("fixtures/scenarios"))
        .anonymous_ingest(true)
        .audit(audit.clone())
        .build()
        .await
        .unwrap();
    let mut run = lce_testkit::RunBuilder::new("run-after", "conv-after");
    let lines = [
        run.run_started(),
        run.run_finished(),
        run.text_started("m"),
        run.text_delta("m", "late"),
    ]
    .iter()
    .map(|e| format!("{}\n", e.to_json()))
    .collect::<String>();
    let pushed = send(
        &gw.router(),
        Request::post("/api/v1/runs")
            .header("content-type", "application/x-ndjson")
            .body(Body::from(lines))
            .unwrap(),
    )
    .await;
    assert_eq!(pushed.status, 200);
    let summary = pushed.json();
    assert_eq!(summary["terminal"], "run.finished", "{summary}");
    assert_eq!(summary["events_in"], 4, "{summary}");
    assert_eq!(summary["dropped"], 2, "{summary}");
    let records = audit.records();
    let record = records
        .iter()
        .find(|r| r.run_id == "run-after")
        .expect("the run's audit record");
    assert_eq!(record.counters.after_terminal, 2, "{record:?}");
    assert_eq!(
        record.rule.as_ref().and_then(|c| c.rule()).map(|r| r.id()),
        Some("4"),
        "{record:?}"
    );
}

#[tokio::test]
async fn push_needs_the_ingest_token_answers_a_summary_and_refuses_a_second_push() {
    let gw = gateway().await;
    let router = gw.router();
    let body = std::fs::read(root().join("fixtures/scenarios/plain-text-answer.jsonl")).unwrap();
    let push = |auth: Option<&str>| {
        let mut req = Request::post("/api/v1/runs").header("content-type", "application/x-ndjson");
        if let Some(auth) = auth {
            req = req.header("authorization", auth);
        }
        req.body(Body::from(body.clone())).unwrap()
    };
    let refused = send(&router, push(Some("Bearer wrong"))).await;
    assert_eq!(refused.status, 401);
    assert_eq!(refused.json()["code"], "unauthorized");
    let bearer = format!("Bearer {INGEST}");
    let pushed = send(&router, push(Some(&bearer))).await;
    assert_eq!(pushed.status, 200);
    let summary = pushed.json();
    assert_eq!(summary["terminal"], "run.finished");
    assert_eq!(summary["outcome"], "ended");
    assert_eq!(summary["violations"], serde_json::json!([]));
    let run_id = summary["run_id"].as_str().unwrap();
    assert_eq!(
        pushed.header("x-run-token"),
        gw.read_token(run_id).await.unwrap().as_deref()
    );
    let again = send(&router, push(Some(&bearer))).await;
    assert_eq!(again.status, 409);
    assert_eq!(again.json()["code"], "run_exists");
    // Without an ingest token push is off.
    let off = GatewayBuilder::new()
        .scenarios(root().join("fixtures/scenarios"))
        .build()
        .await
        .unwrap();
    let answer = send(&off.router(), push(None)).await;
    assert_eq!(answer.status, 404);
}

#[tokio::test]
async fn bad_requests_get_typed_json_errors_before_any_stream() {
    let gw = gateway().await;
    let router = gw.router();
    let cases: [(&str, &str, u16, &str); 7] = [
        ("/api/v1/chat/stream/start", "{", 400, "malformed_json"),
        (
            "/api/v1/chat/stream/start",
            r#"{"message": 1}"#,
            422,
            "invalid_request",
        ),
        (
            "/api/v1/chat/stream/resume",
            r#"{"conversation_id":"c","agent_id":"a","message":"m"}"#,
            422,
            "invalid_request",
        ),
        (
            "/api/v1/chat/stream/start",
            r#"{"message":"m","conversation_id":"c","agent_id":"plain-text-answer","protocol":"xml"}"#,
            400,
            "unknown_protocol",
        ),
        (
            "/api/v1/chat/stream/start",
            r#"{"message":"m","conversation_id":"c","agent_id":"nope"}"#,
            404,
            "unknown_agent",
        ),
        (
            "/api/v1/chat/stream/resume",
            r#"{"conversation_id":"c","agent_id":"plain-text-answer","resume_data":"{}"}"#,
            404,
            "nothing_to_resume",
        ),
        (
            "/api/v1/agui",
            r#"{"threadId":"t","runId":"r","messages":[]}"#,
            400,
            "missing_agent",
        ),
    ];
    for (path, body, status, code) in cases {
        let answer = send(&router, post(path, body.to_owned())).await;
        assert_eq!(answer.status.as_u16(), status, "{path} {body}");
        assert_eq!(answer.header("content-type"), Some("application/json"));
        assert_eq!(answer.json()["code"], code, "{path} {body}");
    }
    // Every refusal is counted by its code, for the metrics.
    let mut expected = std::collections::BTreeMap::new();
    for (_, _, _, code) in cases {
        *expected.entry(code).or_insert(0u64) += 1;
    }
    assert_eq!(gw.refusals(), expected);
}

#[tokio::test]
async fn an_agui_run_id_that_has_a_log_is_a_409() {
    let gw = gateway().await;
    let router = gw.router();
    let body = serde_json::json!({
        "threadId": "thread-9", "runId": "run-agui-9", "messages": [{"role": "user", "content": "hi"}],
        "forwardedProps": {"agentId": "plain-text-answer"},
    })
    .to_string();
    let first = send(&router, post("/api/v1/agui", body.clone())).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("content-type"), Some("text/event-stream"));
    assert!(first.text().contains("\"type\":\"RUN_FINISHED\""));
    let second = send(&router, post("/api/v1/agui", body)).await;
    assert_eq!(second.status, 409);
}

/// The run id is reserved before the upstream is called: a taken AG-UI
/// `runId` is a 409 and the harness never hears of it; a run id whose
/// upstream gave no run is free again at once.
#[tokio::test]
async fn a_taken_run_id_never_reaches_the_harness_and_a_refused_one_is_free_again() {
    let (harness, gw) = InProcess::gateway().await;
    let router = gw.router();
    let agui = |run_id: &str, agent: &str| {
        serde_json::json!({
            "threadId": "thread-r", "runId": run_id,
            "messages": [{"role": "user", "content": "hi"}],
            "forwardedProps": {"agentId": agent},
        })
        .to_string()
    };
    // The first run waits for its cancel: its log is open.
    let first = router
        .clone()
        .oneshot(post("/api/v1/agui", agui("run-taken", "my-agent")))
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    assert_eq!(harness.requests.lock().unwrap().len(), 1);
    let second = send(&router, post("/api/v1/agui", agui("run-taken", "my-agent"))).await;
    assert_eq!(second.status, 409);
    assert_eq!(second.json()["code"], "run_exists");
    assert_eq!(
        harness.requests.lock().unwrap().len(),
        1,
        "the harness was called for a taken run id"
    );
    drop(first);
    gw.shutdown().await;

    // The scenario player knows no agent `nobody`: 404, and the id it
    // reserved is given back.
    let gw = gateway().await;
    let router = gw.router();
    let refused = send(&router, post("/api/v1/agui", agui("run-free", "nobody"))).await;
    assert_eq!(refused.status, 404);
    assert_eq!(refused.json()["code"], "unknown_agent");
    let mut given_back = false;
    for _ in 0..100 {
        if gw.log().info("run-free").await == Ok(None) {
            given_back = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(given_back, "the refused run's reserved log is still there");
    let again = send(
        &router,
        post("/api/v1/agui", agui("run-free", "plain-text-answer")),
    )
    .await;
    assert_eq!(again.status, 200);
    assert!(again.text().contains("\"type\":\"RUN_FINISHED\""));
}

#[tokio::test]
async fn invoke_answers_das_json_and_cancel_without_a_run_is_false() {
    let gw = gateway().await;
    let router = gw.router();
    let conversation = conversation_of("plain-text-answer");
    let answer = send(
        &router,
        post(
            "/api/v1/chat/invoke",
            serde_json::json!({"message": "m", "conversation_id": conversation, "agent_id": "plain-text-answer"}).to_string(),
        ),
    )
    .await;
    assert_eq!(answer.status, 200);
    let golden: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root().join("fixtures/golden/invoke/plain-text-answer.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(answer.header("content-type"), Some("application/json"));
    assert_eq!(answer.text(), golden["body"].as_str().unwrap());
    let cancel = send(
        &router,
        post(
            "/api/v1/chat/stream/cancel",
            r#"{"conversation_id":"nobody","agent_id":"a"}"#,
        ),
    )
    .await;
    assert_eq!(cancel.text(), r#"{"cancelled":false}"#);
    assert_eq!(gw.running(), 0);
}

/// What the harness saw of a request: run id, agent, input, Authorization.
type Seen = (String, String, RunInput, Option<String>);

/// A harness written in Rust, in-process: it records the requests and
/// cancels it gets and plays a run that waits for its cancel.
#[derive(Default)]
struct InProcess {
    requests: Mutex<Vec<Seen>>,
    cancels: Mutex<Vec<String>>,
}

impl InProcess {
    /// A gateway whose upstream is a fresh `InProcess`, and that harness.
    async fn gateway() -> (Arc<InProcess>, Gateway) {
        let harness = Arc::new(InProcess::default());
        let gw = GatewayBuilder::new()
            .upstream(harness.clone())
            .build()
            .await
            .unwrap();
        (harness, gw)
    }
}

impl Upstream for InProcess {
    fn open(&self, request: RunRequest) -> BoxFuture<'_, Result<EventStream, UpstreamError>> {
        let auth = request
            .forwarded
            .authorization()
            .map(|v| v.to_str().unwrap().to_owned());
        self.requests.lock().unwrap().push((
            request.run_id.clone(),
            request.agent_id.clone(),
            request.input.clone(),
            auth,
        ));
        let mut run = lce_testkit::RunBuilder::new(&request.run_id, &request.conversation_id);
        let events = vec![
            run.run_started(),
            run.text_started("m"),
            run.text_delta("m", "hi"),
        ];
        // Then nothing: the run waits, as a live model does, until cancelled.
        let stream =
            futures::stream::iter(events.into_iter().map(Ok)).chain(futures::stream::pending());
        Box::pin(async move { Ok(Box::pin(stream) as EventStream) })
    }

    fn cancel<'a>(&'a self, run_id: &'a str, _forwarded: &'a Forwarded) -> BoxFuture<'a, bool> {
        self.cancels.lock().unwrap().push(run_id.to_owned());
        Box::pin(async { true })
    }
}

use futures::StreamExt as _;

/// Past `run_deadline` a run still going ends with
/// `run.cancelled{deadline}`, and the upstream's cancel is called.
#[tokio::test]
async fn a_run_past_its_deadline_ends_cancelled_and_the_upstream_is_told() {
    let harness = Arc::new(InProcess::default());
    let gw = GatewayBuilder::new()
        .upstream(harness.clone())
        .run_deadline(Duration::from_millis(300))
        .build()
        .await
        .unwrap();
    let answer = send(
        &gw.router(),
        post(
            "/api/v1/chat/stream/start",
            start_body("my-agent", "agui-v1", "conv-dl"),
        ),
    )
    .await;
    assert_eq!(answer.status, 200);
    let text = answer.text();
    assert!(text.contains("\"type\":\"RUN_FINISHED\""), "{text}");
    assert!(text.contains("cancelled"), "{text}");
    let run_id = answer.header("x-run-id").unwrap().to_owned();
    let batch = gw
        .log()
        .read(&run_id, 0, 1000, Duration::ZERO)
        .await
        .unwrap();
    let Some(lce_runlog::LogEntry::Event(last)) = batch.entries.last() else {
        panic!("no terminal in {:?}", batch.entries);
    };
    let json = last.to_json();
    assert!(json.contains("\"type\":\"run.cancelled\""), "{json}");
    assert!(json.contains("\"reason\":\"deadline\""), "{json}");
    // The upstream's cancel is called beside the coordinator's terminal.
    let mut told = false;
    for _ in 0..200 {
        if harness.cancels.lock().unwrap().contains(&run_id) {
            told = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(told, "the upstream was not told");
    // Without a deadline (zero), the same run is still going.
    let gw_none = GatewayBuilder::new()
        .upstream(Arc::new(InProcess::default()))
        .run_deadline(Duration::ZERO)
        .build()
        .await
        .unwrap();
    let response = gw_none
        .router()
        .oneshot(post(
            "/api/v1/chat/stream/start",
            start_body("my-agent", "agui-v1", "conv-nodl"),
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(gw_none.running(), 1, "a run without a deadline ended");
    gw_none.shutdown().await;
}

#[tokio::test]
async fn an_in_process_upstream_gets_the_request_and_the_cancel_and_the_run_ends_cancelled() {
    let (harness, gw) = InProcess::gateway().await;
    let router = gw.router();
    let request = Request::post("/api/v1/chat/stream/start")
        .header("authorization", "Bearer user-token")
        .body(Body::from(start_body("my-agent", "agui-v1", "conv-ip")))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body().into_data_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(std::str::from_utf8(&first).unwrap().contains("RUN_STARTED"));
    // The run waits; cancel it from the cancel route.
    let cancel = send(
        &router,
        post(
            "/api/v1/chat/stream/cancel",
            r#"{"conversation_id":"conv-ip","agent_id":"my-agent"}"#,
        ),
    )
    .await;
    assert_eq!(cancel.text(), r#"{"cancelled":true}"#);
    let mut rest = Vec::new();
    while let Some(chunk) = body.next().await {
        rest.extend_from_slice(&chunk.unwrap());
    }
    let rest = String::from_utf8(rest).unwrap();
    assert!(rest.contains("\"type\":\"RUN_FINISHED\""), "{rest}");
    assert!(rest.contains("cancelled"), "{rest}");
    let requests = harness.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    let (run_id, agent, input, auth) = &requests[0];
    assert_eq!(agent, "my-agent");
    assert_eq!(*input, RunInput::Message("hello".into()));
    assert_eq!(auth.as_deref(), Some("Bearer user-token"));
    assert_eq!(
        *harness.cancels.lock().unwrap(),
        std::slice::from_ref(run_id)
    );
}

#[tokio::test]
async fn shutdown_ends_the_runs_it_drives_as_cancelled_shutdown() {
    let (harness, gw) = InProcess::gateway().await;
    let response = gw
        .router::<()>()
        .oneshot(post(
            "/api/v1/chat/stream/start",
            start_body("a", "custom", "conv-sd"),
        ))
        .await
        .unwrap();
    let reader = tokio::spawn(response.into_body().collect());
    // Wait until the run's first events are in the log.
    let mut logged = 0;
    for _ in 0..400 {
        let first = harness.requests.lock().unwrap().first().cloned();
        if let Some((run_id, ..)) = first {
            logged = gw
                .log()
                .read(&run_id, 0, 100, Duration::ZERO)
                .await
                .map_or(0, |b| b.entries.len());
        }
        if logged >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(logged >= 3, "the run's events were logged");
    assert_eq!(gw.running(), 1);
    gw.shutdown().await;
    assert_eq!(gw.running(), 0);
    let body = reader.await.unwrap().unwrap().to_bytes();
    // `custom` writes nothing for a cancelled run: the stream ends after
    // its last whole frame.
    assert!(body.starts_with(b"event: content\n"), "{body:?}");
    assert!(body.ends_with(b"\n\n"), "{body:?}");
    let run_id = harness.requests.lock().unwrap()[0].0.clone();
    let batch = gw
        .log()
        .read(&run_id, 0, 100, Duration::ZERO)
        .await
        .unwrap();
    assert!(batch.sealed);
    let last = format!("{:?}", batch.entries.last().unwrap());
    assert!(
        last.contains("RunCancelled") && last.contains("Shutdown"),
        "{last}"
    );
}

#[tokio::test]
async fn a_builder_without_an_upstream_or_with_short_secrets_is_refused() {
    let err = GatewayBuilder::new().build().await.unwrap_err();
    assert!(matches!(err, lce_gateway::BuildError::NoUpstream), "{err}");
    let err = GatewayBuilder::new()
        .scenarios(root().join("fixtures/scenarios"))
        .token_secret(b"short".to_vec())
        .build()
        .await
        .unwrap_err();
    assert!(
        matches!(err, lce_gateway::BuildError::TokenSecretTooShort),
        "{err}"
    );
    let err = GatewayBuilder::new()
        .scenarios("/nonexistent-lce-folder")
        .build()
        .await
        .unwrap_err();
    assert!(
        matches!(err, lce_gateway::BuildError::Scenarios(_)),
        "{err}"
    );
}

/// `/healthz` is 200 while the process serves; `/readyz` is 200 while the
/// gateway takes runs and 503 `draining` once it drains, while its routes
/// still serve.
#[tokio::test]
async fn health_and_readiness_answer_and_readiness_turns_on_drain() {
    let gw = gateway().await;
    let router = gw.router();
    let get = |path: &str| Request::get(path).body(Body::empty()).unwrap();
    let health = send(&router, get("/healthz")).await;
    assert_eq!(
        (health.status.as_u16(), health.text()),
        (200, r#"{"status":"ok"}"#.to_owned())
    );
    let ready = send(&router, get("/readyz")).await;
    assert_eq!(
        (ready.status.as_u16(), ready.text()),
        (200, r#"{"status":"ready"}"#.to_owned())
    );
    gw.drain();
    let ready = send(&router, get("/readyz")).await;
    assert_eq!(ready.status, 503);
    assert_eq!(ready.json()["status"], "not_ready");
    assert_eq!(ready.json()["reason"], "draining");
    // Draining, a run is still taken.
    let started = start(
        &router,
        "/api/v1/chat/stream/start",
        "plain-text-answer",
        "custom",
    )
    .await;
    assert_eq!(started.status, 200);
    assert_eq!(send(&router, get("/healthz")).await.status, 200);
}

/// With CORS origins a browser page on one of them may call the gateway:
/// preflights are answered, `X-Run-Id` and `X-Run-Token` exposed; other
/// origins get no CORS headers; without origins CORS is off.
#[tokio::test]
async fn cors_answers_preflights_and_exposes_the_run_headers() {
    let gw = GatewayBuilder::new()
        .scenarios(root().join("fixtures/scenarios"))
        .cors_origins(["https://app.example"])
        .build()
        .await
        .unwrap();
    let router = gw.router();
    let preflight = |origin: &str| {
        Request::builder()
            .method("OPTIONS")
            .uri("/api/v1/agui")
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "content-type,x-run-token")
            .body(Body::empty())
            .unwrap()
    };
    let ok = send(&router, preflight("https://app.example")).await;
    assert_eq!(ok.status, 200);
    assert_eq!(
        ok.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    let methods = ok
        .header("access-control-allow-methods")
        .unwrap()
        .to_ascii_uppercase();
    assert!(methods.contains("POST"), "{methods}");
    let allowed = ok
        .header("access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase();
    assert!(allowed.contains("x-run-token"), "{allowed}");
    let other = send(&router, preflight("https://evil.example")).await;
    assert_eq!(other.header("access-control-allow-origin"), None);
    let request = Request::post("/api/v1/chat/stream/start")
        .header("origin", "https://app.example")
        .header("content-type", "application/json")
        .body(Body::from(start_body(
            "plain-text-answer",
            "custom",
            "conv-cors",
        )))
        .unwrap();
    let answer = send(&router, request).await;
    assert_eq!(answer.status, 200);
    let exposed = answer
        .header("access-control-expose-headers")
        .unwrap()
        .to_ascii_lowercase();
    assert!(
        exposed.contains("x-run-id") && exposed.contains("x-run-token"),
        "{exposed}"
    );
    // Off by default.
    let plain = gateway().await.router();
    assert_eq!(
        send(&plain, preflight("https://app.example"))
            .await
            .header("access-control-allow-origin"),
        None
    );
    // An origin that is no header value is refused at build.
    let bad = GatewayBuilder::new()
        .scenarios(root().join("fixtures/scenarios"))
        .cors_origins(["https://a\nb"])
        .build()
        .await;
    assert!(matches!(
        bad,
        Err(lce_gateway::BuildError::InvalidCorsOrigin)
    ));
}
