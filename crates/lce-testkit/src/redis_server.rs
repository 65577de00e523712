//! [`RedisServer`]: a throwaway `redis-server` for tests, on a free
//! loopback port, in a fresh directory, writing every change to its
//! append-only file before it answers (`--appendonly yes --appendfsync
//! always`), so a test can kill it (`kill -9`) and restart it without
//! losing an acknowledged write.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a start or restart may take before it counts as failed.
const STARTUP: Duration = Duration::from_secs(20);

/// A `redis-server` process owned by a test: killed and its directory
/// removed when dropped.
///
/// ```no_run
/// use lce_testkit::redis_server::RedisServer;
/// let Some(mut server) = RedisServer::start() else { return }; // not installed: skipped
/// let url = server.url(); // redis://127.0.0.1:PORT
/// server.kill9();
/// server.restart(); // same port, same append-only file
/// # let _ = url;
/// ```
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
}

impl RedisServer {
    /// Starts a server, or `None` when `redis-server` is not installed (and
    /// says so on stderr: `SKIPPED: redis-server not installed`).
    ///
    /// # Panics
    ///
    /// When `redis-server` is not installed and the environment variable
    /// `CI` is set (CI installs it, so a skip there would hide the tests),
    /// or when the server does not start.
    #[allow(clippy::panic, clippy::print_stderr)]
    pub fn start() -> Option<RedisServer> {
        let installed = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !installed {
            if std::env::var_os("CI").is_some() {
                panic!("redis-server is required in CI: .ci/run installs it");
            }
            eprintln!("SKIPPED: redis-server not installed");
            return None;
        }
        let mut server = RedisServer {
            child: None,
            port: 0,
            dir: fresh_dir(),
        };
        // A port free a moment ago may be taken by the time the server
        // binds it: try a few.
        for _ in 0..5 {
            server.port = free_port();
            if server.spawn_and_wait() {
                return Some(server);
            }
            server.kill_child();
        }
        panic!(
            "redis-server did not start (5 ports tried); its last log: {}",
            std::fs::read_to_string(server.dir.join("redis.log")).unwrap_or_default()
        );
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory of its append-only file and log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Kills the server with SIGKILL (`kill -9`): no shutdown, no final
    /// write; only what it wrote before answering survives.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-9", &child.id().to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port and directory, so it loads
    /// its append-only file; returns once it answers `PING` (after loading).
    /// A running server is killed first.
    ///
    /// # Panics
    ///
    /// When it does not come back.
    #[allow(clippy::panic)]
    pub fn restart(&mut self) {
        self.kill9();
        // The port was just released by the dead process; give a slow
        // machine a few tries.
        for _ in 0..5 {
            if self.spawn_and_wait() {
                return;
            }
            self.kill_child();
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "redis-server did not restart on port {}; its log: {}",
            self.port,
            self.dir.join("redis.log").display()
        );
    }

    /// Spawns the process and waits until it answers `+PONG`.
    fn spawn_and_wait(&mut self) -> bool {
        let spawned = Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--logfile", "redis.log"])
            .args(["--appendonly", "yes", "--appendfsync", "always"])
            .args(["--save", ""])
            .args(["--daemonize", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(child) = spawned else {
            return false;
        };
        self.child = Some(child);
        let started = Instant::now();
        while started.elapsed() < STARTUP {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(_)) = child.try_wait()
            {
                // Exited: the port was taken, or it could not start.
                self.child = None;
                return false;
            }
            if ping(self.port) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn kill_child(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill_child();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether a server on `port` answers `PING` with `+PONG` (not while it
/// is still loading its file: that answer is `-LOADING ...`).
fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut answer = [0u8; 7];
    let mut got = 0;
    while got < answer.len() {
        match stream.read(&mut answer[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    answer[..got].starts_with(b"+PONG")
}

/// A loopback port nothing listened on a moment ago.
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map_or(0, |a| a.port())
}

/// A new, empty directory under the system's temp dir.
fn fresh_dir() -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("lce-redis-{}-{nanos}-{n}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir
}
