//! `cargo xtask bench-gateway`: what the gateway's Redis run log costs, on
//! one `lce serve` replica and a fresh `redis-server` (`lce-testkit`'s),
//! measured once and printed as Markdown. Nothing is asserted: the figures
//! are reported. What each phase measures (throughput against `redis-cli
//! --pipe` and `redis-benchmark`, the same load on `--log memory`, latency
//! from ingest to subscriber, Redis and replica memory, the cost of 1 vs
//! 100 subscribers of one run: `--subscribers`, `--fanout-only`), and how, is
//! `docs/performance.md`, "The gateway: Redis Streams". A run the gateway
//! does not end with its own terminal is counted and flagged in the tables,
//! not fatal; `LCE_BENCH_KEEP=1` keeps the temporary folder (the replica's
//! and a copy of Redis's logs).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write as _;
use std::fs;
use std::io::{BufRead, BufReader, PipeWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use lce_testkit::corpus::{self, Mix, Options};
use lce_testkit::time::{START_MS, rfc3339_ms};

use crate::cluster::{
    HttpResponse, Redis, Replica, Secrets, agent, cpu_secs, print_log_tails, push, query,
    random_hex, read_whole, replica_args, rss_kib,
};
use crate::corpus::count;
use crate::util::{cores, cpu_model, create_dir, lce, thousands, workspace_root, write};
use lce_testkit::redis_topology::{RedisCluster, SentinelPair};

/// The replica's options beyond the cluster's: room for thousands of
/// connections (all from 127.0.0.1), and idle push bodies that may wait.
const REPLICA_EXTRA: [&str; 10] = [
    "--max-connections",
    "8192",
    "--max-connections-per-ip",
    "8192",
    "--body-idle-timeout",
    "600",
    "--ingest-idle-timeout",
    "600",
    "--header-timeout",
    "60",
];

/// The pause between opening two runs or two subscriptions in the latency
/// and idle phases: 1,000 runs open over about 2 s, not in one burst.
const OPEN_PACE: Duration = Duration::from_millis(2);

/// The longest single run of the throughput measurement: its body stays
/// under 16 MiB, the request limit push bodies had before they became
/// streams, so figures compare across versions (corpus events average 300
/// to 500 bytes).
const SINGLE_RUN_MAX_EVENTS: u64 = 25_000;

/// The deltas of the fan-out measurement's run (each about 300 bytes of
/// JSON).
const FANOUT_EVENTS: usize = 20_000;

/// The two loads of the memory measurement: (runs, events per run).
const MEMORY_LOADS: [(usize, u64); 2] = [(400, 10), (20, 2000)];

/// How many runs the memory loads push at once (one: the figures need no
/// concurrency).
const MEMORY_PUSHERS: usize = 1;

/// What the command line asked for.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Concurrent runs of the throughput measurement (1 to 1000).
    #[arg(long, value_name = "N", default_value = "16", value_parser = |v: &str| count(v).map(|n| n.clamp(1, 1000) as usize))]
    runs: usize,
    /// Events per run of the throughput measurement (at least 10).
    #[arg(long, value_name = "M", default_value = "5000", value_parser = |v: &str| count(v).map(|n| n.max(10)))]
    events: u64,
    /// The concurrencies of the latency measurement (each 1 to 5000).
    #[arg(long, value_name = "1,100,1000", value_delimiter = ',', default_value = "1,100,1000",
          value_parser = |v: &str| count(v).map(|n| n.clamp(1, 5000) as usize))]
    concurrency: Vec<usize>,
    /// Idle runs and subscribers of the replica memory measurement (1 to 5000).
    #[arg(long, value_name = "N", default_value = "1000", value_parser = |v: &str| count(v).map(|n| n.clamp(1, 5000) as usize))]
    idle: usize,
    /// The subscriber counts of the fan-out measurement: one run read by
    /// each many subscribers at once (each 1 to 1000).
    #[arg(long, value_name = "1,100", value_delimiter = ',', default_value = "1,100",
          value_parser = |v: &str| count(v).map(|n| n.clamp(1, 1000) as usize))]
    subscribers: Vec<usize>,
    /// Only the fan-out measurement (subscribers of one run).
    #[arg(long)]
    fanout_only: bool,
    /// Only the throughput measurement under `appendfsync everysec`, side
    /// by side with its references (raw pipelined `XADD`s, the memory
    /// log): the figures of issue 33's Redis-path targets, in minutes.
    #[arg(long, conflicts_with_all = ["fanout_only", "cluster"])]
    throughput_only: bool,
    /// Only the topologies' measurement: one run, then `--runs` runs of
    /// `--events` events at once, on a Redis Cluster of 1 and of 3 shards
    /// (`--log redis+cluster://`) and on a primary with a replica behind
    /// Sentinel with `--log-replicas` 0 and 1 (the cost of `WAIT`), with
    /// each node's CPU time.
    #[arg(long)]
    cluster: bool,
    /// Skip the throughput round under `appendfsync always`.
    #[arg(long)]
    no_always: bool,
    /// Take the release `lce` already built.
    #[arg(long, conflicts_with = "lce")]
    no_build: bool,
    /// This binary instead of the release build.
    #[arg(long, value_name = "PATH")]
    lce: Option<PathBuf>,
}

