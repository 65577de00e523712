//! `cargo xtask soak`: hostile load on `lce serve`, bounded in time and
//! clients, with std threads: whole reads over `ureq`, the hostile clients
//! (slow readers, disconnects, half requests, and those at the door of
//! [`door`]: invalid ids, large and stalled bodies, bursts of connections,
//! readers that never read, stalled and late pushes) over raw loopback TCP.
//! The scenarios, behaviours and checks (one audit record per run,
//! well-formed complete responses, the answers the door promises, no
//! invalid id in the server's log output, fds and RSS back near their
//! baseline, see [`RSS_SLACK_KIB`]) are `docs/reliability.md`, "Hostile
//! load", which also records the figures it prints: per behaviour, what was
//! held, dropped and refused.

/// The hostile clients at the door and their accounting.
mod door;

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::cluster::{Replica, agent, read_whole, rss_kib};
use crate::util::{Rng, create_dir, files_with, lce, read, stem, workspace_root};

/// What the command line asked for.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// How long the load runs.
    #[arg(long, value_name = "N", default_value_t = 30)]
    seconds: u64,
    /// Client threads (1 to 2000).
    #[arg(long, value_name = "C", default_value = "200", value_parser = |v: &str| v.parse::<u64>().map(|n| n.clamp(1, 2000)))]
    clients: u64,
    /// `lce serve --speed`.
    #[arg(long, value_name = "F", default_value = "20")]
    speed: String,
    /// Build and run the debug `lce` (the one `cargo test` built).
    #[arg(long)]
    debug: bool,
    /// Take the `lce` already built.
    #[arg(long)]
    no_build: bool,
}

/// How far above the baseline RSS the server may stay after the load (KiB):
/// the allocator keeps some freed memory, a leak grows with the runs served.
const RSS_SLACK_KIB: u64 = 48 * 1024;

/// What a client did, for the checks against the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    /// Reads the whole response (`ureq`).
    Full,
    /// Reads it slowly, in small pieces.
    Slow,
    /// Reads part of it (maybe nothing) and leaves.
    Disconnect,
    /// Sends half a request and leaves.
    HalfRequest,
    /// An invalid id: 400 `invalid_id` ([`door::bad_id`]).
    BadId,
    /// A body over `--max-request-bytes` by its Content-Length: 413.
    BigBody,
    /// A chunked body over `--max-request-bytes`: 413.
    ChunkedBody,
    /// A body that stops arriving: 408.
    StalledBody,
    /// A reader that never reads: closed by the write timeout.
    NeverRead,
    /// More connections from one address than it may hold.
    PerIpBurst,
    /// A push whose harness stops sending: a closure.
    PushStall,
    /// A push with events after its terminal: dropped.
    PushLate,
}

impl Behaviour {
    /// Every behaviour, in the order of their discriminants.
    const ALL: [Behaviour; 12] = [
        Behaviour::Full,
        Behaviour::Slow,
        Behaviour::Disconnect,
        Behaviour::HalfRequest,
        Behaviour::BadId,
        Behaviour::BigBody,
        Behaviour::ChunkedBody,
        Behaviour::StalledBody,
        Behaviour::NeverRead,
        Behaviour::PerIpBurst,
        Behaviour::PushStall,
        Behaviour::PushLate,
    ];

    /// The mix: a behaviour for a draw in `0..1000`.
    fn of_draw(d: usize) -> Behaviour {
        match d {
            0..=489 => Behaviour::Full,
            490..=629 => Behaviour::Slow,
            630..=859 => Behaviour::Disconnect,
            860..=909 => Behaviour::HalfRequest,
            910..=939 => Behaviour::BadId,
            940..=949 => Behaviour::BigBody,
            950..=959 => Behaviour::ChunkedBody,
            960..=969 => Behaviour::StalledBody,
            970..=979 => Behaviour::NeverRead,
            980..=984 => Behaviour::PerIpBurst,
            985..=992 => Behaviour::PushStall,
            _ => Behaviour::PushLate,
        }
    }
}

/// The runs a request may have started, for the audit check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    /// Exactly one (it was answered 200).
    One,
    /// None: refused, or never a whole request.
    None,
    /// One or none: the client left before it saw the answer.
    Maybe,
}

