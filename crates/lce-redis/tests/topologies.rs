//! The run log on Redis's high-availability and scale-out forms, on real
//! processes: a primary with a replica watched by Sentinel
//! (`redis+sentinel://`), and a Cluster of three primaries with a replica
//! each (`redis+cluster://`). Runs are appended slowly while readers on
//! another handle record every entry they are given; the primary (of the
//! pair, or of one shard) is killed with SIGKILL and its replica promoted.
//! Afterwards every run has exactly one terminal, and what each reader saw
//! is exactly the start of the run's log as any handle reads it
//! (guarantee 7, at the log's level; `--log-replicas 1`).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use lce_redis::{RedisLogOptions, RedisRunLog};
use lce_runlog::{LogEntry, LogError, RunInfo, RunLog};
use lce_testkit::RunBuilder;
use lce_testkit::redis_server::RedisServer;
use lce_testkit::redis_topology::{RedisCluster, SentinelPair, cli};
use lce_testkit::run_log::fresh_run_id;

const LEASE: Duration = Duration::from_secs(60);

/// Entries per run before its terminal; one every [`PAUSE`].
const ENTRIES: u64 = 120;
const PAUSE: Duration = Duration::from_millis(25);

fn options() -> RedisLogOptions {
    // The operation's bound covers a failover (Sentinel: 1 s to notice,
    // then the election; a Cluster: 2 node timeouts).
    RedisLogOptions::new()
        .with_timeout(Duration::from_secs(30))
        .with_replicas(1, Duration::from_millis(500))
}

/// Every entry a reader is given, from the start to the seal.
async fn read_all(log: &RedisRunLog, run_id: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let batch = match log
            .read(run_id, seen.len() as u64, 64, Duration::from_secs(2))
            .await
        {
            Ok(batch) => batch,
            // The engine is failing over: look again.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        for entry in &batch.entries {
            seen.push(match entry {
                LogEntry::Event(e) => e.to_json(),
                _ => "idle".to_owned(),
            });
        }
        if batch.sealed && batch.entries.is_empty() {
            return seen;
        }
    }
}

