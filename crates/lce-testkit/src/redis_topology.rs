//! Real Redis topologies for failover tests, on loopback: a primary with a
//! replica watched by Sentinel ([`SentinelPair`]), and a Cluster of three
//! primaries with a replica each ([`RedisCluster`]). Every node is a
//! [`RedisServer`] (fsync on every write); `redis-cli` (installed with
//! `redis-server`) creates the Cluster and asks the nodes and Sentinel what
//! they see.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::redis_server::RedisServer;

/// How long a failover (or the Cluster's creation) may take before the
/// helper gives up.
const SETTLE: Duration = Duration::from_secs(60);

/// A replica's first sync starts at once (the default waits 5 s for more
/// replicas to share one transfer).
const QUICK_SYNC: [&str; 2] = ["--repl-diskless-sync-delay", "0"];

/// A Cluster node: its state in its own folder, a node timeout of 1 s
/// (failovers within seconds), a replica's first sync at once.
const CLUSTER_NODE: [&str; 8] = [
    QUICK_SYNC[0],
    QUICK_SYNC[1],
    "--cluster-enabled",
    "yes",
    "--cluster-config-file",
    "nodes.conf",
    "--cluster-node-timeout",
    "1000",
];

/// The name Sentinel knows the primary by.
pub const MASTER_NAME: &str = "lce";