/// One request's outcome as the client saw it.
#[derive(Debug)]
struct Outcome {
    /// The conversation id it sent (unique per request).
    conversation_id: String,
    /// The scenario it asked for.
    scenario: String,
    /// What it did.
    behaviour: Behaviour,
    /// For complete reads: frames parsed; `Err` says what was malformed
    /// (for the door's behaviours: how the answer differs from the
    /// promised one).
    frames: Result<usize, String>,
    /// Bytes read.
    bytes: usize,
    /// The runs it may have started.
    run: Run,
    /// The refusal it was answered (`"503 overloaded"`).
    refused: Option<String>,
    /// Connections the server closed on it.
    closed: u64,
    /// Events the server dropped after the terminal (push summaries).
    dropped: u64,
}

/// What the clients did, in sum.
#[derive(Default)]
struct Counters {
    /// Requests made (a burst is one).
    requests: AtomicU64,
    /// Bytes of responses read.
    bytes: AtomicU64,
    /// SSE frames parsed.
    frames: AtomicU64,
}

/// Entry point.
pub(crate) fn run(args: Args) -> Result<(), String> {
    let Args {
        seconds,
        clients,
        speed,
        debug,
        no_build,
    } = args;
    let root = workspace_root();
    let exe = lce(&root, !debug, !no_build)?;

    let work = std::env::temp_dir().join(format!("lce-soak-{}", std::process::id()));
    let _ = fs::remove_dir_all(&work);
    let scenarios = write_scenarios(&root.join("fixtures/scenarios"), &work.join("scenarios"))?;
    let shared = Arc::new(door::Shared::new(door::Limits::for_clients(clients)));
    let server = serve(&exe, &work, &speed, &shared.limits)?;
    let result = soak(&server, &scenarios, &work, seconds, clients, &shared);
    drop(server);
    if result.is_ok() {
        let _ = fs::remove_dir_all(&work);
    } else {
        eprintln!(
            "soak: audit log, server log and scenarios kept in {}",
            work.display()
        );
    }
    result
}

/// Warms the server up, loads it, and checks and prints what it did.
fn soak(
    server: &Replica,
    scenarios: &[String],
    work: &Path,
    seconds: u64,
    clients: u64,
    shared: &Arc<door::Shared>,
) -> Result<(), String> {
    let audit_path = &work.join("audit.jsonl");
    let warm_runs = warm_up(server, scenarios, audit_path, shared)?;
    let (rss0, fds0) = usage(server)?;
    println!("baseline after warm-up: RSS {rss0} KiB, {fds0} fds");
    println!("limits: {:?}", shared.limits);

    let load = load(server, scenarios, seconds, clients, shared, (rss0, fds0))?;

    // Every run that started must reach the audit log once. (Clients gone
    // before the response may not have started a run; refused requests
    // started none.)
    let expected = warm_runs + load.outcomes.iter().filter(|o| o.run == Run::One).count();
    wait_for_records(audit_path, expected, Duration::from_secs(20));
    // The count may be reached by runs of clients that left early (one
    // record or none) while a run that must have one is still going (a
    // reader that never read has its run pause 5 s): wait for those too.
    let must: Vec<&str> = (load.outcomes.iter())
        .filter(|o| o.run == Run::One)
        .map(|o| o.conversation_id.as_str())
        .collect();
    wait_for_conversations(audit_path, &must, Duration::from_secs(20));
    let records = read_audit(audit_path)?;
    let mut check = check_outcomes(&load.outcomes, &records);
    let log = check_logs(work, &mut check.problems)?;
    let cut = load
        .outcomes
        .iter()
        .filter(|o| o.behaviour == Behaviour::NeverRead);
    let cut: u64 = cut.map(|o| o.closed).sum();
    // And the warm-up's.
    if log.write_timeouts != cut + 1 {
        check.problems.push(format!(
            "{} readers that never read were cut, the server logged {} write timeouts",
            cut + 1,
            log.write_timeouts
        ));
    }

    // Back to baseline: fds exactly (a little slack for the runtime), RSS near.
    let settle = Instant::now();
    let (mut rss1, mut fds1) = usage(server)?;
    while (fds1 > fds0 + 2 || rss1 > rss0 + RSS_SLACK_KIB)
        && settle.elapsed() < Duration::from_secs(15)
    {
        thread::sleep(Duration::from_millis(250));
        (rss1, fds1) = usage(server)?;
    }
    let requests = load.counters.requests.load(Ordering::Relaxed);
    println!(
        "load: {clients} clients for {:.1} s: {requests} requests ({:.0}/s), {} MiB of SSE read, {} frames parsed ({} in complete responses)",
        load.secs,
        requests as f64 / load.secs.max(0.001),
        load.counters.bytes.load(Ordering::Relaxed) / (1024 * 1024),
        load.counters.frames.load(Ordering::Relaxed),
        check.frames_checked,
    );
    let mut kinds: Vec<_> = check.tally.into_iter().collect();
    kinds.sort();
    for (k, n) in kinds {
        println!("  {k}: {n}");
    }
    println!(
        "audit records: {} ({} runs expected); server peak RSS {} KiB, peak fds {}; open runs at peak {} (the most the server logged refusing one; --max-runs {})",
        records.len(),
        expected,
        load.peak_rss,
        load.peak_fds,
        log.peak_open,
        shared.limits.max_runs,
    );
    door::print_report(&door::report(&load.outcomes, &shared.gauges));
    println!(
        "after the load: RSS {rss1} KiB (baseline {rss0}), fds {fds1} (baseline {fds0}), settled in {:.1} s",
        settle.elapsed().as_secs_f64()
    );
    let problems = &mut check.problems;
    if fds1 > fds0 + 2 {
        problems.push(format!(
            "open fds did not return to baseline: {fds1} > {fds0}"
        ));
    }
    if rss1 > rss0 + RSS_SLACK_KIB {
        problems.push(format!(
            "RSS did not return near baseline: {rss1} KiB > {rss0} + {RSS_SLACK_KIB}"
        ));
    }
    if problems.is_empty() {
        println!("soak passed");
        Ok(())
    } else {
        for p in problems.iter().take(30) {
            eprintln!("soak: {p}");
        }
        Err(format!("soak failed: {} problems", problems.len()))
    }
}

