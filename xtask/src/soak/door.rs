//! The soak's hostile clients at the door (`gateway.md`, "Limits at the
//! door"): invalid ids, bodies over `--max-request-bytes` (declared and
//! chunked), a body that stalls, connections beyond
//! `--max-connections-per-ip` (a burst from an address of its own), a reader
//! that never reads, pushes whose harness stops sending and pushes with
//! events after their terminal. Each checks the answer `docs/gateway.md`
//! promises; [`Limits`] are the server's options that make them cheap, and
//! the accounting ([`Gauges`], [`report`], [`LogCounts`]) is what the soak
//! prints as held, dropped and refused.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use socket2::{Domain, Socket, Type};

use super::{Behaviour, Outcome, Run};
use crate::util::Rng;

/// Put in every invalid id the soak sends (but the empty one): neither the
/// server's log output nor the audit log may ever hold it.
pub(super) const MARKER: &str = "SOAK-FORGED";

/// The scenario a reader that never reads asks for: text deltas of
/// [`BIG_DELTA`] bytes, as many as [`big_deltas`] says, then a pause of 5 s
/// before its end.
pub(super) const BIG_SCENARIO: &str = "soak-big";

/// The size of [`BIG_SCENARIO`]'s deltas: few large events (the server's
/// memory log holds the run, and few large allocations leave less behind
/// in its allocator than many small ones).
pub(super) const BIG_DELTA: usize = 64 * 1024;

/// How many deltas of [`BIG_DELTA`] bytes make a run the kernel cannot
/// buffer whole: 1 MiB more than the largest send buffer (`tcp_wmem`'s
/// third field, `tcp_wmem` the text of `/proc/sys/net/ipv4/tcp_wmem`; 4 MiB
/// when unreadable), the reader's receive buffer being 4 KiB.
pub(super) fn big_deltas(tcp_wmem: &str) -> usize {
    let max = tcp_wmem
        .split_whitespace()
        .nth(2)
        .and_then(|v| v.parse::<usize>().ok());
    (max.unwrap_or(4 << 20) + (1 << 20)).div_ceil(BIG_DELTA)
}

/// Connections a burst opens beyond `--max-connections-per-ip`.
const BURST_EXTRA: usize = 4;

/// The `lce serve` limits the soak sets, from its client count.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Limits {
    /// `--max-runs`: below the clients, so some starts are refused.
    pub(super) max_runs: u64,
    /// `--max-connections-per-ip`: above what the clients on 127.0.0.1
    /// hold (one connection each, plus those the server has not yet seen
    /// close); a burst from another address passes it.
    pub(super) per_ip: u64,
    /// `--max-connections`: room for the clients and one burst.
    pub(super) max_connections: u64,
    /// `--max-request-bytes`: far above the soak's requests (under 1 KiB).
    pub(super) max_request_bytes: u64,
    /// `--body-idle-timeout`, `--write-timeout`, `--ingest-idle-timeout`
    /// (seconds): short, so the clients that meet them wait little.
    pub(super) body_idle_secs: u64,
    /// See `body_idle_secs`.
    pub(super) write_timeout_secs: u64,
    /// See `body_idle_secs`.
    pub(super) ingest_idle_secs: u64,
}

impl Limits {
    /// The limits for `clients` client threads.
    pub(super) fn for_clients(clients: u64) -> Limits {
        let per_ip = 2 * clients + 16;
        Limits {
            max_runs: (clients / 2).max(4),
            per_ip,
            max_connections: 2 * per_ip + 64,
            max_request_bytes: 16 * 1024,
            body_idle_secs: 2,
            write_timeout_secs: 2,
            ingest_idle_secs: 1,
        }
    }

    /// The `lce serve` options.
    pub(super) fn args(&self) -> Vec<OsString> {
        [
            ("--max-runs", self.max_runs),
            ("--max-connections-per-ip", self.per_ip),
            ("--max-connections", self.max_connections),
            ("--max-request-bytes", self.max_request_bytes),
            ("--body-idle-timeout", self.body_idle_secs),
            ("--write-timeout", self.write_timeout_secs),
            ("--ingest-idle-timeout", self.ingest_idle_secs),
        ]
        .iter()
        .flat_map(|(k, v)| [OsString::from(k), OsString::from(v.to_string())])
        .chain(std::iter::once("--allow-anonymous-ingest".into()))
        .collect()
    }
}

/// What the door clients share: the limits, the connections each
/// behaviour holds, the one-at-a-time behaviours' locks.
#[derive(Debug)]
pub(super) struct Shared {
    /// The server's limits.
    pub(super) limits: Limits,
    /// Connections held, by behaviour.
    pub(super) gauges: Gauges,
    /// A burst is under way (one at a time: they need many connections).
    burst_busy: AtomicBool,
    /// How many bursts there were (each uses its own source address).
    bursts: AtomicU64,
    /// A reader that never reads is under way (one at a time: each holds
    /// a run of several MiB in the server's memory log).
    never_busy: AtomicBool,
    /// When the last one's run has ended and left the memory log (its
    /// pause and the soak's `--retention`): the next starts no sooner, so
    /// one such run at a time is in the server's memory.
    never_next: Mutex<Option<Instant>>,
}

