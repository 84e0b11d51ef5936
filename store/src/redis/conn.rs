//! One connection type over a single Redis and a Redis Cluster, with the
//! timeouts and the read retry the client does not give us.
//!
//! `ConnectionManager` drops the in-flight command on a broken pipe and
//! does not retry it, and a reconnect can block a command for seconds, so
//! every call is bounded by our own timeout and idempotent reads get one
//! more try. The connection also counts the payload bytes of every reply,
//! so tests and benchmarks can see what a step reads.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};

use crate::error::StoreError;

/// How long one connection attempt may take (the whole connect is bounded
/// by its caller's timeout).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the client waits for one answer. Above the client's 500 ms
/// default: loading a long thread is one large reply.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);
/// Our bound on a whole call, reconnect waits included.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(8);
/// Reconnect attempts of the connection manager before a command fails.
const RECONNECT_RETRIES: usize = 3;

/// Whether a failed call may be sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Idempotent reads: one more try after a broken connection or a
    /// timeout.
    Once,
    /// Writes: a command lost on a broken connection may have been applied,
    /// so the caller (redelivery, fencing) decides.
    Never,
}

/// Where the store connects to.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    Single(String),
    Cluster(Vec<String>),
}

/// A connection to a single Redis or to a cluster. Cloning is cheap and
/// shares the underlying multiplexed connection and the read counter.
#[derive(Clone)]
pub(crate) struct Conn {
    link: Link,
    read: Arc<AtomicU64>,
}

#[derive(Clone)]
enum Link {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl Conn {
    /// Connects to `url`: `redis://host:port` for a single server,
    /// `redis+cluster://h1:p1,h2:p2` or several comma-separated
    /// `redis://` URLs for a cluster; fails when that takes over `timeout`.
    pub(crate) async fn connect(url: &str, timeout: Duration) -> Result<Conn, StoreError> {
        let connecting = async {
            match parse_url(url)? {
                Target::Single(url) => {
                    let client = redis::Client::open(url.as_str()).map_err(bad_url)?;
                    let config = ConnectionManagerConfig::new()
                        .set_connection_timeout(Some(CONNECT_TIMEOUT))
                        .set_response_timeout(Some(RESPONSE_TIMEOUT))
                        .set_number_of_retries(RECONNECT_RETRIES);
                    ConnectionManager::new_with_config(client, config)
                        .await
                        .map(Link::Single)
                        .map_err(|e| connection_error("connect", &e))
                }
                Target::Cluster(nodes) => {
                    let client = ClusterClient::builder(nodes)
                        .connection_timeout(CONNECT_TIMEOUT)
                        .response_timeout(RESPONSE_TIMEOUT)
                        .build()
                        .map_err(bad_url)?;
                    client
                        .get_async_connection()
                        .await
                        .map(Link::Cluster)
                        .map_err(|e| connection_error("connect", &e))
                }
            }
        };
        let link = tokio::time::timeout(timeout, connecting)
            .await
            .map_err(|_| {
                StoreError::Connection(format!("connect: no answer within {timeout:?}"))
            })??;
        Ok(Conn {
            link,
            read: Arc::default(),
        })
    }

    /// Payload bytes of every reply received so far on this connection
    /// and its clones.
    pub(crate) fn bytes_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    fn count(&self, reply: &Value) {
        self.read.fetch_add(payload_bytes(reply), Ordering::Relaxed);
    }

    /// Runs `call` on a clone of this connection under [`CALL_TIMEOUT`],
    /// trying once more when `retry` allows and the connection broke.
    pub(crate) async fn call<T, F, Fut>(
        &self,
        what: &str,
        retry: Retry,
        call: F,
    ) -> Result<T, StoreError>
    where
        F: Fn(Conn) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let mut retried = false;
        loop {
            let err = match tokio::time::timeout(CALL_TIMEOUT, call(self.clone())).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(e)) if is_broken(&e) => connection_error(what, &e),
                Ok(Err(e)) => return Err(StoreError::Command(format!("{what}: {e}"))),
                Err(_) => {
                    StoreError::Connection(format!("{what}: no answer within {CALL_TIMEOUT:?}"))
                }
            };
            if retried || retry == Retry::Never {
                return Err(err);
            }
            tracing::debug!(error = %err, "retrying an idempotent read");
            retried = true;
        }
    }

    /// Runs `query` on one node: a cluster routes it by the node's
    /// address instead of by a key.
    pub(crate) async fn on_node(&mut self, node: &Node, query: Cmd) -> RedisResult<Value> {
        if let (Link::Cluster(conn), Node::Master { host, port }) = (&mut self.link, node) {
            let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
                host: host.clone(),
                port: *port,
            });
            let reply = conn.route_command(query, routing).await?;
            self.count(&reply);
            return Ok(reply);
        }
        query.query_async(self).await
    }

    /// The nodes holding the data: the server itself, or every master of
    /// the cluster.
    pub(crate) async fn data_nodes(&mut self) -> RedisResult<Vec<Node>> {
        match &mut self.link {
            Link::Single(_) => Ok(vec![Node::Server]),
            Link::Cluster(conn) => {
                let nodes: String = redis::cmd("CLUSTER").arg("NODES").query_async(conn).await?;
                Ok(masters(&nodes))
            }
        }
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let reply = match &mut self.link {
                Link::Single(conn) => conn.req_packed_command(cmd).await,
                Link::Cluster(conn) => conn.req_packed_command(cmd).await,
            }?;
            self.count(&reply);
            Ok(reply)
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let replies = match &mut self.link {
                Link::Single(conn) => conn.req_packed_commands(pipeline, offset, count).await,
                Link::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count).await,
            }?;
            replies.iter().for_each(|reply| self.count(reply));
            Ok(replies)
        })
    }

    fn get_db(&self) -> i64 {
        match &self.link {
            Link::Single(conn) => conn.get_db(),
            Link::Cluster(conn) => conn.get_db(),
        }
    }
}

