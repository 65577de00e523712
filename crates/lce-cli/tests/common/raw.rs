//! Raw-socket and process helpers for the server-limits tests: connections
//! that send part of a request, reads bounded in time, signals, exits. The
//! lints [`common`](super) allows are allowed here too.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::{Duration, Instant};

/// The first line of a request header, and a `Host` line: a header that is
/// not finished (no blank line).
pub const HALF_HEADER: &str = "POST /api/v1/chat/stream/start HTTP/1.1\r\nHost: lce\r\n";

/// Connects to `addr`.
pub fn connect(addr: &str) -> TcpStream {
    TcpStream::connect(addr).unwrap()
}

/// Connects to `addr` and sends [`HALF_HEADER`].
pub fn half_header(addr: &str) -> TcpStream {
    let mut s = connect(addr);
    s.write_all(HALF_HEADER.as_bytes()).unwrap();
    s
}

/// How a read that waited ended.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadEnd {
    /// The peer closed the connection (end of file, or a reset); the bytes
    /// read before.
    Closed(Vec<u8>),
    /// Still open after the wait; the bytes read meanwhile.
    Open(Vec<u8>),
}

/// Reads from `s` until the peer closes it or `wait` has passed.
pub fn read_until_closed(s: &mut TcpStream, wait: Duration) -> ReadEnd {
    let deadline = Instant::now() + wait;
    let mut got = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return ReadEnd::Open(got);
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => return ReadEnd::Closed(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return ReadEnd::Open(got);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
                ) =>
            {
                return ReadEnd::Closed(got);
            }
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// Reads from `s` until what was read contains `needle` after the response
/// header (an empty `needle`: until the header's end); panics when that has
/// not happened within `wait`.
pub fn read_until_in_body(s: &mut TcpStream, needle: &[u8], wait: Duration) -> Vec<u8> {
    let deadline = Instant::now() + wait;
    let mut got = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let body = &got[end + 4..];
            if needle.is_empty() || body.windows(needle.len()).any(|w| w == needle) {
                return got;
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "not received in time: {needle:?}");
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => panic!("closed before {needle:?}"),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// Sends SIGTERM to `child` with `kill -TERM`.
pub fn sigterm(child: &Child) {
    let status = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill -TERM failed");
}

/// Waits at most `wait` for `child` to exit: its exit code (-1 when killed
/// by a signal), or `None` if it is still running.
pub fn wait_exit(child: &mut Child, wait: Duration) -> Option<i32> {
    let deadline = Instant::now() + wait;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status.code().unwrap_or(-1));
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