impl Shared {
    /// Nothing held yet.
    pub(super) fn new(limits: Limits) -> Shared {
        Shared {
            limits,
            gauges: Gauges::default(),
            burst_busy: AtomicBool::new(false),
            bursts: AtomicU64::new(0),
            never_busy: AtomicBool::new(false),
            never_next: Mutex::new(None),
        }
    }

    /// `behaviour`, or [`Behaviour::BadId`] when it is one of the
    /// one-at-a-time behaviours and one is under way, or (a reader that
    /// never reads) the last one's run may still be in the server's memory;
    /// when it is taken the caller owns the lock, given back by
    /// [`Shared::release`].
    pub(super) fn take(&self, behaviour: Behaviour) -> Behaviour {
        let lock = match behaviour {
            Behaviour::PerIpBurst => &self.burst_busy,
            Behaviour::NeverRead => &self.never_busy,
            b => return b,
        };
        if lock
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Behaviour::BadId;
        }
        let next = *self
            .never_next
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if behaviour == Behaviour::NeverRead && next.is_some_and(|t| Instant::now() < t) {
            lock.store(false, Ordering::Release);
            return Behaviour::BadId;
        }
        behaviour
    }

    /// Gives back the lock [`Shared::take`] gave for `behaviour`.
    pub(super) fn release(&self, behaviour: Behaviour) {
        match behaviour {
            Behaviour::PerIpBurst => self.burst_busy.store(false, Ordering::Release),
            Behaviour::NeverRead => {
                // The run pauses 5 s after the cut, then is kept 1 s.
                let next = Instant::now() + Duration::from_secs(7);
                *self
                    .never_next
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(next);
                self.never_busy.store(false, Ordering::Release);
            }
            _ => {}
        }
    }
}

/// Connections held now and at peak, by behaviour (client side).
#[derive(Debug, Default)]
pub(super) struct Gauges {
    /// Held now, indexed by the behaviour's discriminant.
    now: [AtomicU64; Behaviour::ALL.len()],
    /// The most held at once.
    peak: [AtomicU64; Behaviour::ALL.len()],
}

impl Gauges {
    /// Counts `n` connections of `b` held until the guard drops.
    pub(super) fn hold(&self, b: Behaviour, n: u64) -> Held<'_> {
        let now = self.now[b as usize].fetch_add(n, Ordering::AcqRel) + n;
        self.peak[b as usize].fetch_max(now, Ordering::AcqRel);
        Held {
            gauges: self,
            behaviour: b,
            n,
        }
    }

    /// The most connections `b` held at once.
    pub(super) fn peak(&self, b: Behaviour) -> u64 {
        self.peak[b as usize].load(Ordering::Acquire)
    }
}

/// Connections counted in [`Gauges`] while it lives.
pub(super) struct Held<'a> {
    /// Where they are counted.
    gauges: &'a Gauges,
    /// Whose they are.
    behaviour: Behaviour,
    /// How many.
    n: u64,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.gauges.now[self.behaviour as usize].fetch_sub(self.n, Ordering::AcqRel);
    }
}

/// An HTTP answer as read off a raw socket.
#[derive(Debug, PartialEq)]
pub(super) struct Answer {
    /// The status code.
    pub(super) status: u16,
    /// The `Retry-After` header, when there is one.
    pub(super) retry_after: Option<String>,
    /// The body (de-chunked), as much of it as came.
    pub(super) body: Vec<u8>,
    /// Whether the body came whole (its length, or its last chunk).
    pub(super) complete: bool,
}

impl Answer {
    /// The body's JSON, when it is JSON.
    pub(super) fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// `"STATUS CODE"` (the JSON body's `code`), or an error saying how the
    /// answer differs from `status` with `code` (and, for 400
    /// `invalid_id`, `"error": "invalid_id"` and `field`; for 503, a
    /// `Retry-After`).
    pub(super) fn refusal(
        &self,
        status: u16,
        code: &str,
        field: Option<&str>,
    ) -> Result<String, String> {
        let json = self.json().unwrap_or_default();
        let got = json["code"].as_str().unwrap_or("-");
        if self.status != status || got != code || !self.complete {
            return Err(format!(
                "answered {} {got} (complete: {}), not {status} {code}",
                self.status, self.complete
            ));
        }
        if status == 503 && self.retry_after.is_none() {
            return Err(format!("503 {code} without Retry-After"));
        }
        if let Some(field) = field {
            if json["error"] != "invalid_id" || json["field"] != field {
                return Err(format!("invalid_id answer {json} does not name {field}"));
            }
            return Ok(format!("{status} {code} ({field})"));
        }
        Ok(format!("{status} {code}"))
    }
}

