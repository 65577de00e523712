//! `cargo xtask cluster`: a local gateway cluster in one command: one
//! `redis-server` and three `lce serve --log redis://...` replicas on
//! loopback, with the copy-pasteable `curl` commands that push a run to one
//! replica and read it back from another (`docs/gateway.md`).
//!
//! - Builds `lce` (`cargo build -p lce-cli --bin lce`, release, or
//!   debug with `--debug`; `--no-build` takes the one already built).
//! - Starts `redis-server` (`lce-testkit`'s) on a free loopback port in a
//!   temporary folder (`appendonly yes`, `appendfsync always`, no RDB
//!   snapshots: the setting under which the gateway's guarantees are
//!   tested), or with `--topology sentinel` a primary, its replica and a
//!   Sentinel, or with `--topology cluster` a Redis Cluster of three
//!   primaries with a replica each (`lce-testkit`'s `redis_topology`; the
//!   replicas of lce then run with `--log-replicas 1`); writes a token
//!   secret and an ingest token into a folder of the cluster, and starts
//!   the replicas on free ports with them.
//! - Prints the addresses and the commands, then runs until Ctrl-C (or,
//!   with `--seconds N`, N seconds), and stops everything: SIGTERM to the
//!   replicas (each releases the runs it owns), then `SHUTDOWN` to Redis,
//!   and removes the folders.
//! - With `--seconds N` it is also a smoke test (CI runs it): it does what
//!   the printed commands do, in Rust (`ureq`, no `curl`):
//!   pushes the scenario to replica 1, reads it back from replica 2 and
//!   checks the bytes equal `fixtures/golden/custom/<scenario>.sse` once the
//!   `id:` lines are removed, then resumes on replica 3 after the first
//!   frame and checks it gets exactly the rest. The check does not count
//!   against N: the cluster stops N seconds after it was up, or when the
//!   check is done if that is later.
//!
//! Ctrl-C: a terminal's Ctrl-C reaches every process of the foreground
//! group, and xtask (`unsafe` forbidden, no signal crate) cannot catch it.
//! So the command re-runs itself as a *supervisor* in a process group of its own
//! (the redis-server and the replicas are its children, out of Ctrl-C's
//! reach too) and holds the write end of a pipe on the supervisor's stdin.
//! Ctrl-C ends the front process; the pipe closes; the supervisor sees the
//! end of its stdin and stops the cluster in order.
//!
//! The process handling here ([`Redis`], on `lce-testkit`'s `RedisServer`,
//! [`Replica`], [`push`], [`get`]) is shared with `cargo xtask bench-gateway`.

use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use lce_testkit::redis_server::RedisServer;
use lce_testkit::redis_topology::{RedisCluster, SentinelPair};

use crate::util::{create_dir, lce, read, workspace_root, write};

/// The scenario the printed commands and the smoke test push.
const SCENARIO: &str = "tool-approval-interrupt";

/// How long a replica may take to stop after SIGTERM before it is killed:
/// its `--shutdown-grace` (below) plus the 5 s it may take after it.
const REPLICA_STOP: Duration = Duration::from_secs(15);

/// The replicas' `--shutdown-grace`: a local cluster need not wait 20 s for
/// a `curl` left reading.
const SHUTDOWN_GRACE: &str = "5";

/// What the command line asked for.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Build and run the debug `lce` (the one `cargo test` built).
    #[arg(long)]
    debug: bool,
    /// Take the `lce` already built.
    #[arg(long)]
    no_build: bool,
    /// How many replicas (2 to 16).
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u8).range(2..=16))]
    replicas: u8,
    /// Stop after N s, and check a pushed run reads back as its golden file.
    #[arg(long, value_name = "N")]
    seconds: Option<u64>,
    /// The engine: one `redis-server`, a primary and a replica watched by
    /// Sentinel (`redis+sentinel://`), or a Cluster of three primaries
    /// with a replica each (`redis+cluster://`); with the last two the
    /// replicas run with `--log-replicas 1`.
    #[arg(long, value_enum, default_value_t = Topology::Single)]
    topology: Topology,
    /// Internal: this process is the supervisor (see the module docs).
    #[arg(long, hide = true)]
    supervise: bool,
}

