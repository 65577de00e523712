//! Guarantee 7 (failover) on real processes: two `lce serve` replicas with
//! `--log-replicas 1` on a Sentinel-watched pair (`redis+sentinel://`) or
//! a Cluster of three shards (`redis+cluster://`). Runs are pushed slowly
//! to one replica while subscribers on the other record every byte; the
//! primary (of the pair, or of one shard) is killed with SIGKILL and its
//! replica promoted, the failed node coming back as a replica. Afterwards
//! every run has exactly one terminal, and a read from the start on either
//! replica is byte for byte what the subscriber got.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{HttpResponse, Server, SlowPush, lce, parse_response, request, root};
use lce_testkit::RunBuilder;
use lce_testkit::redis_topology::{RedisCluster, SentinelPair};

const BOUND: Duration = Duration::from_secs(120);
const INGEST: &str = "ingest-token-for-the-failover-tests";

/// Text deltas per run, one every [`PAUSE`]: long enough that the
/// failover happens in the middle of every run.
const DELTAS: usize = 120;
const PAUSE: Duration = Duration::from_millis(40);

/// Two replicas of `lce serve` on the engine at `url`.
struct Gateway {
    url: String,
    dir: PathBuf,
    secret: PathBuf,
    replicas: Vec<Server>,
}

