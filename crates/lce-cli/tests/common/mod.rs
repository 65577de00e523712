//! What the CLI's integration tests share: the workspace root, a running
//! `lce serve`, and a minimal raw-TCP HTTP/1.1 client (so the tests talk to
//! the server over real loopback HTTP without an HTTP client dependency).
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

pub mod raw;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The bundled scenarios, `fixtures/scenarios/*.jsonl`, sorted.
#[allow(dead_code)] // not every test binary uses every helper
pub fn scenario_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("fixtures/scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no scenarios");
    v
}

/// The Python harness example (`examples/harness-python/harness.py`) on a
/// free loopback port; killed on drop.
pub struct PythonHarness {
    pub child: Child,
    /// Its base url, as it printed it.
    pub url: String,
}

impl PythonHarness {
    /// Starts the harness with `--port 0 --quiet ARGS...` and reads its
    /// url from its first stdout line; `None` (the test is skipped) when
    /// `python3` is not installed, outside CI only.
    #[allow(clippy::print_stderr)]
    pub fn start(args: &[&str]) -> Option<PythonHarness> {
        let spawned = Command::new("python3")
            .arg(root().join("examples/harness-python/harness.py"))
            .args(["--port", "0", "--quiet"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "python3 is required in CI: {e}"
                );
                eprintln!("SKIPPED: python3 not found");
                return None;
            }
        };
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("{line}"))
            .to_owned();
        Some(PythonHarness { child, url })
    }
}

impl Drop for PythonHarness {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running `lce serve` on a free loopback port; killed on drop.
pub struct Server {
    pub child: Child,
    pub addr: String,
}

impl Server {
    /// Starts `lce serve --speed 0 --scenarios fixtures/scenarios`: the
    /// bundled scenarios, unpaced.
    #[allow(dead_code)] // not every test binary uses every helper
    pub fn with_bundled_scenarios() -> Server {
        let dir = root().join("fixtures/scenarios");
        Server::start(&["--speed", "0", "--scenarios", dir.to_str().unwrap()])
    }

    /// Starts `lce serve --addr 127.0.0.1:0 ARGS...` and reads the address
    /// from its first stdout line.
    pub fn start<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Server {
        // LCE_TEST_SERVER_LOGS=1 shows the servers' logs (debugging).
        let logs = if std::env::var_os("LCE_TEST_SERVER_LOGS").is_some() {
            Stdio::inherit()
        } else {
            Stdio::null()
        };
        Server::start_logging(args, logs)
    }

    /// As [`Server::start`], its logs (stderr) going to `logs`.
    pub fn start_logging<S: AsRef<std::ffi::OsStr>>(args: &[S], logs: Stdio) -> Server {
        Server::start_with_env(args, &[], logs)
    }

    /// As [`Server::start_logging`], with `env` set (and every other
    /// `LCE_*` variable of the test's environment removed).
    pub fn start_with_env<S: AsRef<std::ffi::OsStr>>(
        args: &[S],
        env: &[(&str, &str)],
        logs: Stdio,
    ) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_lce"));
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("LCE_") {
                command.env_remove(name);
            }
        }
        let mut child = command
            .envs(env.iter().copied())
            .arg("serve")
            .args(["--addr", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(logs)
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("{line}"))
            .to_owned();
        Server { child, addr }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A whole HTTP response.
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `POST path` with a JSON body and returns the open connection.
pub fn send(addr: &str, path: &str, body: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    s
}

/// Sends `METHOD path` with extra headers and a body, and reads the whole
/// response, undoing chunking.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    parse_response(&raw)
}

/// An SSE text without its `id:` lines.
pub fn strip_ids(text: &str) -> String {
    text.split_inclusive('\n')
        .filter(|l| !l.starts_with("id: "))
        .collect()
}

/// The id of each frame that starts with an `id:` line, and the byte
/// offset where that frame ends.
pub fn frame_ids(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut end = 0;
    for frame in text.split_inclusive("\n\n") {
        end += frame.len();
        if let Some(id) = frame.strip_prefix("id: ") {
            out.push((id.lines().next().unwrap_or("").to_owned(), end));
        }
    }
    out
}

/// Sends `POST path` and reads the whole response, undoing chunking.
pub fn post(addr: &str, path: &str, body: &str) -> HttpResponse {
    let mut s = send(addr, path, body);
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    parse_response(&raw)
}

/// Parses a whole raw HTTP/1.1 response.
pub fn parse_response(raw: &[u8]) -> HttpResponse {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("no header end");
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_owned(), v.trim().to_owned())
        })
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    HttpResponse {
        status,
        headers,
        body,
    }
}

/// Undoes `Transfer-Encoding: chunked`.
pub fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n").unwrap();
        let size =
            usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap().trim(), 16).unwrap();
        b = &b[eol + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size + 2..];
    }
}

/// Runs `lce ARGS` to the end: exit status (-1 if killed), stdout, stderr.
pub fn lce(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lce"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// A push (`POST /api/v1/runs`) whose body is sent line by line (chunked)
/// while the test goes on.
pub struct SlowPush {
    stream: TcpStream,
}

impl SlowPush {
    /// Opens the push on `addr` with the ingest token `bearer`; reads
    /// wait at most `bound`.
    pub fn open(addr: &str, bearer: &str, bound: Duration) -> SlowPush {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(bound)).unwrap();
        write!(
            stream,
            "POST /api/v1/runs HTTP/1.1\r\nHost: lce\r\nAuthorization: Bearer {bearer}\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        .unwrap();
        SlowPush { stream }
    }

    /// Sends one line (and its newline) as a chunk.
    pub fn send(&mut self, line: &str) {
        let chunk = format!("{line}\n");
        write!(self.stream, "{:x}\r\n{chunk}\r\n", chunk.len()).unwrap();
        self.stream.flush().unwrap();
    }

    /// Ends the body and reads the answer.
    pub fn finish(mut self) -> HttpResponse {
        self.stream.write_all(b"0\r\n\r\n").unwrap();
        let mut raw = Vec::new();
        let _ = self.stream.read_to_end(&mut raw);
        parse_response(&raw)
    }
}
