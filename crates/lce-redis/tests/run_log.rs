//! `RedisRunLog` and `RedisStore` against a real `redis-server` (started
//! per test by `lce_testkit::redis_server::RedisServer`; skipped, loudly,
//! where none is installed, and a failure in CI).
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use lce_core::{CommitRequest, ThreadStore};
use lce_redis::{RedisLogOptions, RedisRunLog, RedisStore};
use lce_runlog::{LogEntry, LogError, Refusal, RunInfo, RunLog};
use lce_testkit::RunBuilder;
use lce_testkit::redis_server::RedisServer;
use lce_testkit::run_log::{check_run_log, fresh_run_id};

const LEASE: Duration = Duration::from_secs(60);

async fn connect(server: &RedisServer) -> RedisRunLog {
    RedisRunLog::connect(&server.url(), RedisLogOptions::new())
        .await
        .expect("connect")
}

/// A log on the engine at `url` whose operations are bounded by `timeout`.
async fn connect_within(url: &str, timeout: Duration) -> RedisRunLog {
    RedisRunLog::connect(url, RedisLogOptions::new().with_timeout(timeout))
        .await
        .expect("connect")
}

async fn create(log: &dyn RunLog, label: &str, owner: &str) -> (RunInfo, RunBuilder) {
    let run_id = fresh_run_id(label);
    let info = RunInfo {
        conversation_id: format!("conv-{run_id}"),
        run_id,
        owner: owner.to_owned(),
        nonce: "nonce-1".to_owned(),
    };
    log.create(info.clone(), LEASE).await.expect("create");
    let run = RunBuilder::new(info.run_id.as_str(), info.conversation_id.as_str());
    (info, run)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let log = connect(&server).await;
    check_run_log(&log).await;
    // Twice on the same engine: the suite's runs never collide.
    check_run_log(&log).await;
    // And through the local tail a gateway wraps it in.
    let tail = lce_runlog::LocalTail::new(Arc::new(log), Duration::from_secs(3600));
    check_run_log(&tail).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_and_restart_lose_no_acknowledged_entry_and_the_log_reconnects() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    // A short bound, so the read while the engine is down gives up soon.
    let options = RedisLogOptions::new().with_timeout(Duration::from_secs(2));
    let log = RedisRunLog::connect(&server.url(), options).await.unwrap();
    let (info, mut run) = create(&log, "restart", "replica-a").await;
    let (id, owner) = (info.run_id.as_str(), info.owner.as_str());
    let mut acknowledged = vec![LogEntry::Event(run.run_started())];
    for k in 0..50 {
        acknowledged.push(if k % 5 == 4 {
            LogEntry::Idle
        } else {
            LogEntry::Event(run.text_delta("m", &format!("delta {k}")))
        });
    }
    for (k, entry) in acknowledged.iter().enumerate() {
        log.append(id, owner, k as u64 + 1, entry.clone())
            .await
            .expect("append before the kill");
    }
    let store = log.thread_store();
    let request = |sequence| CommitRequest {
        run_id: info.run_id.clone(),
        conversation_id: info.conversation_id.clone(),
        sequence,
        interrupt_id: None,
    };
    assert_eq!(
        store
            .commit_final(request(1))
            .await
            .unwrap()
            .durable_revision,
        1
    );

    server.kill9();
    // While the engine is down: the operation fails (Unavailable), within
    // the bound, and says nothing more.
    let down = log.read(id, 0, 10, Duration::ZERO).await;
    assert_eq!(down, Err(LogError::Unavailable));
    server.restart();

    // The same object, no reconnect by hand: everything acknowledged is
    // there, and the owner goes on appending.
    let batch = log
        .read(id, 0, 1000, Duration::ZERO)
        .await
        .expect("read after the restart");
    assert_eq!(batch.entries, acknowledged, "acknowledged entries lost");
    assert!(!batch.sealed);
    assert!(batch.owned, "the lease survived the restart");
    assert_eq!(log.info(id).await.unwrap(), Some(info.clone()));
    let n = acknowledged.len() as u64;
    let more = LogEntry::Event(run.text_finished("m"));
    log.append(id, owner, n + 1, more.clone())
        .await
        .expect("append after the restart");
    acknowledged.push(more);
    // A read that waits (woken by the resubscribed notices) works again too.
    let writing = {
        let log = log.clone();
        let (id, owner) = (id.to_owned(), owner.to_owned());
        let terminal = LogEntry::Event(run.run_finished());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            log.append(&id, &owner, n + 2, terminal).await
        })
    };
    let waited = log
        .read(id, n + 1, 10, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(writing.await.unwrap(), Ok(()));
    assert!(waited.sealed && waited.entries.len() == 1, "{waited:?}");
    // And the store's revisions survived.
    assert_eq!(store.revision(&info.conversation_id).await, Ok(Some(1)));
    assert_eq!(
        store
            .commit_final(request(2))
            .await
            .unwrap()
            .durable_revision,
        2
    );

    // Once more, with appends in flight while the engine dies: whatever was
    // acknowledged is there after the restart, in order, without gaps.
    let (info, mut run) = create(&log, "restart-in-flight", "replica-a").await;
    let entries: Vec<LogEntry> = (0..2000)
        .map(|k| LogEntry::Event(run.text_delta("m", &format!("{k}"))))
        .collect();
    let writer = {
        let log = log.clone();
        let id = info.run_id.clone();
        tokio::spawn(async move {
            let mut acknowledged = 0u64;
            for (k, entry) in entries.into_iter().enumerate() {
                match log.append(&id, "replica-a", k as u64 + 1, entry).await {
                    Ok(()) => acknowledged = k as u64 + 1,
                    Err(_) => break,
                }
            }
            acknowledged
        })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    server.kill9();
    let acknowledged = writer.await.unwrap();
    server.restart();
    let batch = log
        .read(&info.run_id, 0, 10_000, Duration::ZERO)
        .await
        .unwrap();
    assert!(
        batch.entries.len() as u64 >= acknowledged,
        "{} entries after the restart, {acknowledged} acknowledged",
        batch.entries.len()
    );
    // At most the one whose answer was lost is there beyond them.
    assert!(batch.entries.len() as u64 <= acknowledged + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_in_flight_across_a_restart_all_land_in_order() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let log = connect(&server).await;
    let (info, mut run) = create(&log, "in-flight", "owner").await;
    log.append(&info.run_id, "owner", 1, LogEntry::Event(run.run_started()))
        .await
        .unwrap();
    server.kill9();
    // Twenty appends issued in order while the engine is down, each awaited
    // by a task of its own (so they reach the engine in any order once it
    // is back).
    let entries: Vec<LogEntry> = (0..20)
        .map(|k| LogEntry::Event(run.text_delta("m", &format!("{k}"))))
        .collect();
    let mut writers = Vec::new();
    for (k, entry) in entries.iter().cloned().enumerate() {
        writers.push(tokio::spawn(log.append(
            &info.run_id,
            "owner",
            k as u64 + 2,
            entry,
        )));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.restart();
    for (k, writer) in writers.into_iter().enumerate() {
        assert_eq!(writer.await.unwrap(), Ok(()), "append at {}", k + 2);
    }
    let batch = log
        .read(&info.run_id, 1, 100, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(batch.entries, entries);
    // Undisturbed again, a gap is refused at once.
    let start = Instant::now();
    assert_eq!(
        log.append(&info.run_id, "owner", 30, LogEntry::Idle).await,
        Err(LogError::Refused {
            position: 30,
            refusal: Refusal::OutOfOrder
        })
    );
    assert!(start.elapsed() < Duration::from_secs(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_racing_for_a_position_one_wins() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let replicas = [connect(&server).await, connect(&server).await];
    let (info, mut run) = create(&replicas[0], "race", "shared-owner").await;
    let id = info.run_id.as_str();
    replicas[0]
        .append(id, "shared-owner", 1, LogEntry::Event(run.run_started()))
        .await
        .unwrap();
    for position in 2..40u64 {
        let a = LogEntry::Event(run.text_delta("m", &format!("a{position}")));
        let b = LogEntry::Event(run.text_delta("m", &format!("b{position}")));
        let (ra, rb) = tokio::join!(
            replicas[0].append(id, "shared-owner", position, a.clone()),
            replicas[1].append(id, "shared-owner", position, b.clone()),
        );
        let wins = [&ra, &rb].iter().filter(|r| r.is_ok()).count();
        assert_eq!(wins, 1, "position {position}: {ra:?} {rb:?}");
        let loser = if ra.is_ok() { rb } else { ra };
        assert_eq!(
            loser,
            Err(LogError::Refused {
                position,
                refusal: Refusal::OutOfOrder
            })
        );
    }
    let batch = replicas[1].read(id, 0, 1000, Duration::ZERO).await.unwrap();
    assert_eq!(batch.entries.len(), 39);

    // Different owners: only the holder's append lands.
    let (info, mut run) = create(&replicas[0], "race-owner", "replica-a").await;
    let entry = LogEntry::Event(run.run_started());
    let (ra, rb) = tokio::join!(
        replicas[0].append(&info.run_id, "replica-a", 1, entry.clone()),
        replicas[1].append(&info.run_id, "replica-b", 1, entry.clone()),
    );
    assert_eq!(ra, Ok(()));
    assert_eq!(
        rb,
        Err(LogError::Refused {
            position: 1,
            refusal: Refusal::NotOwner
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_terminals_one_wins() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let replicas = [
        Arc::new(connect(&server).await),
        Arc::new(connect(&server).await),
    ];
    for round in 0..10 {
        let (info, mut run) = create(replicas[0].as_ref(), "terminals", "shared-owner").await;
        replicas[0]
            .append(
                &info.run_id,
                "shared-owner",
                1,
                LogEntry::Event(run.run_started()),
            )
            .await
            .unwrap();
        // Eight writers on two replicas, each appending its own terminal at
        // the next free position until it lands or the log is sealed.
        let terminals = [
            run.run_finished(),
            run.run_cancelled(),
            run.run_error("provider_error", "The provider failed."),
            run.run_finished(),
            run.run_cancelled(),
            run.run_error("timeout", "Too slow."),
            run.run_finished(),
            run.run_cancelled(),
        ];
        let mut writers = Vec::new();
        for (k, terminal) in terminals.into_iter().enumerate() {
            let log = Arc::clone(&replicas[k % 2]);
            let id = info.run_id.clone();
            writers.push(tokio::spawn(async move {
                let mut position = 2;
                loop {
                    match log
                        .append(
                            &id,
                            "shared-owner",
                            position,
                            LogEntry::Event(terminal.clone()),
                        )
                        .await
                    {
                        Ok(()) => return true,
                        Err(LogError::Refused {
                            refusal: Refusal::OutOfOrder,
                            ..
                        }) => position += 1,
                        Err(LogError::Refused {
                            refusal: Refusal::Sealed,
                            ..
                        }) => return false,
                        Err(e) => panic!("round {round}: {e:?}"),
                    }
                }
            }));
        }
        let mut wins = 0;
        for writer in writers {
            wins += usize::from(writer.await.unwrap());
        }
        assert_eq!(wins, 1, "round {round}: {wins} terminals landed");
        let batch = replicas[1]
            .read(&info.run_id, 0, 100, Duration::ZERO)
            .await
            .unwrap();
        assert!(batch.sealed);
        assert_eq!(batch.entries.len(), 2, "round {round}: {batch:?}");
        assert_eq!(batch.entries.iter().filter(|e| e.is_terminal()).count(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_claiming_an_expired_run_one_wins() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let replicas = [connect(&server).await, connect(&server).await];
    for _ in 0..10 {
        let run_id = fresh_run_id("claim-race");
        let info = RunInfo {
            conversation_id: "c".to_owned(),
            run_id: run_id.clone(),
            owner: "dead".to_owned(),
            nonce: "nonce-1".to_owned(),
        };
        replicas[0]
            .create(info, Duration::from_millis(50))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(120)).await;
        assert!(replicas[1].orphans().await.unwrap().contains(&run_id));
        let (a, b) = tokio::join!(
            replicas[0].claim(&run_id, "replica-a", LEASE),
            replicas[1].claim(&run_id, "replica-b", LEASE),
        );
        assert!(a.unwrap() ^ b.unwrap(), "exactly one claim wins");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_starts_at_the_terminal_or_at_the_last_renewal() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let options = RedisLogOptions::new()
        .with_retention(Duration::from_millis(300))
        .with_prefix("short");
    let log = RedisRunLog::connect(&server.url(), options).await.unwrap();
    let (open, mut open_run) = create(&log, "open", "owner").await;
    log.append(
        &open.run_id,
        "owner",
        1,
        LogEntry::Event(open_run.run_started()),
    )
    .await
    .unwrap();
    let (done, mut run) = create(&log, "done", "owner").await;
    log.append(&done.run_id, "owner", 1, LogEntry::Event(run.run_started()))
        .await
        .unwrap();
    log.append(
        &done.run_id,
        "owner",
        2,
        LogEntry::Event(run.run_finished()),
    )
    .await
    .unwrap();
    // An unsealed run whose owner never renews (it died): gone too, the
    // retention after its creation.
    let (dead, mut dead_run) = create(&log, "dead", "owner").await;
    log.append(
        &dead.run_id,
        "owner",
        1,
        LogEntry::Event(dead_run.run_started()),
    )
    .await
    .unwrap();
    // The open run's owner renews it all along: it stays.
    for _ in 0..7 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(log.renew(&open.run_id, "owner", LEASE).await, Ok(true));
    }
    assert_eq!(
        log.read(&done.run_id, 0, 10, Duration::ZERO).await,
        Err(LogError::NotFound),
        "a sealed log outlived its retention"
    );
    assert_eq!(log.info(&done.run_id).await, Ok(None));
    assert_eq!(
        log.read(&dead.run_id, 0, 10, Duration::ZERO).await,
        Err(LogError::NotFound),
        "an unsealed log nobody renews outlived its retention"
    );
    assert_eq!(log.info(&dead.run_id).await, Ok(None));
    let open_batch = log.read(&open.run_id, 0, 10, Duration::ZERO).await.unwrap();
    assert_eq!(
        open_batch.entries.len(),
        1,
        "a renewed unsealed log expired"
    );
    // Its id may be used again.
    log.create(done.clone(), LEASE).await.unwrap();
    assert!(
        log.read(&done.run_id, 0, 10, Duration::ZERO)
            .await
            .unwrap()
            .entries
            .is_empty()
    );
}

/// An append is a transaction whose entries are plain `XADD`s behind a
/// guard script that fences the stream away when it refuses: a refused
/// batch writes none of its entries, and the fence never outlives the
/// transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_batch_writes_nothing_and_leaves_no_fence() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let log = connect(&server).await;
    let (info, mut run) = create(&log, "fenced", "owner").await;
    let id = info.run_id.as_str();
    let batch = |run: &mut RunBuilder, n: usize| -> Vec<LogEntry> {
        (0..n)
            .map(|k| LogEntry::Event(run.text_delta("m", &format!("{k}"))))
            .collect()
    };
    let mut first = vec![
        LogEntry::Event(run.run_started()),
        LogEntry::Event(run.text_started("m")),
    ];
    first.extend(batch(&mut run, 1));
    log.append_batch(id, "owner", 1, first.clone())
        .await
        .unwrap();
    let refused = |r: Result<(), LogError>| match r {
        Err(LogError::Refused { refusal, .. }) => refusal,
        other => panic!("not refused: {other:?}"),
    };
    let five = batch(&mut run, 5);
    assert_eq!(
        refused(log.append_batch(id, "intruder", 4, five.clone()).await),
        Refusal::NotOwner
    );
    assert_eq!(
        refused(log.append_batch(id, "owner", 6, five.clone()).await),
        Refusal::OutOfOrder,
        "a gap"
    );
    assert_eq!(
        refused(log.append_batch(id, "owner", 2, five.clone()).await),
        Refusal::OutOfOrder,
        "taken"
    );
    assert_eq!(
        log.append_batch("no-such-run", "owner", 1, five.clone())
            .await,
        Err(LogError::NotFound)
    );

    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let len: u64 = redis::cmd("XLEN")
        .arg(format!("lce:{{{id}}}:log"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(len, 3, "only the granted batch is stored");
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("lce:{{{id}}}:*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    keys.sort();
    assert_eq!(
        keys,
        [
            format!("lce:{{{id}}}:lease"),
            format!("lce:{{{id}}}:log"),
            format!("lce:{{{id}}}:meta")
        ]
    );
    let stray: Vec<String> = redis::cmd("KEYS")
        .arg("lce:{no-such-run}:*")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(stray.is_empty(), "a refused append created {stray:?}");

    // The stream is back where it belongs: the next batch lands after it.
    log.append_batch(id, "owner", 4, five.clone())
        .await
        .unwrap();
    let read = log.read(id, 0, 100, Duration::ZERO).await.unwrap();
    let mut all = first;
    all.extend(five);
    assert_eq!(read.entries, all);
}

/// Reads that wait hold no connection of their own: one subscription per
/// handle wakes them, whichever replica appends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_reads_are_woken_by_another_replica_and_hold_no_connection() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let writer = connect(&server).await;
    let reader = connect(&server).await;
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let clients = |conn: &mut redis::aio::MultiplexedConnection| {
        let mut conn = conn.clone();
        async move {
            let list: String = redis::cmd("CLIENT")
                .arg("LIST")
                .query_async(&mut conn)
                .await
                .unwrap();
            list.lines().count()
        }
    };
    // Let both handles' subscriptions come up before counting.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = clients(&mut conn).await;

    const READERS: usize = 200;
    let mut runs = Vec::new();
    let mut reads = Vec::new();
    for k in 0..READERS {
        let (info, run) = create(&writer, &format!("wake-{k}"), "owner").await;
        let reader = reader.clone();
        let id = info.run_id.clone();
        // An hour: only a wake-up ends these reads in time.
        reads.push(tokio::spawn(async move {
            reader.read(&id, 0, 10, Duration::from_secs(3600)).await
        }));
        runs.push((info, run));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        clients(&mut conn).await,
        before,
        "{READERS} waiting reads opened connections"
    );
    let mut appended = Vec::new();
    for (info, run) in &mut runs {
        let entry = LogEntry::Event(run.run_started());
        writer
            .append(&info.run_id, "owner", 1, entry.clone())
            .await
            .unwrap();
        appended.push(entry);
    }
    let woken = tokio::time::timeout(Duration::from_secs(60), futures::future::join_all(reads))
        .await
        .expect("the waiting reads were not woken");
    for (read, entry) in woken.into_iter().zip(appended) {
        assert_eq!(read.unwrap().unwrap().entries, [entry]);
    }
}

/// A notice with nothing new behind it (a late notice of an earlier append,
/// a refused append) does not end a read's wait early: it looks again and
/// waits on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wake_up_for_nothing_does_not_end_a_wait() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let log = connect(&server).await;
    let (info, mut run) = create(&log, "spurious", "owner").await;
    log.append(&info.run_id, "owner", 1, LogEntry::Event(run.run_started()))
        .await
        .unwrap();
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let wait = Duration::from_millis(800);
    let start = Instant::now();
    let reading = {
        let log = log.clone();
        let id = info.run_id.clone();
        tokio::spawn(async move { log.read(&id, 1, 10, wait).await })
    };
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let _: i64 = redis::cmd("PUBLISH")
            .arg("lce:appended")
            .arg(&info.run_id)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let batch = reading.await.unwrap().unwrap();
    assert!(batch.entries.is_empty() && !batch.sealed, "{batch:?}");
    assert!(
        start.elapsed() >= wait.mul_f64(0.9),
        "the wait ended after {:?}, before its {wait:?}",
        start.elapsed()
    );
}

/// A loopback proxy in front of the engine whose open connections can be
/// frozen: they stay open and forward nothing more, as a client connection
/// that stopped answering does; new connections pass, unless the engine
/// behind was frozen as a whole ([`FreezingProxy::freeze_all`]).
struct FreezingProxy {
    addr: std::net::SocketAddr,
    connections: Arc<std::sync::Mutex<Vec<Arc<std::sync::atomic::AtomicBool>>>>,
    freeze_new: Arc<std::sync::atomic::AtomicBool>,
}

impl FreezingProxy {
    async fn start(target: u16) -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections: Arc<std::sync::Mutex<Vec<Arc<std::sync::atomic::AtomicBool>>>> =
            Arc::default();
        let registry = Arc::clone(&connections);
        let freeze_new = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let new_frozen = Arc::clone(&freeze_new);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", target)).await else {
                    continue;
                };
                let frozen = Arc::new(std::sync::atomic::AtomicBool::new(
                    new_frozen.load(std::sync::atomic::Ordering::SeqCst),
                ));
                registry.lock().unwrap().push(Arc::clone(&frozen));
                let (client_rx, client_tx) = client.into_split();
                let (server_rx, server_tx) = server.into_split();
                for (mut from, mut to, frozen) in [
                    (
                        Box::new(client_rx) as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
                        Box::new(server_tx) as Box<dyn tokio::io::AsyncWrite + Unpin + Send>,
                        Arc::clone(&frozen),
                    ),
                    (Box::new(server_rx) as _, Box::new(client_tx) as _, frozen),
                ] {
                    tokio::spawn(async move {
                        let mut buf = vec![0u8; 64 * 1024];
                        loop {
                            let n = match from.read(&mut buf).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => n,
                            };
                            if frozen.load(std::sync::atomic::Ordering::SeqCst) {
                                // Hold the socket open, forward nothing.
                                std::future::pending::<()>().await;
                            }
                            if to.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                        }
                    });
                }
            }
        });
        FreezingProxy {
            addr,
            connections,
            freeze_new,
        }
    }

    fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Freezes every connection open now; answers how many.
    fn freeze(&self) -> usize {
        let connections = self.connections.lock().unwrap();
        for frozen in connections.iter() {
            frozen.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        connections.len()
    }

    /// Freezes every connection, the ones opened later included: an
    /// engine that stopped answering altogether.
    fn freeze_all(&self) {
        self.freeze_new
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.freeze();
    }
}

/// A connection that stops answering with its socket open (the client
/// driver wedged, or a middlebox stopped forwarding) is replaced by the
/// first attempt it leaves unanswered: operations go on within their bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_stops_answering_is_replaced() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let proxy = FreezingProxy::start(server.port()).await;
    let log = connect_within(&proxy.url(), Duration::from_secs(10)).await;
    let (info, mut run) = create(&log, "frozen", "owner").await;
    let first = LogEntry::Event(run.run_started());
    log.append(&info.run_id, "owner", 1, first.clone())
        .await
        .unwrap();
    assert!(
        proxy.freeze() >= 4,
        "the command connections and the subscription"
    );
    // Every connection the handle had is frozen: each operation below
    // meets one (or a replacement) and must still succeed.
    let mut all = vec![first];
    for position in 2..=9 {
        let entry = LogEntry::Event(run.text_delta("m", &format!("{position}")));
        assert_eq!(
            log.append(&info.run_id, "owner", position, entry.clone())
                .await,
            Ok(()),
            "append at {position} after the freeze"
        );
        all.push(entry);
    }
    let batch = log
        .read(&info.run_id, 0, 100, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(batch.entries, all, "each entry once, in order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_entry_is_reported_with_its_position() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let log = connect(&server).await;
    let (info, mut run) = create(&log, "corrupt", "owner").await;
    // Entries written by hand, behind the log's back: a good one, an event
    // that does not parse, a field the log does not know.
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let key = format!("lce:{{{}}}:log", info.run_id);
    let good = run.run_started().to_json();
    for (id, field, value) in [
        ("1-0", "event", good.as_str()),
        ("2-0", "event", "{\"not\":\"an event\"}"),
        ("3-0", "other", "1"),
    ] {
        let _: String = redis::cmd("XADD")
            .arg(&key)
            .arg(id)
            .arg(field)
            .arg(value)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let read = |after, max| log.read(&info.run_id, after, max, Duration::ZERO);
    assert_eq!(read(0, 10).await, Err(LogError::Corrupt { position: 2 }));
    assert_eq!(read(2, 10).await, Err(LogError::Corrupt { position: 3 }));
    let first = read(0, 1).await.unwrap();
    assert_eq!(first.entries.len(), 1, "entry 1 still reads");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_revisions_count_up_per_conversation_and_survive_a_restart() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let options = RedisLogOptions::new();
    let store = RedisStore::connect(&server.url(), &options).await.unwrap();
    let other_replica = RedisStore::connect(&server.url(), &options).await.unwrap();
    let conversation = fresh_run_id("conversation");
    let request = |run: &str, sequence| CommitRequest {
        run_id: run.to_owned(),
        conversation_id: conversation.clone(),
        sequence,
        interrupt_id: None,
    };
    assert_eq!(store.revision(&conversation).await, Ok(None));
    let first = store.commit_final(request("r1", 5)).await.unwrap();
    assert_eq!(first.durable_revision, 1);
    assert_eq!(first.head_ref, format!("redis:{conversation}:1"));
    let second = other_replica
        .commit_interrupt(CommitRequest {
            interrupt_id: Some("int-1".to_owned()),
            ..request("r2", 7)
        })
        .await
        .unwrap();
    assert_eq!(second.durable_revision, 2, "replicas share the revisions");
    // Another conversation counts on its own.
    let elsewhere = CommitRequest {
        conversation_id: fresh_run_id("elsewhere"),
        ..request("r3", 1)
    };
    assert_eq!(
        store
            .commit_final(elsewhere)
            .await
            .unwrap()
            .durable_revision,
        1
    );

    server.kill9();
    server.restart();
    assert_eq!(store.revision(&conversation).await, Ok(Some(2)));
    let third = store.commit_final(request("r4", 3)).await.unwrap();
    assert_eq!(third.durable_revision, 3);
    assert_eq!(third.head_ref, format!("redis:{conversation}:3"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_that_is_not_there_is_unavailable_in_time() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let url = server.url();
    drop(server);
    let options = RedisLogOptions::new().with_timeout(Duration::from_millis(500));
    let start = Instant::now();
    let err = RedisRunLog::connect(&url, options.clone())
        .await
        .unwrap_err();
    assert_eq!(err, LogError::Unavailable);
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    // The error says nothing of the url (which may hold a password).
    let secret_url = "redis://:hunter2@127.0.0.1:1/0";
    let err = RedisRunLog::connect(secret_url, options).await.unwrap_err();
    assert!(!format!("{err} {err:?}").contains("hunter2"));
    assert_eq!(
        RedisRunLog::connect("not a url", RedisLogOptions::new())
            .await
            .unwrap_err(),
        LogError::Unavailable
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_running_run_key_expires_and_never_names_a_sealed_run() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let log = connect(&server).await;
    let other_replica = connect(&server).await;
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let (info, mut run) = create(&log, "running-key", "replica-a").await;
    let key = format!("lce:{{conv:{}}}:running", info.conversation_id);
    let stored: Option<String> = redis::cmd("GET")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(stored.as_deref(), Some(info.run_id.as_str()));
    // It expires with the retention (24 h by default), and each renewal
    // pushes that back.
    let ttl = |conn: &mut redis::aio::MultiplexedConnection| {
        let key = key.clone();
        let mut conn = conn.clone();
        async move {
            let ms: i64 = redis::cmd("PTTL")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap();
            ms
        }
    };
    let day_ms = 24 * 3600 * 1000;
    assert!((day_ms - 60_000..=day_ms).contains(&ttl(&mut conn).await));
    let _: i64 = redis::cmd("PEXPIRE")
        .arg(&key)
        .arg(1_000_000)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(log.renew(&info.run_id, "replica-a", LEASE).await, Ok(true));
    assert!(ttl(&mut conn).await > 1_000_000, "the renewal refreshed it");

    // The run is sealed by another replica's takeover whose cleanup of the
    // conversation key was lost: put the key back by hand.
    assert_eq!(log.release(&info.run_id, "replica-a").await, Ok(()));
    assert_eq!(
        other_replica.claim(&info.run_id, "replica-b", LEASE).await,
        Ok(true)
    );
    other_replica
        .append(
            &info.run_id,
            "replica-b",
            1,
            LogEntry::Event(run.run_error("run_incomplete", "The run ended without a terminal.")),
        )
        .await
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg(&info.run_id)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(log.running_run(&info.conversation_id).await, Ok(None));
    let exists: i64 = redis::cmd("EXISTS")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(exists, 0, "the stale key was cleared");
    assert_eq!(log.request_cancel(&info.run_id).await, Ok(false));

    // A key naming a run whose log is gone: none either.
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg(fresh_run_id("gone"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(log.running_run(&info.conversation_id).await, Ok(None));

    // The cancel request lives in the run's meta hash.
    let (open, _) = create(&log, "cancel-field", "replica-a").await;
    assert_eq!(other_replica.request_cancel(&open.run_id).await, Ok(true));
    let cancel: Option<String> = redis::cmd("HGET")
        .arg(format!("lce:{{{}}}:meta", open.run_id))
        .arg("cancel")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(cancel.as_deref(), Some("1"));
    assert_eq!(log.cancel_requested(&open.run_id).await, Ok(true));
    assert_eq!(
        other_replica.running_run(&open.conversation_id).await,
        Ok(Some(open.run_id.clone()))
    );
}

/// An engine that stops answering altogether (every connection, and every
/// new one, left unanswered) fails each operation once its time bound has
/// passed: the log does not try again for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_that_stops_answering_fails_the_operation() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let proxy = FreezingProxy::start(server.port()).await;
    let log = connect_within(&proxy.url(), Duration::from_millis(300)).await;
    let (info, mut run) = create(&log, "frozen-for-good", "owner").await;
    proxy.freeze_all();
    let entry = LogEntry::Event(run.run_started());
    assert_eq!(
        log.append(&info.run_id, "owner", 1, entry).await,
        Err(LogError::Unavailable)
    );
    assert_eq!(
        log.read(&info.run_id, 0, 10, Duration::ZERO).await,
        Err(LogError::Unavailable)
    );
}

/// An engine that went away (its connections refused) fails each
/// operation once its time bound has passed, however quickly each try
/// fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_that_went_away_fails_the_operation() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let log = connect_within(&server.url(), Duration::from_millis(300)).await;
    let (info, mut run) = create(&log, "gone", "owner").await;
    server.kill9();
    let entry = LogEntry::Event(run.run_started());
    assert_eq!(
        log.append(&info.run_id, "owner", 1, entry).await,
        Err(LogError::Unavailable)
    );
}

/// An answer of the engine that is an error (here a key of the wrong type)
/// fails the operation at once: it is not the connection's, so it is not
/// tried again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_answer_fails_the_operation_without_retries() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let prefix = fresh_run_id("wrong-type");
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: i64 = redis::cmd("LPUSH")
        .arg(format!("{prefix}:{{run-x}}:meta"))
        .arg("not a hash")
        .query_async(&mut conn)
        .await
        .unwrap();
    let log = RedisRunLog::connect(
        &server.url(),
        RedisLogOptions::new()
            .with_prefix(prefix)
            .with_timeout(Duration::from_secs(3600)),
    )
    .await
    .unwrap();
    assert_eq!(log.info("run-x").await, Err(LogError::Unavailable));
}

/// The handles' `Debug` shows their options, never the engine's address
/// (which may hold a password).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handles_debug_without_the_address() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let options = RedisLogOptions::new().with_prefix("dbg");
    let store = RedisStore::connect(&server.url(), &options).await.unwrap();
    assert_eq!(format!("{store:?}"), r#"RedisStore { prefix: "dbg", .. }"#);
    let log = RedisRunLog::connect(&server.url(), options.clone())
        .await
        .unwrap();
    assert_eq!(
        format!("{log:?}"),
        format!("RedisRunLog {{ options: {options:?}, .. }}")
    );
}

/// Nothing lives forever: after a mixed workload (finished, interrupted,
/// errored and cancelled runs, a reserved run given back, an orphan ended by another
/// replica, one nobody ever claims, one still running, thread commits),
/// every key under the prefix has an expiry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_expires_after_a_mixed_workload() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let options = RedisLogOptions::new()
        .with_prefix("ttl")
        .with_thread_retention(Duration::from_secs(3600));
    let log: Arc<dyn RunLog> = Arc::new(
        RedisRunLog::connect(&server.url(), options.clone())
            .await
            .unwrap(),
    );
    let store = RedisStore::connect(&server.url(), &options).await.unwrap();
    let short = Duration::from_millis(100);
    let append = async |info: &RunInfo, owner: &str, at: u64, event| {
        log.append(&info.run_id, owner, at, LogEntry::Event(event))
            .await
            .unwrap();
    };

    let (finished, mut run) = create(&*log, "finished", "a").await;
    append(&finished, "a", 1, run.run_started()).await;
    append(&finished, "a", 2, run.run_finished()).await;
    let commit = CommitRequest {
        run_id: finished.run_id.clone(),
        conversation_id: finished.conversation_id.clone(),
        sequence: 2,
        interrupt_id: None,
    };
    store.commit_final(commit).await.unwrap();

    let (errored, mut run) = create(&*log, "errored", "a").await;
    append(&errored, "a", 1, run.run_started()).await;
    append(&errored, "a", 2, run.run_error("e", "failed")).await;

    let (cancelled, mut run) = create(&*log, "cancelled", "a").await;
    append(&cancelled, "a", 1, run.run_started()).await;
    assert_eq!(log.request_cancel(&cancelled.run_id).await, Ok(true));
    append(&cancelled, "a", 2, run.run_cancelled()).await;

    // An interrupted run: a bundled scenario's events, as they are.
    let scenario = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/scenarios/tool-approval-interrupt.jsonl"),
    )
    .unwrap();
    let events: Vec<lce_types::Event> = scenario
        .lines()
        .map(|line| lce_types::Event::from_json(line).unwrap())
        .collect();
    assert_eq!(
        events.last().map(|e| e.event_type().as_str()),
        Some("run.interrupted")
    );
    let interrupted = RunInfo {
        run_id: events[0].run_id.to_string(),
        conversation_id: events[0].conversation_id.to_string(),
        owner: "a".to_owned(),
        nonce: "nonce-1".to_owned(),
    };
    log.create(interrupted.clone(), LEASE).await.unwrap();
    let entries = events.into_iter().map(LogEntry::Event).collect();
    log.append_batch(&interrupted.run_id, "a", 1, entries)
        .await
        .unwrap();

    let (abandoned, _) = create(&*log, "abandoned", "a").await;
    assert_eq!(log.abandon(&abandoned.run_id, "a").await, Ok(true));

    let (running, mut run) = create(&*log, "running", "a").await;
    append(&running, "a", 1, run.run_started()).await;
    assert_eq!(log.renew(&running.run_id, "a", LEASE).await, Ok(true));

    // Owners that die: one before any renewal, one after an entry. The
    // second is found and ended by another replica.
    let lost = RunInfo {
        run_id: fresh_run_id("lost"),
        conversation_id: "conv-lost".to_owned(),
        owner: "dead".to_owned(),
        nonce: "nonce-1".to_owned(),
    };
    log.create(lost.clone(), short).await.unwrap();
    let orphan = RunInfo {
        run_id: fresh_run_id("orphan"),
        conversation_id: "conv-orphan".to_owned(),
        owner: "dead".to_owned(),
        nonce: "nonce-1".to_owned(),
    };
    log.create(orphan.clone(), short).await.unwrap();
    let mut run = RunBuilder::new(orphan.run_id.as_str(), "conv-orphan");
    append(&orphan, "dead", 1, run.run_started()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let takeover = lce_runlog::Takeover {
        claimant: "b".to_owned(),
        lease: LEASE,
    };
    assert_eq!(
        lce_runlog::end_orphan(&log, &orphan.run_id, &takeover).await,
        Ok(true)
    );

    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("ttl:*")
        .query_async(&mut conn)
        .await
        .unwrap();
    let abandoned_keys = keys
        .iter()
        .filter(|k| k.contains(&abandoned.run_id))
        .count();
    assert_eq!(abandoned_keys, 0, "an abandoned run left {keys:?}");
    for (what, info) in [
        ("lost", &lost),
        ("running", &running),
        ("orphan", &orphan),
        ("interrupted", &interrupted),
    ] {
        assert!(
            keys.iter().any(|k| k.contains(&info.run_id)),
            "the {what} run's keys are missing from {keys:?}"
        );
    }
    assert!(
        keys.iter().any(|k| k.contains("{thread:")),
        "no thread key in {keys:?}"
    );
    assert!(
        keys.iter().any(|k| k.starts_with("ttl:active:{")),
        "no part of the active-run index in {keys:?}"
    );
    for key in &keys {
        let ttl: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(ttl > 0, "{key} never expires (PTTL {ttl})");
    }
}
