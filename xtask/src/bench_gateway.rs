//! `cargo xtask bench-gateway`: what the gateway's Redis run log costs, on
//! one `lce serve` replica and a fresh `redis-server`, measured once and
//! printed as Markdown (`docs/performance.md`, "The gateway: Redis
//! Streams"). Nothing is asserted: the figures are reported.
//!
//! ```text
//! cargo xtask bench-gateway [--runs N] [--events M] [--concurrency 1,100,1000]
//!                           [--idle N] [--no-always] [--no-build | --lce PATH]
//! ```
//!
//! Builds the release `lce`, starts `redis-server` on a free loopback port in
//! a temporary folder (`appendonly yes`, `appendfsync everysec`, no RDB
//! snapshots, no automatic AOF rewrite) and one replica on it, then:
//!
//! 1. **Redis memory**: `INFO memory` `used_memory` before and after pushing
//!    two loads of runs (many short runs, few long ones), and the per-run and
//!    per-event costs that fit both.
//! 2. **Throughput**: one run of `N × M` corpus events (at most 25,000: a
//!    body stays under the 16 MiB request limit), then `N` runs of `M`
//!    (`lce_testkit::corpus`, mix `mixed`, run and conversation ids
//!    rewritten) pushed at once, each by a thread (`POST /api/v1/runs`, whole
//!    body), each read by one subscriber (`GET
//!    /api/v1/runs/{id}/stream?protocol=custom`, opened as soon as the run
//!    exists); timed from the first push to the last subscriber's end of
//!    stream. The same load also runs on a replica with `--log memory`.
//!    The reference, on the same server: the
//!    same entries (the same JSON, one `XADD <run key> <position>-0 event
//!    <json>` each) piped by `redis-cli --pipe` from a file of RESP commands,
//!    and `redis-benchmark -P 32 -c 1` of as many `XADD key * event
//!    <payload>` of the mean size. Then the same again under `appendfsync
//!    always` (`CONFIG SET`), unless `--no-always`.
//! 3. **Latency**: at each concurrency C, C runs pushed with a chunked body,
//!    one event per chunk, paced (`text.delta`s carrying a marker); each run
//!    read by one subscriber that notes when each marker arrives; per event,
//!    arrival minus the moment the client wrote its chunk. One thread writes
//!    for every run (a timer heap); one thread per subscriber (small stacks).
//! 4. **Replica memory**: a fresh replica's VmRSS, then with `--idle` runs
//!    open and idle (pushed with a chunked body that sent `run.started` and
//!    `text.started` and waits), then with one idle subscriber on each.
//!
//! The client runs on the same machine and cores as the replica and Redis.
//! A run the gateway does not end with its own terminal (a push answer
//! other than `outcome: ended`, a subscriber stream cut short) is counted and
//! flagged in the tables, not fatal. `LCE_BENCH_KEEP=1` keeps the temporary
//! folder (the replica's and Redis's logs) for a look afterwards.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write as _;
use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use lce_testkit::corpus::{self, Mix, Options};
use lce_testkit::time::{START_MS, rfc3339_ms};

use crate::cluster::{
    Redis, RedisConn, Replica, Resp, Secrets, build_lce, cpu_secs, http, lce_path, parse_response,
    random_hex, replica_args, resp_command, rss_kib,
};
use crate::json::Json;
use crate::util::workspace_root;

const USAGE: &str = "usage: cargo xtask bench-gateway [--runs N] [--events M] [--concurrency 1,100,1000] [--idle N] [--no-always] [--no-build | --lce PATH]";

/// The replica's options beyond the cluster's: room for thousands of
/// connections, and idle push bodies that may wait.
const REPLICA_EXTRA: [&str; 6] = [
    "--max-connections",
    "8192",
    "--body-idle-timeout",
    "600",
    "--header-timeout",
    "60",
];

/// The pause between opening two runs or two subscriptions in the latency
/// and idle phases: 1,000 runs open over about 2 s, not in one burst.
const OPEN_PACE: Duration = Duration::from_millis(2);

/// The longest single run of the throughput measurement: its body must stay
/// under `lce serve`'s 16 MiB request limit (corpus events average 300 to
/// 500 bytes).
const SINGLE_RUN_MAX_EVENTS: u64 = 25_000;

/// The two loads of the memory measurement: (runs, events per run).
const MEMORY_LOADS: [(usize, u64); 2] = [(400, 10), (20, 2000)];

/// How many runs the memory loads push at once (one: the figures need no
/// concurrency).
const MEMORY_PUSHERS: usize = 1;

#[derive(Debug)]
struct Args {
    runs: usize,
    events: u64,
    concurrency: Vec<usize>,
    idle: usize,
    always: bool,
    build: bool,
    /// `--lce PATH`: this binary instead of the release build.
    lce: Option<PathBuf>,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        runs: 16,
        events: 5000,
        concurrency: vec![1, 100, 1000],
        idle: 1000,
        always: true,
        build: true,
        lce: None,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        let number = |name: &str, v: &str| {
            v.replace('_', "")
                .parse::<u64>()
                .map_err(|_| format!("{name}: `{v}` is not a count\n{USAGE}"))
        };
        match arg.as_str() {
            "--runs" => a.runs = number("--runs", &value("--runs")?)?.clamp(1, 1000) as usize,
            "--events" => a.events = number("--events", &value("--events")?)?.max(10),
            "--idle" => a.idle = number("--idle", &value("--idle")?)?.clamp(1, 5000) as usize,
            "--concurrency" => {
                let v = value("--concurrency")?;
                a.concurrency = v
                    .split(',')
                    .map(|c| number("--concurrency", c).map(|n| n.clamp(1, 5000) as usize))
                    .collect::<Result<_, _>>()?;
            }
            "--no-always" => a.always = false,
            "--no-build" => a.build = false,
            "--lce" => a.lce = Some(PathBuf::from(value("--lce")?)),
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => {
                return Err(format!(
                    "bench-gateway: unknown argument `{other}`\n{USAGE}"
                ));
            }
        }
    }
    Ok(a)
}