/// The engine `cargo xtask cluster` starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Topology {
    /// One `redis-server`.
    Single,
    /// A primary, its replica and a Sentinel.
    Sentinel,
    /// Three primaries with a replica each.
    Cluster,
}

/// The engine's processes.
enum Engine {
    Single(Redis),
    Sentinel(SentinelPair),
    Cluster(RedisCluster),
}

impl Engine {
    fn start(topology: Topology) -> Result<Engine, String> {
        let missing = "redis-server is not installed";
        Ok(match topology {
            Topology::Single => Engine::Single(Redis::start()?),
            Topology::Sentinel => Engine::Sentinel(SentinelPair::start().ok_or(missing)?),
            Topology::Cluster => Engine::Cluster(RedisCluster::start().ok_or(missing)?),
        })
    }

    /// The `--log` url of the replicas.
    fn url(&self) -> String {
        match self {
            Engine::Single(redis) => redis.server.url(),
            Engine::Sentinel(pair) => pair.url(),
            Engine::Cluster(cluster) => cluster.url(),
        }
    }

    /// What it is, for the printed plan.
    fn describe(&self) -> String {
        let port = |s: &RedisServer| format!("127.0.0.1:{}", s.port());
        match self {
            Engine::Single(redis) => format!(
                "redis-server {} (appendonly yes, appendfsync always, data in {})",
                port(&redis.server),
                redis.server.dir().display()
            ),
            Engine::Sentinel(pair) => format!(
                "primary {}, replica {}, Sentinel {} (master name lce)",
                port(&pair.primary),
                port(&pair.replica),
                port(&pair.sentinel)
            ),
            Engine::Cluster(cluster) => format!(
                "Redis Cluster of {} nodes (3 primaries, a replica each): {}",
                cluster.nodes.len(),
                cluster.nodes.iter().map(port).collect::<Vec<_>>().join(" ")
            ),
        }
    }

    /// The folders whose logs a failure shows.
    fn dirs(&self) -> Vec<PathBuf> {
        match self {
            Engine::Single(redis) => vec![redis.server.dir().to_owned()],
            Engine::Sentinel(pair) => [&pair.primary, &pair.replica, &pair.sentinel]
                .iter()
                .map(|s| s.dir().to_owned())
                .collect(),
            Engine::Cluster(cluster) => cluster.nodes.iter().map(|n| n.dir().to_owned()).collect(),
        }
    }

    /// Whether it still serves (the topologies: whether their nodes run).
    fn answers(&mut self) -> bool {
        match self {
            Engine::Single(redis) => redis.answers(),
            Engine::Sentinel(pair) => pair.primary.running() && pair.sentinel.running(),
            Engine::Cluster(cluster) => cluster.nodes.iter_mut().all(RedisServer::running),
        }
    }

    /// Stops it (a single server flushes its file; the topologies' nodes
    /// are killed and their folders removed when dropped).
    fn stop(&mut self) -> Result<(), String> {
        match self {
            Engine::Single(redis) => redis.stop(),
            _ => Ok(()),
        }
    }
}

/// Runs the task with the arguments after `cluster`.
pub(crate) fn run(args: Args) -> Result<(), String> {
    let root = workspace_root();
    let exe = lce(&root, !args.debug, !args.no_build)?;
    if args.supervise {
        return supervise(&args, &root, &exe);
    }
    front()
}

