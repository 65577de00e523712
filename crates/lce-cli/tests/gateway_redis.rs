//! The guarantees of `gateway.md` on real processes: several `lce serve
//! --log redis://...` replicas and one `redis-server` (append-only file,
//! fsync on every write) on loopback.
//!
//! Without `redis-server` these tests say `SKIPPED` loudly and pass; in CI
//! (`CI` set) they fail instead (`lce_testkit::redis_server`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{
    HttpResponse, Server, SlowPush, frame_ids, lce, parse_response, request, root, strip_ids,
};
use lce_testkit::RunBuilder;
use lce_testkit::redis_server::RedisServer;

/// Generous bound for anything that should happen "soon" (never a timing
/// assertion: it only stops a hung test).
const BOUND: Duration = Duration::from_secs(60);
const INGEST: &str = "ingest-token-for-the-tests";

struct Cluster {
    redis: RedisServer,
    dir: PathBuf,
    secret: PathBuf,
    replicas: Vec<Server>,
}

impl Cluster {
    /// Redis and `n` replicas, each with `extra` options.
    fn start(name: &str, n: usize, extra: &[&str]) -> Option<Cluster> {
        let redis = RedisServer::start()?;
        let dir = std::env::temp_dir().join(format!("lce-gwr-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let secret = dir.join("secret");
        std::fs::write(&secret, "the replicas' shared token secret\n").unwrap();
        std::fs::write(dir.join("ingest"), INGEST).unwrap();
        let mut cluster = Cluster {
            redis,
            dir,
            secret,
            replicas: Vec::new(),
        };
        for _ in 0..n {
            cluster.add_replica(extra);
        }
        Some(cluster)
    }

    fn add_replica(&mut self, extra: &[&str]) {
        let scenarios = root().join("fixtures/scenarios");
        let mut args = vec![
            "--speed".to_owned(),
            "0".to_owned(),
            "--scenarios".to_owned(),
            scenarios.to_str().unwrap().to_owned(),
            "--log".to_owned(),
            self.redis.url(),
            "--token-secret-file".to_owned(),
            self.secret.to_str().unwrap().to_owned(),
            "--ingest-token-file".to_owned(),
            self.dir.join("ingest").to_str().unwrap().to_owned(),
        ];
        if !extra.contains(&"--takeover-after") {
            // Long enough that a loaded 2-core machine running debug builds
            // never misses a renewal (a third of it); the tests that kill an
            // owner use 2 s.
            args.extend(["--takeover-after".to_owned(), "10".to_owned()]);
        }
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        self.replicas.push(Server::start(&args));
    }

    fn addr(&self, i: usize) -> &str {
        &self.replicas[i % self.replicas.len()].addr
    }

    fn token(&self, run_id: &str) -> String {
        let url = self.redis.url();
        let (code, out, err) = lce(&[
            "token",
            run_id,
            "--token-secret-file",
            self.secret.to_str().unwrap(),
            "--log",
            &url,
        ]);
        assert_eq!(code, 0, "{err}");
        out.trim_end().to_owned()
    }

    /// `GET .../stream` on replica `i`, to the end.
    fn read(&self, i: usize, run_id: &str, protocol: &str, last: Option<&str>) -> HttpResponse {
        self.read_with(i, run_id, &self.token(run_id), protocol, last)
    }

    /// [`Cluster::read`] with a token of the caller's.
    fn read_with(
        &self,
        i: usize,
        run_id: &str,
        token: &str,
        protocol: &str,
        last: Option<&str>,
    ) -> HttpResponse {
        let mut headers = vec![("X-Run-Token", token)];
        if let Some(last) = last {
            headers.push(("Last-Event-ID", last));
        }
        request(
            self.addr(i),
            "GET",
            &format!("/api/v1/runs/{run_id}/stream?protocol={protocol}"),
            &headers,
            b"",
        )
    }

    /// `POST /api/v1/runs` of a whole body on replica `i`.
    fn push(&self, i: usize, body: &[u8]) -> HttpResponse {
        request(
            self.addr(i),
            "POST",
            "/api/v1/runs",
            &[
                ("Authorization", &format!("Bearer {INGEST}")),
                ("Content-Type", "application/x-ndjson"),
            ],
            body,
        )
    }

    /// XLEN of a run's stream, asked of Redis directly (RESP over TCP).
    fn logged_entries(&self, run_id: &str) -> u64 {
        let key = format!("lce:{{{run_id}}}:log");
        let mut s = TcpStream::connect(("127.0.0.1", self.redis.port())).unwrap();
        write!(s, "*2\r\n$4\r\nXLEN\r\n${}\r\n{key}\r\n", key.len()).unwrap();
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).unwrap();
        let reply = std::str::from_utf8(&buf[..n]).unwrap();
        reply.trim_start_matches(':').trim_end().parse().unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.replicas.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A subscriber that reads as the test decides.
struct Reader {
    stream: TcpStream,
    raw: Vec<u8>,
}

impl Reader {
    fn open(addr: &str, run_id: &str, token: &str, protocol: &str) -> Reader {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(BOUND)).unwrap();
        write!(
            stream,
            "GET /api/v1/runs/{run_id}/stream?protocol={protocol} HTTP/1.1\r\nHost: lce\r\nX-Run-Token: {token}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        Reader {
            stream,
            raw: Vec::new(),
        }
    }

    /// Reads until `needle` appears in what was read (bounded).
    fn until(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + BOUND;
        let mut buf = [0u8; 8192];
        while !String::from_utf8_lossy(&self.raw).contains(needle) {
            assert!(Instant::now() < deadline, "never got {needle:?}");
            let n = self.stream.read(&mut buf).unwrap();
            if n == 0 {
                let raw = String::from_utf8_lossy(&self.raw);
                panic!(
                    "closed before {needle:?}: {}",
                    &raw[raw.len().saturating_sub(400)..]
                );
            }
            self.raw.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&self.raw).into_owned()
    }

    /// Reads to the end; the whole response.
    fn finish(mut self) -> HttpResponse {
        let _ = self.stream.read_to_end(&mut self.raw);
        parse_response(&self.raw)
    }
}

fn text(resp: &HttpResponse) -> String {
    String::from_utf8(resp.body.clone()).unwrap()
}

fn terminals(agui_v1: &str) -> usize {
    agui_v1.matches("\"type\":\"RUN_FINISHED\"").count()
        + agui_v1.matches("\"type\":\"RUN_ERROR\"").count()
}

fn scenario(name: &str) -> Vec<u8> {
    std::fs::read(root().join(format!("fixtures/scenarios/{name}.jsonl"))).unwrap()
}

/// The lines of a text run under `run_id` with `deltas` text deltas of
/// `size` bytes, without its terminal, and the terminal line.
fn text_run(run_id: &str, deltas: usize, size: usize) -> (Vec<String>, String) {
    let mut b = RunBuilder::new(run_id, "conv-redis");
    let mut lines = vec![b.run_started().to_json(), b.text_started("m1").to_json()];
    let chunk = "x".repeat(size);
    for _ in 0..deltas {
        lines.push(b.text_delta("m1", &chunk).to_json());
    }
    lines.push(b.text_finished("m1").to_json());
    let terminal = b.run_finished().to_json();
    (lines, terminal)
}

#[test]
fn every_replica_serves_the_same_bytes_and_resumes_after_any_cut() {
    let Some(cluster) = Cluster::start("resume", 3, &["--sse-ids"]) else {
        return;
    };
    for (name, protocol) in [
        ("tool-approval-interrupt", "custom"),
        ("parallel-tool-calls", "agui"),
        ("resumed-after-rejected-approval", "agui-v1"),
    ] {
        // Played on replica 0 with ids (--sse-ids), read on 1 and 2.
        let recorded: serde_json::Value =
            serde_json::from_slice(scenario(name).split(|b| *b == b'\n').next().unwrap()).unwrap();
        let body = serde_json::json!({
            "message": "m", "conversation_id": recorded["conversation_id"], "agent_id": name, "protocol": protocol,
        })
        .to_string();
        let live = request(
            cluster.addr(0),
            "POST",
            "/api/v1/chat/stream/start",
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
        assert_eq!(live.status, 200);
        let run_id = live.header("x-run-id").unwrap().to_owned();
        assert_eq!(
            live.header("x-run-token"),
            Some(cluster.token(&run_id).as_str())
        );
        let full = text(&live);
        for i in 1..3 {
            assert_eq!(
                text(&cluster.read(i, &run_id, protocol, None)),
                full,
                "{name} on replica {i}"
            );
        }
        // A client cut at every frame boundary, and inside every frame
        // (it keeps the frames it has whole), reconnects to the next replica.
        let ids = frame_ids(&full);
        assert_eq!(
            ids.len(),
            full.matches("\n\n").count(),
            "{name}: a frame without id"
        );
        let mut cuts: Vec<usize> = ids.iter().map(|(_, end)| *end).collect();
        cuts.extend(ids.iter().map(|(_, end)| end - 3));
        for (n, cut) in cuts.into_iter().enumerate() {
            let whole = ids.iter().rev().find(|(_, end)| *end <= cut);
            let (kept, resumed) = match whole {
                Some((id, end)) => (
                    &full[..*end],
                    cluster.read(n + 1, &run_id, protocol, Some(id)),
                ),
                None => ("", cluster.read(n + 1, &run_id, protocol, None)),
            };
            assert_eq!(resumed.status, 200);
            assert_eq!(
                format!("{kept}{}", text(&resumed)),
                full,
                "{name}: cut at {cut}"
            );
        }
        // Without ids the POST bytes are the golden file's (run id replaced).
        let golden =
            std::fs::read_to_string(root().join(format!("fixtures/golden/{protocol}/{name}.sse")))
                .unwrap();
        assert_eq!(
            strip_ids(&full),
            golden.replace(recorded["run_id"].as_str().unwrap(), &run_id),
            "{name}"
        );
    }
}

#[test]
fn a_live_run_is_written_before_it_is_sent_and_survives_a_client_cut() {
    let Some(cluster) = Cluster::start("live", 3, &[]) else {
        return;
    };
    let (lines, terminal) = text_run("run-live-1", 12, 40);
    let mut push = SlowPush::open(cluster.addr(0), INGEST, BOUND);
    push.send(&lines[0]);
    let token = cluster.token("run-live-1");
    // Wait for the log to exist before subscribing.
    let deadline = Instant::now() + BOUND;
    while cluster.logged_entries("run-live-1") == 0 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut reader = Reader::open(cluster.addr(1), "run-live-1", &token, "custom");
    let mut last_id = String::new();
    // lines[1] is text.started (no custom frame); then one delta at a time.
    push.send(&lines[1]);
    for delta in 1..=6 {
        push.send(&lines[1 + delta]);
        let seen = reader.until("x\", \"namespace\": []}\n\n");
        // Every frame the subscriber sees names a position the engine holds.
        for id in seen.lines().filter_map(|l| l.strip_prefix("id: ")) {
            let position: u64 = id.split('.').next().unwrap().parse().unwrap();
            assert!(
                cluster.logged_entries("run-live-1") >= position,
                "frame {id} before its entry"
            );
            last_id = id.to_owned();
        }
        reader.raw.clear();
    }
    assert!(!last_id.is_empty());
    // The client is cut; the harness goes on; the client comes back to
    // another replica after the last frame it had.
    drop(reader);
    for line in &lines[8..] {
        push.send(line);
    }
    push.send(&terminal);
    let summary = push.finish();
    assert_eq!(summary.status, 200);
    let summary: serde_json::Value = serde_json::from_slice(&summary.body).unwrap();
    assert_eq!(summary["terminal"], "run.finished", "{summary}");
    assert_eq!(summary["outcome"], "ended");
    let full = text(&cluster.read(2, "run-live-1", "custom", None));
    let rest = text(&cluster.read(2, "run-live-1", "custom", Some(&last_id)));
    assert!(!rest.is_empty());
    assert!(
        full.ends_with(&rest),
        "the resumed bytes are the end of the run"
    );
    assert!(
        rest.ends_with("event: done\ndata: {}\n\n") || rest.contains("event: done"),
        "{rest}"
    );
}

#[test]
fn two_replicas_ingesting_one_run_give_one_terminal() {
    let Some(cluster) = Cluster::start("race", 2, &[]) else {
        return;
    };
    for round in 0..5 {
        let run_id = format!("run-race-{round}");
        let (mut lines, terminal) = text_run(&run_id, 30, 10);
        lines.push(terminal);
        let body = lines.join("\n") + "\n";
        let answers: Vec<u16> = std::thread::scope(|s| {
            let a = s.spawn(|| cluster.push(0, body.as_bytes()).status);
            let b = s.spawn(|| cluster.push(1, body.as_bytes()).status);
            vec![a.join().unwrap(), b.join().unwrap()]
        });
        let mut sorted = answers.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [200, 409], "round {round}");
        let read = text(&cluster.read(round, &run_id, "agui-v1", None));
        assert_eq!(terminals(&read), 1, "{read}");
    }
}

#[test]
fn a_killed_owner_is_ended_by_another_replica_with_one_terminal() {
    let Some(mut cluster) = Cluster::start("kill", 3, &["--takeover-after", "2"]) else {
        return;
    };
    let (lines, _) = text_run("run-orphan", 5, 10);
    let mut push = SlowPush::open(cluster.addr(0), INGEST, BOUND);
    for line in &lines[..4] {
        push.send(line);
    }
    let token = cluster.token("run-orphan");
    let deadline = Instant::now() + BOUND;
    while cluster.logged_entries("run-orphan") < 4 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut reader = Reader::open(cluster.addr(1), "run-orphan", &token, "agui-v1");
    reader.until("TEXT_MESSAGE_CONTENT");
    // kill -9 of the owner, mid-run.
    let owner = &mut cluster.replicas[0].child;
    owner.kill().unwrap();
    owner.wait().unwrap();
    let got = text(&reader.finish());
    assert_eq!(terminals(&got), 1, "{got}");
    assert!(got.contains("\"type\":\"RUN_ERROR\""), "{got}");
    assert!(got.contains("provider_stream_closed"), "{got}");
    drop(push);
    // Every other replica reads the same ended run.
    let again = text(&cluster.read(2, "run-orphan", "agui-v1", None));
    assert_eq!(strip_ids(&again), strip_ids(&got));
}

#[test]
fn an_orphan_nobody_reads_is_ended_by_the_sweep() {
    let Some(mut cluster) = Cluster::start("sweep", 2, &["--takeover-after", "2"]) else {
        return;
    };
    let (lines, _) = text_run("run-unread", 3, 10);
    let mut push = SlowPush::open(cluster.addr(0), INGEST, BOUND);
    for line in &lines[..3] {
        push.send(line);
    }
    let deadline = Instant::now() + BOUND;
    while cluster.logged_entries("run-unread") < 3 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    cluster.replicas[0].child.kill().unwrap();
    cluster.replicas[0].child.wait().unwrap();
    drop(push);
    // Replica 1's sweep ends it without any reader: the terminal appears.
    let deadline = Instant::now() + BOUND;
    while cluster.logged_entries("run-unread") < 4 {
        assert!(Instant::now() < deadline, "the orphan was never ended");
        std::thread::sleep(Duration::from_millis(100));
    }
    let read = text(&cluster.read(1, "run-unread", "agui-v1", None));
    assert_eq!(terminals(&read), 1, "{read}");
}

#[test]
fn redis_killed_and_restarted_from_its_aof_loses_nothing_acknowledged() {
    let Some(mut cluster) = Cluster::start("aof", 2, &[]) else {
        return;
    };
    let mut before = Vec::new();
    for name in [
        "tool-approval-interrupt",
        "parallel-tool-calls",
        "unicode-everywhere",
    ] {
        let pushed = cluster.push(0, &scenario(name));
        assert_eq!(pushed.status, 200, "{name}");
        let summary: serde_json::Value = serde_json::from_slice(&pushed.body).unwrap();
        let run_id = summary["run_id"].as_str().unwrap().to_owned();
        before.push((
            run_id.clone(),
            text(&cluster.read(1, &run_id, "agui", None)),
        ));
    }
    cluster.redis.kill9();
    cluster.redis.restart();
    // The replicas reconnect by themselves: reads and new pushes work.
    for (run_id, bytes) in &before {
        let deadline = Instant::now() + BOUND;
        let after = loop {
            let r = cluster.read(0, run_id, "agui", None);
            if r.status == 200 || Instant::now() > deadline {
                break r;
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        assert_eq!(after.status, 200, "{run_id}");
        assert_eq!(&text(&after), bytes, "{run_id}");
    }
    let pushed = cluster.push(1, &scenario("plain-text-answer"));
    assert_eq!(pushed.status, 200);
    let summary: serde_json::Value = serde_json::from_slice(&pushed.body).unwrap();
    assert_eq!(summary["outcome"], "ended", "{summary}");
}

#[test]
fn logs_expire_after_their_retention() {
    let Some(cluster) = Cluster::start("retention", 1, &["--retention", "1"]) else {
        return;
    };
    let pushed = cluster.push(0, &scenario("plain-text-answer"));
    assert_eq!(pushed.status, 200);
    let summary: serde_json::Value = serde_json::from_slice(&pushed.body).unwrap();
    let run_id = summary["run_id"].as_str().unwrap().to_owned();
    let token = pushed.header("x-run-token").unwrap().to_owned();
    let deadline = Instant::now() + BOUND;
    loop {
        let status = cluster.read_with(0, &run_id, &token, "custom", None).status;
        if status == 404 {
            break;
        }
        assert_eq!(status, 200);
        assert!(Instant::now() < deadline, "never expired");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The id is free again.
    assert_eq!(cluster.push(0, &scenario("plain-text-answer")).status, 200);
}

#[test]
fn a_slow_subscriber_never_slows_the_run() {
    let Some(cluster) = Cluster::start("slow", 2, &[]) else {
        return;
    };
    // About 8 MB of frames: far more than the sockets buffer.
    let (lines, terminal) = text_run("run-slow", 2000, 4000);
    let mut push = SlowPush::open(cluster.addr(0), INGEST, BOUND);
    push.send(&lines[0]);
    let deadline = Instant::now() + BOUND;
    while cluster.logged_entries("run-slow") == 0 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    // A subscriber that reads nothing while the run goes on.
    let stalled = Reader::open(
        cluster.addr(1),
        "run-slow",
        &cluster.token("run-slow"),
        "custom",
    );
    for line in &lines[1..] {
        push.send(line);
    }
    push.send(&terminal);
    // The run ends (the push is answered) while the subscriber has read nothing.
    let summary = push.finish();
    assert_eq!(summary.status, 200);
    assert!(stalled.raw.is_empty());
    // The subscriber then gets the whole run.
    stalled.stream.set_read_timeout(Some(BOUND)).unwrap();
    let got = text(&stalled.finish());
    assert_eq!(
        got.matches("event: content").count(),
        2000,
        "{}",
        &got[got.len().saturating_sub(300)..]
    );
    assert!(
        got.ends_with("event: done\ndata: {}\n\n") || got.contains("event: done"),
        "no terminal"
    );
}

#[test]
fn a_replica_stopped_by_sigterm_releases_its_runs_to_another() {
    let Some(mut cluster) = Cluster::start(
        "sigterm",
        2,
        &["--shutdown-grace", "1", "--takeover-after", "2"],
    ) else {
        return;
    };
    let (lines, _) = text_run("run-released", 5, 10);
    let mut push = SlowPush::open(cluster.addr(0), INGEST, BOUND);
    for line in &lines[..3] {
        push.send(line);
    }
    let deadline = Instant::now() + BOUND;
    while cluster.logged_entries("run-released") < 3 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut reader = Reader::open(
        cluster.addr(1),
        "run-released",
        &cluster.token("run-released"),
        "agui-v1",
    );
    reader.until("TEXT_MESSAGE_START");
    let owner = &mut cluster.replicas[0].child;
    std::process::Command::new("kill")
        .args(["-TERM", &owner.id().to_string()])
        .status()
        .unwrap();
    let deadline = Instant::now() + BOUND;
    let status = loop {
        if let Some(status) = owner.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the replica did not stop");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    // The run was released, not cancelled: replica 1 ends it (D9).
    let got = text(&reader.finish());
    assert_eq!(terminals(&got), 1, "{got}");
    assert!(got.contains("provider_stream_closed"), "{got}");
    drop(push);
}

/// `redis-cli -p PORT ARGS...` (with `-a PASSWORD` when given): its stdout.
fn redis_cli(port: u16, password: Option<&str>, args: &[&str]) -> String {
    let mut cli = std::process::Command::new("redis-cli");
    cli.args(["-p", &port.to_string()]);
    if let Some(password) = password {
        cli.env("REDISCLI_AUTH", password);
    }
    let out = cli.args(args).output().unwrap();
    assert!(out.status.success(), "redis-cli {args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// With Redis, `lce serve` starts only with a token secret every replica
/// is given, and takes the engine's password from a file or the
/// environment, never needing it on the command line; the password shows
/// in no log line or error.
#[test]
fn a_redis_log_needs_a_token_secret_and_takes_its_password_from_a_file_or_the_environment() {
    let Some(cluster) = Cluster::start("password", 0, &[]) else {
        return;
    };
    let password = "a-password-for-the-engine-7f3a";
    redis_cli(
        cluster.redis.port(),
        None,
        &["CONFIG", "SET", "requirepass", password],
    );
    let url = cluster.redis.url();
    let secret = cluster.secret.to_str().unwrap();
    let scenarios = root().join("fixtures/scenarios");
    let scenarios = scenarios.to_str().unwrap();
    let serve = |extra: &[&str], env: Option<&str>| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_lce"));
        command
            .args(["serve", "--addr", "127.0.0.1:0", "--speed", "0"])
            .args(["--scenarios", scenarios, "--log", &url])
            .args(extra)
            .env_remove("LCE_LOG_PASSWORD");
        if let Some(password) = env {
            command.env("LCE_LOG_PASSWORD", password);
        }
        command
    };

    // No token secret: a start-up error naming the option.
    let out = serve(&[], Some(password)).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--token-secret-file"), "{stderr}");

    // No password: the engine refuses, the start-up error keeps its words
    // (and any password) to itself.
    let out = serve(&["--token-secret-file", secret], None)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot use the run log"), "{stderr}");

    // From a file, then from the environment: a run is served and logged.
    let file = cluster.dir.join("redis-password");
    std::fs::write(&file, format!("{password}\n")).unwrap();
    for (extra, env) in [
        (vec!["--log-password-file", file.to_str().unwrap()], None),
        (vec![], Some(password)),
    ] {
        let mut args = vec!["--token-secret-file", secret];
        args.extend(extra);
        let mut child = serve(&args, env)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap()
            .to_owned();
        let answer = common::post(
            &addr,
            "/api/v1/chat/stream/start",
            r#"{"message":"m","conversation_id":"conv-pw","agent_id":"plain-text-answer","protocol":"custom"}"#,
        );
        assert_eq!(answer.status, 200);
        let run_id = answer.header("x-run-id").unwrap().to_owned();
        let keys = redis_cli(
            cluster.redis.port(),
            Some(password),
            &["KEYS", &format!("lce:{{{run_id}}}:*")],
        );
        assert!(keys.contains(":meta"), "the run was not logged: {keys}");
        child.kill().unwrap();
        let out = child.wait_with_output().unwrap();
        let logs = String::from_utf8_lossy(&out.stderr);
        assert!(!logs.contains(password), "the password reached a log line");
    }
}

/// An owner killed (SIGKILL) before its first renewal, with no replica
/// left to take its run over: once the retention has passed, nothing of
/// the run is left in the engine.
#[test]
fn an_owner_killed_before_its_first_renewal_leaves_nothing_behind() {
    let Some(mut cluster) = Cluster::start(
        "ttl-kill",
        1,
        &["--takeover-after", "10", "--retention", "2"],
    ) else {
        return;
    };
    let (lines, _) = text_run("run-ttl-kill", 3, 10);
    let mut push = SlowPush::open(cluster.addr(0), INGEST, BOUND);
    for line in &lines[..2] {
        push.send(line);
    }
    let deadline = Instant::now() + BOUND;
    while cluster.logged_entries("run-ttl-kill") < 2 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    // The lease is renewed every 3.3 s: this is before the first. (Its
    // lease key itself lives 10 s.)
    cluster.replicas[0].child.kill().unwrap();
    cluster.replicas[0].child.wait().unwrap();
    drop(push);
    let port = cluster.redis.port();
    let ttls = redis_cli(port, None, &["KEYS", "lce:*"]);
    assert!(ttls.contains("run-ttl-kill"), "nothing was logged: {ttls}");
    let deadline = Instant::now() + BOUND;
    loop {
        let keys = redis_cli(port, None, &["KEYS", "*"]);
        if keys.trim().is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "keys outlived the retention: {keys}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A token opens one incarnation of a run id: once a run's log has
/// expired and a new run takes the same id, the old token gets the same
/// 404 as an unknown run, the new one (the push answer's, and what `lce
/// token --log` prints) reads the new run.
#[test]
fn a_token_never_opens_a_later_run_that_reuses_the_id() {
    let Some(cluster) = Cluster::start("nonce", 1, &["--retention", "1"]) else {
        return;
    };
    let (lines, terminal) = text_run("run-reused", 2, 10);
    let body = format!("{}\n{terminal}\n", lines.join("\n"));
    let first = cluster.push(0, body.as_bytes());
    assert_eq!(first.status, 200);
    let old = first.header("x-run-token").unwrap().to_owned();
    assert_eq!(cluster.token("run-reused"), old);
    let read = |token: &str| cluster.read_with(0, "run-reused", token, "agui-v1", None);
    assert_eq!(read(&old).status, 200);
    // The log expires a second after its terminal; the id is free again.
    let deadline = Instant::now() + BOUND;
    loop {
        let again = cluster.push(0, body.as_bytes());
        if again.status == 200 {
            let new = again.header("x-run-token").unwrap().to_owned();
            assert_ne!(new, old, "the same token for a new incarnation");
            let stale = read(&old);
            assert_eq!(stale.status, 404, "the old token opened the new run");
            assert_eq!(read(&new).status, 200);
            assert_eq!(cluster.token("run-reused"), new);
            break;
        }
        assert_eq!(
            again.status,
            409,
            "{}",
            String::from_utf8_lossy(&again.body)
        );
        assert!(Instant::now() < deadline, "the log never expired");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `/readyz` follows the log engine: 503 `engine_unreachable` while Redis
/// is down, 200 again once it is back; `/healthz` stays 200.
#[test]
fn readiness_follows_the_engine() {
    let Some(mut cluster) = Cluster::start("ready", 1, &[]) else {
        return;
    };
    let ready = |cluster: &Cluster| {
        let answer = request(cluster.addr(0), "GET", "/readyz", &[], b"");
        let body: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
        (answer.status, body)
    };
    let until = |cluster: &Cluster, status: u16| {
        let deadline = Instant::now() + BOUND;
        loop {
            let (got, body) = ready(cluster);
            if got == status {
                return body;
            }
            assert!(
                Instant::now() < deadline,
                "readiness never became {status}: {body}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    assert_eq!(until(&cluster, 200)["status"], "ready");
    cluster.redis.kill9();
    let body = until(&cluster, 503);
    assert_eq!(body["status"], "not_ready");
    assert_eq!(body["reason"], "engine_unreachable");
    let health = request(cluster.addr(0), "GET", "/healthz", &[], b"");
    assert_eq!(health.status, 200);
    cluster.redis.restart();
    assert_eq!(until(&cluster, 200)["status"], "ready");
}

/// Sentinels with a password of their own in front of a primary with
/// another: `lce serve` asks the Sentinels with
/// `--log-sentinel-password-file` (or `LCE_LOG_SENTINEL_PASSWORD`) and
/// writes with `--log-password-file`; `lce token` reads the run's nonce the
/// same way. Without the Sentinels' password it does not start, and no
/// password shows in an error or a log line.
#[test]
fn sentinels_with_their_own_password_are_asked_with_it() {
    let (node, sentinel_password) = ("node-password-5d1c", "sentinel-password-9b2e");
    let Some(primary) = RedisServer::start_with(&["--requirepass", node]) else {
        return;
    };
    let Some(sentinel) = RedisServer::start_sentinel(&format!(
        "sentinel monitor lce 127.0.0.1 {} 1\nsentinel auth-pass lce {node}\nrequirepass {sentinel_password}\n",
        primary.port()
    )) else {
        return;
    };
    let url = format!("redis+sentinel://127.0.0.1:{}/lce", sentinel.port());
    let dir = primary.dir();
    let (secret, node_file, sentinel_file) = (
        dir.join("token-secret"),
        dir.join("redis-password"),
        dir.join("sentinel-password"),
    );
    std::fs::write(&secret, "s".repeat(48)).unwrap();
    std::fs::write(&node_file, format!("{node}\n")).unwrap();
    std::fs::write(&sentinel_file, format!("{sentinel_password}\n")).unwrap();
    let scenarios = root().join("fixtures/scenarios");
    let base = [
        "--speed",
        "0",
        "--scenarios",
        scenarios.to_str().unwrap(),
        "--log",
        &url,
        "--token-secret-file",
        secret.to_str().unwrap(),
        "--log-password-file",
        node_file.to_str().unwrap(),
        "--log-timeout",
        "3",
    ];

    // Without the Sentinels' password: a start-up error, no password in it.
    let mut args = vec!["serve", "--addr", "127.0.0.1:0"];
    args.extend(base);
    let (code, _, stderr) = lce(&args);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("cannot use the run log"), "{stderr}");
    assert!(!stderr.contains("password-"), "{stderr}");

    // From a file, then from the environment: a run is served and logged,
    // and `lce token` signs what the start answer gave.
    let file_arg = [
        "--log-sentinel-password-file",
        sentinel_file.to_str().unwrap(),
    ];
    for (extra, env) in [
        (&file_arg[..], None),
        (
            &[][..],
            Some(("LCE_LOG_SENTINEL_PASSWORD", sentinel_password)),
        ),
    ] {
        let mut args = base.to_vec();
        args.extend(extra);
        let env: Vec<(&str, &str)> = env.into_iter().collect();
        let server = Server::start_with_env(&args, &env, std::process::Stdio::piped());
        let answer = common::post(
            &server.addr,
            "/api/v1/chat/stream/start",
            r#"{"message":"m","conversation_id":"conv-sp","agent_id":"plain-text-answer","protocol":"custom"}"#,
        );
        assert_eq!(answer.status, 200);
        let run_id = answer.header("x-run-id").unwrap().to_owned();
        let keys = redis_cli(
            primary.port(),
            Some(node),
            &["KEYS", &format!("lce:{{{run_id}}}:*")],
        );
        assert!(keys.contains(":meta"), "the run was not logged: {keys}");
        let mut token = vec![
            "token",
            run_id.as_str(),
            "--token-secret-file",
            secret.to_str().unwrap(),
            "--log",
            &url,
            "--log-password-file",
            node_file.to_str().unwrap(),
        ];
        token.extend(file_arg);
        let (code, out, err) = lce(&token);
        assert_eq!(code, 0, "{err}");
        assert_eq!(Some(out.trim_end()), answer.header("x-run-token"));
        let mut server = server;
        server.child.kill().unwrap();
        let mut logs = String::new();
        server
            .child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut logs)
            .unwrap();
        assert!(!logs.contains("password-"), "a password reached a log line");
    }
}