/// Runs the task with the arguments after `bench-gateway`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let args = parse_args(args)?;
    let root = workspace_root();
    let exe = match (&args.lce, args.build) {
        (Some(path), _) => path.clone(),
        (None, true) => build_lce(&root, true)?,
        (None, false) => lce_path(&root, true),
    };
    if !exe.exists() {
        return Err(format!("{} is missing (drop --no-build)", exe.display()));
    }
    let dir = std::env::temp_dir().join(format!("lce-bench-gateway-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let result = (|| -> Result<String, String> {
        let secrets = Secrets::write(&dir)?;
        let mut redis = Redis::start(&dir, "everysec")?;
        let result = Bench::new(&root, &exe, &dir, &secrets, &redis).and_then(|b| b.all(&args));
        let stopped = redis.stop();
        let report = result?;
        stopped?;
        Ok(report)
    })();
    if result.is_err() {
        for name in ["replica.log", "redis.log"] {
            eprintln!("bench-gateway: the end of {name}:");
            let log = fs::read_to_string(dir.join(name)).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            for l in &lines[lines.len().saturating_sub(12)..] {
                eprintln!("  {l}");
            }
        }
    }
    if std::env::var_os("LCE_BENCH_KEEP").is_some() {
        eprintln!("bench-gateway: kept {} (LCE_BENCH_KEEP)", dir.display());
    } else {
        let _ = fs::remove_dir_all(&dir);
    }
    println!("{}", result?);
    Ok(())
}

/// What every phase needs.
struct Bench<'a> {
    exe: &'a Path,
    dir: &'a Path,
    scenarios: PathBuf,
    secrets: &'a Secrets,
    redis: &'a Redis,
    /// A random prefix, so run ids never collide.
    tag: String,
}