/// The front process: starts the supervisor in a process group of its own
/// and waits for it, holding its stdin open (see the module docs).
#[cfg(unix)]
fn front() -> Result<(), String> {
    use std::os::unix::process::CommandExt as _;
    let me = std::env::current_exe().map_err(|e| format!("cannot find xtask itself: {e}"))?;
    // This command line after `cluster`, as it was given.
    let args: Vec<OsString> = std::env::args_os().skip(2).collect();
    let mut child = Command::new(me)
        .arg("cluster")
        .arg("--supervise")
        .args(args.iter().filter(|a| *a != "--no-build"))
        .arg("--no-build")
        .process_group(0)
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the cluster's supervisor: {e}"))?;
    // Held until this process ends: its end (Ctrl-C) is the stop signal.
    let _stdin = child.stdin.take();
    let status = child
        .wait()
        .map_err(|e| format!("waiting for the supervisor: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the cluster failed ({status})"))
    }
}

#[cfg(not(unix))]
fn front() -> Result<(), String> {
    Err("cargo xtask cluster needs a Unix (process groups, /proc, SIGTERM)".to_owned())
}

/// The supervisor: starts the cluster, prints how to use it, waits, stops
/// it and removes its folder.
fn supervise(options: &Args, root: &Path, exe: &Path) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("lce-cluster-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    create_dir(&dir)?;
    let result = supervise_in(options, root, exe, &dir);
    let _ = fs::remove_dir_all(&dir);
    match &result {
        Ok(()) => println!("cluster stopped; {} removed", dir.display()),
        Err(_) => eprintln!("cluster stopped; {} removed", dir.display()),
    }
    result
}

fn supervise_in(options: &Args, root: &Path, exe: &Path, dir: &Path) -> Result<(), String> {
    // The stop signal: the end of stdin (the front process is gone).
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    thread::spawn(move || {
        let mut sink = [0u8; 64];
        let mut stdin = std::io::stdin();
        while let Ok(n) = stdin.read(&mut sink) {
            if n == 0 {
                break;
            }
        }
        let _ = stop_tx.send(());
    });
    let secrets = Secrets::write(dir)?;
    let mut cluster = Cluster {
        engine: None,
        replicas: Vec::new(),
    };
    let result = run_cluster(options, root, exe, dir, &secrets, &mut cluster, &stop_rx);
    if result.is_err() {
        // Whatever still runs is stopped (killed), the logs shown; the
        // server is killed, its folder removed, when dropped.
        cluster.replicas.iter_mut().for_each(Replica::kill);
        print_log_tails(dir);
        if let Some(engine) = cluster.engine.take() {
            engine.dirs().iter().for_each(|d| print_log_tails(d));
        }
    }
    result
}

/// Starts the cluster into `cluster`, prints the commands, (smoke-)tests
/// it, waits, and stops it.
fn run_cluster(
    options: &Args,
    root: &Path,
    exe: &Path,
    dir: &Path,
    secrets: &Secrets,
    cluster: &mut Cluster,
    stop_rx: &mpsc::Receiver<()>,
) -> Result<(), String> {
    let engine = Engine::start(options.topology)?;
    let url = engine.url();
    cluster.engine = Some(engine);
    let scenarios = root.join("fixtures/scenarios");
    let extra: &[&str] = match options.topology {
        Topology::Single => &[],
        _ => &["--log-replicas", "1"],
    };
    for i in 1..=usize::from(options.replicas) {
        let args = replica_args(&url, &scenarios, secrets, extra);
        let replica = Replica::start(exe, &args, &dir.join(format!("replica-{i}.log")))?;
        cluster.replicas.push(replica);
    }
    let up = Instant::now();
    let plan = Plan::new(root, exe, dir)?;
    plan.print(cluster);
    let checked = match options.seconds {
        None => Ok(()),
        Some(_) => match plan.smoke(cluster, secrets) {
            Ok(summary) => {
                println!("\nsmoke: {summary}");
                Ok(())
            }
            Err(e) => Err(format!("smoke: {e}")),
        },
    };
    let died = if checked.is_ok() {
        let deadline = options.seconds.map(|s| up + Duration::from_secs(s));
        match deadline {
            Some(d) => println!(
                "\nstopping in {:.0} s (--seconds); Ctrl-C stops it now",
                d.saturating_duration_since(Instant::now()).as_secs_f64()
            ),
            None => println!("\nCtrl-C stops the cluster"),
        }
        wait(cluster, stop_rx, deadline)
    } else {
        None
    };
    println!("stopping: SIGTERM to the replicas, then the engine");
    let stopped = cluster.stop();
    checked?;
    if let Some(what) = died {
        return Err(what);
    }
    stopped
}