impl Gateway {
    fn start(name: &str, url: String) -> Gateway {
        let dir = std::env::temp_dir().join(format!("lce-failover-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let secret = dir.join("secret");
        std::fs::write(&secret, "the replicas' shared token secret\n").unwrap();
        std::fs::write(dir.join("ingest"), INGEST).unwrap();
        let scenarios = root().join("fixtures/scenarios");
        let ingest = dir.join("ingest");
        let args = [
            "--speed",
            "0",
            "--scenarios",
            scenarios.to_str().unwrap(),
            "--log",
            &url,
            "--log-replicas",
            "1",
            "--log-replica-timeout",
            "500",
            // Above the failover's time (Sentinel: 1 s to notice and the
            // election; a Cluster: two node timeouts).
            "--log-timeout",
            "30",
            "--takeover-after",
            "30",
            "--token-secret-file",
            secret.to_str().unwrap(),
            "--ingest-token-file",
            ingest.to_str().unwrap(),
        ];
        let replicas = vec![Server::start(&args), Server::start(&args)];
        Gateway {
            url,
            dir,
            secret,
            replicas,
        }
    }

    /// `lce token` for the run, once the run exists (the token needs its
    /// nonce, in the log).
    fn token(&self, run_id: &str) -> String {
        let deadline = std::time::Instant::now() + BOUND;
        loop {
            let (code, out, err) = lce(&[
                "token",
                run_id,
                "--token-secret-file",
                self.secret.to_str().unwrap(),
                "--log",
                &self.url,
            ]);
            if code == 0 {
                return out.trim_end().to_owned();
            }
            assert!(std::time::Instant::now() < deadline, "no token: {err}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `GET .../stream` on replica `i`, from the start, to the end.
    fn read(&self, i: usize, run_id: &str, token: &str) -> HttpResponse {
        request(
            &self.replicas[i].addr,
            "GET",
            &format!("/api/v1/runs/{run_id}/stream?protocol=agui-v1"),
            &[("X-Run-Token", token)],
            b"",
        )
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.replicas.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The run's lines: its start, a text message of [`DELTAS`] deltas, its
/// terminal.
fn text_run(run_id: &str) -> Vec<String> {
    let mut b = RunBuilder::new(run_id, format!("conv-{run_id}"));
    let mut lines = vec![b.run_started().to_json(), b.text_started("m1").to_json()];
    for k in 0..DELTAS {
        lines.push(b.text_delta("m1", &format!("delta {k} ")).to_json());
    }
    lines.push(b.text_finished("m1").to_json());
    lines.push(b.run_finished().to_json());
    lines
}

fn terminals(agui_v1: &str) -> usize {
    agui_v1.matches("\"type\":\"RUN_FINISHED\"").count()
        + agui_v1.matches("\"type\":\"RUN_ERROR\"").count()
}

/// `runs` runs pushed to replica 0 and followed on replica 1 while
/// `fail_over` runs (after the runs have started); then the checks.
fn runs_keep_every_frame_across<F: FnOnce() + Send + 'static>(
    gateway: &Gateway,
    label: &str,
    runs: usize,
    fail_over: F,
) {
    let mut tasks = Vec::new();
    for k in 0..runs {
        let run_id = format!("run-{label}-{k}-{}", std::process::id());
        let lines = text_run(&run_id);
        let mut push = SlowPush::open(&gateway.replicas[0].addr, INGEST, BOUND);
        push.send(&lines[0]);
        let token = gateway.token(&run_id);
        // The subscriber on the other replica, reading as the run goes.
        let reader = {
            let addr = gateway.replicas[1].addr.clone();
            let (run_id, token) = (run_id.clone(), token.clone());
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect(&addr).unwrap();
                stream.set_read_timeout(Some(BOUND)).unwrap();
                write!(
                    stream,
                    "GET /api/v1/runs/{run_id}/stream?protocol=agui-v1 HTTP/1.1\r\nHost: lce\r\nX-Run-Token: {token}\r\nConnection: close\r\n\r\n"
                )
                .unwrap();
                let mut raw = Vec::new();
                let _ = stream.read_to_end(&mut raw);
                parse_response(&raw)
            })
        };
        let pusher = std::thread::spawn(move || {
            for line in &lines[1..] {
                push.send(line);
                std::thread::sleep(PAUSE);
            }
            push.finish()
        });
        tasks.push((run_id, token, reader, pusher));
    }
    std::thread::sleep(Duration::from_secs(1));
    fail_over();
    for (run_id, token, reader, pusher) in tasks {
        let summary = pusher.join().unwrap();
        assert_eq!(summary.status, 200, "{run_id}");
        let summary: serde_json::Value = serde_json::from_slice(&summary.body).unwrap();
        assert_eq!(summary["terminal"], "run.finished", "{run_id}: {summary}");
        let seen = reader.join().unwrap();
        assert_eq!(seen.status, 200, "{run_id}");
        let seen = String::from_utf8(seen.body).unwrap();
        assert_eq!(terminals(&seen), 1, "{run_id}: one terminal");
        assert_eq!(
            seen.matches("TEXT_MESSAGE_CONTENT").count(),
            DELTAS,
            "{run_id}: every delta"
        );
        for i in 0..2 {
            let read = gateway.read(i, &run_id, &token);
            assert_eq!(read.status, 200);
            assert_eq!(
                String::from_utf8(read.body).unwrap(),
                seen,
                "{run_id}: replica {i} reads other bytes than the subscriber saw"
            );
        }
        // Resumed after frames spread over the run (before, during and
        // after the failover), on either replica: exactly the rest.
        let frames: Vec<&str> = seen.split_inclusive("\n\n").collect();
        let step = (frames.len() / 8).max(1);
        let mut offset = 0;
        for (k, frame) in frames.iter().enumerate() {
            offset += frame.len();
            let Some(id) = frame.lines().find_map(|l| l.strip_prefix("id: ")) else {
                continue;
            };
            if k % step != 0 {
                continue;
            }
            let resumed = request(
                &gateway.replicas[k % 2].addr,
                "GET",
                &format!("/api/v1/runs/{run_id}/stream?protocol=agui-v1"),
                &[("X-Run-Token", &token), ("Last-Event-ID", id)],
                b"",
            );
            assert_eq!(resumed.status, 200);
            assert_eq!(
                String::from_utf8(resumed.body).unwrap(),
                seen[offset..],
                "{run_id}: resumed after {id}"
            );
        }
    }
}

#[test]
fn a_sentinel_failover_loses_no_frame_a_client_saw() {
    let Some(pair) = SentinelPair::start() else {
        return;
    };
    let gateway = Gateway::start("sentinel", pair.url());
    let pair = Arc::new(Mutex::new(pair));
    let failing = Arc::clone(&pair);
    runs_keep_every_frame_across(&gateway, "sentinel", 3, move || {
        failing.lock().unwrap().fail_over();
    });
}

#[test]
fn a_cluster_shard_failover_loses_no_frame_a_client_saw() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let gateway = Gateway::start("cluster", cluster.url());
    let cluster = Arc::new(Mutex::new(cluster));
    let failing = Arc::clone(&cluster);
    runs_keep_every_frame_across(&gateway, "cluster", 6, move || {
        let mut cluster = failing.lock().unwrap();
        let first = cluster.primaries()[0];
        cluster.fail_over(first);
    });
}