/// Runs the task with the arguments after `bench-gateway`.
pub(crate) fn run(args: Args) -> Result<(), String> {
    let root = workspace_root();
    let exe = match &args.lce {
        Some(path) => path.clone(),
        None => lce(&root, true, !args.no_build)?,
    };
    let dir = std::env::temp_dir().join(format!("lce-bench-gateway-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    create_dir(&dir)?;
    let mut redis = Redis::start()?;
    let result = (|| -> Result<String, String> {
        let secrets = Secrets::write(&dir)?;
        query::<()>(
            &mut redis.conn()?,
            &["CONFIG", "SET", "appendfsync", "everysec"],
        )?;
        Bench::new(&root, &exe, &dir, &secrets, &redis)?.all(&args)
    })();
    let _ = fs::copy(redis.server.dir().join("redis.log"), dir.join("redis.log"));
    let stopped = redis.stop();
    let result = result.and_then(|report| stopped.map(|()| report));
    if result.is_err() {
        print_log_tails(&dir);
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
    /// The server's process id (`INFO server`), for its CPU time.
    redis_pid: u32,
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
        let server = info(&mut redis.conn()?, "server")?;
        Ok(Bench {
            exe,
            dir,
            scenarios: root.join("fixtures/scenarios"),
            secrets,
            redis,
            redis_pid: server.get("process_id").ok_or("redis: no process_id")?,
            tag: random_hex(3)?,
        })
    }

    fn replica(&self) -> Result<Replica, String> {
        let args = replica_args(
            &self.redis.server.url(),
            &self.scenarios,
            self.secrets,
            &REPLICA_EXTRA,
        );
        Replica::start(self.exe, &args, &self.dir.join("replica.log"))
    }

    fn auth(&self) -> String {
        format!("Bearer {}", self.secrets.ingest_token)
    }

    /// The read token of each run id (runs just opened: their log may
    /// take a moment to exist, and the token needs its nonce).
    fn tokens(&self, ids: &[String]) -> Result<Vec<String>, String> {
        let url = self.redis.server.url();
        ids.iter()
            .map(|id| {
                let deadline = Instant::now() + Duration::from_secs(10);
                loop {
                    match self.secrets.token(self.exe, id, &url) {
                        Ok(token) => return Ok(token),
                        Err(_) if Instant::now() < deadline => {
                            thread::sleep(Duration::from_millis(50));
                        }
                        Err(e) => return Err(e),
                    }
                }
            })
            .collect()
    }

    /// Every phase; returns the report.
    fn all(&self, args: &Args) -> Result<String, String> {
        let mut conn = self.redis.conn()?;
        let version: String = info(&mut conn, "server")?
            .get("redis_version")
            .unwrap_or_default();
        let mut report = String::new();
        let _ = writeln!(report, "\n# cargo xtask bench-gateway\n");
        let _ = writeln!(
            report,
            "Machine: {} cores ({}), shared with other work; lce release build; redis-server {version} on loopback, `appendonly yes`, no RDB snapshots, no automatic AOF rewrite; one `lce serve --log redis://` replica; the client (xtask) on the same cores.\n",
            cores(),
            cpu_model()
        );

        if args.cluster {
            let mut rows = Vec::new();
            for engine in [
                Topology::Shards(1),
                Topology::Shards(3),
                Topology::Pair(0),
                Topology::Pair(1),
            ] {
                eprintln!("bench-gateway: {}", engine.name());
                for (runs, events) in [
                    (1, args.events * args.runs as u64),
                    (args.runs, args.events),
                ] {
                    rows.push(self.topology_load(engine, runs, events)?);
                }
            }
            report.push_str(&topology_table(&rows));
            return Ok(report);
        }
        if args.throughput_only {
            let mut replica = self.replica()?;
            eprintln!("bench-gateway: throughput (appendfsync everysec)");
            let through = self.throughput(&replica, args.runs, args.events, "everysec", 1);
            replica
                .stop()
                .map_err(|e| format!("stopping the replica: {e}"))?;
            eprintln!("bench-gateway: throughput with the memory log");
            let memory_log = self.throughput_memory(args.runs, args.events)?;
            report.push_str(&throughput_table(&[through?], &memory_log, args.runs));
            return Ok(report);
        }
        let fanout = self.fanout_all(&args.subscribers)?;
        if args.fanout_only {
            report.push_str(&fanout_table(&fanout));
            return Ok(report);
        }
        let mut replica = self.replica()?;
        eprintln!("bench-gateway: Redis memory");
        let memory = self.memory(&replica, &mut conn)?;
        eprintln!("bench-gateway: throughput (appendfsync everysec)");
        let mut through = vec![self.throughput(&replica, args.runs, args.events, "everysec", 1)?];
        eprintln!("bench-gateway: throughput with the memory log");
        let memory_log = self.throughput_memory(args.runs, args.events)?;
        if !args.no_always {
            eprintln!("bench-gateway: throughput (appendfsync always)");
            query::<()>(&mut conn, &["CONFIG", "SET", "appendfsync", "always"])?;
            let t = self.throughput(&replica, args.runs, args.events, "always", 2);
            query::<()>(&mut conn, &["CONFIG", "SET", "appendfsync", "everysec"])?;
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
        report.push_str(&fanout_table(&fanout));
        Ok(report)
    }

    // ------------------------------------------------------------ memory

    fn memory(
        &self,
        replica: &Replica,
        conn: &mut redis::Connection,
    ) -> Result<Vec<MemoryLoad>, String> {
        let mut out = Vec::new();
        for (l, &(runs, events)) in MEMORY_LOADS.iter().enumerate() {
            let bodies: Vec<(String, Vec<u8>)> = (0..runs)
                .map(|i| self.corpus_run(&format!("mem{l}"), i, events))
                .collect::<Result<_, _>>()?;
            let payload: usize = bodies.iter().map(|(_, b)| b.len()).sum();
            thread::sleep(Duration::from_millis(300));
            let before = info_number(conn, "memory", "used_memory")?;
            let failed = push_all(&replica.addr, &self.auth(), &bodies, MEMORY_PUSHERS)?;
            thread::sleep(Duration::from_millis(300));
            let after = info_number(conn, "memory", "used_memory")?;
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
            log_entries += query::<u64>(&mut conn, &["XLEN", &format!("lce:{{{run_id}}}:log")])?;
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
        query::<()>(&mut conn, &["CONFIG", "RESETSTAT"])?;
        let redis0 = cpu_secs(self.redis_pid)?;
        let mut m = self.load(replica, bodies)?;
        m.redis_cpu = cpu_secs(self.redis_pid)? - redis0;
        let stats = info(&mut conn, "commandstats")?;
        m.per_call = ["eval", "evalsha", "exec", "xadd", "xread", "xrange"]
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
        let bytes: u64 = bodies.iter().map(|(_, b)| b.len() as u64).sum();
        let entries: u64 = bodies
            .iter()
            .map(|(_, b)| b.iter().filter(|&&c| c == b'\n').count() as u64)
            .sum();
        let auth = self.auth();
        let lce0 = cpu_secs(replica.pid())?;
        let start = Instant::now();
        let (end, sse, failed) = thread::scope(|s| -> Result<(Instant, u64, usize), String> {
            // Each push's answer head brings its run's read token (a token
            // covers the run's nonce, so it exists only once the run
            // does); its subscriber starts then, while the body goes on.
            let mut pushers = Vec::new();
            for (run_id, body) in bodies {
                let (addr, auth) = (&replica.addr, &auth);
                pushers.push(s.spawn(move || -> Result<_, String> {
                    let split = body
                        .iter()
                        .position(|&c| c == b'\n')
                        .map_or(body.len(), |k| k + 1);
                    let (mut push, token) = RawPush::open(addr, auth, &body[..split])?;
                    let reader = s.spawn(move || -> (Instant, Result<usize, String>) {
                        let n = read_stream(addr, run_id, &token);
                        (Instant::now(), n)
                    });
                    push.write(&body[split..])?;
                    let ok = push.finish()?;
                    let read = reader.join().map_err(|_| "a subscriber panicked")?;
                    Ok((ok, read))
                }));
            }
            let mut oks = Vec::new();
            let mut end = start;
            let mut sse = 0;
            let mut broken = 0;
            for p in pushers {
                let (ok, (at, n)) = p.join().map_err(|_| "a pusher panicked")??;
                oks.push(ok);
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
                let xadd = redis::cmd("XADD")
                    .arg(&key)
                    .arg(id)
                    .arg("event")
                    .arg(line)
                    .clone();
                resp.extend(xadd.get_packed_command());
                entries += 1;
                bytes += line.len() as u64 + 1;
            }
        }
        write(&path, &resp)?;
        drop(resp);
        let mut conn = self.redis.conn()?;
        query::<()>(&mut conn, &["CONFIG", "RESETSTAT"])?;
        let redis0 = cpu_secs(self.redis_pid)?;
        let input = fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let start = Instant::now();
        let out = Command::new("redis-cli")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.redis.server.port().to_string(),
                "--pipe",
            ])
            .stdin(input)
            .output()
            .map_err(|e| format!("redis-cli --pipe: {e}"))?;
        let secs = start.elapsed().as_secs_f64();
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || !text.contains("errors: 0,") {
            return Err(format!("redis-cli --pipe: {}", text.trim()));
        }
        let redis_cpu = cpu_secs(self.redis_pid)? - redis0;
        let _ = fs::remove_file(&path);
        let stats = info(&mut conn, "commandstats")?;
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
        query::<()>(&mut conn, &["CONFIG", "RESETSTAT"])?;
        let redis0 = cpu_secs(self.redis_pid)?;
        let out = Command::new("redis-benchmark")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.redis.server.port().to_string(),
            ])
            .args(["-P", "32", "-c", "1", "-n", &entries.to_string(), "--csv"])
            .args(["XADD", "benchref", "*", "event", &payload])
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("redis-benchmark: {e}"))?;
        let redis_cpu = cpu_secs(self.redis_pid)? - redis0;
        let text = String::from_utf8_lossy(&out.stdout);
        let rps: f64 = text
            .lines()
            .last()
            .and_then(|l| l.split("\",\"").nth(1))
            .and_then(|v| v.trim_matches('"').parse().ok())
            .ok_or_else(|| format!("redis-benchmark: unexpected output {:?}", text.trim()))?;
        query::<()>(&mut conn, &["DEL", "benchref"])?;
        let stats = info(&mut conn, "commandstats")?;
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

    // ----------------------------------------------------------- Cluster

    /// The throughput load (`runs` runs of `events` events at once) on one
    /// replica whose log is `engine`, with each node's CPU time.
    fn topology_load(&self, engine: Topology, runs: usize, events: u64) -> Result<Sharded, String> {
        let missing = "redis-server is not installed";
        let (url, servers, _keep): (String, Vec<u32>, Box<dyn std::any::Any>) = match engine {
            Topology::Shards(n) => {
                let cluster = RedisCluster::start_shards(n).ok_or(missing)?;
                let pids = cluster.nodes.iter().filter_map(|n| n.pid()).collect();
                (cluster.url(), pids, Box::new(cluster))
            }
            Topology::Pair(_) => {
                let pair = SentinelPair::start().ok_or(missing)?;
                let pids = [&pair.primary, &pair.replica]
                    .iter()
                    .filter_map(|n| n.pid())
                    .collect();
                (pair.url(), pids, Box::new(pair))
            }
        };
        let replicas = match engine {
            Topology::Pair(n) => n.to_string(),
            Topology::Shards(_) => "0".to_owned(),
        };
        let mut extra = REPLICA_EXTRA.to_vec();
        extra.extend(["--log-replicas", &replicas]);
        let args = replica_args(&url, &self.scenarios, self.secrets, &extra);
        let log = self
            .dir
            .join(format!("replica-{}-{runs}.log", engine.name()));
        let mut replica = Replica::start(self.exe, &args, &log)?;
        let label = format!("t{}{runs}", engine.name().len());
        let bodies: Vec<(String, Vec<u8>)> = (0..runs)
            .map(|i| self.corpus_run(&label, i, events))
            .collect::<Result<_, _>>()?;
        let cpu0: Vec<f64> = servers
            .iter()
            .map(|p| cpu_secs(*p))
            .collect::<Result<_, _>>()?;
        let measured = self.load(&replica, &bodies);
        let cpu1: Vec<f64> = servers
            .iter()
            .map(|p| cpu_secs(*p))
            .collect::<Result<_, _>>()?;
        replica
            .stop()
            .map_err(|e| format!("stopping the replica on {}: {e}", engine.name()))?;
        Ok(Sharded {
            engine,
            runs,
            events,
            measured: measured?,
            node_cpu: cpu1.iter().zip(&cpu0).map(|(b, a)| b - a).collect(),
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
        let auth = self.auth();

        // Open every run: run.started and text.started, then wait.
        let mut pushes = Vec::with_capacity(c);
        for id in &ids {
            pushes.push(open_push(&replica.addr, &auth, id)?);
            thread::sleep(OPEN_PACE);
        }
        // A read token covers the run's nonce: asked once the runs exist.
        let tokens = self.tokens(&ids)?;
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
            sent[i].push(Instant::now());
            pushes[i].write(&ids[i], &line)?;
            if j + 1 < deltas {
                heap.push(Reverse((at + interval, i)));
            } else {
                pushes[i].finish(&ids[i], 2 + deltas as u64)?;
            }
        }
        let load_secs = started.elapsed().as_secs_f64();
        let mut oks = Vec::with_capacity(c);
        for (push, id) in pushes.into_iter().zip(&ids) {
            oks.push(ended(&push.answer()?, id)?);
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

    // ----------------------------------------------------------- fan-out

    /// The fan-out measurement on a Redis-log replica and a memory-log
    /// one, for each subscriber count.
    fn fanout_all(&self, subscribers: &[usize]) -> Result<Vec<Fanout>, String> {
        let mut rows = Vec::new();
        for log in ["redis", "memory"] {
            let url = if log == "redis" {
                self.redis.server.url()
            } else {
                "memory".to_owned()
            };
            let args = replica_args(&url, &self.scenarios, self.secrets, &REPLICA_EXTRA);
            let log_file = self.dir.join(format!("replica-fanout-{log}.log"));
            let mut replica = Replica::start(self.exe, &args, &log_file)?;
            for &k in subscribers {
                eprintln!("bench-gateway: fan-out, {log} log, {k} subscribers");
                let row = self.fanout(&replica, log, k);
                if row.is_err() {
                    let _ = replica.stop();
                }
                rows.push(row?);
            }
            replica
                .stop()
                .map_err(|e| format!("stopping the fan-out replica: {e}"))?;
        }
        Ok(rows)
    }

    /// One run of [`FANOUT_EVENTS`] deltas read by `k` subscribers: live
    /// (the subscribers open the run's stream after its first events, then
    /// every delta is pushed as fast as the replica takes it), then again
    /// once it ended (a replay by `k` new subscribers). The replica's CPU
    /// time is taken from the first delta (or the replay's first request)
    /// to the last subscriber's end of stream.
    fn fanout(&self, replica: &Replica, log: &'static str, k: usize) -> Result<Fanout, String> {
        let id = format!("fanout-{}-{log}-{k}", self.tag);
        let addr = replica.addr.as_str();
        let started =
            r#"{"harness_id":"bench","adapter_version":"1.0.0","provider_run_id":"bench"}"#;
        let mut first = event_line(&id, 0, "run.started", started);
        first.extend(event_line(
            &id,
            1,
            "text.started",
            r#"{"message_id":"msg-1","role":"assistant"}"#,
        ));
        let (mut push, token) = RawPush::open(addr, &self.auth(), &first)?;
        let (token, ready) = (token.as_str(), AtomicUsize::new(0));
        let (live, sse, ended) = thread::scope(|s| -> Result<(Phase, u64, bool), String> {
            let readers: Vec<_> = (0..k)
                .map(|_| s.spawn(|| read_counted(addr, &id, token, &ready)))
                .collect();
            let waited = Instant::now();
            while ready.load(Ordering::SeqCst) < k {
                if waited.elapsed() > Duration::from_secs(120) {
                    return Err(format!(
                        "only {} of {k} subscribers opened",
                        ready.load(Ordering::SeqCst)
                    ));
                }
                thread::sleep(Duration::from_millis(5));
            }
            let (lce0, start) = (cpu_secs(replica.pid())?, Instant::now());
            let mut body = Vec::new();
            for j in 0..FANOUT_EVENTS {
                let data = format!(
                    r#"{{"message_id":"msg-1","delta":"[ev{j:06}] {}"}}"#,
                    "lorem ipsum ".repeat(20)
                );
                body.extend(event_line(&id, 2 + j as u64, "text.delta", &data));
            }
            let end = 2 + FANOUT_EVENTS as u64;
            body.extend(event_line(
                &id,
                end,
                "text.finished",
                r#"{"message_id":"msg-1"}"#,
            ));
            body.extend(event_line(&id, end + 1, "run.finished", r#"{"outcome":"success","stop_reason":"end_turn","thread_state":{"durability":"committed","durable_revision":1,"head_ref":"head-1"}}"#));
            push.write(&body)?;
            let ended = push.finish()?;
            let (sse, failed) = join_readers(readers)?;
            let phase = Phase {
                secs: start.elapsed().as_secs_f64(),
                lce_cpu: cpu_secs(replica.pid())? - lce0,
                failed,
            };
            Ok((phase, sse, ended))
        })?;
        let ready = AtomicUsize::new(0);
        let (lce0, start) = (cpu_secs(replica.pid())?, Instant::now());
        let replay = thread::scope(|s| -> Result<Phase, String> {
            let readers: Vec<_> = (0..k)
                .map(|_| s.spawn(|| read_counted(addr, &id, token, &ready)))
                .collect();
            let (_, failed) = join_readers(readers)?;
            Ok(Phase {
                secs: start.elapsed().as_secs_f64(),
                lce_cpu: cpu_secs(replica.pid())? - lce0,
                failed,
            })
        })?;
        Ok(Fanout {
            log,
            subscribers: k,
            entries: FANOUT_EVENTS as u64 + 4,
            sse_per_subscriber: sse / k.max(1) as u64,
            live,
            replay,
            ended,
        })
    }

    // ------------------------------------------------- idle subscribers

    fn idle(&self, n: usize, conn: &mut redis::Connection) -> Result<Idle, String> {
        let mut replica = self.replica()?;
        let auth = self.auth();
        // Warm-up: one run pushed and read, so the baseline includes what
        // the server allocates once.
        let warm = format!("idle-{}-warm", self.tag);
        let mut push = open_push(&replica.addr, &auth, &warm)?;
        push.finish(&warm, 2)?;
        if !ended(&push.answer()?, &warm)? {
            return Err("the warm-up run did not end".to_owned());
        }
        let warm_token = self.tokens(std::slice::from_ref(&warm))?;
        read_stream(&replica.addr, &warm, &warm_token[0])?;
        thread::sleep(Duration::from_millis(500));
        let rss0 = rss_kib(replica.pid())?;
        let clients0 = info_number(conn, "clients", "connected_clients")?;

        let ids: Vec<String> = (0..n).map(|i| format!("idle-{}-{i}", self.tag)).collect();
        let mut pushes = Vec::with_capacity(n);
        for id in &ids {
            pushes.push(open_push(&replica.addr, &auth, id)?);
            thread::sleep(OPEN_PACE);
        }
        // A read token covers the run's nonce: asked once the runs exist.
        let tokens = self.tokens(&ids)?;
        thread::sleep(Duration::from_secs(1));
        let rss1 = rss_kib(replica.pid())?;
        let mut subscribers = Vec::with_capacity(n);
        for (id, token) in ids.iter().zip(&tokens) {
            subscribers.push(open_stream(&replica.addr, id, token)?);
            thread::sleep(OPEN_PACE);
        }
        thread::sleep(Duration::from_secs(1));
        let rss2 = rss_kib(replica.pid())?;
        let clients2 = info_number(conn, "clients", "connected_clients")?;

        // End every run properly, and read every stream to its end.
        for (push, id) in pushes.iter_mut().zip(&ids) {
            push.finish(id, 2)?;
        }
        let mut oks = Vec::with_capacity(n);
        for (push, id) in pushes.into_iter().zip(&ids) {
            oks.push(ended(&push.answer()?, id)?);
        }
        let mut broken = 0;
        for (s, id) in subscribers.into_iter().zip(&ids) {
            // An error: the stream ended without its last chunk.
            if let Err(e) = read_whole(s) {
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

/// Whether the push answer says the run ended with its own
/// `run.finished` (`outcome: ended`). A run the gateway could not log
/// (`log_failed`, ...) is `false`, counted and reported; an answer that is
/// not a 200 summary is an error.
fn ended(resp: &HttpResponse, run_id: &str) -> Result<bool, String> {
    let body = String::from_utf8_lossy(&resp.body);
    if resp.status != 200 {
        return Err(format!("push {run_id}: status {}: {body}", resp.status));
    }
    let j: serde_json::Value =
        serde_json::from_str(&body).map_err(|e| format!("push {run_id}: {e}: {body}"))?;
    let outcome = j["outcome"].as_str();
    let terminal = j["terminal"].as_str();
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
                        failed += usize::from(!ended(&push(addr, auth, body)?, run_id)?);
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
    let stream = open_stream(addr, run_id, token)?;
    let whole = read_whole(stream).map_err(|e| format!("GET {run_id}: {e}"))?;
    Ok(whole.body.len())
}

/// A GET stream whose head was read.
type OpenStream = ureq::http::Response<ureq::Body>;

/// Opens `GET /api/v1/runs/{id}/stream` and reads its head (retrying while
/// the run does not exist yet).
fn open_stream(addr: &str, run_id: &str, token: &str) -> Result<OpenStream, String> {
    let url = format!("http://{addr}/api/v1/runs/{run_id}/stream?protocol=custom");
    let start = Instant::now();
    loop {
        let answer = agent()
            .get(&url)
            .header("X-Run-Token", token)
            .call()
            .map_err(|e| format!("GET {run_id}: {e}"))?;
        match answer.status().as_u16() {
            200 => return Ok(answer),
            404 if start.elapsed() < Duration::from_secs(30) => {
                thread::sleep(Duration::from_millis(1));
            }
            s => return Err(format!("GET {run_id}: status {s}")),
        }
    }
}

/// A push on a connection of its own, written by hand (HTTP/1.1, chunked),
/// so that the answer's head, with the run's `X-Run-Token`, is read while
/// the body is still being sent.
struct RawPush {
    stream: std::net::TcpStream,
}

impl RawPush {
    /// Sends the request's head and `first` (the run's first lines), and
    /// reads the answer's head: the push and the run's read token.
    fn open(addr: &str, auth: &str, first: &[u8]) -> Result<(RawPush, String), String> {
        let mut stream =
            std::net::TcpStream::connect(addr).map_err(|e| format!("push: connect: {e}"))?;
        let _ = stream.set_read_timeout(Some(Duration::from_secs(120)));
        let head = format!(
            "POST /api/v1/runs HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        );
        stream
            .write_all(head.as_bytes())
            .map_err(|e| format!("push: send: {e}"))?;
        let mut push = RawPush { stream };
        push.write(first)?;
        let mut answer = Vec::new();
        let mut byte = [0u8; 1];
        while !answer.ends_with(b"\r\n\r\n") {
            let n = std::io::Read::read(&mut push.stream, &mut byte)
                .map_err(|e| format!("push: the answer's head: {e}"))?;
            if n == 0 {
                return Err("push: the connection closed before the answer's head".into());
            }
            answer.push(byte[0]);
        }
        let answer = String::from_utf8_lossy(&answer);
        let token = answer
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("x-run-token")
                    .then(|| value.trim().to_owned())
            })
            .ok_or_else(|| {
                format!(
                    "push: no X-Run-Token in {}",
                    answer.lines().next().unwrap_or("")
                )
            })?;
        Ok((push, token))
    }

    /// Sends `data` as one chunk of the body.
    fn write(&mut self, data: &[u8]) -> Result<(), String> {
        let mut chunk = format!("{:x}\r\n", data.len()).into_bytes();
        chunk.extend_from_slice(data);
        chunk.extend_from_slice(b"\r\n");
        self.stream
            .write_all(&chunk)
            .map_err(|e| format!("push: send: {e}"))
    }

    /// Ends the body and reads the rest of the answer: whether the run
    /// ended with its own `run.finished` (`outcome: ended`).
    fn finish(mut self) -> Result<bool, String> {
        self.stream
            .write_all(b"0\r\n\r\n")
            .map_err(|e| format!("push: send: {e}"))?;
        let mut rest = Vec::new();
        std::io::Read::read_to_end(&mut self.stream, &mut rest)
            .map_err(|e| format!("push: the answer: {e}"))?;
        let rest = String::from_utf8_lossy(&rest);
        let ok =
            rest.contains(r#""outcome":"ended""#) && rest.contains(r#""terminal":"run.finished""#);
        if !ok {
            eprintln!("bench-gateway: push: {rest}");
        }
        Ok(ok)
    }
}

/// A fan-out subscriber: opens the run's stream, counts itself ready, and
/// reads it to its end; returns the body's length.
fn read_counted(
    addr: &str,
    run_id: &str,
    token: &str,
    ready: &AtomicUsize,
) -> Result<usize, String> {
    let open = open_stream(addr, run_id, token);
    // Counted even when it failed, so the writer does not wait forever.
    ready.fetch_add(1, Ordering::SeqCst);
    let whole = read_whole(open?).map_err(|e| format!("GET {run_id}: {e}"))?;
    Ok(whole.body.len())
}

/// Joins the fan-out subscribers: the bytes they read, and how many
/// failed (reported, not fatal).
fn join_readers(
    readers: Vec<thread::ScopedJoinHandle<'_, Result<usize, String>>>,
) -> Result<(u64, usize), String> {
    let (mut bytes, mut failed) = (0u64, 0usize);
    for r in readers {
        match r.join().map_err(|_| "a subscriber panicked")? {
            Ok(n) => bytes += n as u64,
            Err(e) => {
                eprintln!("bench-gateway: {e}");
                failed += 1;
            }
        }
    }
    Ok((bytes, failed))
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
    let mut stream = BufReader::new(open.body_mut().as_reader());
    let mut arrived = vec![None; deltas];
    let mut line = Vec::new();
    loop {
        line.clear();
        match stream.read_until(b'\n', &mut line) {
            Ok(0) => return Ok((arrived, true)),
            Ok(_) => {}
            // The stream ended without its last chunk.
            Err(e) => {
                eprintln!("bench-gateway: {run_id}: the stream ended early: {e}");
                return Ok((arrived, false));
            }
        }
        let now = Instant::now();
        for marker in String::from_utf8_lossy(&line).split("[ev").skip(1) {
            let j = marker
                .get(..7)
                .and_then(|m| m.strip_suffix(']')?.parse().ok());
            if let Some(slot) = j.and_then(|j: usize| arrived.get_mut(j)) {
                slot.get_or_insert(now);
            }
        }
    }
}

/// A push whose body is still being written: the writing end of the body's
/// pipe, and the thread that sends the body as it comes (chunked, one chunk
/// per write) and returns the answer.
struct OpenPush {
    body: Option<PipeWriter>,
    answer: thread::JoinHandle<Result<HttpResponse, String>>,
}

impl OpenPush {
    /// Writes `data` into the body.
    fn write(&mut self, run_id: &str, data: &[u8]) -> Result<(), String> {
        let body = self.body.as_mut().ok_or("the body has ended")?;
        body.write_all(data)
            .map_err(|e| format!("{run_id}: send: {e}"))
    }

    /// Sends `text.finished` at `sequence`, `run.finished` and the end of
    /// the body.
    fn finish(&mut self, run_id: &str, sequence: u64) -> Result<(), String> {
        let mut out = event_line(
            run_id,
            sequence,
            "text.finished",
            r#"{"message_id":"msg-1"}"#,
        );
        out.extend(event_line(
            run_id,
            sequence + 1,
            "run.finished",
            r#"{"outcome":"success","stop_reason":"end_turn","thread_state":{"durability":"committed","durable_revision":1,"head_ref":"head-1"}}"#,
        ));
        self.write(run_id, &out)?;
        self.body = None;
        Ok(())
    }

    /// The push's answer (once the body has ended).
    fn answer(self) -> Result<HttpResponse, String> {
        drop(self.body);
        self.answer.join().map_err(|_| "a push thread panicked")?
    }
}

/// Opens a chunked `POST /api/v1/runs` and sends `run.started` and
/// `text.started`; the run then waits for more.
fn open_push(addr: &str, auth: &str, run_id: &str) -> Result<OpenPush, String> {
    let (reader, body) = std::io::pipe().map_err(|e| format!("{run_id}: pipe: {e}"))?;
    let (url, auth) = (format!("http://{addr}/api/v1/runs"), auth.to_owned());
    let answer = thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let answer = agent()
                .post(&url)
                .header("Authorization", &auth)
                .header("Content-Type", "application/x-ndjson")
                .send(ureq::SendBody::from_owned_reader(reader))
                .map_err(|e| format!("POST {url}: {e}"))?;
            read_whole(answer)
        })
        .map_err(|e| format!("cannot start a push thread: {e}"))?;
    let mut push = OpenPush {
        body: Some(body),
        answer,
    };
    push.write(
        run_id,
        &event_line(
            run_id,
            0,
            "run.started",
            r#"{"harness_id":"bench","adapter_version":"1.0.0","provider_run_id":"bench"}"#,
        ),
    )?;
    push.write(
        run_id,
        &event_line(
            run_id,
            1,
            "text.started",
            r#"{"message_id":"msg-1","role":"assistant"}"#,
        ),
    )?;
    Ok(push)
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

// ------------------------------------------------------------ Redis pieces

/// `INFO section`.
fn info(conn: &mut redis::Connection, section: &str) -> Result<redis::InfoDict, String> {
    query(conn, &["INFO", section])
}

/// One number of `INFO section`.
fn info_number(conn: &mut redis::Connection, section: &str, key: &str) -> Result<u64, String> {
    let info = info(conn, section)?;
    info.get(key).ok_or_else(|| format!("redis: no {key}"))
}

/// `cmdstat_<name>` of `INFO commandstats`: (name, calls, µs per call).
fn command_stat(stats: &redis::InfoDict, name: &str) -> Option<(String, u64, f64)> {
    let v: String = stats.get(&format!("cmdstat_{name}"))?;
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

/// One fan-out measurement: a run read by `subscribers` at once.
struct Fanout {
    log: &'static str,
    subscribers: usize,
    /// Log entries: the deltas, `run.started`, `text.started`,
    /// `text.finished` and `run.finished`.
    entries: u64,
    sse_per_subscriber: u64,
    live: Phase,
    replay: Phase,
    /// The run ended with its own terminal.
    ended: bool,
}

/// Wall and replica CPU time of one fan-out phase.
struct Phase {
    secs: f64,
    lce_cpu: f64,
    failed: usize,
}

fn fanout_table(rows: &[Fanout]) -> String {
    let mut s = format!(
        "## Fan-out: one run of {FANOUT_EVENTS} deltas read by many subscribers\n\n| log | subscribers | SSE KiB each | live: seconds | lce CPU s | µs per entry | µs per entry and subscriber | replay: seconds | lce CPU s | µs per entry and subscriber |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    );
    for r in rows {
        let per = |p: &Phase| p.lce_cpu * 1e6 / r.entries as f64;
        let flag = |p: &Phase| {
            if p.failed > 0 {
                format!(" ({} failed)", p.failed)
            } else {
                String::new()
            }
        };
        let _ = writeln!(
            s,
            "| {} | {}{} | {:.0} | {:.2}{} | {:.2} | {:.1} | {:.2} | {:.2}{} | {:.2} | {:.2} |",
            r.log,
            r.subscribers,
            if r.ended { "" } else { " (run not ended)" },
            r.sse_per_subscriber as f64 / 1024.0,
            r.live.secs,
            flag(&r.live),
            r.live.lce_cpu,
            per(&r.live),
            per(&r.live) / r.subscribers as f64,
            r.replay.secs,
            flag(&r.replay),
            r.replay.lce_cpu,
            per(&r.replay) / r.subscribers as f64,
        );
    }
    s.push('\n');
    s
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// An engine of the topologies' measurement.
#[derive(Clone, Copy)]
enum Topology {
    /// A Redis Cluster of this many primaries, no replicas.
    Shards(usize),
    /// A primary, its replica and Sentinel, with this `--log-replicas`.
    Pair(u32),
}

impl Topology {
    fn name(self) -> String {
        match self {
            Topology::Shards(n) => format!("Cluster, {n} shard{}", if n == 1 { "" } else { "s" }),
            Topology::Pair(n) => format!("Sentinel pair, --log-replicas {n}"),
        }
    }
}

/// One row of the topologies' measurement.
struct Sharded {
    engine: Topology,
    runs: usize,
    events: u64,
    measured: Measured,
    /// Each node's CPU seconds over the load (shards; or primary, replica).
    node_cpu: Vec<f64>,
}

fn topology_table(rows: &[Sharded]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "\n## Topologies: one replica of lce, runs pushed and read at once\n"
    );
    let _ = writeln!(
        t,
        "| engine | runs × events | entries/s | lce CPU µs/entry | Redis CPU µs/entry (all nodes) | CPU s per node | failed |\n|---|---|---|---|---|---|---|"
    );
    for r in rows {
        let m = &r.measured;
        let entries = m.entries.max(1) as f64;
        let total: f64 = r.node_cpu.iter().sum();
        let per_node: Vec<String> = r.node_cpu.iter().map(|c| format!("{c:.2}")).collect();
        let _ = writeln!(
            t,
            "| {} | {} × {} | {} | {:.2} | {:.2} | {} | {} |",
            r.engine.name(),
            r.runs,
            r.events,
            thousands(m.rate()),
            m.lce_cpu.unwrap_or(0.0) * 1e6 / entries,
            total * 1e6 / entries,
            per_node.join(" / "),
            m.failed
        );
    }
    t
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