/// Parses what a raw socket read: `Err` when the head is not whole.
pub(super) fn parse_answer(raw: &[u8]) -> Result<Answer, String> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut head = httparse::Response::new(&mut headers);
    let Ok(httparse::Status::Complete(at)) = head.parse(raw) else {
        return Err(format!("no whole answer head in {} bytes", raw.len()));
    };
    let header = |name: &str| {
        head.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).into_owned())
    };
    let retry_after = header("retry-after");
    let rest = &raw[at..];
    let (body, complete) = if header("transfer-encoding").is_some_and(|v| v == "chunked") {
        dechunk(rest)
    } else {
        let len = header("content-length").and_then(|v| v.parse::<usize>().ok());
        let len = len.unwrap_or(rest.len());
        (rest[..len.min(rest.len())].to_vec(), rest.len() >= len)
    };
    Ok(Answer {
        status: head.code.unwrap_or(0),
        retry_after,
        body,
        complete,
    })
}

/// A chunked body's data so far, and whether its last chunk came.
fn dechunk(mut raw: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Ok(httparse::Status::Complete((len, size))) = httparse::parse_chunk_size(raw) else {
            return (body, false);
        };
        if size == 0 {
            return (body, true);
        }
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        let data = &raw[len..];
        body.extend_from_slice(&data[..size.min(data.len())]);
        match data.get(size + 2..) {
            Some(rest) => raw = rest,
            None => return (body, false),
        }
    }
}

/// The state (`/proc/net/tcp`'s `st`, 1 = established) of the IPv4
/// loopback socket with `local` and `remote` ports in `table`.
pub(super) fn tcp_state(table: &str, local: u16, remote: u16) -> Option<u8> {
    let want = (format!(":{local:04X}"), format!(":{remote:04X}"));
    table.lines().skip(1).find_map(|line| {
        let mut f = line.split_whitespace().skip(1);
        let (l, r, st) = (f.next()?, f.next()?, f.next()?);
        (l.ends_with(&want.0) && r.ends_with(&want.1))
            .then(|| u8::from_str_radix(st, 16).ok())
            .flatten()
    })
}

/// Waits until the server's side of the connection from `client` to
/// `server` is no longer established (it closed it; the kernel may still
/// hold what it had to send). `false` after `bound`.
fn wait_server_closed(server: u16, client: u16, bound: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < bound {
        let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        if tcp_state(&table, server, client) != Some(1) {
            return true;
        }
        thread::sleep(Duration::from_millis(100));
    }
    false
}

/// Reads until the server closes (or resets) the connection, or 60 s pass.
fn read_all(s: &mut TcpStream) -> Vec<u8> {
    let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    while let Ok(k) = s.read(&mut buf) {
        if k == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..k]);
    }
    raw
}

/// A loopback connection from `source` (any port) to `addr`, with a
/// receive buffer of `rcvbuf` bytes when given.
fn connect_from(addr: &str, source: Ipv4Addr, rcvbuf: Option<usize>) -> Result<TcpStream, String> {
    let to: SocketAddr = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).map_err(|e| format!("socket: {e}"))?;
    if let Some(n) = rcvbuf {
        s.set_recv_buffer_size(n)
            .map_err(|e| format!("SO_RCVBUF: {e}"))?;
    }
    s.bind(&SocketAddr::V4(SocketAddrV4::new(source, 0)).into())
        .map_err(|e| format!("bind {source}: {e}"))?;
    s.connect(&to.into())
        .map_err(|e| format!("connect {addr} from {source}: {e}"))?;
    Ok(s.into())
}

/// An outcome of a door behaviour for `conv`: `problem` when the answer
/// was not the one promised, `refused` what it was.
fn outcome(conv: &str, behaviour: Behaviour, run: Run) -> Outcome {
    Outcome {
        conversation_id: conv.to_owned(),
        scenario: String::new(),
        behaviour,
        frames: Ok(0),
        bytes: 0,
        run,
        refused: None,
        closed: 0,
        dropped: 0,
    }
}

/// A POST head for `path` on `addr`, with `Connection: close` and `extra`
/// headers (each ending in CRLF).
fn head(addr: &str, path: &str, content_type: &str, extra: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {content_type}\r\n{extra}Connection: close\r\n\r\n"
    )
}

/// Sends `raw` and reads the answer to the end; `Err` when it has no head.
fn exchange(s: &mut TcpStream, raw: &[u8]) -> Result<Answer, String> {
    s.write_all(raw).map_err(|e| format!("send: {e}"))?;
    parse_answer(&read_all(s))
}