/// One complete run of every scenario in every protocol and one reader that
/// never reads, so the baseline includes what the server allocates once.
/// Returns the runs it made.
fn warm_up(
    server: &Replica,
    scenarios: &[String],
    audit_path: &Path,
    shared: &door::Shared,
) -> Result<usize, String> {
    for (i, s) in scenarios.iter().enumerate() {
        for protocol in ["custom", "agui", "agui-v1"] {
            let conv = format!("warm-{i}-{protocol}");
            let o = request(
                &server.addr,
                s,
                protocol,
                &conv,
                Behaviour::Full,
                &mut Rng::new(1),
                shared,
            )?;
            o.frames
                .map_err(|e| format!("warm-up {s} {protocol}: {e}"))?;
        }
    }
    // One reader that never reads, too: the allocator keeps some of what
    // its run of several MiB took, once, and the baseline should hold it.
    let never = door::never_read(&server.addr, "warm-never", shared);
    shared.release(Behaviour::NeverRead);
    if never.frames.is_err() || never.closed != 1 {
        return Err(format!(
            "warm-up, a reader that never reads: {:?}, closed by the server: {}",
            never.frames, never.closed
        ));
    }
    let warm_runs = scenarios.len() * 3 + 1;
    wait_for_records(audit_path, warm_runs, Duration::from_secs(20));
    thread::sleep(Duration::from_millis(300));
    Ok(warm_runs)
}

/// What the load did.
struct Load {
    /// Every request's outcome.
    outcomes: Vec<Outcome>,
    /// What the clients did, in sum.
    counters: Arc<Counters>,
    /// The server's peak RSS (KiB) and open fds while it ran.
    peak_rss: u64,
    /// See `peak_rss`.
    peak_fds: u64,
    /// How long it ran.
    secs: f64,
}

/// `clients` client threads for `seconds`, sampling the server's RSS and
/// fds (from `baseline`) meanwhile.
fn load(
    server: &Replica,
    scenarios: &[String],
    seconds: u64,
    clients: u64,
    shared: &Arc<door::Shared>,
    baseline: (u64, u64),
) -> Result<Load, String> {
    let counters = Arc::new(Counters::default());
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let (mut peak_rss, mut peak_fds) = baseline;
    let started = Instant::now();
    let mut handles = Vec::new();
    for t in 0..clients {
        let addr = server.addr.clone();
        let scenarios = scenarios.to_vec();
        let counters = counters.clone();
        let shared = shared.clone();
        let h = thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || client(t, &addr, &scenarios, deadline, &counters, &shared))
            .map_err(|e| format!("cannot start client thread: {e}"))?;
        handles.push(h);
    }
    // Sample the server while the load runs.
    while Instant::now() < deadline {
        if let Ok((r, f)) = usage(server) {
            peak_rss = peak_rss.max(r);
            peak_fds = peak_fds.max(f);
        }
        thread::sleep(Duration::from_millis(200));
    }
    let mut outcomes = Vec::new();
    for h in handles {
        outcomes.extend(
            h.join()
                .map_err(|_| "a client thread panicked".to_owned())??,
        );
    }
    Ok(Load {
        outcomes,
        counters,
        peak_rss,
        peak_fds,
        secs: started.elapsed().as_secs_f64(),
    })
}

