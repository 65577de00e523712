//! Where the engine is, from the `--log` url: one server, a primary found
//! through Sentinel, or a Redis Cluster; and how a connection to it is made
//! (again, after a failover).
//!
//! | url | topology |
//! |---|---|
//! | `redis://[USER:PASSWORD@]HOST:PORT[/DB]` | one server (or a primary that never moves) |
//! | `redis+sentinel://HOST:PORT[,HOST:PORT...]/MASTER_NAME[/DB]` | the primary Sentinel names `MASTER_NAME`, looked up again after every failure |
//! | `redis+cluster://HOST:PORT[,HOST:PORT...]` | a Redis Cluster; the nodes given are where its map of slots is first read |
//!
//! The password ([`RedisLogOptions::with_password`](crate::RedisLogOptions::with_password))
//! is the data nodes'; the Sentinels' own is
//! [`RedisLogOptions::with_sentinel_password`](crate::RedisLogOptions::with_sentinel_password)
//! (without it they are asked without one).

use std::fmt;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{
    Client, Cmd, ConnectionInfo, IntoConnectionInfo as _, Pipeline, RedisConnectionInfo,
    RedisFuture, Value,
};

/// The passwords a connection authenticates with (never shown).
#[derive(Clone, Copy, Default)]
pub(crate) struct Passwords<'a> {
    /// The data nodes' (it replaces one the url holds).
    pub(crate) node: Option<&'a str>,
    /// The Sentinels' own.
    pub(crate) sentinel: Option<&'a str>,
}

/// A `--log` url that names no topology lce knows, or names it wrongly.
/// Never holds the url (it may hold a password).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UrlError {
    /// Not `redis://`, `redis+sentinel://` or `redis+cluster://`.
    Scheme,
    /// A `HOST:PORT` of the list is not one.
    Address,
    /// `redis+sentinel://` without a master name, or with a bad database.
    Master,
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UrlError::Scheme => "the url is not redis://, redis+sentinel:// or redis+cluster://",
            UrlError::Address => "an address of the url is not HOST:PORT",
            UrlError::Master => "a redis+sentinel:// url names no master (.../MASTER_NAME[/DB])",
        })
    }
}

/// The engine's topology, with what it takes to connect to it (no
/// `Debug`: it holds the password).
#[derive(Clone)]
pub(crate) enum Topology {
    /// One server at a fixed address.
    Server(ConnectionInfo),
    /// The primary that Sentinel names `master`.
    Sentinel {
        /// The Sentinels' addresses.
        sentinels: Vec<ConnectionInfo>,
        /// The monitored primary's name.
        master: String,
        /// The data nodes' database and credentials.
        node: RedisConnectionInfo,
    },
    /// A Redis Cluster, known first through `nodes`.
    Cluster {
        /// Where the slot map is first read (with the nodes' credentials;
        /// a Cluster has database 0 only).
        nodes: Vec<ConnectionInfo>,
    },
}

impl Topology {
    /// Reads `url`; the nodes' password (when given) replaces one the url
    /// holds, the Sentinels' is used for the Sentinels of a Sentinel url.
    pub(crate) fn parse(url: &str, passwords: Passwords<'_>) -> Result<Topology, UrlError> {
        let with_password = |settings: RedisConnectionInfo| match passwords.node {
            Some(p) => settings.set_password(p),
            None => settings,
        };
        if let Some(rest) = url.strip_prefix("redis+sentinel://") {
            let (hosts, path) = rest.split_once('/').ok_or(UrlError::Master)?;
            let (master, db) = match path.split_once('/') {
                Some((master, db)) => (master, db.parse::<i64>().map_err(|_| UrlError::Master)?),
                None => (path, 0),
            };
            if master.is_empty() {
                return Err(UrlError::Master);
            }
            let mut sentinels = addresses(hosts)?;
            if let Some(password) = passwords.sentinel {
                let auth = RedisConnectionInfo::default().set_password(password);
                sentinels = sentinels
                    .into_iter()
                    .map(|info| info.set_redis_settings(auth.clone()))
                    .collect();
            }
            let node = with_password(RedisConnectionInfo::default()).set_db(db);
            return Ok(Topology::Sentinel {
                sentinels,
                master: master.to_owned(),
                node,
            });
        }
        if let Some(rest) = url.strip_prefix("redis+cluster://") {
            let hosts = rest.strip_suffix('/').unwrap_or(rest);
            let nodes = addresses(hosts)?;
            let node = with_password(RedisConnectionInfo::default());
            let nodes = nodes
                .into_iter()
                .map(|info| info.set_redis_settings(node.clone()))
                .collect();
            return Ok(Topology::Cluster { nodes });
        }
        if !url.starts_with("redis://") {
            return Err(UrlError::Scheme);
        }
        let info = url.into_connection_info().map_err(|_| UrlError::Address)?;
        let settings = with_password(info.redis_settings().clone());
        Ok(Topology::Server(info.set_redis_settings(settings)))
    }

    /// Whether it is a Cluster (sharded wake-ups, no cross-slot commands).
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self, Topology::Cluster { .. })
    }
}