/// Readers that follow runs live while the primary dies: what they saw
/// before the failover is what the log holds after it.
async fn live_readers_survive<F>(url: &str, run_ids: Vec<String>, fail_over: F)
where
    F: FnOnce() + Send + 'static,
{
    let writer = RedisRunLog::connect(url, options()).await.expect("writer");
    let reader = RedisRunLog::connect(url, options()).await.expect("reader");
    let mut tasks = Vec::new();
    for run_id in run_ids {
        let (writer, reader) = (writer.clone(), reader.clone());
        tasks.push(tokio::spawn(async move {
            let info = RunInfo {
                conversation_id: format!("conv-{run_id}"),
                run_id: run_id.clone(),
                owner: "owner-b".to_owned(),
                nonce: "n".to_owned(),
            };
            writer.create(info, LEASE).await.expect("create");
            let following = {
                let (reader, run_id) = (reader.clone(), run_id.clone());
                tokio::spawn(async move { read_all(&reader, &run_id).await })
            };
            let mut run = RunBuilder::new(run_id.as_str(), format!("conv-{run_id}"));
            let mut entries = vec![LogEntry::Event(run.run_started())];
            for k in 2..=ENTRIES {
                entries.push(LogEntry::Event(run.text_delta("m", &format!("d{k}"))));
            }
            entries.push(LogEntry::Event(run.run_finished()));
            for (k, entry) in entries.into_iter().enumerate() {
                writer
                    .append(&run_id, "owner-b", k as u64 + 1, entry)
                    .await
                    .unwrap_or_else(|e| panic!("append {k}: {e}"));
                tokio::time::sleep(PAUSE).await;
            }
            (run_id, following.await.expect("reader task"))
        }));
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    tokio::task::spawn_blocking(fail_over)
        .await
        .expect("failover");
    let check = RedisRunLog::connect(url, options()).await.expect("checker");
    for task in tasks {
        let (run_id, seen) = task.await.expect("run task");
        let stored = read_all(&check, &run_id).await;
        assert_eq!(seen, stored, "{run_id}: the live reader saw other entries");
        assert_eq!(stored.len() as u64, ENTRIES + 1, "{run_id}: entries lost");
        let terminals = stored
            .iter()
            .filter(|e| e.contains("\"run.finished\""))
            .count();
        assert_eq!(terminals, 1, "{run_id}: one terminal");
        assert!(stored.last().unwrap().contains("\"run.finished\""));
    }
}

/// `n` fresh run ids.
fn fresh_ids(n: usize) -> Vec<String> {
    (0..n).map(|k| fresh_run_id(&format!("live-{k}"))).collect()
}

/// Fresh run ids, `per_shard` in each of `shards` equal slot ranges (as
/// `RedisCluster::start_shards` assigns them), their slots asked of the
/// node on `port`.
fn spread_ids(port: u16, shards: usize, per_shard: usize) -> Vec<String> {
    let range = 16384 / shards;
    let mut counts = vec![0; shards];
    let mut ids = Vec::new();
    for k in 0.. {
        if counts.iter().all(|c| *c == per_shard) {
            break;
        }
        assert!(k < 10_000, "no spread of run ids found");
        let id = fresh_run_id(&format!("live-{k}"));
        let slot: usize = cli(port, &["CLUSTER", "KEYSLOT", &id])
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let shard = (slot / range).min(shards - 1);
        if counts[shard] < per_shard {
            counts[shard] += 1;
            ids.push(id);
        }
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_failover_loses_no_entry_a_reader_saw() {
    let Some(pair) = SentinelPair::start() else {
        return;
    };
    let url = pair.url();
    let pair = std::sync::Arc::new(std::sync::Mutex::new(pair));
    let failing = std::sync::Arc::clone(&pair);
    live_readers_survive(&url, fresh_ids(4), move || {
        failing.lock().unwrap().fail_over()
    })
    .await;
    // The promoted node is the primary Sentinel names, and a new handle
    // writes there.
    let named = pair.lock().unwrap().named_primary();
    assert_eq!(named, Some(pair.lock().unwrap().primary.port()));
    // And back: the failed node, a replica now, is promoted in turn.
    let failing = std::sync::Arc::clone(&pair);
    live_readers_survive(&url, fresh_ids(3), move || {
        failing.lock().unwrap().fail_over()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_runs_spread_over_shards_and_survive_a_shard_failover() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let url = cluster.url();
    let cluster = std::sync::Arc::new(std::sync::Mutex::new(cluster));
    let failing = std::sync::Arc::clone(&cluster);
    // Three runs in each shard's slots (asked of the Cluster), so that
    // every primary holds some: nine random ids miss a shard one time in
    // thirteen.
    let run_ids = {
        let cluster = cluster.lock().unwrap();
        spread_ids(cluster.nodes[0].port(), 3, 3)
    };
    live_readers_survive(&url, run_ids, move || {
        let mut cluster = failing.lock().unwrap();
        let first = cluster.primaries()[0];
        cluster.fail_over(first);
    })
    .await;
    // Runs' keys landed on every shard: each primary holds some; and no
    // key is shared by all runs beyond the 16 parts of the active index
    // (every other key names its run's or conversation's slot).
    let cluster = cluster.lock().unwrap();
    for k in cluster.primaries() {
        let port = cluster.nodes[k].port();
        let keys = cli(port, &["DBSIZE"]).unwrap();
        assert!(
            keys.trim().parse::<u64>().unwrap() > 0,
            "the primary on {port} holds no key"
        );
        let all = cli(port, &["KEYS", "*"]).unwrap();
        for key in all.lines().filter(|k| !k.is_empty()) {
            let per_run = key.starts_with("lce:{conformance-")
                || key.starts_with("lce:{conv:")
                || key.starts_with("lce:{thread:");
            let shared = key
                .strip_prefix("lce:active:{")
                .and_then(|k| k.strip_suffix('}'))
                .and_then(|k| k.parse::<u32>().ok())
                .is_some_and(|k| k < 16);
            assert!(per_run || shared, "a key of no run's slot: {key}");
        }
    }
}

/// With a replica to wait for, an entry no replica holds is neither
/// acknowledged nor shown to readers: the replica frozen (SIGSTOP), the
/// append fails at its bound and a reader sees only what came before.
/// The owner gives up (a fresh append at that position is refused: its
/// outcome is unknown to it); the replica that takes the run over drops the
/// entry nobody saw and ends the run right after what readers saw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_no_replica_holds_is_neither_acknowledged_nor_read() {
    let Some(pair) = SentinelPair::start() else {
        return;
    };
    let options = RedisLogOptions::new()
        .with_timeout(Duration::from_secs(2))
        .with_replicas(1, Duration::from_millis(200));
    let log = RedisRunLog::connect(&pair.url(), options.clone())
        .await
        .unwrap();
    let reader = RedisRunLog::connect(&pair.url(), options).await.unwrap();
    let run_id = fresh_run_id("unconfirmed");
    let info = RunInfo {
        conversation_id: format!("conv-{run_id}"),
        run_id: run_id.clone(),
        owner: "o".to_owned(),
        nonce: "n".to_owned(),
    };
    let lease = Duration::from_secs(1);
    log.create(info, lease).await.unwrap();
    let mut run = RunBuilder::new(run_id.as_str(), format!("conv-{run_id}"));
    let start = run.run_started();
    log.append(&run_id, "o", 1, LogEntry::Event(start.clone()))
        .await
        .unwrap();
    pair.replica.signal("STOP");
    let held = LogEntry::Event(run.text_delta("m", "not yet held"));
    let refused = log.append(&run_id, "o", 2, held.clone()).await;
    let batch = reader
        .read(&run_id, 0, 10, Duration::from_millis(300))
        .await
        .unwrap();
    pair.replica.signal("CONT");
    assert!(refused.is_err(), "acknowledged without a replica");
    assert_eq!(batch.entries.len(), 1, "a reader saw an unconfirmed entry");
    assert!(log.append(&run_id, "o", 2, held).await.is_err());
    // The lease runs out; another replica claims the run and ends it.
    tokio::time::sleep(lease + Duration::from_millis(300)).await;
    assert!(reader.claim(&run_id, "p", lease).await.unwrap());
    let closure = run.run_error("closure", "the run was cut short");
    reader
        .append(&run_id, "p", 2, LogEntry::Event(closure.clone()))
        .await
        .unwrap();
    let batch = reader.read(&run_id, 0, 10, Duration::ZERO).await.unwrap();
    assert!(batch.sealed);
    let read: Vec<String> = batch
        .entries
        .iter()
        .map(|e| match e {
            LogEntry::Event(e) => e.to_json(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(read, [start.to_json(), closure.to_json()]);
}

/// The owner learns of a cancel asked on another handle from the
/// request's announcement (no poll): `cancel_notice` resolves right after
/// `request_cancel`, and not before; the renewal answers the flag too.
async fn cancel_reaches_the_owner(url: &str) {
    let owner = RedisRunLog::connect(url, RedisLogOptions::new())
        .await
        .unwrap();
    let other = RedisRunLog::connect(url, RedisLogOptions::new())
        .await
        .unwrap();
    let run_id = fresh_run_id("cancel-notice");
    let info = RunInfo {
        conversation_id: format!("conv-{run_id}"),
        run_id: run_id.clone(),
        owner: "o".to_owned(),
        nonce: "n".to_owned(),
    };
    owner.create(info, LEASE).await.unwrap();
    let renewal = owner.renew_and_check(&run_id, "o", LEASE).await.unwrap();
    assert!(renewal.held && !renewal.cancel_requested);
    let mut notice = owner
        .cancel_notice(&run_id)
        .expect("redis announces cancels");
    // Nothing asked yet: still waiting after a while.
    assert!(
        tokio::time::timeout(Duration::from_millis(1500), &mut notice)
            .await
            .is_err(),
        "resolved without a cancel"
    );
    assert_eq!(other.request_cancel(&run_id).await, Ok(true));
    tokio::time::timeout(Duration::from_secs(10), notice)
        .await
        .expect("the announcement never arrived")
        .unwrap();
    let renewal = owner.renew_and_check(&run_id, "o", LEASE).await.unwrap();
    assert!(renewal.held && renewal.cancel_requested);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_is_announced_to_the_owner_on_one_server_and_on_a_cluster() {
    let Some(server) = lce_testkit::redis_server::RedisServer::start() else {
        return;
    };
    cancel_reaches_the_owner(&server.url()).await;
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    cancel_reaches_the_owner(&cluster.url()).await;
}

/// Sentinels with a password of their own (`requirepass` in their
/// configuration, as deployments that protect Sentinel set it) in front of
/// a primary with another: the log asks the Sentinels with theirs and
/// writes to the primary with the nodes'; without the Sentinels' password
/// it cannot find the primary, and says so without either password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinels_with_a_password_of_their_own() {
    let Some(primary) = RedisServer::start_with(&["--requirepass", "node-password-1"]) else {
        return;
    };
    let Some(sentinel) = RedisServer::start_sentinel(&format!(
        "sentinel monitor lce 127.0.0.1 {} 1\n\
         sentinel auth-pass lce node-password-1\n\
         requirepass sentinel-password-2\n",
        primary.port()
    )) else {
        return;
    };
    let url = format!("redis+sentinel://127.0.0.1:{}/lce", sentinel.port());
    let options = RedisLogOptions::new()
        .with_timeout(Duration::from_secs(2))
        .with_password("node-password-1");

    let refused = RedisRunLog::connect(&url, options.clone()).await;
    let Err(error) = refused else {
        panic!("the Sentinels answered without their password");
    };
    assert_eq!(error, LogError::Unavailable);
    let message = format!("{error} {error:?}");
    assert!(!message.contains("password-"), "{message}");

    let log = RedisRunLog::connect(
        &url,
        options
            .with_timeout(Duration::from_secs(10))
            .with_sentinel_password("sentinel-password-2"),
    )
    .await
    .expect("the log with the Sentinels' password");
    assert!(!format!("{log:?}").contains("password-"));
    let run_id = fresh_run_id("sentinel-auth");
    let info = RunInfo {
        conversation_id: format!("conv-{run_id}"),
        run_id: run_id.clone(),
        owner: "owner-s".to_owned(),
        nonce: "n".to_owned(),
    };
    log.create(info, LEASE).await.expect("create");
    let mut run = RunBuilder::new(run_id.as_str(), format!("conv-{run_id}"));
    let entries = vec![
        LogEntry::Event(run.run_started()),
        LogEntry::Event(run.text_delta("m", "hello")),
        LogEntry::Event(run.run_finished()),
    ];
    log.append_batch(&run_id, "owner-s", 1, entries.clone())
        .await
        .expect("append");
    let want: Vec<String> = entries
        .iter()
        .map(|e| match e {
            LogEntry::Event(e) => e.to_json(),
            _ => "idle".to_owned(),
        })
        .collect();
    assert_eq!(read_all(&log, &run_id).await, want);
    // The primary holds the run (written with the nodes' password).
    let keys = cli(
        primary.port(),
        &["--no-auth-warning", "-a", "node-password-1", "KEYS", "*"],
    )
    .unwrap_or_default();
    assert!(keys.contains(&run_id), "{keys}");
}

/// A Cluster whose nodes have a password: the log reaches every shard with
/// it (the slot map, the runs' commands and the sharded wake-ups'
/// connection), so a reader waiting on a run in any shard is woken by its
/// append; without it the log does not start, and says so without the
/// password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_with_a_password() {
    let Some(cluster) = RedisCluster::start_shards(3) else {
        return;
    };
    // One run in each shard's slots (asked before the password is set).
    let run_ids = spread_ids(cluster.nodes[0].port(), 3, 1);
    let password = "cluster-password-3e7a";
    for node in &cluster.nodes {
        let set = cli(node.port(), &["CONFIG", "SET", "requirepass", password]);
        assert!(set.is_some_and(|s| s.starts_with("OK")), "requirepass");
    }
    let url = cluster.url();
    let options = RedisLogOptions::new().with_timeout(Duration::from_secs(2));

    let refused = RedisRunLog::connect(&url, options.clone()).await;
    let Err(error) = refused else {
        panic!("the Cluster answered without its password");
    };
    assert_eq!(error, LogError::Unavailable);
    assert!(!format!("{error} {error:?}").contains(password));

    let log = RedisRunLog::connect(
        &url,
        options
            .with_timeout(Duration::from_secs(10))
            .with_password(password),
    )
    .await
    .expect("the log with the nodes' password");
    let reader = RedisRunLog::connect(
        &url,
        RedisLogOptions::new()
            .with_timeout(Duration::from_secs(10))
            .with_password(password),
    )
    .await
    .expect("a reader with the nodes' password");
    // Each read waits for the run's append (a sharded wake-up on another
    // handle), then gets it.
    for run_id in run_ids {
        let info = RunInfo {
            conversation_id: format!("conv-{run_id}"),
            run_id: run_id.clone(),
            owner: "owner-c".to_owned(),
            nonce: "n".to_owned(),
        };
        log.create(info, LEASE).await.expect("create");
        let waiting = {
            let (reader, run_id) = (reader.clone(), run_id.clone());
            tokio::spawn(async move { reader.read(&run_id, 0, 8, Duration::from_secs(30)).await })
        };
        // The reader's handle subscribes to the run's shard channel, on its
        // own connection, with the password.
        let channel = format!("lce:{{{run_id}}}:appended");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let subscribers: u64 = cluster
                .nodes
                .iter()
                .filter_map(|node| {
                    let out = cli(
                        node.port(),
                        &[
                            "--no-auth-warning",
                            "-a",
                            password,
                            "PUBSUB",
                            "SHARDNUMSUB",
                            &channel,
                        ],
                    )?;
                    out.lines().nth(1)?.trim().parse::<u64>().ok()
                })
                .sum();
            if subscribers > 0 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the sharded wake-ups never subscribed to {channel}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut run = RunBuilder::new(run_id.as_str(), format!("conv-{run_id}"));
        let started = LogEntry::Event(run.run_started());
        log.append(&run_id, "owner-c", 1, started.clone())
            .await
            .expect("append");
        let batch = waiting.await.expect("reader task").expect("read");
        assert_eq!(batch.entries, [started], "{run_id}");
    }
    for node in &cluster.nodes {
        let keys = cli(
            node.port(),
            &["--no-auth-warning", "-a", password, "DBSIZE"],
        )
        .unwrap();
        assert!(
            keys.trim().parse::<u64>().unwrap() > 0,
            "a shard holds no key"
        );
    }
}