/// An invalid id in one field of one route: 400 `invalid_id` naming it.
pub(super) fn bad_id(
    addr: &str,
    scenario: &str,
    conv: &str,
    rng: &mut Rng,
    gauges: &Gauges,
) -> Outcome {
    let b = Behaviour::BadId;
    let field = ["conversation_id", "agent_id", "threadId", "runId", "run_id"][rng.below(5)];
    // Control characters forging a log line, `..`, over 256 bytes, empty.
    let forged = format!("{MARKER}\n2026-01-01T00:00:00Z ERROR lce::audit: {MARKER} forged\r");
    let long = format!("{MARKER}{}", "a".repeat(300));
    let dots = format!("..{MARKER}");
    let mut bad = [forged.as_str(), dots.as_str(), long.as_str(), ""][rng.below(4)];
    let raw = match field {
        "run_id" => {
            // A path segment: the control characters percent-encoded, and
            // never empty (that is another route).
            bad = if bad.is_empty() { &dots } else { bad };
            let path = bad
                .replace('\n', "%0A")
                .replace('\r', "%0D")
                .replace(' ', "%20");
            format!(
                "GET /api/v1/runs/{path}/stream HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
            )
        }
        "threadId" | "runId" => {
            let mut j = serde_json::json!({"threadId": conv, "runId": format!("run-{conv}"),
                "state": {}, "messages": [], "tools": [], "context": [],
                "forwardedProps": {"agentId": scenario}});
            j[field] = bad.into();
            let body = j.to_string();
            let h = head(
                addr,
                "/api/v1/agui",
                "application/json",
                &format!("Content-Length: {}\r\n", body.len()),
            );
            format!("{h}{body}")
        }
        _ => {
            let mut j = serde_json::json!({"message": "hello", "conversation_id": conv,
                "agent_id": scenario, "protocol": "custom"});
            j[field] = bad.into();
            let body = j.to_string();
            let h = head(
                addr,
                "/api/v1/chat/stream/start",
                "application/json",
                &format!("Content-Length: {}\r\n", body.len()),
            );
            format!("{h}{body}")
        }
    };
    let mut o = outcome(conv, b, Run::None);
    let answer = connect_from(addr, Ipv4Addr::LOCALHOST, None).and_then(|mut s| {
        let _held = gauges.hold(b, 1);
        exchange(&mut s, raw.as_bytes())
    });
    match answer.and_then(|a| a.refusal(400, "invalid_id", Some(field))) {
        Ok(r) => o.refused = Some(r),
        Err(e) => o.frames = Err(format!("invalid {field} {:?}: {e}", super::truncate(bad))),
    }
    o
}