/// What the audit log says about the load.
struct Check {
    /// What went wrong, one line each.
    problems: Vec<String>,
    /// Outcomes by behaviour and audited terminal.
    tally: HashMap<String, u64>,
    /// Frames parsed in complete responses.
    frames_checked: usize,
}

/// Checks every outcome against its run's audit records (one per run, the
/// terminal a complete read of a whole or cut scenario must have), and that
/// no record belongs to an unknown run.
fn check_outcomes(outcomes: &[Outcome], records: &[AuditLine]) -> Check {
    let mut by_conv: HashMap<&str, Vec<&AuditLine>> = HashMap::new();
    for r in records {
        by_conv
            .entry(r.conversation_id.as_str())
            .or_default()
            .push(r);
    }
    let mut check = Check {
        problems: Vec::new(),
        tally: HashMap::new(),
        frames_checked: 0,
    };
    for o in outcomes {
        let recs = by_conv
            .get(o.conversation_id.as_str())
            .map_or(&[][..], Vec::as_slice);
        check_outcome(o, recs, &mut check);
    }
    let stray = records
        .iter()
        .filter(|r| {
            !r.conversation_id.starts_with("warm-") && !r.conversation_id.starts_with("soak-")
        })
        .count();
    if stray > 0 {
        check
            .problems
            .push(format!("{stray} audit records of unknown runs"));
    }
    check
}

/// One outcome against the audit records of its conversation.
fn check_outcome(o: &Outcome, recs: &[&AuditLine], check: &mut Check) {
    let problems = &mut check.problems;
    let kind = format!("{:?}", o.behaviour);
    *check.tally.entry(kind.clone()).or_default() += 1;
    let door = !matches!(
        o.behaviour,
        Behaviour::Full | Behaviour::Slow | Behaviour::Disconnect | Behaviour::HalfRequest
    );
    if let (true, Err(e)) = (door, &o.frames) {
        problems.push(format!("{} ({kind}): {e}", o.conversation_id));
    }
    if let Some(r) = &o.refused {
        *check.tally.entry(format!("{kind} -> {r}")).or_default() += 1;
    }
    match o.run {
        Run::None => {
            if !recs.is_empty() {
                problems.push(format!(
                    "{} ({kind}): refused or never a whole request, but {} audit records",
                    o.conversation_id,
                    recs.len()
                ));
            }
            return;
        }
        Run::Maybe if recs.is_empty() => {
            // Gone before the response started: hyper drops the request
            // when it sees the connection close first, and no run starts.
            *check
                .tally
                .entry(format!("{kind} -> gone before the response, no run"))
                .or_default() += 1;
            return;
        }
        Run::Maybe | Run::One => {}
    }
    if recs.len() != 1 {
        problems.push(format!(
            "{} ({kind}, {}): {} audit records",
            o.conversation_id,
            o.scenario,
            recs.len()
        ));
        return;
    }
    let r = recs[0];
    let end = format!(
        "{}{}",
        r.terminal,
        r.code
            .as_deref()
            .map(|c| format!("/{c}"))
            .unwrap_or_default()
    );
    *check.tally.entry(format!("{kind} -> {end}")).or_default() += 1;
    let wrong = |what: &str| format!("{} ({kind}): {what} but audited {end}", o.conversation_id);
    match o.behaviour {
        Behaviour::Full | Behaviour::Slow => {
            match &o.frames {
                Ok(n) => check.frames_checked += n,
                Err(e) => problems.push(format!(
                    "{} ({kind}, {}): {e}",
                    o.conversation_id, o.scenario
                )),
            }
            if r.code.as_deref() == Some("disconnect") {
                problems.push(wrong("read in full"));
            }
            if o.scenario.starts_with("cut-") && r.code.as_deref() != Some("provider_stream_closed")
            {
                problems.push(wrong("a cut scenario"));
            }
        }
        Behaviour::PushStall if end != "run.error/provider_stream_closed" => {
            problems.push(wrong("a push that stalled"));
        }
        Behaviour::PushLate if r.terminal != "run.finished" || r.dropped != o.dropped => {
            problems.push(wrong(&format!("a late push ({} dropped)", o.dropped)));
        }
        // A disconnect is audited as the scenario's own terminal (the run
        // goes on without its reader), a reader cut by the write timeout
        // as its run's: one record, which is what is checked above.
        _ => {}
    }
}