/// Waits for the stop signal (the front process ended: Ctrl-C), the
/// deadline (`--seconds`) or a process of the cluster that exits by itself,
/// which it names.
fn wait(
    cluster: &mut Cluster,
    stop: &mpsc::Receiver<()>,
    deadline: Option<Instant>,
) -> Option<String> {
    loop {
        let step = Duration::from_millis(250);
        let step = deadline.map_or(step, |d| {
            step.min(d.saturating_duration_since(Instant::now()))
        });
        match stop.recv_timeout(step) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return None;
        }
        if let Some(what) = cluster.exited() {
            return Some(what);
        }
    }
}

/// The processes of a running cluster.
struct Cluster {
    engine: Option<Engine>,
    replicas: Vec<Replica>,
}

impl Cluster {
    /// Names the first process that exited by itself, if any.
    fn exited(&mut self) -> Option<String> {
        for (i, r) in self.replicas.iter_mut().enumerate() {
            if let Some(status) = r.exited() {
                return Some(format!("replica {} exited by itself ({status})", i + 1));
            }
        }
        let engine = self.engine.as_mut()?;
        (!engine.answers()).then(|| "the engine stopped answering".to_owned())
    }

    /// SIGTERM to every replica at once, wait for them; then Redis.
    fn stop(&mut self) -> Result<(), String> {
        let mut problems = Vec::new();
        for r in &self.replicas {
            r.terminate();
        }
        for (i, r) in self.replicas.iter_mut().enumerate() {
            match r.wait_for_exit(REPLICA_STOP) {
                Ok(status) if status.success() => {}
                Ok(status) => problems.push(format!("replica {} exited with {status}", i + 1)),
                Err(e) => problems.push(format!("replica {}: {e}", i + 1)),
            }
        }
        if let Some(engine) = &mut self.engine
            && let Err(e) = engine.stop()
        {
            problems.push(e);
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

/// Prints the end of every log in `dir` to stderr (after a failure).
pub(crate) fn print_log_tails(dir: &Path) {
    let logs = crate::util::files_with(dir, "log").unwrap_or_default();
    for log in logs {
        let text = fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(15);
        eprintln!("--- the end of {}:", log.display());
        for l in &lines[from..] {
            eprintln!("  {l}");
        }
    }
}

/// The secret files every replica shares.
pub(crate) struct Secrets {
    pub(crate) token_secret: PathBuf,
    pub(crate) ingest_token_file: PathBuf,
    /// The ingest token itself (what `Authorization: Bearer` carries).
    pub(crate) ingest_token: String,
}

impl Secrets {
    /// Writes a fresh random token secret and ingest token into `dir`
    /// (`token-secret`, `ingest-token`), readable by the owner only.
    pub(crate) fn write(dir: &Path) -> Result<Secrets, String> {
        let token_secret = dir.join("token-secret");
        let ingest_token_file = dir.join("ingest-token");
        let ingest_token = random_hex(16)?;
        write_private(&token_secret, &format!("{}\n", random_hex(32)?))?;
        write_private(&ingest_token_file, &format!("{ingest_token}\n"))?;
        Ok(Secrets {
            token_secret,
            ingest_token_file,
            ingest_token,
        })
    }

    /// The read token of `run_id` (`lce token`, as a platform would get it).
    pub(crate) fn token(&self, exe: &Path, run_id: &str, log: &str) -> Result<String, String> {
        let out = Command::new(exe)
            .args(["token", run_id, "--log", log, "--token-secret-file"])
            .arg(&self.token_secret)
            .output()
            .map_err(|e| format!("lce token: {e}"))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(format!("lce token {run_id} failed: {}", err.trim()));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }
}

fn write_private(path: &Path, text: &str) -> Result<(), String> {
    write(path, text)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(path, fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// `bytes` random bytes from the OS, as lowercase hex.
pub(crate) fn random_hex(bytes: usize) -> Result<String, String> {
    let mut buf = vec![0u8; bytes];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| format!("/dev/urandom: {e}"))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// The arguments of one `lce serve` replica on the Redis log at `url`.
pub(crate) fn replica_args(
    url: &str,
    scenarios: &Path,
    secrets: &Secrets,
    extra: &[&str],
) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["serve", "--addr", "127.0.0.1:0", "--speed", "0"]
        .iter()
        .chain(&["--log", url, "--shutdown-grace", SHUTDOWN_GRACE])
        .map(OsString::from)
        .collect();
    for (flag, path) in [
        ("--scenarios", scenarios),
        ("--token-secret-file", &secrets.token_secret),
        ("--ingest-token-file", &secrets.ingest_token_file),
    ] {
        args.extend([flag.into(), path.into()]);
    }
    args.extend(extra.iter().map(OsString::from));
    args
}

/// What the printed commands do, and the smoke test with them.
struct Plan {
    /// The scenario file and its golden `custom` encoding.
    scenario: PathBuf,
    golden: PathBuf,
    run_id: String,
    events: usize,
    exe: PathBuf,
    dir: PathBuf,
}

impl Plan {
    fn new(root: &Path, exe: &Path, dir: &Path) -> Result<Plan, String> {
        let scenario = root.join(format!("fixtures/scenarios/{SCENARIO}.jsonl"));
        let golden = root.join(format!("fixtures/golden/custom/{SCENARIO}.sse"));
        let text = read(&scenario)?;
        let first = text.lines().next().ok_or("the scenario is empty")?;
        let first: serde_json::Value =
            serde_json::from_str(first).map_err(|e| format!("the scenario's first line: {e}"))?;
        let run_id = first["run_id"]
            .as_str()
            .ok_or("the scenario's first line has no run_id")?
            .to_owned();
        Ok(Plan {
            scenario,
            golden,
            run_id,
            events: text.lines().count(),
            exe: exe.to_owned(),
            dir: dir.to_owned(),
        })
    }

    fn print(&self, cluster: &Cluster) {
        let Some(engine) = &cluster.engine else {
            return;
        };
        let r = |i: usize| cluster.replicas.get(i).map_or("?", |r| r.addr.as_str());
        let dir = self.dir.display();
        println!("\nlce cluster: {} replicas", cluster.replicas.len());
        println!(
            "  engine        {} (--log {})",
            engine.describe(),
            engine.url()
        );
        for (i, replica) in cluster.replicas.iter().enumerate() {
            println!(
                "  replica {}     http://{} (pid {}, log {dir}/replica-{}.log)",
                i + 1,
                replica.addr,
                replica.pid(),
                i + 1
            );
        }
        println!("  token secret  {dir}/token-secret; ingest token {dir}/ingest-token");
        println!(
            "\nPush a run to replica 1 (the answer comes once the run has its terminal; a run id can be pushed once, again is 409):\n"
        );
        println!(
            "  curl -sS -H \"Authorization: Bearer $(cat {dir}/ingest-token)\" -H 'Content-Type: application/x-ndjson' --data-binary @{} http://{}/api/v1/runs",
            self.scenario.display(),
            r(0)
        );
        println!(
            "\nRead it from replica 2 (every frame has an id: line; add -H 'Last-Event-ID: <an id>' to resume after that frame, on any replica):\n"
        );
        println!(
            "  curl -sN -H \"X-Run-Token: $({} token {} --log {} --token-secret-file {dir}/token-secret)\" 'http://{}/api/v1/runs/{}/stream?protocol=custom'",
            self.exe.display(),
            self.run_id,
            engine.url(),
            r(1),
            self.run_id
        );
        println!(
            "\nOr play a bundled scenario on replica 3 (a fresh run id; X-Run-Id and X-Run-Token come in the headers):\n"
        );
        println!(
            "  curl -sN -D - -H 'Content-Type: application/json' -d '{{\"message\":\"hi\",\"conversation_id\":\"c1\",\"agent_id\":\"plain-text-answer\",\"protocol\":\"custom\"}}' http://{}/api/v1/chat/stream/start",
            r(2)
        );
    }

    /// Does what the printed commands do, and checks the bytes.
    fn smoke(&self, cluster: &Cluster, secrets: &Secrets) -> Result<String, String> {
        let addr = |i: usize| {
            cluster
                .replicas
                .get(i)
                .map(|r| r.addr.clone())
                .ok_or("too few replicas")
        };
        let (r1, r2, r3) = (addr(0)?, addr(1)?, addr(2 % cluster.replicas.len())?);
        let body = read(&self.scenario)?;
        let pushed = push(
            &r1,
            &format!("Bearer {}", secrets.ingest_token),
            body.as_bytes(),
        )?;
        if pushed.status != 200 {
            return Err(format!(
                "push to replica 1: status {}: {}",
                pushed.status,
                String::from_utf8_lossy(&pushed.body)
            ));
        }
        let summary: serde_json::Value = serde_json::from_slice(&pushed.body)
            .map_err(|e| format!("push to replica 1: the answer: {e}"))?;
        let field = |k: &str| summary[k].as_str().unwrap_or("").to_owned();
        if field("run_id") != self.run_id
            || field("outcome") != "ended"
            || field("terminal").is_empty()
            || summary["events_in"].as_u64() != u64::try_from(self.events).ok()
        {
            return Err(format!(
                "push to replica 1: unexpected answer {}",
                String::from_utf8_lossy(&pushed.body)
            ));
        }

        // The token, exactly as the printed command gets it.
        let log = cluster
            .engine
            .as_ref()
            .map(Engine::url)
            .ok_or("no engine")?;
        let token = secrets.token(&self.exe, &self.run_id, &log)?;

        let path = format!("/api/v1/runs/{}/stream?protocol=custom", self.run_id);
        let read_back = get(&r2, &path, &[("X-Run-Token", &token)])?;
        if read_back.status != 200 {
            return Err(format!("read from replica 2: status {}", read_back.status));
        }
        let text = String::from_utf8(read_back.body).map_err(|_| "the stream is not UTF-8")?;
        let golden = read(&self.golden)?;
        let stripped: String = text
            .split_inclusive('\n')
            .filter(|l| !l.starts_with("id: "))
            .collect();
        if stripped != golden {
            return Err(format!(
                "read from replica 2: the bytes differ from {} without the id: lines\n--- got:\n{stripped}\n--- want:\n{golden}",
                self.golden.display()
            ));
        }
        let frames: Vec<&str> = text.split_inclusive("\n\n").collect();
        if frames.is_empty() || frames.iter().any(|f| !f.starts_with("id: ")) {
            return Err("read from replica 2: a frame without an id: line".to_owned());
        }
        // Resume on replica 3 after the first frame: exactly the rest.
        let first_id = frames[0]
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("id: "))
            .unwrap_or_default()
            .to_owned();
        let resumed = get(
            &r3,
            &path,
            &[("X-Run-Token", &token), ("Last-Event-ID", &first_id)],
        )?;
        let rest = &text[frames[0].len()..];
        if resumed.status != 200 || resumed.body != rest.as_bytes() {
            return Err(format!(
                "resume on replica 3 after {first_id}: status {}, {} bytes, want the {} bytes after that frame",
                resumed.status,
                resumed.body.len(),
                rest.len()
            ));
        }
        Ok(format!(
            "pushed {} ({} events, terminal {}) to replica 1; read back from replica 2: {} frames, equal to fixtures/golden/custom/{SCENARIO}.sse without the id: lines; resumed on replica 3 after {first_id}: the rest, byte for byte",
            self.run_id,
            self.events,
            field("terminal"),
            frames.len()
        ))
    }
}

// ------------------------------------------------------------ shared pieces

/// Sends SIGTERM to `pid` (with `kill`: xtask has no libc).
fn sigterm(pid: u32) {
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Waits at most `bound` for `child` to exit; kills it after that.
fn wait_or_kill(child: &mut Child, bound: Duration) -> Result<ExitStatus, String> {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if start.elapsed() < bound => thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("did not stop within {} s: killed", bound.as_secs()));
            }
            Err(e) => return Err(format!("wait: {e}")),
        }
    }
}