impl<'a> Bench<'a> {
    fn new(
        root: &Path,
        exe: &'a Path,
        dir: &'a Path,
        secrets: &'a Secrets,
        redis: &'a Redis,
    ) -> Result<Bench<'a>, String> {
        Ok(Bench {
            exe,
            dir,
            scenarios: root.join("fixtures/scenarios"),
            secrets,
            redis,
            tag: random_hex(3)?,
        })
    }

    fn replica(&self) -> Result<Replica, String> {
        let args = replica_args(
            &self.redis.url(),
            &self.scenarios,
            self.secrets,
            &REPLICA_EXTRA,
        );
        Replica::start(self.exe, &args, &self.dir.join("replica.log"))
    }

    fn auth(&self) -> String {
        format!("Bearer {}", self.secrets.ingest_token)
    }

    /// The read token of each run id (`lce token`, as a platform would).
    fn tokens(&self, ids: &[String]) -> Result<Vec<String>, String> {
        ids.iter()
            .map(|id| {
                let out = Command::new(self.exe)
                    .args(["token", id, "--token-secret-file"])
                    .arg(&self.secrets.token_secret)
                    .stderr(Stdio::inherit())
                    .output()
                    .map_err(|e| format!("lce token: {e}"))?;
                if !out.status.success() {
                    return Err(format!("lce token {id} failed"));
                }
                Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
            })
            .collect()
    }

    /// Every phase; returns the report.
    fn all(&self, args: &Args) -> Result<String, String> {
        let mut conn = self.redis.conn()?;
        let version = info_field(&conn.info("server")?, "redis_version");
        let mut report = String::new();
        let _ = writeln!(report, "\n# cargo xtask bench-gateway\n");
        let _ = writeln!(
            report,
            "Machine: {} cores ({}), shared with other work; lce release build; redis-server {version} on loopback, `appendonly yes`, no RDB snapshots, no automatic AOF rewrite; one `lce serve --log redis://` replica; the client (xtask) on the same cores.\n",
            cores(),
            cpu_model()
        );

        let mut replica = self.replica()?;
        eprintln!("bench-gateway: Redis memory");
        let memory = self.memory(&replica, &mut conn)?;
        eprintln!("bench-gateway: throughput (appendfsync everysec)");
        let mut through = vec![self.throughput(&replica, args.runs, args.events, "everysec", 1)?];
        eprintln!("bench-gateway: throughput with the memory log");
        let memory_log = self.throughput_memory(args.runs, args.events)?;
        if args.always {
            eprintln!("bench-gateway: throughput (appendfsync always)");
            conn.cmd(&["CONFIG", "SET", "appendfsync", "always"])?;
            let t = self.throughput(&replica, args.runs, args.events, "always", 2);
            conn.cmd(&["CONFIG", "SET", "appendfsync", "everysec"])?;
            through.push(t?);
        }
        let mut latencies = Vec::new();
        for &c in &args.concurrency {
            eprintln!("bench-gateway: latency at {c} concurrent runs");
            latencies.push(self.latency(&replica, c)?);
        }
        replica
            .stop()
            .map_err(|e| format!("stopping the replica: {e}"))?;
        eprintln!(
            "bench-gateway: replica memory with {} idle subscribers",
            args.idle
        );
        let idle = self.idle(args.idle, &mut conn)?;

        report.push_str(&throughput_table(&through, &memory_log, args.runs));
        report.push_str(&latency_table(&latencies));
        report.push_str(&memory_table(&memory));
        report.push_str(&idle_table(&idle));
        Ok(report)
    }

    // ------------------------------------------------------------ memory

    fn memory(&self, replica: &Replica, conn: &mut RedisConn) -> Result<Vec<MemoryLoad>, String> {
        let mut out = Vec::new();
        for (l, &(runs, events)) in MEMORY_LOADS.iter().enumerate() {
            let bodies: Vec<(String, Vec<u8>)> = (0..runs)
                .map(|i| self.corpus_run(&format!("mem{l}"), i, events))
                .collect::<Result<_, _>>()?;
            let payload: usize = bodies.iter().map(|(_, b)| b.len()).sum();
            thread::sleep(Duration::from_millis(300));
            let before = used_memory(conn)?;
            let failed = push_all(&replica.addr, &self.auth(), &bodies, MEMORY_PUSHERS)?;
            thread::sleep(Duration::from_millis(300));
            let after = used_memory(conn)?;
            out.push(MemoryLoad {
                runs,
                events: runs as u64 * events,
                payload: payload as u64,
                delta: after.saturating_sub(before),
                failed,
            });
        }
        Ok(out)
    }

    /// Run `i` of a load: a corpus run of `events` events with a run id and
    /// conversation id of its own.
    fn corpus_run(&self, load: &str, i: usize, events: u64) -> Result<(String, Vec<u8>), String> {
        let seed = i as u64 + 1;
        let bytes = corpus::to_vec(&Options {
            events,
            mix: Mix::Mixed,
            seed,
        })
        .map_err(|e| format!("corpus: {e}"))?;
        let text = String::from_utf8(bytes).map_err(|_| "corpus: not UTF-8")?;
        let run_id = format!("bench-{}-{load}-{i}", self.tag);
        let text = text
            .replace(
                &format!("\"run_id\":\"run-corpus-mixed-{seed}\""),
                &format!("\"run_id\":\"{run_id}\""),
            )
            .replace(
                &format!("\"conversation_id\":\"conv-corpus-{seed}\""),
                &format!("\"conversation_id\":\"conv-{run_id}\""),
            );
        Ok((run_id, text.into_bytes()))
    }

    // -------------------------------------------------------- throughput

    /// One round of the throughput measurement under `fsync`: one long
    /// run (as many events as the concurrent runs together, at most
    /// [`SINGLE_RUN_MAX_EVENTS`]), then `runs` runs at once; then the
    /// references on the concurrent runs' entries.
    fn throughput(
        &self,
        replica: &Replica,
        runs: usize,
        events: u64,
        fsync: &'static str,
        round: usize,
    ) -> Result<Throughput, String> {
        let long = (events * runs as u64).min(SINGLE_RUN_MAX_EVENTS);
        let single = vec![self.corpus_run(&format!("tps{round}"), 0, long)?];
        let single = self.measure_gateway(replica, &single)?;
        let bodies: Vec<(String, Vec<u8>)> = (0..runs)
            .map(|i| self.corpus_run(&format!("tp{round}"), i, events))
            .collect::<Result<_, _>>()?;
        let concurrent = self.measure_gateway(replica, &bodies)?;
        let mut conn = self.redis.conn()?;
        let mut log_entries = 0;
        for (run_id, _) in &bodies {
            if let Resp::Int(n) = conn.cmd(&["XLEN", &format!("lce:{{{run_id}}}:log")])? {
                log_entries += n as u64;
            }
        }
        let pipe = self.reference_pipe(&bodies, round)?;
        let mean = concurrent.bytes / concurrent.entries.max(1);
        let bench = self.reference_benchmark(concurrent.entries, mean)?;
        Ok(Throughput {
            runs,
            events,
            fsync,
            single,
            concurrent,
            log_entries,
            pipe,
            bench,
        })
    }

    /// [`Bench::load`] with Redis's CPU time and command statistics.
    fn measure_gateway(
        &self,
        replica: &Replica,
        bodies: &[(String, Vec<u8>)],
    ) -> Result<Measured, String> {
        let mut conn = self.redis.conn()?;
        conn.cmd(&["CONFIG", "RESETSTAT"])?;
        let redis0 = cpu_secs(self.redis.pid())?;
        let mut m = self.load(replica, bodies)?;
        m.redis_cpu = cpu_secs(self.redis.pid())? - redis0;
        let stats = conn.info("commandstats")?;
        m.per_call = ["evalsha", "xadd", "xread", "xrange"]
            .iter()
            .filter_map(|c| command_stat(&stats, c))
            .collect();
        Ok(m)
    }

    /// The same load on a replica with the memory log (no Redis).
    fn throughput_memory(&self, runs: usize, events: u64) -> Result<Measured, String> {
        let args = replica_args("memory", &self.scenarios, self.secrets, &REPLICA_EXTRA);
        let mut replica = Replica::start(self.exe, &args, &self.dir.join("replica-memory.log"))?;
        let bodies: Vec<(String, Vec<u8>)> = (0..runs)
            .map(|i| self.corpus_run("tpm", i, events))
            .collect::<Result<_, _>>()?;
        let measured = self.load(&replica, &bodies);
        replica
            .stop()
            .map_err(|e| format!("stopping the memory-log replica: {e}"))?;
        measured
    }

    /// Pushes every run at once (a thread each), each read by one
    /// subscriber (a thread each); timed from the first push to the last
    /// subscriber's end of stream.
    fn load(&self, replica: &Replica, bodies: &[(String, Vec<u8>)]) -> Result<Measured, String> {
        let tokens = self.tokens(&bodies.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>())?;
        let bytes: u64 = bodies.iter().map(|(_, b)| b.len() as u64).sum();
        let entries: u64 = bodies
            .iter()
            .map(|(_, b)| b.iter().filter(|&&c| c == b'\n').count() as u64)
            .sum();
        let auth = self.auth();
        let lce0 = cpu_secs(replica.pid())?;
        let start = Instant::now();
        let (end, sse, failed) = thread::scope(|s| -> Result<(Instant, u64, usize), String> {
            let mut pushers = Vec::new();
            let mut readers = Vec::new();
            for ((run_id, body), token) in bodies.iter().zip(&tokens) {
                let (addr, auth) = (&replica.addr, &auth);
                pushers.push(s.spawn(move || ended(&push_whole(addr, auth, body)?, run_id)));
                readers.push(s.spawn(move || -> (Instant, Result<usize, String>) {
                    let n = read_stream(addr, run_id, token);
                    (Instant::now(), n)
                }));
            }
            let mut oks = Vec::new();
            for p in pushers {
                oks.push(p.join().map_err(|_| "a pusher panicked")??);
            }
            let mut end = start;
            let mut sse = 0;
            let mut broken = 0;
            for r in readers {
                let (at, n) = r.join().map_err(|_| "a subscriber panicked")?;
                end = end.max(at);
                match n {
                    Ok(n) => sse += n as u64,
                    Err(e) => {
                        eprintln!("bench-gateway: {e}");
                        broken += 1;
                    }
                }
            }
            Ok((end, sse, count_failed(oks).max(broken)))
        })?;
        Ok(Measured {
            entries,
            bytes,
            secs: (end - start).as_secs_f64(),
            lce_cpu: Some(cpu_secs(replica.pid())? - lce0),
            redis_cpu: 0.0,
            per_call: Vec::new(),
            sse_bytes: sse,
            failed,
        })
    }

    /// `redis-cli --pipe` of one `XADD` per event of `bodies`, into keys of
    /// their own.
    fn reference_pipe(
        &self,
        bodies: &[(String, Vec<u8>)],
        round: usize,
    ) -> Result<Measured, String> {
        let path = self.dir.join("reference.resp");
        let mut resp = Vec::new();
        let mut entries = 0u64;
        let mut bytes = 0u64;
        for (run_id, body) in bodies {
            let key = format!("ref{round}:{{{run_id}}}:log");
            for (i, line) in body
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .enumerate()
            {
                let id = format!("{}-0", i + 1);
                resp.extend(resp_command(
                    [
                        b"XADD".as_slice(),
                        key.as_bytes(),
                        id.as_bytes(),
                        b"event",
                        line,
                    ]
                    .into_iter(),
                ));
                entries += 1;
                bytes += line.len() as u64 + 1;
            }
        }
        fs::write(&path, &resp).map_err(|e| format!("{}: {e}", path.display()))?;
        drop(resp);
        let mut conn = self.redis.conn()?;
        conn.cmd(&["CONFIG", "RESETSTAT"])?;
        let redis0 = cpu_secs(self.redis.pid())?;
        let input = fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let start = Instant::now();
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &port(&self.redis.addr()), "--pipe"])
            .stdin(input)
            .output()
            .map_err(|e| format!("redis-cli --pipe: {e}"))?;
        let secs = start.elapsed().as_secs_f64();
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || !text.contains("errors: 0,") {
            return Err(format!("redis-cli --pipe: {}", text.trim()));
        }
        let redis_cpu = cpu_secs(self.redis.pid())? - redis0;
        let _ = fs::remove_file(&path);
        let stats = conn.info("commandstats")?;
        Ok(Measured {
            entries,
            bytes,
            secs,
            lce_cpu: None,
            redis_cpu,
            per_call: command_stat(&stats, "xadd").into_iter().collect(),
            sse_bytes: 0,
            failed: 0,
        })
    }

    /// `redis-benchmark -P 32 -c 1 -n ENTRIES XADD key * event <payload>`
    /// with the entries' mean size.
    fn reference_benchmark(&self, entries: u64, mean: u64) -> Result<Measured, String> {
        let payload = "x".repeat(usize::try_from(mean).unwrap_or(256).max(1));
        let mut conn = self.redis.conn()?;
        conn.cmd(&["CONFIG", "RESETSTAT"])?;
        let redis0 = cpu_secs(self.redis.pid())?;
        let out = Command::new("redis-benchmark")
            .args(["-h", "127.0.0.1", "-p", &port(&self.redis.addr())])
            .args(["-P", "32", "-c", "1", "-n", &entries.to_string(), "--csv"])
            .args(["XADD", "benchref", "*", "event", &payload])
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("redis-benchmark: {e}"))?;
        let redis_cpu = cpu_secs(self.redis.pid())? - redis0;
        let text = String::from_utf8_lossy(&out.stdout);
        let rps: f64 = text
            .lines()
            .last()
            .and_then(|l| l.split("\",\"").nth(1))
            .and_then(|v| v.trim_matches('"').parse().ok())
            .ok_or_else(|| format!("redis-benchmark: unexpected output {:?}", text.trim()))?;
        conn.cmd(&["DEL", "benchref"])?;
        let stats = conn.info("commandstats")?;
        Ok(Measured {
            entries,
            bytes: entries * (mean + 1),
            secs: entries as f64 / rps,
            lce_cpu: None,
            redis_cpu,
            per_call: command_stat(&stats, "xadd").into_iter().collect(),
            sse_bytes: 0,
            failed: 0,
        })
    }

    // ----------------------------------------------------------- latency

    fn latency(&self, replica: &Replica, c: usize) -> Result<Latency, String> {
        // Pacing: the whole load offers about 1,000 events/s (100/s for a
        // single run), each run a couple of seconds long; few events per
        // run at high concurrency.
        let interval = Duration::from_millis(c.max(10) as u64);
        let deltas = (2000 / c.max(10)).clamp(5, 200);
        let ids: Vec<String> = (0..c)
            .map(|i| format!("lat-{}-{c}-{i}", self.tag))
            .collect();
        let tokens = self.tokens(&ids)?;
        let auth = self.auth();

        // Open every run: run.started and text.started, then wait.
        let mut pushes = Vec::with_capacity(c);
        for id in &ids {
            pushes.push(open_push(&replica.addr, &auth, id)?);
            thread::sleep(OPEN_PACE);
        }
        // One subscriber thread per run.
        let ready = Arc::new(AtomicUsize::new(0));
        let mut subscribers = Vec::with_capacity(c);
        for (id, token) in ids.iter().zip(tokens) {
            let (addr, id, ready) = (replica.addr.clone(), id.clone(), ready.clone());
            let handle = thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || subscribe_markers(&addr, &id, &token, &ready, deltas))
                .map_err(|e| format!("cannot start a subscriber thread: {e}"))?;
            subscribers.push(handle);
            thread::sleep(OPEN_PACE);
        }
        let waited = Instant::now();
        while ready.load(Ordering::SeqCst) < c {
            if waited.elapsed() > Duration::from_secs(120) {
                return Err(format!(
                    "only {} of {c} subscribers opened their stream",
                    ready.load(Ordering::SeqCst)
                ));
            }
            thread::sleep(Duration::from_millis(10));
        }

        // The deltas, paced: each run every `interval`, the runs spread
        // evenly over one interval.
        let mut sent = vec![Vec::with_capacity(deltas); c];
        let mut heap = BinaryHeap::new();
        let t0 = Instant::now() + Duration::from_millis(50);
        for i in 0..c {
            heap.push(Reverse((t0 + interval.mul_f64(i as f64 / c as f64), i)));
        }
        let started = Instant::now();
        while let Some(Reverse((at, i))) = heap.pop() {
            let now = Instant::now();
            if at > now {
                thread::sleep(at - now);
            }
            let j = sent[i].len();
            let line = event_line(&ids[i], 2 + j as u64, "text.delta", &delta_data(j));
            let chunk = chunk(&line);
            sent[i].push(Instant::now());
            pushes[i]
                .write_all(&chunk)
                .map_err(|e| format!("{}: send: {e}", ids[i]))?;
            if j + 1 < deltas {
                heap.push(Reverse((at + interval, i)));
            } else {
                finish_push(&mut pushes[i], &ids[i], 2 + deltas as u64)?;
            }
        }
        let load_secs = started.elapsed().as_secs_f64();
        let mut oks = Vec::with_capacity(c);
        for (push, id) in pushes.iter_mut().zip(&ids) {
            let mut raw = Vec::new();
            push.read_to_end(&mut raw)
                .map_err(|e| format!("{id}: reading the push answer: {e}"))?;
            oks.push(ended(&parse_response(&raw)?, id)?);
        }
        let mut latencies = Vec::with_capacity(c * deltas);
        let mut missing = 0;
        let mut broken = 0;
        for (i, s) in subscribers.into_iter().enumerate() {
            let (arrived, complete) = s.join().map_err(|_| "a subscriber panicked")??;
            broken += usize::from(!complete);
            for (j, at) in arrived.iter().enumerate() {
                match (at, sent[i].get(j)) {
                    (Some(at), Some(sent)) => {
                        latencies.push(at.saturating_duration_since(*sent).as_secs_f64() * 1e3);
                    }
                    _ => missing += 1,
                }
            }
        }
        latencies.sort_by(f64::total_cmp);
        Ok(Latency {
            concurrency: c,
            deltas,
            interval,
            offered: (c * deltas) as f64 / load_secs.max(1e-9),
            p50: percentile(&latencies, 0.50),
            p99: percentile(&latencies, 0.99),
            max: latencies.last().copied().unwrap_or(f64::NAN),
            measured: latencies.len(),
            missing,
            failed: count_failed(oks),
            broken,
        })
    }

    // ------------------------------------------------- idle subscribers

    fn idle(&self, n: usize, conn: &mut RedisConn) -> Result<Idle, String> {
        let mut replica = self.replica()?;
        let auth = self.auth();
        // Warm-up: one run pushed and read, so the baseline includes what
        // the server allocates once.
        let warm = format!("idle-{}-warm", self.tag);
        let mut push = open_push(&replica.addr, &auth, &warm)?;
        finish_push(&mut push, &warm, 2)?;
        let mut raw = Vec::new();
        push.read_to_end(&mut raw)
            .map_err(|e| format!("warm-up: {e}"))?;
        if !ended(&parse_response(&raw)?, &warm)? {
            return Err("the warm-up run did not end".to_owned());
        }
        let warm_token = self.tokens(std::slice::from_ref(&warm))?;
        read_stream(&replica.addr, &warm, &warm_token[0])?;
        thread::sleep(Duration::from_millis(500));
        let rss0 = rss_kib(replica.pid())?;
        let clients0 = clients(conn)?;

        let ids: Vec<String> = (0..n).map(|i| format!("idle-{}-{i}", self.tag)).collect();
        let tokens = self.tokens(&ids)?;
        let mut pushes = Vec::with_capacity(n);
        for id in &ids {
            pushes.push(open_push(&replica.addr, &auth, id)?);
            thread::sleep(OPEN_PACE);
        }
        thread::sleep(Duration::from_secs(1));
        let rss1 = rss_kib(replica.pid())?;
        let mut subscribers = Vec::with_capacity(n);
        for (id, token) in ids.iter().zip(&tokens) {
            subscribers.push(open_stream(&replica.addr, id, token)?);
            thread::sleep(OPEN_PACE);
        }
        thread::sleep(Duration::from_secs(1));
        let rss2 = rss_kib(replica.pid())?;
        let clients2 = clients(conn)?;

        // End every run properly, and read every stream to its end.
        for (push, id) in pushes.iter_mut().zip(&ids) {
            finish_push(push, id, 2)?;
        }
        let mut oks = Vec::with_capacity(n);
        for (push, id) in pushes.iter_mut().zip(&ids) {
            let mut raw = Vec::new();
            push.read_to_end(&mut raw)
                .map_err(|e| format!("{id}: reading the push answer: {e}"))?;
            oks.push(ended(&parse_response(&raw)?, id)?);
        }
        let mut broken = 0;
        for (mut s, id) in subscribers.into_iter().zip(&ids) {
            let mut rest = Vec::new();
            s.stream
                .read_to_end(&mut rest)
                .map_err(|e| format!("{id}: reading the stream: {e}"))?;
            let mut body = s.pending;
            body.extend_from_slice(&rest);
            if let Err(e) = crate::cluster::dechunk(&body) {
                eprintln!("bench-gateway: {id}: the stream: {e}");
                broken += 1;
            }
        }
        replica
            .stop()
            .map_err(|e| format!("stopping the replica: {e}"))?;
        Ok(Idle {
            n,
            rss0,
            rss1,
            rss2,
            redis_clients: clients2.saturating_sub(clients0),
            failed: count_failed(oks).max(broken),
        })
    }
}