/// One client thread: requests until the deadline.
fn client(
    t: u64,
    addr: &str,
    scenarios: &[String],
    deadline: Instant,
    counters: &Counters,
    shared: &door::Shared,
) -> Result<Vec<Outcome>, String> {
    let mut rng = Rng::new(0x5EED ^ (t + 1).wrapping_mul(0x1234_5678_9ABC_DEF1));
    let mut out = Vec::new();
    let mut n = 0;
    while Instant::now() < deadline {
        let scenario = &scenarios[rng.below(scenarios.len())];
        let protocol = ["custom", "agui", "agui-v1", "standard"][rng.below(4)];
        let behaviour = shared.take(Behaviour::of_draw(rng.below(1000)));
        let conv = format!("soak-{t}-{n}");
        n += 1;
        let g = &shared.gauges;
        let o = match behaviour {
            Behaviour::BadId => Ok(door::bad_id(addr, scenario, &conv, &mut rng, g)),
            Behaviour::BigBody => Ok(door::big_body(addr, &conv, false, shared)),
            Behaviour::ChunkedBody => Ok(door::big_body(addr, &conv, true, shared)),
            Behaviour::StalledBody => Ok(door::stalled_body(addr, &conv, g)),
            Behaviour::NeverRead => Ok(door::never_read(addr, &conv, shared)),
            Behaviour::PerIpBurst => Ok(door::per_ip_burst(addr, &conv, shared)),
            Behaviour::PushStall => Ok(door::push(addr, &conv, true, shared)),
            Behaviour::PushLate => Ok(door::push(addr, &conv, false, shared)),
            _ => request(addr, scenario, protocol, &conv, behaviour, &mut rng, shared),
        };
        shared.release(behaviour);
        let o = o?;
        if o.refused.as_deref().is_some_and(|r| r.starts_with("503")) {
            // Retry-After asks for 5 s; a client that comes back sooner
            // (but not at once) keeps the replica at its limit.
            thread::sleep(Duration::from_millis(50 + rng.below(200) as u64));
        }
        counters.requests.fetch_add(1, Ordering::Relaxed);
        if let Ok(f) = &o.frames {
            counters.frames.fetch_add(*f as u64, Ordering::Relaxed);
        }
        counters.bytes.fetch_add(o.bytes as u64, Ordering::Relaxed);
        out.push(o);
    }
    Ok(out)
}

/// Sends one request and behaves as told; `frames` checks complete reads.
fn request(
    addr: &str,
    scenario: &str,
    protocol: &str,
    conv: &str,
    behaviour: Behaviour,
    rng: &mut Rng,
    shared: &door::Shared,
) -> Result<Outcome, String> {
    let (path, body) = if protocol == "standard" {
        (
            "/api/v1/agui",
            format!(
                r#"{{"threadId":"{conv}","runId":"run-{conv}","state":{{}},"messages":[],"tools":[],"context":[],"forwardedProps":{{"agentId":"{scenario}"}}}}"#
            ),
        )
    } else {
        (
            "/api/v1/chat/stream/start",
            format!(
                r#"{{"message":"hello","conversation_id":"{conv}","agent_id":"{scenario}","protocol":"{protocol}"}}"#
            ),
        )
    };
    let base = Outcome {
        conversation_id: conv.to_owned(),
        scenario: scenario.to_owned(),
        behaviour,
        frames: Ok(0),
        bytes: 0,
        run: Run::One,
        refused: None,
        closed: 0,
        dropped: 0,
    };
    let _held = shared.gauges.hold(behaviour, 1);
    if behaviour == Behaviour::Full {
        return Ok(full(addr, path, &body, base));
    }
    let mut s = connect(addr)?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if behaviour == Behaviour::HalfRequest {
        let cut = rng.below(body.len());
        let _ = s.write_all(head.as_bytes());
        let _ = s.write_all(&body.as_bytes()[..cut]);
        thread::sleep(Duration::from_millis(rng.below(50) as u64));
        let _ = s.shutdown(Shutdown::Both);
        return Ok(Outcome {
            frames: Err("half request".into()),
            run: Run::None,
            ..base
        });
    }
    s.write_all(format!("{head}{body}").as_bytes())
        .map_err(|e| format!("send: {e}"))?;
    if behaviour == Behaviour::Disconnect {
        return Ok(disconnect(s, rng, base));
    }
    // A slow reader: small pieces, with pauses.
    let mut raw = Vec::new();
    let mut buf = [0u8; 97];
    let started = Instant::now();
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => raw.extend_from_slice(&buf[..k]),
            Err(e) => return Ok(read_as(base, Err(format!("read error: {e}")), &raw)),
        }
        thread::sleep(Duration::from_millis(15));
        if started.elapsed() > Duration::from_secs(120) {
            return Ok(read_as(base, Err("response took over 120 s".into()), &raw));
        }
    }
    let frames = check_response(&raw);
    Ok(read_as(base, frames, &raw))
}