/// VmRSS of process `pid`, in KiB.
pub(crate) fn rss_kib(pid: u32) -> Result<u64, String> {
    crate::util::proc_status_kib(pid, "VmRSS")
}

/// CPU time (user + system) of process `pid` so far, in seconds.
pub(crate) fn cpu_secs(pid: u32) -> Result<f64, String> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("/proc/{pid}/stat: {e}"))?;
    // The fields after the command name, which is in parentheses.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or("bad /proc stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line (11 and 12 here).
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // The kernel's USER_HZ is 100 on every Linux architecture lce runs on.
    Ok((ticks(11) + ticks(12)) as f64 / 100.0)
}

/// The `redis-server` of a task: `lce-testkit`'s throwaway one (a free
/// loopback port, a folder of its own, `appendonly yes`, `appendfsync
/// always`, no RDB snapshots), without automatic AOF rewrites.
pub(crate) struct Redis {
    /// The server (its port, URL and folder).
    pub(crate) server: RedisServer,
    client: redis::Client,
}

impl Redis {
    /// Starts the server and waits until it answers.
    pub(crate) fn start() -> Result<Redis, String> {
        let server = RedisServer::start().ok_or("redis-server is not installed")?;
        let client = redis::Client::open(server.url()).map_err(|e| format!("redis: {e}"))?;
        let redis = Redis { server, client };
        let mut conn = redis.conn()?;
        query::<()>(
            &mut conn,
            &["CONFIG", "SET", "auto-aof-rewrite-percentage", "0"],
        )?;
        Ok(redis)
    }

