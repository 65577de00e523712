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
    /// More arguments after the defaults (a replica's `--replicaof`, a
    /// Cluster node's `--cluster-enabled yes`, ...).
    extra: Vec<String>,
    /// A Sentinel: `redis-server sentinel.conf --sentinel`.
    sentinel: Option<String>,
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
    pub fn start() -> Option<RedisServer> {
        Self::start_with(&[])
    }

    /// [`RedisServer::start`] with `extra` arguments after the defaults
    /// (kept for [`RedisServer::restart`]).
    ///
    /// # Panics
    ///
    /// As [`RedisServer::start`].
    pub fn start_with(extra: &[&str]) -> Option<RedisServer> {
        Self::launch(extra.iter().map(|s| (*s).to_owned()).collect(), None)
    }

    /// A Sentinel whose configuration file holds `config` (its `port` line
    /// is added here); [`RedisServer::port`] is the Sentinel's port.
    ///
    /// # Panics
    ///
    /// As [`RedisServer::start`].
    pub fn start_sentinel(config: &str) -> Option<RedisServer> {
        Self::launch(Vec::new(), Some(config.to_owned()))
    }

    #[allow(clippy::panic, clippy::print_stderr)]
    fn launch(extra: Vec<String>, sentinel: Option<String>) -> Option<RedisServer> {
        static REAPED: std::sync::Once = std::sync::Once::new();
        REAPED.call_once(reap_strays);
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
            extra,
            sentinel,
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

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Sends the process `signal` (`STOP` freezes it, `CONT` lets it go on).
    pub fn signal(&self, signal: &str) {
        if let Some(child) = &self.child {
            let _ = Command::new("kill")
                .args([&format!("-{signal}"), &child.id().to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }

    /// Whether the process is running (not killed, not exited).
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Replaces the extra arguments used by the next
    /// [`RedisServer::restart`] (a failed primary that comes back as a
    /// replica of the new one).
    pub fn set_extra(&mut self, extra: &[&str]) {
        self.extra = extra.iter().map(|s| (*s).to_owned()).collect();
    }

    /// Spawns the process and waits until it answers `+PONG`.
    fn spawn_and_wait(&mut self) -> bool {
        let mut command = Command::new("redis-server");
        if let Some(config) = &self.sentinel {
            let path = self.dir.join("sentinel.conf");
            let text = format!(
                "port {}\nbind 127.0.0.1\ndir {}\nlogfile sentinel.log\npidfile {}\n{config}\n",
                self.port,
                self.dir.display(),
                self.dir.join("redis.pid").display()
            );
            if std::fs::write(&path, text).is_err() {
                return false;
            }
            command.arg(&path).arg("--sentinel");
        } else {
            command
                .args(["--port", &self.port.to_string()])
                .args(["--bind", "127.0.0.1"])
                .arg("--dir")
                .arg(&self.dir)
                .args(["--logfile", "redis.log"])
                .arg("--pidfile")
                .arg(self.dir.join("redis.pid"))
                .args(["--appendonly", "yes", "--appendfsync", "always"])
                .args(["--save", ""])
                .args(["--daemonize", "no"])
                .args(&self.extra);
        }
        let spawned = command
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
    // A server with `requirepass` answers before any `AUTH`: it is up.
    answer[..got].starts_with(b"+PONG") || answer[..got].starts_with(b"-NOAUTH")
}

/// Kills the servers (and removes the folders) that test processes which
/// are gone left behind: a test that failed while a task held its
/// servers exits without dropping them, and a stray Sentinel would
/// reconfigure whatever later server gets its old ports. A folder names
/// the process that made it (`lce-redis-<pid>-...`); its server's pid is
/// in its `redis.pid`.
fn reap_strays() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix("lce-redis-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if owner == std::process::id() || Path::new("/proc").join(owner.to_string()).exists() {
            continue;
        }
        let dir = entry.path();
        // Only a redis-server: the pid may have been reused since.
        if let Ok(pid) = std::fs::read_to_string(dir.join("redis.pid"))
            && let Ok(pid) = pid.trim().parse::<u32>()
            && std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.starts_with(b"redis-server"))
        {
            let _ = Command::new("kill")
                .args(["-9", &pid.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
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