/// A whole read over `ureq`: 200 and well-formed SSE, or 503 `overloaded`
/// with Retry-After.
fn full(addr: &str, path: &str, body: &str, base: Outcome) -> Outcome {
    let answer = agent()
        .post(format!("http://{addr}{path}"))
        .header("Content-Type", "application/json")
        .send(body)
        .map_err(|e| format!("request: {e}"));
    let header = |name: &str| {
        answer.as_ref().ok().and_then(|a| {
            a.headers()
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        })
    };
    let chunked = header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    let retry_after = header("retry-after");
    let with = |frames, bytes| Outcome {
        frames,
        bytes,
        ..base
    };
    match answer.and_then(read_whole) {
        Ok(a) if a.status == 503 => {
            let refusal = door::Answer {
                status: a.status,
                retry_after,
                body: a.body,
                complete: true,
            }
            .refusal(503, "overloaded", None);
            match refusal {
                Ok(r) => Outcome {
                    refused: Some(r),
                    run: Run::None,
                    ..with(Ok(0), 0)
                },
                Err(e) => with(Err(e), 0),
            }
        }
        Ok(a) if a.status != 200 => with(Err(format!("status {}", a.status)), a.body.len()),
        Ok(a) => {
            if chunked {
                with(check_sse(&a.body), a.body.len())
            } else {
                with(Err("not chunked".into()), a.body.len())
            }
        }
        Err(e) => with(Err(e), 0),
    }
}

/// What a client read of a response (slowly, or in part): a 503 is a
/// refusal, which must be `overloaded` with Retry-After when read whole,
/// and started no run; a 200 started one; too little to tell, maybe one.
fn read_as(base: Outcome, frames: Result<usize, String>, raw: &[u8]) -> Outcome {
    let bytes = raw.len();
    match door::parse_answer(raw) {
        Ok(a) if a.status == 503 => {
            let refused = if base.behaviour == Behaviour::Disconnect && !a.complete {
                Ok("503 (read in part)".to_owned())
            } else {
                a.refusal(503, "overloaded", None)
            };
            let (frames, refused) = match refused {
                Ok(r) => (Ok(0), Some(r)),
                Err(e) => (Err(e), None),
            };
            Outcome {
                frames,
                bytes,
                run: Run::None,
                refused,
                ..base
            }
        }
        Ok(_) => Outcome {
            frames,
            bytes,
            ..base
        },
        Err(_) if base.behaviour == Behaviour::Disconnect => Outcome {
            frames,
            bytes,
            run: Run::Maybe,
            ..base
        },
        Err(_) => Outcome {
            frames,
            bytes,
            ..base
        },
    }
}

/// Reads up to a random number of bytes (maybe none), then goes away.
fn disconnect(mut s: TcpStream, rng: &mut Rng, base: Outcome) -> Outcome {
    let limit = match rng.below(4) {
        0 => 0,
        1 => rng.below(400),
        _ => rng.below(6000),
    };
    let pause = Duration::from_millis(rng.below(300) as u64);
    let mut raw = Vec::new();
    let mut buf = [0u8; 512];
    while raw.len() < limit {
        match s.read(&mut buf[..(limit - raw.len()).min(512)]) {
            Ok(0) | Err(_) => break,
            Ok(k) => raw.extend_from_slice(&buf[..k]),
        }
    }
    thread::sleep(pause);
    drop(s);
    read_as(base, Err("disconnected".into()), &raw)
}

/// A loopback connection to `addr` (retried for about a second), with
/// 60 s read and write timeouts.
fn connect(addr: &str) -> Result<TcpStream, String> {
    let mut last = String::new();
    for _ in 0..50 {
        match TcpStream::connect(addr) {
            Ok(s) => {
                let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
                let _ = s.set_write_timeout(Some(Duration::from_secs(60)));
                return Ok(s);
            }
            Err(e) => {
                last = e.to_string();
                thread::sleep(Duration::from_millis(20));
            }
        }
    }
    Err(format!("cannot connect to {addr}: {last}"))
}