/// `redis-cli -p PORT ARGS...`'s output, or `None` when it failed.
pub fn cli(port: u16, args: &[&str]) -> Option<String> {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Waits until `done()` or `SETTLE`; answers whether it happened.
fn settle(mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < SETTLE {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// Whether the replica on `port` has its link to the primary up.
fn linked(port: u16) -> bool {
    cli(port, &["INFO", "replication"]).is_some_and(|i| i.contains("master_link_status:up"))
}

/// A primary, its replica, and one Sentinel watching them (quorum 1,
/// `down-after-milliseconds` 2000), so that killing the primary promotes
/// the replica within a few seconds.
#[derive(Debug)]
pub struct SentinelPair {
    /// The node that is the primary now.
    pub primary: RedisServer,
    /// The node that replicates it now.
    pub replica: RedisServer,
    /// The Sentinel.
    pub sentinel: RedisServer,
}

impl SentinelPair {
    /// Starts the three processes and waits until the replica is linked
    /// and Sentinel knows it; `None` when `redis-server` is not installed
    /// (outside CI).
    ///
    /// # Panics
    ///
    /// When the topology does not come up in time.
    #[allow(clippy::panic)]
    pub fn start() -> Option<SentinelPair> {
        let primary = RedisServer::start_with(&QUICK_SYNC)?;
        let port = primary.port().to_string();
        let replica = RedisServer::start_with(
            &[&QUICK_SYNC[..], &["--replicaof", "127.0.0.1", &port]].concat(),
        )?;
        assert!(
            settle(|| linked(replica.port())),
            "the replica never linked"
        );
        let sentinel = RedisServer::start_sentinel(&format!(
            "sentinel monitor {MASTER_NAME} 127.0.0.1 {port} 1\n\
             sentinel down-after-milliseconds {MASTER_NAME} 2000\n\
             sentinel failover-timeout {MASTER_NAME} 5000\n"
        ))?;
        let knows_replica = settle(|| {
            cli(sentinel.port(), &["SENTINEL", "replicas", MASTER_NAME])
                .is_some_and(|r| r.contains(&replica.port().to_string()))
        });
        if !knows_replica {
            panic!("Sentinel never saw the replica");
        }
        Some(SentinelPair {
            primary,
            replica,
            sentinel,
        })
    }

    /// `redis+sentinel://127.0.0.1:PORT/lce`.
    pub fn url(&self) -> String {
        format!(
            "redis+sentinel://127.0.0.1:{}/{MASTER_NAME}",
            self.sentinel.port()
        )
    }

    /// The port of the primary Sentinel names now.
    pub fn named_primary(&self) -> Option<u16> {
        let out = cli(
            self.sentinel.port(),
            &["SENTINEL", "get-master-addr-by-name", MASTER_NAME],
        )?;
        out.lines().nth(1)?.trim().parse().ok()
    }

    /// Whether Sentinel sees the primary as a plain, healthy primary (no
    /// failover in progress: until then it names no primary to clients).
    pub fn settled(&self) -> bool {
        cli(self.sentinel.port(), &["SENTINEL", "MASTER", MASTER_NAME]).is_some_and(|m| {
            let lines: Vec<&str> = m.lines().collect();
            lines
                .iter()
                .position(|l| *l == "flags")
                .and_then(|k| lines.get(k + 1))
                .is_some_and(|flags| *flags == "master")
        })
    }

    /// Kills the primary with SIGKILL and waits until Sentinel has
    /// promoted the replica; then brings the failed node back as the new
    /// primary's replica (as an operator would) and waits until the pair
    /// is whole again: the node Sentinel names is a primary and the other
    /// is linked to it. On a loaded machine Sentinel may fail over once
    /// more meanwhile; the fields follow whatever it settled on.
    ///
    /// # Panics
    ///
    /// When the failover does not happen in time.
    #[allow(clippy::panic)]
    pub fn fail_over(&mut self) {
        self.primary.kill9();
        let promoted = self.replica.port();
        if !settle(|| self.named_primary() == Some(promoted)) {
            panic!("Sentinel did not promote the replica in time");
        }
        std::mem::swap(&mut self.primary, &mut self.replica);
        let port = promoted.to_string();
        self.replica
            .set_extra(&[&QUICK_SYNC[..], &["--replicaof", "127.0.0.1", &port]].concat());
        self.replica.restart();
        let whole = settle(|| {
            let Some(named) = self.named_primary() else {
                return false;
            };
            let other = if named == self.primary.port() {
                self.replica.port()
            } else {
                self.primary.port()
            };
            cli(named, &["ROLE"]).is_some_and(|r| r.starts_with("master"))
                && linked(other)
                && self.settled()
        });
        if !whole {
            panic!(
                "the pair never became whole again: {:?} / {:?}",
                cli(self.primary.port(), &["ROLE"]),
                cli(self.replica.port(), &["ROLE"])
            );
        }
        if self.named_primary() == Some(self.replica.port()) {
            std::mem::swap(&mut self.primary, &mut self.replica);
        }
    }
}

/// A Redis Cluster of three primaries with one replica each
/// (`cluster-node-timeout` 1000 ms), made with `redis-cli --cluster
/// create`.
#[derive(Debug)]
pub struct RedisCluster {
    /// Its six nodes.
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts six nodes, creates the Cluster and waits until every node
    /// says `cluster_state:ok`; `None` when `redis-server` is not installed
    /// (outside CI).
    ///
    /// # Panics
    ///
    /// When the Cluster does not come up in time.
    #[allow(clippy::panic)]
    pub fn start() -> Option<RedisCluster> {
        let mut nodes = Vec::new();
        for _ in 0..6 {
            nodes.push(RedisServer::start_with(&CLUSTER_NODE)?);
        }
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !created {
            panic!("redis-cli --cluster create failed");
        }
        let cluster = RedisCluster { nodes };
        if !settle(|| cluster.ok()) {
            panic!("the Cluster never reached cluster_state:ok");
        }
        Some(cluster)
    }

    /// A Cluster of `shards` primaries (1 to 16) without replicas, its
    /// slots split evenly (made by hand: `redis-cli --cluster create`
    /// wants three primaries at least), for measurements. `None` when
    /// `redis-server` is not installed (outside CI).
    ///
    /// # Panics
    ///
    /// When the Cluster does not come up in time.
    #[allow(clippy::panic)]
    pub fn start_shards(shards: usize) -> Option<RedisCluster> {
        let shards = shards.clamp(1, 16);
        let mut nodes = Vec::new();
        for _ in 0..shards {
            nodes.push(RedisServer::start_with(&CLUSTER_NODE)?);
        }
        let first = nodes[0].port();
        for node in &nodes[1..] {
            let port = node.port().to_string();
            if cli(first, &["CLUSTER", "MEET", "127.0.0.1", &port]).is_none() {
                panic!("CLUSTER MEET failed");
            }
        }
        let per = 16384 / shards;
        for (k, node) in nodes.iter().enumerate() {
            let from = k * per;
            let to = if k + 1 == shards {
                16383
            } else {
                from + per - 1
            };
            let added = cli(
                node.port(),
                &[
                    "CLUSTER",
                    "ADDSLOTSRANGE",
                    &from.to_string(),
                    &to.to_string(),
                ],
            );
            if !added.is_some_and(|a| a.starts_with("OK")) {
                panic!("CLUSTER ADDSLOTSRANGE failed");
            }
        }
        let cluster = RedisCluster { nodes };
        let ok = settle(|| {
            cluster.nodes.iter().all(|n| {
                cli(n.port(), &["CLUSTER", "INFO"]).is_some_and(|i| {
                    i.contains("cluster_state:ok")
                        && i.contains(&format!("cluster_known_nodes:{shards}"))
                })
            })
        });
        if !ok {
            panic!("the Cluster of {shards} shards never reached cluster_state:ok");
        }
        Some(cluster)
    }

    /// `redis+cluster://` with every node's address.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// Whether every running node says `cluster_state:ok` and three of
    /// them are primaries with a linked replica each.
    pub fn ok(&self) -> bool {
        let ports: Vec<u16> = self.nodes.iter().map(RedisServer::port).collect();
        let states_ok = ports
            .iter()
            .all(|p| cli(*p, &["CLUSTER", "INFO"]).is_none_or(|i| i.contains("cluster_state:ok")));
        let primaries = ports
            .iter()
            .filter(|p| cli(**p, &["ROLE"]).is_some_and(|r| r.starts_with("master")))
            .count();
        let linked_replicas = ports.iter().filter(|p| linked(**p)).count();
        states_ok && primaries == 3 && linked_replicas == 3
    }

    /// The indexes in `nodes` of the primaries now.
    pub fn primaries(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|k| {
                self.nodes[*k].port() > 0
                    && cli(self.nodes[*k].port(), &["ROLE"])
                        .is_some_and(|r| r.starts_with("master"))
            })
            .collect()
    }

    /// Kills node `index` with SIGKILL, waits until its replica has taken
    /// over its slots (every other node says `cluster_state:ok`), then
    /// restarts it (it rejoins as a replica, from its `nodes.conf`) and
    /// waits until the Cluster has three primaries with a replica each.
    ///
    /// # Panics
    ///
    /// When the failover does not happen in time.
    #[allow(clippy::panic)]
    pub fn fail_over(&mut self, index: usize) {
        self.nodes[index].kill9();
        let others: Vec<u16> = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(k, _)| *k != index)
            .map(|(_, n)| n.port())
            .collect();
        let promoted = settle(|| {
            let primaries = others
                .iter()
                .filter(|p| cli(**p, &["ROLE"]).is_some_and(|r| r.starts_with("master")))
                .count();
            primaries == 3
                && others.iter().all(|p| {
                    cli(*p, &["CLUSTER", "INFO"]).is_some_and(|i| i.contains("cluster_state:ok"))
                })
        });
        if !promoted {
            panic!("the Cluster did not fail over in time");
        }
        self.nodes[index].restart();
        if !settle(|| self.ok()) {
            panic!("the failed node never came back as a replica");
        }
    }
}