// ------------------------------------------------------------- HTTP pieces

/// `POST /api/v1/runs` with the whole body.
fn push_whole(addr: &str, auth: &str, body: &[u8]) -> Result<crate::cluster::HttpResponse, String> {
    http(
        addr,
        "POST",
        "/api/v1/runs",
        &[
            ("Authorization", auth),
            ("Content-Type", "application/x-ndjson"),
        ],
        body,
    )
}

/// Whether the push answer says the run ended with its own
/// `run.finished` (`outcome: ended`). A run the gateway could not log
/// (`log_failed`, ...) is `false`, counted and reported; an answer that is
/// not a 200 summary is an error.
fn ended(resp: &crate::cluster::HttpResponse, run_id: &str) -> Result<bool, String> {
    let body = String::from_utf8_lossy(&resp.body);
    if resp.status != 200 {
        return Err(format!("push {run_id}: status {}: {body}", resp.status));
    }
    let j = Json::parse(&body).map_err(|e| format!("push {run_id}: {e}: {body}"))?;
    let outcome = j.get("outcome").and_then(Json::as_str);
    let terminal = j.get("terminal").and_then(Json::as_str);
    let ok = outcome == Some("ended") && terminal == Some("run.finished");
    if !ok {
        eprintln!("bench-gateway: push {run_id}: {body}");
    }
    Ok(ok)
}

