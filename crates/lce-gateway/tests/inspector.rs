//! The inspector (`GatewayBuilder::inspector`) in-process, through
//! `tower::ServiceExt::oneshot`: its gate (off, loopback only, a token),
//! the runs index and a run's rows with the coordinator's intervention.
//! The peer's address is the `ConnectInfo` extension the accept loop
//! (`server::serve_http`) gives every request.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::PathBuf;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use lce_gateway::{BuildError, GatewayBuilder};
use tower::ServiceExt as _;

const INGEST: &str = "ingest-token-0123456789";
const TOKEN: &str = "inspector-token-0123456789";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

async fn gateway(configure: impl FnOnce(GatewayBuilder) -> GatewayBuilder) -> Router {
    let builder = GatewayBuilder::new()
        .scenarios(root().join("fixtures/scenarios"))
        .speed(0.0)
        .ingest_token(INGEST);
    configure(builder).build().await.unwrap().router()
}

fn get(path: &str, peer: Option<&str>, bearer: Option<&str>) -> Request<Body> {
    let mut request = Request::get(path);
    if let Some(peer) = peer {
        request = request.extension(ConnectInfo(peer.parse::<SocketAddr>().unwrap()));
    }
    if let Some(bearer) = bearer {
        request = request.header("authorization", format!("Bearer {bearer}"));
    }
    request.body(Body::empty()).unwrap()
}

