//! The Redis implementation of [`crate::Store`], on a single server or a
//! Redis Cluster: the plumbing every capability's Redis module shares (the
//! connection with its timeouts and retry, the JSON codec, script calls,
//! the write-volume counter and tear-down).
//!
//! Each capability implements its trait for [`RedisStore`] in a file of
//! its own here (`admission.rs`, `checkpoints.rs`, ...), which documents
//! its part of the layout; the capabilities' modules know no back end.
//! Key names come from [`Keys`]; every thread key carries the thread id
//! as a hash tag, so one thread lives in one slot, and each multi-key
//! operation is one Lua script (`store/lua/`) over keys of one slot, so
//! it is atomic on a cluster as on a single server.

mod admission;
mod batches;
mod checkpoints;
pub(crate) mod codec;
pub(crate) mod conn;
mod fan_in;
mod history;
mod items;
pub mod rate_limit;
mod record_index;
mod records;
pub mod reseal;
mod retention;
mod run_streams;
mod runs;
pub(crate) mod scripts;
mod slots;
mod specs;
mod spend;
mod thread_cache;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use deepfleet_proto::Keys;
use redis::{Cmd, FromRedisValue};

use self::codec::Codec;
use self::conn::{Conn, Retry};
use self::scripts::Call;
use self::thread_cache::{DEFAULT_THREAD_CACHE_BYTES, ThreadCache};
use crate::Keyring;
use crate::error::StoreError;

/// How long [`RedisStore::connect`] waits for a connection.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Keys asked for per `SCAN` round in [`RedisStore::delete_prefix`] and
/// `RedisStore::reseal`.
const SCAN_COUNT: usize = 500;

/// A [`crate::Store`] on Redis.
pub struct RedisStore {
    conn: Conn,
    keys: Keys,
    codec: Codec,
    written: AtomicU64,
    threads: ThreadCache,
}

impl RedisStore {
    /// Connects to Redis and keeps every key under `prefix` (which must not
    /// contain `{` or `}`: they would break the per-thread hash tags).
    ///
    /// `redis://host:port` connects to one server through a reconnecting
    /// connection manager; `redis+cluster://host1:port,host2:port,...` or
    /// several comma-separated `redis://` URLs connect to a Redis Cluster.
    ///
    /// Gives up after [`DEFAULT_CONNECT_TIMEOUT`]; see
    /// [`RedisStore::connect_within`].
    pub async fn connect(url: &str, prefix: &str) -> Result<RedisStore, StoreError> {
        Self::connect_within(url, prefix, DEFAULT_CONNECT_TIMEOUT).await
    }

    /// [`RedisStore::connect`], giving up with [`StoreError::Connection`]
    /// when no connection is made within `timeout` (a closed port fails
    /// sooner, a host that never answers takes the whole `timeout`).
    pub async fn connect_within(
        url: &str,
        prefix: &str,
        timeout: Duration,
    ) -> Result<RedisStore, StoreError> {
        if prefix.contains(['{', '}']) {
            return Err(StoreError::Command(format!(
                "key prefix {prefix:?} must not contain hash tag braces"
            )));
        }
        Ok(RedisStore {
            conn: Conn::connect(url, timeout).await?,
            keys: Keys::new(prefix),
            codec: Codec::default(),
            written: AtomicU64::new(0),
            threads: ThreadCache::new(DEFAULT_THREAD_CACHE_BYTES),
        })
    }

    /// This store, sealing every value that holds content (messages,
    /// files, state, items, records, ...) under `keyring` and opening
    /// sealed values under the key each names. Values stored in clear
    /// still read; `RedisStore::reseal` seals them. See
    /// [`crate::at_rest`] for what stays in clear.
    pub fn with_keyring(mut self, keyring: Arc<Keyring>) -> Self {
        self.codec = Codec::new(Some(keyring));
        self
    }

    /// This store, holding at most `bytes` of the threads it has read
    /// (32 MiB by default; 0 holds none), so that reading one again reads
    /// only what changed since: a step's reads then stay flat as its
    /// conversation grows. The server fences every use of what is held,
    /// so what a load returns is the same either way.
    pub fn with_thread_cache(mut self, bytes: u64) -> Self {
        self.threads = ThreadCache::new(bytes);
        self
    }

    /// Payload bytes (keys and values) this store has sent in write
    /// commands so far: commits, run creation, child results, flags and
    /// lists. Shows the write volume per step in tests and benchmarks.
    pub fn bytes_written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Payload bytes (strings and numbers) of every reply this store has
    /// received so far, reads and writes alike. Shows the read volume per
    /// step in tests and benchmarks.
    pub fn bytes_read(&self) -> u64 {
        self.conn.bytes_read()
    }