/// Counts the `false`s.
fn count_failed(oks: impl IntoIterator<Item = bool>) -> usize {
    oks.into_iter().filter(|ok| !ok).count()
}

/// Pushes every body, `threads` at a time; returns how many runs did not
/// end.
fn push_all(
    addr: &str,
    auth: &str,
    bodies: &[(String, Vec<u8>)],
    threads: usize,
) -> Result<usize, String> {
    let next = AtomicUsize::new(0);
    thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| -> Result<usize, String> {
                    let mut failed = 0;
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        let Some((run_id, body)) = bodies.get(i) else {
                            return Ok(failed);
                        };
                        failed += usize::from(!ended(&push_whole(addr, auth, body)?, run_id)?);
                    }
                })
            })
            .collect();
        workers.into_iter().try_fold(0, |sum, w| {
            Ok(sum + w.join().map_err(|_| "a pusher panicked".to_owned())??)
        })
    })
}

/// `GET /api/v1/runs/{id}/stream` to its end (retrying while the run does
/// not exist yet); returns the body's length.
fn read_stream(addr: &str, run_id: &str, token: &str) -> Result<usize, String> {
    let path = format!("/api/v1/runs/{run_id}/stream?protocol=custom");
    let start = Instant::now();
    loop {
        let resp = http(addr, "GET", &path, &[("X-Run-Token", token)], b"")?;
        match resp.status {
            200 => return Ok(resp.body.len()),
            404 if start.elapsed() < Duration::from_secs(30) => {
                thread::sleep(Duration::from_millis(1));
            }
            s => return Err(format!("GET {run_id}: status {s}")),
        }
    }
}