/// A complete HTTP response (`httparse`): 200, chunked to its last chunk,
/// well-formed SSE frames.
fn check_response(raw: &[u8]) -> Result<usize, String> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut head = httparse::Response::new(&mut headers);
    let Ok(httparse::Status::Complete(mut at)) = head.parse(raw) else {
        return Err("no end of headers".into());
    };
    if head.code != Some(200) {
        return Err(format!("status {:?}", head.code));
    }
    let chunked = head.headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("transfer-encoding") && h.value.eq_ignore_ascii_case(b"chunked")
    });
    if !chunked {
        return Err("not chunked".into());
    }
    let mut body = Vec::new();
    loop {
        let Ok(httparse::Status::Complete((len, size))) = httparse::parse_chunk_size(&raw[at..])
        else {
            return Err("truncated or bad chunk size".into());
        };
        if size == 0 {
            return check_sse(&body);
        }
        let start = at + len;
        let end = start + usize::try_from(size).map_err(|_| "chunk too large")?;
        // The chunk and the CRLF after it must have come.
        let chunk = raw.get(start..end).filter(|_| end + 2 <= raw.len());
        body.extend_from_slice(chunk.ok_or("truncated chunk (the response did not end)")?);
        at = end + 2;
    }
}

/// Parses `event:`/`data:` frames; each data must be one JSON value.
fn check_sse(body: &[u8]) -> Result<usize, String> {
    let text = std::str::from_utf8(body).map_err(|_| "SSE body is not UTF-8")?;
    if text.contains('\r') {
        return Err("CR in SSE body".into());
    }
    if !text.is_empty() && !text.ends_with("\n\n") {
        return Err("SSE body ends inside a frame".into());
    }
    let mut frames = 0;
    for frame in text.split("\n\n").filter(|f| !f.is_empty()) {
        let mut data: Option<String> = None;
        let mut comment_only = true;
        for line in frame.split('\n') {
            if line.starts_with(':') {
                continue;
            }
            comment_only = false;
            if let Some(v) = line.strip_prefix("data:") {
                let v = v.strip_prefix(' ').unwrap_or(v);
                match &mut data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(v);
                    }
                    None => data = Some(v.to_owned()),
                }
            } else if line.strip_prefix("event:").is_none() {
                return Err(format!("unexpected SSE line {:?}", truncate(line)));
            }
        }
        if comment_only {
            continue;
        }
        let data = data.ok_or("a frame without data")?;
        serde_json::from_str::<serde_json::Value>(&data)
            .map_err(|e| format!("frame data is not JSON ({e}): {:?}", truncate(&data)))?;
        frames += 1;
    }
    Ok(frames)
}

/// The first 120 characters of `s`, for messages.
fn truncate(s: &str) -> String {
    s.chars().take(120).collect()
}

/// Copies the scenarios and writes a `cut-` copy of each (first half of its
/// lines: no terminal), and [`door::BIG_SCENARIO`]. Returns the scenario
/// names but that one.
fn write_scenarios(from: &Path, to: &Path) -> Result<Vec<String>, String> {
    create_dir(to)?;
    let mut names = Vec::new();
    for p in files_with(from, "jsonl")? {
        let name = stem(&p);
        let text = read(&p)?;
        fs::write(to.join(format!("{name}.jsonl")), &text).map_err(|e| e.to_string())?;
        let lines: Vec<&str> = text.lines().collect();
        let half = (lines.len() / 2).max(1);
        let mut cut = lines[..half].join("\n");
        cut.push('\n');
        fs::write(to.join(format!("cut-{name}.jsonl")), cut).map_err(|e| e.to_string())?;
        names.push(name.clone());
        names.push(format!("cut-{name}"));
    }
    // The reader that never reads asks for this one only: more than the
    // kernel can buffer at once, then its end 100 s later as recorded (5 s
    // at most, paced): the run is still going when the write timeout cuts
    // the reader, so that (and not the end of the run's retention) is what
    // cuts it.
    let deltas =
        door::big_deltas(&fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem").unwrap_or_default());
    let mut big = door::push_lines(
        "run-big",
        "conv-big",
        deltas,
        &"x".repeat(door::BIG_DELTA),
        true,
        0,
    );
    let n = big.len();
    for line in &mut big[n - 2..] {
        *line = line.replace("09:00:00.000Z", "09:01:40.000Z");
    }
    let path = to.join(format!("{}.jsonl", door::BIG_SCENARIO));
    fs::write(path, big.join("\n") + "\n").map_err(|e| e.to_string())?;
    Ok(names)
}

/// Starts `lce serve` on the scenarios and with the audit log of `work`,
/// its log output (info) to `work/serve.log`.
fn serve(exe: &Path, work: &Path, speed: &str, limits: &door::Limits) -> Result<Replica, String> {
    let mut args: Vec<OsString> = ["serve", "--addr", "127.0.0.1:0", "--speed", speed]
        .map(OsString::from)
        .to_vec();
    args.extend(["--scenarios".into(), work.join("scenarios").into()]);
    args.extend(["--audit-log".into(), work.join("audit.jsonl").into()]);
    // Ended runs stay in the in-memory run log for their retention
    // (docs/gateway.md); a short one lets RSS return near the
    // baseline after the load, which is what this checks.
    args.extend(["--retention", "1", "--takeover-after", "2"].map(OsString::from));
    // The door's limits, low enough for the soak's clients to meet them.
    args.extend(limits.args());
    Replica::start(exe, &args, &work.join("serve.log"))
}

/// The server's log output and the audit log against the door: no invalid
/// id in either; prints the counts the server logged, and returns them.
fn check_logs(work: &Path, problems: &mut Vec<String>) -> Result<door::LogCounts, String> {
    let log = door::LogCounts::of(&read(&work.join("serve.log"))?);
    println!(
        "server log: {} write timeouts, {} connections closed for --max-connections-per-ip, {} runs refused overloaded, {} bodies too large, {} bodies stopped, {} pushes idle",
        log.write_timeouts,
        log.per_ip_closed,
        log.overloaded,
        log.too_large,
        log.body_timeouts,
        log.ingest_idle
    );
    if log.forged > 0 {
        problems.push(format!(
            "{} lines of the server's log output hold an invalid id ({})",
            log.forged,
            door::MARKER
        ));
    }
    if read(&work.join("audit.jsonl"))?.contains(door::MARKER) {
        problems.push("an invalid id reached the audit log".into());
    }
    Ok(log)
}

/// The server's RSS (KiB) and open fds.
fn usage(server: &Replica) -> Result<(u64, u64), String> {
    let pid = server.pid();
    let fds = fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count() as u64)
        .map_err(|e| format!("/proc/{pid}/fd: {e}"))?;
    Ok((rss_kib(pid)?, fds))
}