/// A JSON body over `--max-request-bytes`, declared by its Content-Length
/// (nothing of it sent) or chunked (sent until past the limit): 413
/// `body_too_large`.
pub(super) fn big_body(addr: &str, conv: &str, chunked: bool, shared: &Shared) -> Outcome {
    let b = if chunked {
        Behaviour::ChunkedBody
    } else {
        Behaviour::BigBody
    };
    let max = usize::try_from(shared.limits.max_request_bytes).unwrap_or(usize::MAX);
    let mut o = outcome(conv, b, Run::None);
    let answer = connect_from(addr, Ipv4Addr::LOCALHOST, None).and_then(|mut s| {
        let _held = shared.gauges.hold(b, 1);
        let start = format!(r#"{{"conversation_id":"{conv}","message":""#);
        if !chunked {
            let h = head(
                addr,
                "/api/v1/chat/stream/start",
                "application/json",
                &format!("Content-Length: {}\r\n", max + 1),
            );
            return exchange(&mut s, format!("{h}{start}").as_bytes());
        }
        let h = head(
            addr,
            "/api/v1/chat/stream/start",
            "application/json",
            "Transfer-Encoding: chunked\r\n",
        );
        s.write_all(h.as_bytes())
            .map_err(|e| format!("send: {e}"))?;
        let piece = "x".repeat(4096);
        let mut sent = 0;
        while sent <= max {
            let data = if sent == 0 { &start } else { &piece };
            let chunk = format!("{:x}\r\n{data}\r\n", data.len());
            s.write_all(chunk.as_bytes())
                .map_err(|e| format!("send: {e}"))?;
            sent += data.len();
        }
        parse_answer(&read_all(&mut s))
    });
    match answer.and_then(|a| a.refusal(413, "body_too_large", None)) {
        Ok(r) => o.refused = Some(r),
        Err(e) => o.frames = Err(e),
    }
    o
}

/// A JSON body that stops arriving: 408 `body_timeout`, the connection
/// closed by the server.
pub(super) fn stalled_body(addr: &str, conv: &str, gauges: &Gauges) -> Outcome {
    let b = Behaviour::StalledBody;
    let mut o = outcome(conv, b, Run::None);
    let answer = connect_from(addr, Ipv4Addr::LOCALHOST, None).and_then(|mut s| {
        let _held = gauges.hold(b, 1);
        let h = head(
            addr,
            "/api/v1/chat/stream/start",
            "application/json",
            "Content-Length: 200\r\n",
        );
        exchange(
            &mut s,
            format!(r#"{h}{{"conversation_id":"{conv}","#).as_bytes(),
        )
    });
    match answer.and_then(|a| a.refusal(408, "body_timeout", None)) {
        Ok(r) => {
            o.refused = Some(r);
            o.closed = 1;
        }
        Err(e) => o.frames = Err(e),
    }
    o
}

/// A burst from an address of its own: `--max-connections-per-ip` plus
/// [`BURST_EXTRA`] connections, of which exactly the extra ones must be
/// closed by the server, unanswered.
pub(super) fn per_ip_burst(addr: &str, conv: &str, shared: &Shared) -> Outcome {
    let b = Behaviour::PerIpBurst;
    let mut o = outcome(conv, b, Run::None);
    let k = shared.bursts.fetch_add(1, Ordering::AcqRel);
    // 127.0.0.2 to 127.0.0.201: a burst never meets an earlier one's
    // connections the server has not yet seen close.
    let source = Ipv4Addr::new(127, 0, 0, 2 + u8::try_from(k % 200).unwrap_or(0));
    let n = usize::try_from(shared.limits.per_ip).unwrap_or(usize::MAX) + BURST_EXTRA;
    let mut conns = Vec::with_capacity(n);
    let _held = shared.gauges.hold(b, n as u64);
    for _ in 0..n {
        match connect_from(addr, source, None) {
            Ok(s) => conns.push(s),
            Err(e) => {
                o.frames = Err(e);
                return o;
            }
        }
    }
    let closed = count_closed(&conns, BURST_EXTRA);
    o.closed = closed as u64;
    if closed != BURST_EXTRA {
        o.frames = Err(format!(
            "{n} connections from {source} (limit {}): {closed} closed, not {BURST_EXTRA}",
            shared.limits.per_ip
        ));
    }
    o
}

/// How many of `conns` the server closed: polled until `expected` are, or
/// 8 s (the server's header timeout, 10 s, would close the others), then
/// once more after 300 ms to see that no more are.
fn count_closed(conns: &[TcpStream], expected: usize) -> usize {
    for s in conns {
        let _ = s.set_nonblocking(true);
    }
    let closed = |conns: &[TcpStream]| {
        conns
            .iter()
            .filter(|s| {
                // Closed (0), reset, or (never expected) answered.
                let mut buf = [0u8; 1];
                s.peek(&mut buf)
                    .map_or_else(|e| e.kind() != ErrorKind::WouldBlock, |_| true)
            })
            .count()
    };
    let start = Instant::now();
    let mut n = closed(conns);
    while n < expected && start.elapsed() < Duration::from_secs(8) {
        thread::sleep(Duration::from_millis(50));
        n = closed(conns);
    }
    thread::sleep(Duration::from_millis(300));
    closed(conns).max(n)
}

/// A reader that never reads (a receive buffer of 4 KiB) a run too large
/// for the socket buffers: the server must close the connection (its write
/// timeout), the response cut before its last chunk; or 503 `overloaded`.
pub(super) fn never_read(addr: &str, conv: &str, shared: &Shared) -> Outcome {
    let b = Behaviour::NeverRead;
    let mut o = outcome(conv, b, Run::One);
    o.scenario = BIG_SCENARIO.to_owned();
    let result = connect_from(addr, Ipv4Addr::LOCALHOST, Some(4096)).and_then(|mut s| {
        let _held = shared.gauges.hold(b, 1);
        let body = format!(
            r#"{{"message":"hello","conversation_id":"{conv}","agent_id":"{BIG_SCENARIO}","protocol":"custom"}}"#
        );
        let h = head(addr, "/api/v1/chat/stream/start", "application/json", &format!("Content-Length: {}\r\n", body.len()));
        s.write_all(format!("{h}{body}").as_bytes())
            .map_err(|e| format!("send: {e}"))?;
        let port = |a: std::io::Result<SocketAddr>| a.map(|a| a.port()).unwrap_or(0);
        let closed = wait_server_closed(port(s.peer_addr()), port(s.local_addr()), Duration::from_secs(60));
        let raw = read_all(&mut s);
        Ok((closed, raw))
    });
    let (closed, raw) = match result {
        Ok(r) => r,
        Err(e) => {
            o.frames = Err(e);
            return o;
        }
    };
    o.bytes = raw.len();
    match parse_answer(&raw) {
        Ok(a) if a.status == 503 => {
            o.run = Run::None;
            if let Err(e) = a
                .refusal(503, "overloaded", None)
                .map(|r| o.refused = Some(r))
            {
                o.frames = Err(e);
            }
        }
        Ok(a) if a.status == 200 && closed && !a.complete => {
            o.closed = 1;
        }
        Ok(a) => {
            o.frames = Err(format!(
                "status {}, closed by the server: {closed}, response complete: {}",
                a.status, a.complete
            ));
        }
        Err(e) => o.frames = Err(e),
    }
    o
}

/// A pushed run's lines: `run.started`, a text of `deltas` deltas of
/// `delta`, with `run.finished` when `terminal`, then `late` more deltas.
pub(super) fn push_lines(
    run_id: &str,
    conv: &str,
    deltas: usize,
    delta: &str,
    terminal: bool,
    late: usize,
) -> Vec<String> {
    let mut lines = Vec::new();
    let mut event = |kind: &str, data: serde_json::Value| {
        let e = serde_json::json!({"version": 1, "type": kind, "run_id": run_id,
            "conversation_id": conv, "sequence": lines.len(),
            "timestamp": "2026-08-17T09:00:00.000Z", "namespace": [], "data": data});
        lines.push(e.to_string());
    };
    let text = serde_json::json!({"message_id": "m1", "delta": delta});
    event(
        "run.started",
        serde_json::json!({"harness_id": "soak", "adapter_version": "1.0.0"}),
    );
    event(
        "text.started",
        serde_json::json!({"message_id": "m1", "role": "assistant"}),
    );
    (0..deltas).for_each(|_| event("text.delta", text.clone()));
    if terminal {
        event("text.finished", serde_json::json!({"message_id": "m1"}));
        event(
            "run.finished",
            serde_json::json!({"outcome": "success", "stop_reason": "end_turn"}),
        );
    }
    (0..late).for_each(|_| event("text.delta", text.clone()));
    lines
}

/// Events a late push sends after its terminal.
const LATE_EVENTS: usize = 3;

/// A push: whose harness stops sending after three lines (`stall`: the run
/// ends as a closure after `--ingest-idle-timeout`, summary `run.error`
/// with rule 12), or with [`LATE_EVENTS`] events after its terminal in
/// one write (summary `run.finished`, those dropped and counted); or 503
/// `overloaded`.
pub(super) fn push(addr: &str, conv: &str, stall: bool, shared: &Shared) -> Outcome {
    let b = if stall {
        Behaviour::PushStall
    } else {
        Behaviour::PushLate
    };
    let mut o = outcome(conv, b, Run::One);
    let run_id = format!("{conv}-push");
    let answer = connect_from(addr, Ipv4Addr::LOCALHOST, None).and_then(|mut s| {
        let _held = shared.gauges.hold(b, 1);
        if stall {
            let mut raw = head(
                addr,
                "/api/v1/runs",
                "application/x-ndjson",
                "Transfer-Encoding: chunked\r\n",
            );
            for line in push_lines(&run_id, conv, 1, "hello", false, 0) {
                raw.push_str(&format!("{:x}\r\n{line}\n\r\n", line.len() + 1));
            }
            return exchange(&mut s, raw.as_bytes());
        }
        let mut body = push_lines(&run_id, conv, 2, "hello", true, LATE_EVENTS).join("\n");
        body.push('\n');
        let h = head(
            addr,
            "/api/v1/runs",
            "application/x-ndjson",
            &format!("Content-Length: {}\r\n", body.len()),
        );
        exchange(&mut s, format!("{h}{body}").as_bytes())
    });
    match answer {
        Ok(a) if a.status == 503 => {
            o.run = Run::None;
            match a.refusal(503, "overloaded", None) {
                Ok(r) => o.refused = Some(r),
                Err(e) => o.frames = Err(e),
            }
        }
        Ok(a) => match check_summary(&a, stall) {
            Ok(dropped) => o.dropped = dropped,
            Err(e) => o.frames = Err(e),
        },
        Err(e) => o.frames = Err(e),
    }
    o
}

/// A push's answer: 200 and its summary (`gateway.md`, "Push ingest") as a
/// stalled (`stall`) or a late push must end. Returns its `dropped`.
pub(super) fn check_summary(a: &Answer, stall: bool) -> Result<u64, String> {
    let j = a
        .json()
        .filter(|_| a.status == 200 && a.complete)
        .ok_or_else(|| {
            format!(
                "push answered {} {:?}",
                a.status,
                String::from_utf8_lossy(&a.body)
            )
        })?;
    let dropped = j["dropped"]
        .as_u64()
        .ok_or(format!("summary without dropped: {j}"))?;
    let (terminal, rule, most) = if stall {
        ("run.error", "12", 0)
    } else {
        ("run.finished", "4", LATE_EVENTS as u64)
    };
    let rule_ok = j["violations"][0]["rule"] == rule || (!stall && dropped == 0);
    if j["terminal"] != terminal || j["outcome"] != "ended" || !rule_ok || dropped > most {
        return Err(format!(
            "push summary {j}: not {terminal}, rule {rule}, at most {most} dropped"
        ));
    }
    Ok(dropped)
}

/// Per behaviour: what its clients held, what the server dropped or
/// closed, what it refused.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Line {
    /// Requests (a burst is one).
    pub(super) requests: u64,
    /// Connections held at once at peak.
    pub(super) held: u64,
    /// Most bytes one connection had in its buffers when the server cut it.
    pub(super) held_bytes: usize,
    /// Connections the server closed (write timeout, per-address limit,
    /// body timeout).
    pub(super) closed: u64,
    /// Events dropped after a terminal (push summaries).
    pub(super) dropped: u64,
    /// Refusals by status and code.
    pub(super) refused: BTreeMap<String, u64>,
}

/// The report's lines, by behaviour (only those that ran).
pub(super) fn report(outcomes: &[Outcome], gauges: &Gauges) -> BTreeMap<String, Line> {
    let mut lines: BTreeMap<String, Line> = BTreeMap::new();
    for o in outcomes {
        let line = lines.entry(format!("{:?}", o.behaviour)).or_default();
        line.requests += 1;
        line.held = gauges.peak(o.behaviour);
        line.closed += o.closed;
        line.dropped += o.dropped;
        if o.behaviour == Behaviour::NeverRead && o.closed > 0 {
            line.held_bytes = line.held_bytes.max(o.bytes);
        }
        if let Some(r) = &o.refused {
            *line.refused.entry(r.clone()).or_default() += 1;
        }
    }
    lines
}

/// Prints [`report`]'s lines.
pub(super) fn print_report(lines: &BTreeMap<String, Line>) {
    println!("per behaviour: held (connections at once, peak), dropped/closed, refused:");
    for (b, l) in lines {
        let refused: Vec<String> = l.refused.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        let bytes = if l.held_bytes > 0 {
            format!(", up to {} KiB buffered when cut", l.held_bytes / 1024)
        } else {
            String::new()
        };
        println!(
            "  {b}: {} requests; held {}{bytes}; {} events dropped, {} connections closed by the server; refused {}",
            l.requests,
            l.held,
            l.dropped,
            l.closed,
            if refused.is_empty() {
                "none".to_owned()
            } else {
                refused.join(", ")
            }
        );
    }
}

/// The number after `key` (`refused=`) in a log line.
fn field(line: &str, key: &str) -> Option<u64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.parse().ok())
}