/// A GET stream whose head was read: the socket and the body bytes that
/// came with the head.
struct OpenStream {
    stream: TcpStream,
    pending: Vec<u8>,
}

/// Opens `GET /api/v1/runs/{id}/stream` and reads its head (retrying while
/// the run does not exist yet).
fn open_stream(addr: &str, run_id: &str, token: &str) -> Result<OpenStream, String> {
    let start = Instant::now();
    loop {
        let mut s = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
        let _ = s.set_read_timeout(Some(Duration::from_secs(120)));
        let req = format!(
            "GET /api/v1/runs/{run_id}/stream?protocol=custom HTTP/1.1\r\nHost: {addr}\r\nX-Run-Token: {token}\r\nConnection: close\r\n\r\n"
        );
        s.write_all(req.as_bytes())
            .map_err(|e| format!("{run_id}: send: {e}"))?;
        let mut raw = Vec::new();
        let mut buf = [0u8; 4096];
        let split = loop {
            if let Some(p) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
            let n = s
                .read(&mut buf)
                .map_err(|e| format!("{run_id}: reading the stream's head: {e}"))?;
            if n == 0 {
                return Err(format!("{run_id}: the stream closed before its head"));
            }
            raw.extend_from_slice(&buf[..n]);
        };
        let status = String::from_utf8_lossy(&raw[..split])
            .split(' ')
            .nth(1)
            .and_then(|v| v.parse::<u16>().ok())
            .unwrap_or(0);
        match status {
            200 => {
                return Ok(OpenStream {
                    stream: s,
                    pending: raw[split + 4..].to_vec(),
                });
            }
            404 if start.elapsed() < Duration::from_secs(30) => {
                thread::sleep(Duration::from_millis(5));
            }
            s => return Err(format!("GET {run_id}: status {s}")),
        }
    }
}

/// The latency subscriber: opens the run's stream, counts itself ready,
/// then notes when each marker `[evNNNNNN]` arrives. Returns the arrival
/// time of each of the `deltas` markers (None: never seen).
fn subscribe_markers(
    addr: &str,
    run_id: &str,
    token: &str,
    ready: &AtomicUsize,
    deltas: usize,
) -> Result<(Vec<Option<Instant>>, bool), String> {
    let mut open = open_stream(addr, run_id, token);
    // Counted even when it failed, so the writer does not wait forever.
    ready.fetch_add(1, Ordering::SeqCst);
    let open = open.as_mut().map_err(|e| e.clone())?;
    let mut arrived = vec![None; deltas];
    let mut window = std::mem::take(&mut open.pending);
    let mut tail = [0u8; 5];
    let mut buf = vec![0u8; 16 * 1024];
    let mut now = Instant::now();
    loop {
        // Every whole marker in the window; keep what may start one.
        let mut from = 0;
        while let Some(p) = find(&window[from..], b"[ev") {
            let s = from + p;
            if s + 10 > window.len() {
                break;
            }
            if window[s + 9] == b']' {
                if let Some(j) = std::str::from_utf8(&window[s + 3..s + 9])
                    .ok()
                    .and_then(|d| d.parse::<usize>().ok())
                {
                    if let Some(slot) = arrived.get_mut(j) {
                        slot.get_or_insert(now);
                    }
                }
            }
            from = s + 3;
        }
        let keep = window.len().saturating_sub(9).max(from.min(window.len()));
        window.drain(..keep.min(window.len()));
        let n = open
            .stream
            .read(&mut buf)
            .map_err(|e| format!("{run_id}: reading the stream: {e}"))?;
        now = Instant::now();
        if n == 0 {
            break;
        }
        window.extend_from_slice(&buf[..n]);
        // The last five bytes seen, for the end-of-body check.
        for &b in &buf[..n] {
            tail.rotate_left(1);
            tail[4] = b;
        }
    }
    let complete = &tail == b"0\r\n\r\n";
    if !complete {
        eprintln!("bench-gateway: {run_id}: the stream ended without its last chunk");
    }
    Ok((arrived, complete))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Opens a chunked `POST /api/v1/runs` and sends `run.started` and
/// `text.started`; the run then waits for more.
fn open_push(addr: &str, auth: &str, run_id: &str) -> Result<TcpStream, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(120)));
    let _ = s.set_nodelay(true);
    let mut out = format!(
        "POST /api/v1/runs HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    .into_bytes();
    out.extend(chunk(&event_line(
        run_id,
        0,
        "run.started",
        r#"{"harness_id":"bench","adapter_version":"1.0.0","provider_run_id":"bench"}"#,
    )));
    out.extend(chunk(&event_line(
        run_id,
        1,
        "text.started",
        r#"{"message_id":"msg-1","role":"assistant"}"#,
    )));
    s.write_all(&out)
        .map_err(|e| format!("{run_id}: send: {e}"))?;
    Ok(s)
}