/// The payload of a reply: its strings' bytes, eight per number, nothing
/// for the protocol's framing (as [`crate::redis::RedisStore::bytes_written`]
/// counts what is sent).
fn payload_bytes(reply: &Value) -> u64 {
    let len = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    match reply {
        Value::BulkString(bytes) => len(bytes.len()),
        Value::SimpleString(text) | Value::VerbatimString { text, .. } => len(text.len()),
        Value::Int(_) | Value::Double(_) => 8,
        Value::Array(values) | Value::Set(values) | Value::Push { data: values, .. } => {
            values.iter().map(payload_bytes).sum()
        }
        Value::Map(pairs) => pairs
            .iter()
            .map(|(k, v)| payload_bytes(k) + payload_bytes(v))
            .sum(),
        Value::Attribute { data, .. } => payload_bytes(data),
        _ => 0,
    }
}

/// A server that holds keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Node {
    /// The single server.
    Server,
    /// A cluster master, by the address the cluster announces.
    Master { host: String, port: u16 },
}

/// The connected masters listed by `CLUSTER NODES`.
fn masters(cluster_nodes: &str) -> Vec<Node> {
    cluster_nodes
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (addr, flags, link) = (fields.get(1)?, fields.get(2)?, fields.get(7)?);
            let is_master = flags.split(',').any(|f| f == "master");
            let failing = flags.split(',').any(|f| f == "fail" || f == "noaddr");
            if !is_master || failing || *link != "connected" {
                return None;
            }
            // `host:port@bus-port[,hostname]`
            let addr = addr.split(['@', ',']).next()?;
            let (host, port) = addr.rsplit_once(':')?;
            Some(Node::Master {
                host: host.to_owned(),
                port: port.parse().ok()?,
            })
        })
        .collect()
}

fn parse_url(url: &str) -> Result<Target, StoreError> {
    let url = url.trim();
    if let Some(rest) = url.strip_prefix("redis+cluster://") {
        // Credentials given once apply to every node.
        let (auth, hosts) = match rest.rsplit_once('@') {
            Some((auth, hosts)) => (format!("{auth}@"), hosts),
            None => (String::new(), rest),
        };
        let nodes: Vec<String> = hosts
            .split(',')
            .map(|h| h.trim().trim_end_matches('/'))
            .filter(|h| !h.is_empty())
            .map(|h| format!("redis://{auth}{h}"))
            .collect();
        if nodes.is_empty() {
            return Err(StoreError::Connection(format!(
                "invalid Redis URL {url:?}: no cluster nodes"
            )));
        }
        return Ok(Target::Cluster(nodes));
    }
    if url.contains(',') {
        let nodes = url
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(str::to_owned)
            .collect();
        return Ok(Target::Cluster(nodes));
    }
    Ok(Target::Single(url.to_owned()))
}

/// Whether the error means the connection (not the command) failed, so an
/// idempotent command may be sent again.
fn is_broken(e: &RedisError) -> bool {
    e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() || e.is_timeout()
}

fn connection_error(what: &str, e: &RedisError) -> StoreError {
    StoreError::Connection(format!("{what}: {e}"))
}

fn bad_url(e: RedisError) -> StoreError {
    StoreError::Connection(format!("invalid Redis URL: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_counts_its_strings_and_numbers() {
        let reply = Value::Array(vec![
            Value::BulkString(b"abc".to_vec()),
            Value::Int(7),
            Value::Nil,
            Value::Map(vec![(
                Value::SimpleString("k".into()),
                Value::BulkString(b"vv".to_vec()),
            )]),
        ]);
        assert_eq!(payload_bytes(&reply), 3 + 8 + 1 + 2);
    }

    #[test]
    fn single_url() {
        assert_eq!(
            parse_url("redis://127.0.0.1:6379").unwrap(),
            Target::Single("redis://127.0.0.1:6379".into())
        );
    }

    #[test]
    fn cluster_urls() {
        assert_eq!(
            parse_url("redis+cluster://u:p@h1:1,h2:2/").unwrap(),
            Target::Cluster(vec!["redis://u:p@h1:1".into(), "redis://u:p@h2:2".into()])
        );
        assert_eq!(
            parse_url("redis://h1:1, redis://h2:2").unwrap(),
            Target::Cluster(vec!["redis://h1:1".into(), "redis://h2:2".into()])
        );
        assert!(parse_url("redis+cluster://").is_err());
    }

    #[test]
    fn masters_from_cluster_nodes() {
        let nodes = "\
a 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460
b 127.0.0.1:30002@40002,host2 master - 0 0 2 connected 5461-10922
c 127.0.0.1:30003@40003 slave b 0 0 2 connected
d 127.0.0.1:30004@40004 master,fail - 0 0 3 connected
e 127.0.0.1:30005@40005 master - 0 0 4 disconnected 10923-16383
";
        assert_eq!(
            masters(nodes),
            vec![
                Node::Master {
                    host: "127.0.0.1".into(),
                    port: 30001
                },
                Node::Master {
                    host: "127.0.0.1".into(),
                    port: 30002
                },
            ]
        );
    }
}