async fn send(router: &Router, request: Request<Body>) -> (StatusCode, String, String) {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        content_type,
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

const LOOPBACK: Option<&str> = Some("127.0.0.1:40000");
const LOOPBACK_V6: Option<&str> = Some("[::1]:40000");
const REMOTE: Option<&str> = Some("10.1.2.3:40000");

#[tokio::test]
async fn off_by_default_every_inspector_route_is_a_404() {
    let router = gateway(|b| b).await;
    for path in [
        "/inspect",
        "/inspect/api/runs",
        "/inspect/run/r1",
        "/inspect/api/runs/r1/events",
    ] {
        let (status, _, _) = send(&router, get(path, LOOPBACK, None)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
    }
    let router = gateway(|b| b.inspector(true).inspector(false)).await;
    let (status, _, _) = send(&router, get("/inspect", LOOPBACK, None)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn on_it_answers_loopback_peers_only() {
    let router = gateway(|b| b.inspector(true)).await;
    for peer in [LOOPBACK, LOOPBACK_V6] {
        let (status, content_type, page) = send(&router, get("/inspect", peer, None)).await;
        assert_eq!(status, StatusCode::OK);
        assert!(content_type.starts_with("text/html"), "{content_type}");
        assert!(
            page.contains("A development tool"),
            "the page says what it is"
        );
        assert!(
            page.contains("payload excerpts"),
            "the page says it shows payloads"
        );
        assert!(!page.contains("<script src"), "everything is in the page");
        let (status, content_type, body) =
            send(&router, get("/inspect/api/runs", peer, None)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(content_type, "application/json");
        let index: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(index["runs"].as_array().unwrap().is_empty());
    }
    for peer in [REMOTE, None] {
        for path in [
            "/inspect",
            "/inspect/api/runs",
            "/inspect/run/r1",
            "/inspect/api/runs/r1/events",
        ] {
            let (status, _, body) = send(&router, get(path, peer, None)).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{path} from {peer:?}");
            assert!(body.contains("\"code\":\"forbidden\""), "{body}");
        }
    }
}

#[tokio::test]
async fn with_a_token_every_data_request_needs_it_from_any_address() {
    let router = gateway(|b| b.inspector(true).inspector_token(TOKEN)).await;
    for peer in [LOOPBACK, REMOTE, None] {
        for path in [
            "/inspect/api/runs",
            "/inspect/api/runs/r1",
            "/inspect/api/runs/r1/events",
        ] {
            let (status, _, body) = send(&router, get(path, peer, None)).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}: no token");
            assert!(!body.contains(TOKEN));
            let (status, _, _) =
                send(&router, get(path, peer, Some("inspector-token-0123456780"))).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}: a wrong token");
        }
        let (status, _, _) = send(&router, get("/inspect/api/runs", peer, Some(TOKEN))).await;
        assert_eq!(status, StatusCode::OK, "the right token from {peer:?}");
        // The page is static bytes without data: it loads without the token
        // and takes it from the URL fragment.
        let (status, _, page) = send(&router, get("/inspect", peer, None)).await;
        assert_eq!(status, StatusCode::OK);
        assert!(page.contains("#token="));
        assert!(!page.contains(TOKEN));
    }
    let short = GatewayBuilder::new()
        .scenarios(root().join("fixtures/scenarios"))
        .inspector_token("short")
        .build()
        .await;
    assert!(matches!(short, Err(BuildError::InspectorTokenTooShort)));
}

fn event(seq: u64, ty: &str, data: &str) -> String {
    format!(
        r#"{{"version":1,"type":"{ty}","run_id":"run-bad","conversation_id":"c-bad","sequence":{seq},"timestamp":"2026-12-05T00:00:00Z","namespace":[],"data":{data}}}"#
    )
}

#[tokio::test]
async fn a_run_is_indexed_with_its_rows_and_the_rule_the_coordinator_enforced() {
    let router = gateway(|b| b.inspector(true)).await;
    // A pushed run that deltas a text it never started (rule 5): the
    // coordinator ends it with run.error{harness_event_invalid}.
    let body = [
        event(
            0,
            "run.started",
            r#"{"harness_id":"h","adapter_version":"1"}"#,
        ),
        event(
            1,
            "text.started",
            r#"{"message_id":"m1","role":"assistant"}"#,
        ),
        event(
            2,
            "text.delta",
            r#"{"message_id":"m1","delta":"Hello there"}"#,
        ),
        event(3, "text.delta", r#"{"message_id":"nope","delta":"x"}"#),
    ]
    .join("\n");
    let push = Request::post("/api/v1/runs")
        .header("authorization", format!("Bearer {INGEST}"))
        .header("content-type", "application/x-ndjson")
        .body(Body::from(body))
        .unwrap();
    let (status, _, summary) = send(&router, push).await;
    assert_eq!(status, StatusCode::OK, "{summary}");

    let (status, _, index) = send(&router, get("/inspect/api/runs", LOOPBACK, None)).await;
    assert_eq!(status, StatusCode::OK);
    let index: serde_json::Value = serde_json::from_str(&index).unwrap();
    let run = &index["runs"][0];
    assert_eq!(run["run_id"], "run-bad");
    assert_eq!(run["open"], false);
    assert_eq!(run["ended"]["rule"], "5", "{run}");
    assert_eq!(run["ended"]["terminal"], "run.error");
    assert_eq!(run["ended"]["coordinator_terminal"], true);

    let (status, content_type, rows) = send(
        &router,
        get("/inspect/api/runs/run-bad/events", LOOPBACK, None),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type, "text/event-stream");
    let rows: Vec<serde_json::Value> = rows
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let types: Vec<&str> = rows.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"run.started"));
    assert_eq!(types.last(), Some(&"run.error"));
    let delta = rows.iter().find(|r| r["type"] == "text.delta").unwrap();
    assert_eq!(delta["ids"]["message_id"], "m1");
    assert_eq!(delta["text"], "Hello there");
    assert!(delta["size"].as_u64().unwrap() > 0);
    // The terminal's row is the one the audit record names.
    assert_eq!(rows.last().unwrap()["seq"], run["ended"]["sequence"]);

    let (status, _, _) = send(
        &router,
        get("/inspect/api/runs/no-such-run", LOOPBACK, None),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = send(&router, get("/inspect/run/run-bad", LOOPBACK, None)).await;
    assert_eq!(status, StatusCode::OK);
}