/// What the server's log output says about the door.
#[derive(Debug, Default, PartialEq)]
pub(super) struct LogCounts {
    /// Lines holding [`MARKER`]: an invalid id that reached a log line.
    pub(super) forged: u64,
    /// `write timeout` lines.
    pub(super) write_timeouts: u64,
    /// Connections closed for `--max-connections-per-ip` (the `refused=N`
    /// of its count lines).
    pub(super) per_ip_closed: u64,
    /// `overloaded: run refused` lines.
    pub(super) overloaded: u64,
    /// The most runs open those lines name (`open=N`): the runs held at
    /// peak, when the limit was reached.
    pub(super) peak_open: u64,
    /// `request body too large` lines.
    pub(super) too_large: u64,
    /// `request body stopped arriving` lines.
    pub(super) body_timeouts: u64,
    /// Pushes ended by `--ingest-idle-timeout`.
    pub(super) ingest_idle: u64,
}

impl LogCounts {
    /// Counts the lines of `log`.
    pub(super) fn of(log: &str) -> LogCounts {
        let mut c = LogCounts::default();
        for line in log.lines() {
            let has = |s: &str| line.contains(s);
            c.forged += u64::from(has(MARKER));
            c.write_timeouts += u64::from(has("write timeout"));
            if has("overloaded: run refused") {
                c.overloaded += 1;
                c.peak_open = c.peak_open.max(field(line, "open=").unwrap_or(0));
            }
            c.too_large += u64::from(has("request body too large"));
            c.body_timeouts += u64::from(has("request body stopped arriving"));
            c.ingest_idle += u64::from(has("sent no line for the ingest idle timeout"));
            if has("--max-connections-per-ip") {
                c.per_ip_closed += field(line, "refused=").unwrap_or(0);
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_parsed_whole_or_in_part() {
        let raw = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 5\r\ncontent-length: 42\r\n\r\n{\"code\":\"overloaded\",\"error\":\"overloaded\"}";
        let a = parse_answer(raw).unwrap();
        assert_eq!(
            (a.status, a.retry_after.as_deref(), a.complete),
            (503, Some("5"), true)
        );
        assert_eq!(
            a.refusal(503, "overloaded", None),
            Ok("503 overloaded".into())
        );
        assert!(a.refusal(400, "overloaded", None).is_err());
        let cut = parse_answer(&raw[..raw.len() - 3]).unwrap();
        assert!(!cut.complete && cut.refusal(503, "overloaded", None).is_err());
        let no_retry = String::from_utf8_lossy(raw).replace("retry-after: 5\r\n", "");
        let a = parse_answer(no_retry.as_bytes()).unwrap();
        assert!(
            a.refusal(503, "overloaded", None).is_err(),
            "Retry-After is required"
        );
        assert!(parse_answer(b"HTTP/1.1 200 OK\r\n").is_err());
    }

    #[test]
    fn an_invalid_id_answer_must_name_its_field() {
        let body = r#"{"code":"invalid_id","error":"invalid_id","field":"runId"}"#;
        let raw = format!(
            "HTTP/1.1 400 Bad Request\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        let a = parse_answer(raw.as_bytes()).unwrap();
        assert_eq!(
            a.refusal(400, "invalid_id", Some("runId")),
            Ok("400 invalid_id (runId)".into())
        );
        assert!(a.refusal(400, "invalid_id", Some("threadId")).is_err());
    }

    #[test]
    fn chunked_bodies_are_whole_only_with_their_last_chunk() {
        let raw = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let a = parse_answer(raw).unwrap();
        assert_eq!((a.body.as_slice(), a.complete), (&b"abcde"[..], true));
        let a = parse_answer(&raw[..raw.len() - 7]).unwrap();
        assert_eq!((a.body.as_slice(), a.complete), (&b"abcde"[..], false));
        let a = parse_answer(&raw[..raw.len() - 8]).unwrap();
        assert_eq!((a.body.as_slice(), a.complete), (&b"abcd"[..], false));
    }

    #[test]
    fn push_summaries_are_checked() {
        let answer = |body: &str| Answer {
            status: 200,
            retry_after: None,
            body: body.as_bytes().to_vec(),
            complete: true,
        };
        let late = r#"{"dropped":3,"events_in":9,"outcome":"ended","run_id":"r","terminal":"run.finished","violations":[{"position":8,"rule":"4"}]}"#;
        assert_eq!(check_summary(&answer(late), false), Ok(3));
        assert!(check_summary(&answer(late), true).is_err());
        let too_many = late.replace(r#""dropped":3"#, r#""dropped":4"#);
        assert!(check_summary(&answer(&too_many), false).is_err());
        let stall = r#"{"dropped":0,"events_in":3,"outcome":"ended","run_id":"r","terminal":"run.error","violations":[{"position":3,"rule":"12"}]}"#;
        assert_eq!(check_summary(&answer(stall), true), Ok(0));
        assert!(check_summary(&answer(stall), false).is_err());
    }

    #[test]
    fn the_tcp_table_gives_the_servers_side() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue\n\
            0: 0100007F:A4E1 0100007F:C350 01 00000000:00000000\n\
            1: 0100007F:C350 0100007F:A4E1 04 00000000:00000000\n";
        assert_eq!(tcp_state(table, 0xC350, 0xA4E1), Some(4));
        assert_eq!(tcp_state(table, 0xA4E1, 0xC350), Some(1));
        assert_eq!(tcp_state(table, 80, 0xC350), None);
    }

    #[test]
    fn the_servers_log_is_counted() {
        let log = "INFO lce::serve: write timeout: the client accepted no byte in time\n\
            WARN lce::serve: connections closed at once: their address holds --max-connections-per-ip already refused=3 max_per_ip=4\n\
            WARN lce::serve: connections closed at once: their address holds --max-connections-per-ip already refused=1 max_per_ip=4\n\
            WARN lce::gateway: overloaded: run refused open=3 max=3\n\
            INFO lce::gateway: request body too large: 413 max_bytes=65536\n\
            INFO lce::gateway: request body stopped arriving: 408 idle_secs=1.0\n\
            INFO lce::gateway: the pushing harness sent no line for the ingest idle timeout: its run ends\n\
            SOAK-FORGED forged\n";
        let c = LogCounts::of(log);
        assert_eq!(
            c,
            LogCounts {
                forged: 1,
                write_timeouts: 1,
                per_ip_closed: 4,
                overloaded: 1,
                peak_open: 3,
                too_large: 1,
                body_timeouts: 1,
                ingest_idle: 1,
            }
        );
    }

    #[test]
    fn limits_leave_room_for_the_clients_and_one_burst() {
        for clients in [1, 20, 100, 200, 2000] {
            let l = Limits::for_clients(clients);
            assert!(
                l.max_runs < clients.max(8),
                "{clients}: some starts are refused"
            );
            assert!(
                l.per_ip > clients,
                "{clients}: the clients' own address is never refused"
            );
            assert!(l.max_connections >= clients + l.per_ip + BURST_EXTRA as u64);
        }
        let args = Limits::for_clients(100).args();
        assert!(
            args.windows(2)
                .any(|w| w[0] == "--max-runs" && w[1] == "50")
        );
        assert!(args.iter().any(|a| a == "--allow-anonymous-ingest"));
    }

    #[test]
    fn gauges_keep_the_peak() {
        let g = Gauges::default();
        let a = g.hold(Behaviour::NeverRead, 1);
        let b = g.hold(Behaviour::NeverRead, 2);
        drop(a);
        drop(b);
        let _c = g.hold(Behaviour::NeverRead, 1);
        assert_eq!(g.peak(Behaviour::NeverRead), 3);
        assert_eq!(g.peak(Behaviour::Full), 0);
    }

    #[test]
    fn the_report_sums_by_behaviour() {
        let g = Gauges::default();
        drop(g.hold(Behaviour::PushLate, 2));
        let late = |dropped, refused: Option<&str>| Outcome {
            dropped,
            refused: refused.map(str::to_owned),
            ..outcome("c", Behaviour::PushLate, Run::One)
        };
        let mut cut = outcome("d", Behaviour::NeverRead, Run::One);
        (cut.closed, cut.bytes) = (1, 4096);
        let outcomes = [
            late(3, None),
            late(2, None),
            late(0, Some("503 overloaded")),
            cut,
        ];
        let r = report(&outcomes, &g);
        let push = &r["PushLate"];
        assert_eq!((push.requests, push.held, push.dropped), (3, 2, 5));
        assert_eq!(push.refused["503 overloaded"], 1);
        let never = &r["NeverRead"];
        assert_eq!((never.closed, never.held_bytes), (1, 4096));
        assert!(!r.contains_key("Full"), "only behaviours that ran");
    }

    #[test]
    fn the_big_run_passes_the_send_buffer_by_a_mib() {
        assert_eq!(big_deltas("4096\t16384\t4194304\n"), 80);
        assert_eq!(big_deltas(""), 80);
        assert_eq!(big_deltas("4096 16384 6291456"), 112);
    }

    #[test]
    fn pushed_lines_are_numbered_in_order() {
        let lines = push_lines("r", "c", 2, "x", true, 3);
        assert_eq!(lines.len(), 9);
        for (i, l) in lines.iter().enumerate() {
            let j: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_eq!(j["sequence"], i);
        }
        assert!(lines[5].contains("run.finished"));
        assert_eq!(push_lines("r", "c", 1, "x", false, 0).len(), 3);
    }
}