/// Sends `text.finished` at `sequence`, `run.finished` and the end of the
/// chunked body.
fn finish_push(s: &mut TcpStream, run_id: &str, sequence: u64) -> Result<(), String> {
    let mut out = chunk(&event_line(
        run_id,
        sequence,
        "text.finished",
        r#"{"message_id":"msg-1"}"#,
    ));
    out.extend(chunk(&event_line(
        run_id,
        sequence + 1,
        "run.finished",
        r#"{"outcome":"success","stop_reason":"end_turn","thread_state":{"durability":"committed","durable_revision":1,"head_ref":"head-1"}}"#,
    )));
    out.extend_from_slice(b"0\r\n\r\n");
    s.write_all(&out)
        .map_err(|e| format!("{run_id}: send: {e}"))
}

/// The `data` of latency delta `j`: its marker.
fn delta_data(j: usize) -> String {
    format!(r#"{{"message_id":"msg-1","delta":"[ev{j:06}]"}}"#)
}

/// One canonical event line (with its newline).
fn event_line(run_id: &str, sequence: u64, ty: &str, data: &str) -> Vec<u8> {
    format!(
        r#"{{"version":1,"type":"{ty}","run_id":"{run_id}","conversation_id":"conv-{run_id}","sequence":{sequence},"timestamp":"{}","namespace":[],"data":{data}}}"#,
        rfc3339_ms(START_MS + sequence as i64)
    )
    .into_bytes()
    .into_iter()
    .chain(std::iter::once(b'\n'))
    .collect()
}

/// `data` as one HTTP chunk.
fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

// ------------------------------------------------------------ Redis pieces

fn port(addr: &str) -> String {
    addr.rsplit(':').next().unwrap_or_default().to_owned()
}

fn info_field(info: &[(String, String)], key: &str) -> String {
    info.iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

fn used_memory(conn: &mut RedisConn) -> Result<u64, String> {
    info_field(&conn.info("memory")?, "used_memory")
        .parse()
        .map_err(|_| "redis: no used_memory".to_owned())
}

fn clients(conn: &mut RedisConn) -> Result<u64, String> {
    info_field(&conn.info("clients")?, "connected_clients")
        .parse()
        .map_err(|_| "redis: no connected_clients".to_owned())
}

/// `cmdstat_<name>` of `INFO commandstats`: (name, calls, µs per call).
fn command_stat(stats: &[(String, String)], name: &str) -> Option<(String, u64, f64)> {
    let v = info_field(stats, &format!("cmdstat_{name}"));
    let field = |f: &str| {
        v.split(',')
            .find_map(|kv| kv.strip_prefix(&format!("{f}=")))
            .map(str::to_owned)
    };
    Some((
        name.to_owned(),
        field("calls")?.parse().ok()?,
        field("usec_per_call")?.parse().ok()?,
    ))
}

// ------------------------------------------------------------- the figures

/// One timed load.
struct Measured {
    entries: u64,
    bytes: u64,
    secs: f64,
    lce_cpu: Option<f64>,
    redis_cpu: f64,
    /// `INFO commandstats`: (command, calls, µs per call).
    per_call: Vec<(String, u64, f64)>,
    /// Bytes of SSE the subscribers read (gateway loads).
    sse_bytes: u64,
    /// Runs that did not end with their own terminal (gateway loads).
    failed: usize,
}

impl Measured {
    fn rate(&self) -> f64 {
        self.entries as f64 / self.secs.max(1e-9)
    }
}

struct Throughput {
    runs: usize,
    events: u64,
    fsync: &'static str,
    /// One run of `runs × events` events.
    single: Measured,
    /// `runs` runs of `events` events at once.
    concurrent: Measured,
    /// Entries in the concurrent runs' logs (events plus idle markers).
    log_entries: u64,
    pipe: Measured,
    bench: Measured,
}

struct Latency {
    concurrency: usize,
    deltas: usize,
    interval: Duration,
    offered: f64,
    p50: f64,
    p99: f64,
    max: f64,
    measured: usize,
    missing: usize,
    failed: usize,
    /// Subscriber streams that ended without their last chunk.
    broken: usize,
}

struct MemoryLoad {
    runs: usize,
    events: u64,
    payload: u64,
    delta: u64,
    failed: usize,
}

struct Idle {
    n: usize,
    rss0: u64,
    rss1: u64,
    rss2: u64,
    redis_clients: u64,
    failed: usize,
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn throughput_table(rows: &[Throughput], memory_log: &Measured, memory_runs: usize) -> String {
    let mut s = String::from(
        "## Throughput\n\n| appendfsync | what | entries | MiB | seconds | entries/s | lce CPU s | redis CPU s | redis µs per call (calls) |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let line = |s: &mut String, fsync: &str, what: &str, m: &Measured| {
        let calls: Vec<String> = m
            .per_call
            .iter()
            .map(|(c, n, us)| format!("{c} {us:.1} ({})", thousands(*n as f64)))
            .collect();
        let _ = writeln!(
            s,
            "| {fsync} | {what} | {} | {:.1} | {:.2} | {} | {} | {} | {} |",
            thousands(m.entries as f64),
            m.bytes as f64 / (1024.0 * 1024.0),
            m.secs,
            thousands(m.rate()),
            m.lce_cpu.map_or("-".to_owned(), |c| format!("{c:.2}")),
            if m.per_call.is_empty() && m.lce_cpu.is_some() {
                "-".to_owned()
            } else {
                format!("{:.2}", m.redis_cpu)
            },
            calls.join(", ")
        );
    };
    let ratio = |m: &Measured, reference: &Measured| {
        if m.failed > 0 {
            "n/a (runs failed)".to_owned()
        } else {
            format!("{:.2}", m.rate() / reference.rate().max(1e-9))
        }
    };
    for t in rows {
        let total = t.single.entries;
        line(
            &mut s,
            t.fsync,
            &format!(
                "gateway: one run of {} events pushed to the replica, read by one subscriber ({:.1} MiB of SSE){}",
                thousands(total as f64),
                mib(t.single.sse_bytes),
                failed_note(t.single.failed, 1)
            ),
            &t.single,
        );
        line(
            &mut s,
            t.fsync,
            &format!(
                "gateway: {} runs × {} events pushed at once, each read by one subscriber ({} log entries with the idle markers, {:.1} MiB of SSE){}",
                t.runs,
                thousands(t.events as f64),
                thousands(t.log_entries as f64),
                mib(t.concurrent.sse_bytes),
                failed_note(t.concurrent.failed, t.runs)
            ),
            &t.concurrent,
        );
        line(
            &mut s,
            t.fsync,
            "reference: `redis-cli --pipe` of one `XADD` per event (the same JSON, the concurrent runs' keys)",
            &t.pipe,
        );
        line(
            &mut s,
            t.fsync,
            "reference: `redis-benchmark -P 32 -c 1` `XADD` of the mean size",
            &t.bench,
        );
        let _ = writeln!(
            s,
            "| {} | **ratio** gateway / `redis-cli --pipe`: one run **{}**, {} runs **{}** (/ redis-benchmark: {}, {}) | | | | | | | |",
            t.fsync,
            ratio(&t.single, &t.pipe),
            t.runs,
            ratio(&t.concurrent, &t.pipe),
            ratio(&t.single, &t.bench),
            ratio(&t.concurrent, &t.bench),
        );
    }
    line(
        &mut s,
        "-",
        &format!(
            "the {memory_runs} concurrent runs on a replica with `--log memory` (no Redis){}",
            failed_note(memory_log.failed, memory_runs)
        ),
        memory_log,
    );
    s.push('\n');
    s
}

fn latency_table(rows: &[Latency]) -> String {
    let mut s = String::from(
        "## Latency, ingest to subscriber (appendfsync everysec)\n\n| concurrent runs | deltas per run, every | offered events/s | measured | p50 ms | p99 ms | max ms |\n|---:|---|---:|---:|---:|---:|---:|\n",
    );
    for l in rows {
        let _ = writeln!(
            s,
            "| {}{} | {} × {} ms | {} | {}{} | {:.2} | {:.2} | {:.1} |",
            thousands(l.concurrency as f64),
            failed_note(l.failed.max(l.broken), l.concurrency),
            l.deltas,
            l.interval.as_millis(),
            thousands(l.offered),
            thousands(l.measured as f64),
            if l.missing > 0 {
                format!(" ({} missing)", l.missing)
            } else {
                String::new()
            },
            l.p50,
            l.p99,
            l.max
        );
    }
    s.push('\n');
    s
}

fn memory_table(loads: &[MemoryLoad]) -> String {
    let mut s = String::from(
        "## Redis memory (`INFO memory` used_memory, sealed runs)\n\n| load | events | JSON bytes per event | used_memory Δ | per event | per run |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for l in loads {
        let _ = writeln!(
            s,
            "| {} runs × {} events{} | {} | {:.0} | {:.1} MiB | {:.0} B | {:.1} KiB |",
            thousands(l.runs as f64),
            thousands(l.events as f64 / l.runs as f64),
            failed_note(l.failed, l.runs),
            thousands(l.events as f64),
            l.payload as f64 / l.events as f64,
            l.delta as f64 / (1024.0 * 1024.0),
            l.delta as f64 / l.events as f64,
            l.delta as f64 / l.runs as f64 / 1024.0,
        );
    }
    // delta = runs × a + events × b, from the two loads.
    if let [x, y] = loads
        && x.failed == 0
        && y.failed == 0
    {
        let (r1, e1, d1) = (x.runs as f64, x.events as f64, x.delta as f64);
        let (r2, e2, d2) = (y.runs as f64, y.events as f64, y.delta as f64);
        let det = r1 * e2 - r2 * e1;
        if det.abs() > f64::EPSILON {
            let a = (d1 * e2 - d2 * e1) / det;
            let b = (r1 * d2 - r2 * d1) / det;
            let payload = (x.payload + y.payload) as f64 / (e1 + e2);
            let _ = writeln!(
                s,
                "| fit of both: per run + per event | | {payload:.0} | | **{b:.0} B** per event | **{:.1} KiB** per run |",
                a / 1024.0
            );
        }
    }
    s.push('\n');
    s
}

fn idle_table(i: &Idle) -> String {
    let n = i.n as f64;
    format!(
        "## Replica memory (VmRSS), idle runs and subscribers\n\n| state | VmRSS | Δ | per run or subscriber |\n|---|---:|---:|---:|\n| fresh replica after one run | {:.1} MiB | | |\n| + {} open idle pushed runs (owners){} | {:.1} MiB | {:+.1} MiB | {:.1} KiB |\n| + one idle subscriber on each ({} more Redis connections) | {:.1} MiB | {:+.1} MiB | {:.1} KiB |\n",
        i.rss0 as f64 / 1024.0,
        thousands(n),
        failed_note(i.failed, i.n),
        i.rss1 as f64 / 1024.0,
        (i.rss1 as f64 - i.rss0 as f64) / 1024.0,
        (i.rss1 as f64 - i.rss0 as f64) / n,
        thousands(i.redis_clients as f64),
        i.rss2 as f64 / 1024.0,
        (i.rss2 as f64 - i.rss1 as f64) / 1024.0,
        (i.rss2 as f64 - i.rss1 as f64) / n,
    )
}

/// " (**F of N runs failed**)" when some failed, else nothing.
fn failed_note(failed: usize, of: usize) -> String {
    if failed == 0 {
        String::new()
    } else {
        format!(" (**{failed} of {of} runs did not end: log_failed, see the replica's warnings**)")
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 && c != '-' {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned())
}