    /// A new connection to the server.
    pub(crate) fn conn(&self) -> Result<redis::Connection, String> {
        self.client
            .get_connection_with_timeout(Duration::from_secs(5))
            .map_err(|e| format!("redis: connect: {e}"))
    }

    /// Whether the server answers `PING`.
    fn answers(&self) -> bool {
        self.conn()
            .and_then(|mut c| query::<String>(&mut c, &["PING"]))
            .is_ok()
    }

    /// `SHUTDOWN` (Redis flushes its append-only file and exits), then
    /// waits until it no longer answers.
    pub(crate) fn stop(&mut self) -> Result<(), String> {
        if let Ok(mut conn) = self.conn() {
            let _ = query::<()>(&mut conn, &["SHUTDOWN"]);
        }
        let start = Instant::now();
        while self.answers() {
            if start.elapsed() > Duration::from_secs(10) {
                return Err("redis-server did not stop within 10 s".to_owned());
            }
            thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

/// One Redis command; an error reply is an `Err` naming the command.
pub(crate) fn query<T: redis::FromRedisValue>(
    conn: &mut redis::Connection,
    args: &[&str],
) -> Result<T, String> {
    let mut cmd = redis::Cmd::new();
    for a in args {
        cmd.arg(*a);
    }
    cmd.query(conn)
        .map_err(|e| format!("redis: {}: {e}", args.join(" ")))
}

/// A running `lce serve`.
pub(crate) struct Replica {
    child: Child,
    /// `HOST:PORT` from its first stdout line.
    pub(crate) addr: String,
}

impl Replica {
    /// Starts `exe` with `args` (an `lce serve` command line, or another
    /// server that says where it listens as `lce serve` does), stderr to
    /// `log`; waits for its `listening on http://ADDR` line.
    pub(crate) fn start(exe: &Path, args: &[OsString], log: &Path) -> Result<Replica, String> {
        let log_file = fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut child = Command::new(exe)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let _ = reader.read_line(&mut line);
        let Some(addr) = line.trim().strip_prefix("listening on http://") else {
            let status = wait_or_kill(&mut child, Duration::from_secs(5));
            let stderr = fs::read_to_string(log).unwrap_or_default();
            return Err(format!(
                "{} did not start ({}): {}",
                exe.display(),
                status.map_or_else(|e| e, |s| s.to_string()),
                stderr.trim()
            ));
        };
        let addr = addr.to_owned();
        // Whatever else it prints goes nowhere (and never blocks it).
        thread::spawn(move || {
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
        });
        Ok(Replica { child, addr })
    }

    /// The replica's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Sends SIGTERM: a graceful stop.
    pub(crate) fn terminate(&self) {
        sigterm(self.child.id());
    }

    /// Waits at most `bound` for the replica to exit; kills it after that.
    pub(crate) fn wait_for_exit(&mut self, bound: Duration) -> Result<ExitStatus, String> {
        wait_or_kill(&mut self.child, bound)
    }

    /// SIGTERM, then waits (killed after [`REPLICA_STOP`]).
    pub(crate) fn stop(&mut self) -> Result<ExitStatus, String> {
        if let Some(status) = self.exited() {
            return Ok(status);
        }
        self.terminate();
        self.wait_for_exit(REPLICA_STOP)
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if self.exited().is_none() {
            self.kill();
        }
    }
}

/// A whole HTTP response.
#[derive(Debug)]
pub(crate) struct HttpResponse {
    /// The status code.
    pub(crate) status: u16,
    /// The body, de-chunked.
    pub(crate) body: Vec<u8>,
}

/// The HTTP client of the tasks: plain HTTP on loopback, every status an
/// answer (not an error), no connection kept once its answer is read (soak
/// counts the server's open connections), no read waiting over 60 s.
pub(crate) fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_idle_connections(0)
        .timeout_per_read(Some(Duration::from_secs(60)))
        .build()
        .into()
}

/// `POST /api/v1/runs` to `addr` (`HOST:PORT`) with a whole JSON Lines
/// body and `auth` (`Bearer <ingest token>`), read to its end.
pub(crate) fn push(addr: &str, auth: &str, body: &[u8]) -> Result<HttpResponse, String> {
    let url = format!("http://{addr}/api/v1/runs");
    let answer = agent()
        .post(&url)
        .header("Authorization", auth)
        .header("Content-Type", "application/x-ndjson")
        .send(body);
    answer
        .map_err(|e| e.to_string())
        .and_then(read_whole)
        .map_err(|e| format!("POST {url}: {e}"))
}

/// `GET path` from `addr` with `headers`, read to its end.
pub(crate) fn get(
    addr: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<HttpResponse, String> {
    let url = format!("http://{addr}{path}");
    let request = headers
        .iter()
        .fold(agent().get(&url), |r, (k, v)| r.header(*k, *v));
    let answer = request.call().map_err(|e| e.to_string());
    answer
        .and_then(read_whole)
        .map_err(|e| format!("GET {url}: {e}"))
}

/// An answer's status and whole body (an error if the body did not end).
pub(crate) fn read_whole(
    mut answer: ureq::http::Response<ureq::Body>,
) -> Result<HttpResponse, String> {
    let mut body = Vec::new();
    answer
        .body_mut()
        .as_reader()
        .read_to_end(&mut body)
        .map_err(|e| format!("reading the answer: {e}"))?;
    Ok(HttpResponse {
        status: answer.status().as_u16(),
        body,
    })
}