/// One audit line, the fields the checks need.
struct AuditLine {
    /// The run's conversation (unique per request in the soak).
    conversation_id: String,
    /// The terminal's type.
    terminal: String,
    /// `run.error` code or `run.cancelled` reason.
    code: Option<String>,
    /// Events dropped after the terminal.
    dropped: u64,
}

/// The audit log's records, in order.
fn read_audit(path: &Path) -> Result<Vec<AuditLine>, String> {
    let text = read(path)?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let j: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("audit line {}: {e}", i + 1))?;
        let field = |k: &str| j[k].as_str().map(str::to_owned);
        out.push(AuditLine {
            conversation_id: field("conversation_id")
                .ok_or(format!("audit line {}: no conversation_id", i + 1))?,
            terminal: field("terminal").ok_or(format!("audit line {}: no terminal", i + 1))?,
            code: field("code"),
            dropped: j["dropped"].as_u64().unwrap_or(0),
        });
    }
    Ok(out)
}

/// Waits until the audit log has a record of every conversation of
/// `convs`, or the timeout.
fn wait_for_conversations(path: &Path, convs: &[&str], timeout: Duration) {
    let start = Instant::now();
    while start.elapsed() < timeout {
        let Ok(records) = read_audit(path) else {
            return;
        };
        let seen: std::collections::HashSet<&str> =
            records.iter().map(|r| r.conversation_id.as_str()).collect();
        if convs.iter().all(|c| seen.contains(c)) {
            return;
        }
        thread::sleep(Duration::from_millis(250));
    }
}

/// Waits until the audit log has `n` lines, or the timeout.
fn wait_for_records(path: &Path, n: usize, timeout: Duration) {
    let start = Instant::now();
    while start.elapsed() < timeout {
        let lines = fs::read_to_string(path)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if lines >= n {
            return;
        }
        thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_slow_read_is_checked_whole() {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
        let (a, b) = ("data: {}\n\n", "event: a\ndata: [1]\n\n");
        let body = format!(
            "{:x}\r\n{a}\r\n{:x};ext=1\r\n{b}\r\n0\r\n\r\n",
            a.len(),
            b.len()
        );
        let whole = format!("{head}{body}");
        assert_eq!(super::check_response(whole.as_bytes()), Ok(2));
        let cut = &whole[..whole.len() - 5];
        assert!(
            super::check_response(cut.as_bytes()).is_err(),
            "no last chunk"
        );
        let bad = whole.replace("data: [1]", "data: [1");
        assert!(super::check_response(bad.as_bytes()).is_err(), "not JSON");
        let plain = whole.replace("Transfer-Encoding: chunked\r\n", "");
        assert_eq!(
            super::check_response(plain.as_bytes()),
            Err("not chunked".into())
        );
        let status = whole.replace("200 OK", "503 Busy");
        assert!(super::check_response(status.as_bytes()).is_err());
    }
}