/// `HOST:PORT[,HOST:PORT...]` as plain TCP addresses.
fn addresses(hosts: &str) -> Result<Vec<ConnectionInfo>, UrlError> {
    let mut out = Vec::new();
    for host in hosts.split(',') {
        let (name, port) = host.rsplit_once(':').ok_or(UrlError::Address)?;
        let port: u16 = port.parse().map_err(|_| UrlError::Address)?;
        if name.is_empty() || name.contains(['@', '/', '?']) {
            return Err(UrlError::Address);
        }
        let info = (name, port)
            .into_connection_info()
            .map_err(|_| UrlError::Address)?;
        out.push(info);
    }
    Ok(out)
}

/// What makes connections: a client of one server, a Sentinel client that
/// finds the primary, or a Cluster client.
pub(crate) enum Source {
    /// One server.
    Server(Client),
    /// Sentinel, asked for the primary at every (re)connection.
    Sentinel(tokio::sync::Mutex<SentinelClient>),
    /// A Cluster.
    Cluster(ClusterClient),
}

impl Source {
    /// The source of `topology` (nothing is connected yet).
    pub(crate) fn new(topology: &Topology, attempt: Duration) -> redis::RedisResult<Source> {
        Ok(match topology {
            Topology::Server(info) => Source::Server(Client::open(info.clone())?),
            Topology::Sentinel {
                sentinels,
                master,
                node,
            } => {
                let node =
                    SentinelNodeConnectionInfo::default().set_redis_connection_info(node.clone());
                Source::Sentinel(tokio::sync::Mutex::new(SentinelClient::build(
                    sentinels.clone(),
                    master.clone(),
                    Some(node),
                    SentinelServerType::Master,
                )?))
            }
            Topology::Cluster { nodes } => Source::Cluster(
                redis::cluster::ClusterClientBuilder::new(nodes.clone())
                    .connection_timeout(attempt)
                    .response_timeout(attempt)
                    .build()?,
            ),
        })
    }

    /// A client of the node commands go to now: the server, or the primary
    /// Sentinel names at this moment (`None` for a Cluster).
    pub(crate) async fn node_client(&self) -> redis::RedisResult<Option<Client>> {
        match self {
            Source::Server(client) => Ok(Some(client.clone())),
            Source::Sentinel(sentinel) => sentinel.lock().await.async_get_client().await.map(Some),
            Source::Cluster(_) => Ok(None),
        }
    }

    /// A new connection: a self-reconnecting `ConnectionManager` on the
    /// current primary, or a Cluster connection (which follows the slot
    /// map, MOVED and ASK by itself).
    pub(crate) async fn connect(
        &self,
        config: &ConnectionManagerConfig,
    ) -> redis::RedisResult<Conn> {
        if let Source::Cluster(cluster) = self {
            return cluster.get_async_connection().await.map(Conn::Cluster);
        }
        match self.node_client().await? {
            Some(client) => ConnectionManager::new_with_config(client, config.clone())
                .await
                .map(Conn::Node),
            None => Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "no node client",
            ))),
        }
    }
}

/// One connection to the engine, whatever its topology.
#[derive(Clone)]
pub(crate) enum Conn {
    /// A connection to one node (a server, or Sentinel's primary).
    Node(ConnectionManager),
    /// A Cluster connection.
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Node(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Node(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Node(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn urls_name_their_topology() {
        let server = Topology::parse("redis://127.0.0.1:6379/2", Passwords::default()).unwrap();
        let Topology::Server(info) = &server else {
            panic!("not a server")
        };
        assert_eq!(info.redis_settings().db(), 2);

        let passwords = Passwords {
            node: Some("pw"),
            sentinel: Some("spw"),
        };
        let sentinel =
            Topology::parse("redis+sentinel://a:26379,b:26380/mymaster/3", passwords).unwrap();
        let Topology::Sentinel {
            sentinels,
            master,
            node,
        } = &sentinel
        else {
            panic!("not sentinel")
        };
        assert_eq!(sentinels.len(), 2);
        assert_eq!(master, "mymaster");
        assert_eq!(node.db(), 3);
        assert_eq!(node.password(), Some("pw"));
        for info in sentinels {
            assert_eq!(info.redis_settings().password(), Some("spw"));
        }
        assert!(!sentinel.is_cluster());

        let cluster = Topology::parse(
            "redis+cluster://h1:7000,h2:7001,h3:7002",
            Passwords::default(),
        )
        .unwrap();
        assert!(cluster.is_cluster());
        let Topology::Cluster { nodes, .. } = cluster else {
            panic!("not a cluster")
        };
        assert_eq!(nodes.len(), 3);
    }

    #[test]
    fn bad_urls_say_what_is_wrong_without_the_url() {
        for (url, error) in [
            ("memcached://x:1", UrlError::Scheme),
            ("redis+sentinel://a:1", UrlError::Master),
            ("redis+sentinel://a:1/", UrlError::Master),
            ("redis+sentinel://a:1/m/x", UrlError::Master),
            ("redis+sentinel://a/m", UrlError::Address),
            ("redis+cluster://a:1,b", UrlError::Address),
            ("redis+cluster://a:port", UrlError::Address),
            ("redis+cluster://user:secret@a:1", UrlError::Address),
        ] {
            assert!(
                matches!(Topology::parse(url, Passwords::default()), Err(e) if e == error),
                "{url}"
            );
            assert!(!error.to_string().contains("secret"));
        }
    }
}