    /// Deletes every key under this store's prefix, on every master of a
    /// cluster, and returns how many were deleted. For tests and tear-down:
    /// it scans the keyspace, which is slow on a large production server.
    pub async fn delete_prefix(&self) -> Result<u64, StoreError> {
        let mut deleted = 0;
        for node in &self.data_nodes().await? {
            let mut cursor = 0_u64;
            loop {
                let (next, keys) = self.scan_prefix(node, cursor).await?;
                if !keys.is_empty() {
                    // A cluster client splits a multi-key UNLINK by slot.
                    let n: u64 = self
                        .query("unlink", Retry::Once, redis::cmd("UNLINK").arg(&keys))
                        .await?;
                    deleted += n;
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(deleted)
    }

    /// The nodes holding keys: the server, or every cluster master.
    pub(crate) async fn data_nodes(&self) -> Result<Vec<conn::Node>, StoreError> {
        self.conn
            .call("list nodes", Retry::Once, |mut conn| async move {
                conn.data_nodes().await
            })
            .await
    }

    /// One `SCAN` round over this store's keys on `node`, from `cursor`:
    /// the next cursor (0 when done) and the keys found.
    pub(crate) async fn scan_prefix(
        &self,
        node: &conn::Node,
        cursor: u64,
    ) -> Result<(u64, Vec<String>), StoreError> {
        let pattern = format!("{}:*", codec::glob_escape(self.keys.prefix()));
        let mut scan = redis::cmd("SCAN");
        scan.arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(SCAN_COUNT);
        let scan = &scan;
        self.conn
            .call("scan", Retry::Once, |mut conn| async move {
                let reply = conn.on_node(node, scan.clone()).await?;
                Ok(redis::from_redis_value(reply)?)
            })
            .await
    }

    /// The key schema under this store's prefix.
    pub(crate) fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The threads this store holds.
    pub(crate) fn threads(&self) -> &ThreadCache {
        &self.threads
    }

    /// How values are encoded and sealed.
    pub(crate) fn codec(&self) -> &Codec {
        &self.codec
    }

    /// The connection, for calls that are not one command (pipelines,
    /// scripts read without counting).
    pub(crate) fn conn(&self) -> &Conn {
        &self.conn
    }

    /// One command under `what` (for errors), retried as `retry` allows.
    pub(crate) async fn query<T: FromRedisValue>(
        &self,
        what: &str,
        retry: Retry,
        cmd: &Cmd,
    ) -> Result<T, StoreError> {
        self.conn
            .call(what, retry, |mut conn| async move {
                cmd.query_async(&mut conn).await
            })
            .await
    }

    /// A write command; counts `bytes` as sent.
    pub(crate) async fn write<T: FromRedisValue>(
        &self,
        what: &str,
        bytes: usize,
        cmd: &Cmd,
    ) -> Result<T, StoreError> {
        self.count(u64::try_from(bytes).unwrap_or(u64::MAX));
        self.query(what, Retry::Never, cmd).await
    }

    /// A script that writes; counts its payload as sent. Not retried: it
    /// may have been applied before the connection broke.
    pub(crate) async fn run_script<T: FromRedisValue>(
        &self,
        what: &str,
        call: &Call<'_>,
    ) -> Result<T, StoreError> {
        self.count(call.bytes());
        self.conn
            .call(what, Retry::Never, |conn| call.invoke(conn))
            .await
    }

    /// Counts `bytes` as sent, for a write not made through
    /// [`RedisStore::write`] or [`RedisStore::run_script`].
    pub(crate) fn count(&self, bytes: u64) {
        self.written.fetch_add(bytes, Ordering::Relaxed);
    }

    /// `GET` of a JSON value; `None` when the key is absent.
    pub(crate) async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        key: &str,
    ) -> Result<Option<T>, StoreError> {
        let raw: Option<String> = self
            .query(what, Retry::Once, redis::cmd("GET").arg(key))
            .await?;
        self.codec.decode_opt(key, raw)
    }
}

/// `ttl` in whole milliseconds, as `PEXPIRE` takes it: at least 1 for a
/// non-zero `ttl`, so a short expiry never deletes at once.
pub(crate) fn millis(ttl: Duration) -> u64 {
    let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 && !ttl.is_zero() { 1 } else { ms }
}
