//! The Redis implementation of [`crate::Store`], on a single server or a
//! Redis Cluster.
//!
//! Layout (key names from [`Keys`]; every thread key carries the thread id
//! as a hash tag, so one thread lives in one slot):
//!
//! - `thread_meta`: hash with `step`, `published`, `state` (JSON object)
//!   and `pending` (JSON, absent = none);
//! - `thread_log`: list of [`deepfleet_proto::LoggedMessage`] JSON, only
//!   ever appended to;
//! - `thread_files`: hash path -> [`deepfleet_proto::FileData`] JSON;
//! - `run`: the run record JSON, in its thread's slot; `run_index`: run id
//!   -> thread id, in a slot of its own;
//! - `fan_in` / `fan_in_expected`: child results by `task` call id, and how
//!   many the parked run waits for;
//! - `cancel`, `spec`, `batch_done`.
//!
//! Each multi-key operation is one Lua script (`store/lua/`) over keys of
//! one slot, so it is atomic on a cluster as on a single server.

mod codec;
mod conn;
mod events;
mod items;
mod records;
mod scripts;

use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use deepfleet_proto::{AgentSpec, ChildResult, Keys, ParentLink, RunRecord};
use redis::{Cmd, FromRedisValue};
use serde_json::{Map, Value};

use self::codec::{RawThread, ThreadKeys, decode, decode_opt, encode};
use self::conn::{Conn, Retry};
use self::scripts::{Call, Scripts};
use crate::{Checkpoint, CommitOutcome, StepCommit, Store, StoreError, ThreadSeed};

/// How often `create_run` merges its seed state again when a commit
/// changed the thread's state in between.
const CREATE_ATTEMPTS: usize = 5;
/// Keys asked for per `SCAN` round in [`RedisStore::delete_prefix`].
const SCAN_COUNT: usize = 500;

/// A [`Store`] on Redis.
pub struct RedisStore {
    conn: Conn,
    keys: Keys,
    scripts: Scripts,
    written: AtomicU64,
}

impl RedisStore {
    /// Connects to Redis and keeps every key under `prefix` (which must not
    /// contain `{` or `}`: they would break the per-thread hash tags).
    ///
    /// `redis://host:port` connects to one server through a reconnecting
    /// connection manager; `redis+cluster://host1:port,host2:port,...` or
    /// several comma-separated `redis://` URLs connect to a Redis Cluster.
    pub async fn connect(url: &str, prefix: &str) -> Result<RedisStore, StoreError> {
        if prefix.contains(['{', '}']) {
            return Err(StoreError::Command(format!(
                "key prefix {prefix:?} must not contain hash tag braces"
            )));
        }
        Ok(RedisStore {
            conn: Conn::connect(url).await?,
            keys: Keys::new(prefix),
            scripts: Scripts::new(),
            written: AtomicU64::new(0),
        })
    }

    /// Payload bytes (keys and values) this store has sent in write
    /// commands so far: commits, run creation, child results, flags and
    /// lists. Shows the write volume per step in tests and benchmarks.
    pub fn bytes_written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Deletes every key under this store's prefix, on every master of a
    /// cluster, and returns how many were deleted. For tests and tear-down:
    /// it scans the keyspace, which is slow on a large production server.
    pub async fn delete_prefix(&self) -> Result<u64, StoreError> {
        let pattern = format!("{}:*", codec::glob_escape(self.keys.prefix()));
        let nodes = self
            .conn
            .call("list nodes", Retry::Once, |mut conn| async move {
                conn.data_nodes().await
            })
            .await?;
        let mut deleted = 0;
        for node in &nodes {
            let mut cursor = 0_u64;
            loop {
                let mut scan = redis::cmd("SCAN");
                scan.arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(SCAN_COUNT);
                let (next, keys): (u64, Vec<String>) = self
                    .conn
                    .call("scan", Retry::Once, |mut conn| {
                        let scan = scan.clone();
                        async move {
                            let reply = conn.on_node(node, scan).await?;
                            Ok(redis::from_redis_value(reply)?)
                        }
                    })
                    .await?;
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

    async fn query<T: FromRedisValue>(
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
    async fn write<T: FromRedisValue>(
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
    async fn run_script<T: FromRedisValue>(
        &self,
        what: &str,
        call: &Call<'_>,
    ) -> Result<T, StoreError> {
        self.count(call.bytes());
        self.conn
            .call(what, Retry::Never, |conn| call.invoke(conn))
            .await
    }

    fn count(&self, bytes: u64) {
        self.written.fetch_add(bytes, Ordering::Relaxed);
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        key: &str,
    ) -> Result<Option<T>, StoreError> {
        let raw: Option<String> = self
            .query(what, Retry::Once, redis::cmd("GET").arg(key))
            .await?;
        decode_opt(key, raw)
    }

    /// One attempt at `create_run`'s thread part.
    async fn try_create(&self, run: &RunRecord, seed: &ThreadSeed) -> Result<Creation, StoreError> {
        // The script refuses the merge if the state changed since this read,
        // so a concurrent commit is never overwritten.
        let seen = if seed.state.is_empty() {
            None
        } else {
            Some(self.raw_state(&run.thread_id).await?)
        };
        let merged = seen
            .as_ref()
            .map(|seen| merge_state(&self.keys, &run.thread_id, seen, &seed.state))
            .transpose()?;
        let merge = seen
            .as_ref()
            .zip(merged.as_ref())
            .map(|(seen, merged)| (seen.as_deref(), merged));
        let call = scripts::create_run(&self.scripts.create_run, &self.keys, run, seed, merge)?;
        Ok(
            match self.run_script::<Option<i64>>("create run", &call).await? {
                None => Creation::Existed,
                Some(-1) => Creation::StateMoved,
                Some(step) => Creation::Created(u64::try_from(step).unwrap_or_default()),
            },
        )
    }

    /// Reads the thread's `state` field as stored, for the seed merge.
    async fn raw_state(&self, thread_id: &str) -> Result<Option<String>, StoreError> {
        let meta = self.keys.thread_meta(thread_id);
        self.query(
            "read state",
            Retry::Once,
            redis::cmd("HGET").arg(&meta).arg("state"),
        )
        .await
    }
}

#[async_trait]
impl Store for RedisStore {
    async fn put_spec(&self, spec: &AgentSpec) -> Result<(), StoreError> {
        let key = self.keys.spec(&spec.name);
        let value = encode(&key, spec)?;
        self.write(
            "put spec",
            key.len() + value.len(),
            redis::cmd("SET").arg(&key).arg(&value),
        )
        .await
    }

    async fn get_spec(&self, name: &str) -> Result<Option<AgentSpec>, StoreError> {
        self.get_json("get spec", &self.keys.spec(name)).await
    }

    async fn create_run(
        &self,
        run: &RunRecord,
        seed: &ThreadSeed,
    ) -> Result<Option<u64>, StoreError> {
        let mut created = None;
        for _ in 0..CREATE_ATTEMPTS {
            match self.try_create(run, seed).await? {
                Creation::Created(step) => created = Some(Some(step)),
                Creation::Existed => created = Some(None),
                Creation::StateMoved => continue,
            }
            break;
        }
        let Some(created) = created else {
            return Err(StoreError::Command(format!(
                "create run {}: thread state kept changing",
                run.run_id
            )));
        };
        // Written after the thread part, and also when the run existed, so
        // a creation interrupted between the two is completed by a retry.
        let index = self.keys.run_index(&run.run_id);
        self.write::<()>(
            "index run",
            index.len() + run.thread_id.len(),
            redis::cmd("SET").arg(&index).arg(&run.thread_id),
        )
        .await?;
        Ok(created)
    }

    async fn get_run(
        &self,
        thread_id: &str,
        run_id: &str,
    ) -> Result<Option<RunRecord>, StoreError> {
        self.get_json("get run", &self.keys.run(thread_id, run_id))
            .await
    }

    async fn find_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        let thread: Option<String> = self
            .query(
                "find run",
                Retry::Once,
                redis::cmd("GET").arg(self.keys.run_index(run_id)),
            )
            .await?;
        match thread {
            Some(thread) => self.get_run(&thread, run_id).await,
            None => Ok(None),
        }
    }

    async fn load_thread(&self, thread_id: &str) -> Result<Checkpoint, StoreError> {
        let keys = [
            self.keys.thread_meta(thread_id),
            self.keys.thread_log(thread_id),
            self.keys.thread_files(thread_id),
        ];
        let call = Call::new(&self.scripts.load_thread, keys.to_vec());
        let raw: RawThread = self
            .conn
            .call("load thread", Retry::Once, |conn| call.invoke(conn))
            .await?;
        let [meta, log, files] = &keys;
        codec::checkpoint(&ThreadKeys { meta, log, files }, raw)
    }

    async fn load_messages(
        &self,
        thread_id: &str,
        from: u64,
    ) -> Result<Vec<deepfleet_proto::LoggedMessage>, StoreError> {
        self.load_messages_from(thread_id, from).await
    }

    async fn append_run_event(
        &self,
        run_id: &str,
        event: &deepfleet_proto::RunEvent,
    ) -> Result<(), StoreError> {
        self.append_event(run_id, event).await
    }

    async fn run_events(
        &self,
        run_id: &str,
        after: Option<&str>,
        max: usize,
    ) -> Result<Vec<(String, deepfleet_proto::RunEvent)>, StoreError> {
        self.read_events(run_id, after, max).await
    }

    async fn append_run_delta(
        &self,
        run_id: &str,
        delta: &deepfleet_proto::RunDelta,
    ) -> Result<(), StoreError> {
        self.append_delta(run_id, delta).await
    }

    async fn run_deltas(
        &self,
        run_id: &str,
        after: Option<&str>,
        max: usize,
    ) -> Result<Vec<(String, deepfleet_proto::RunDelta)>, StoreError> {
        self.read_deltas(run_id, after, max).await
    }

    async fn commit_step(&self, commit: &StepCommit) -> Result<CommitOutcome, StoreError> {
        let call = scripts::commit_step(&self.scripts.commit_step, &self.keys, commit)?;
        let (committed, step): (u8, u64) = self.run_script("commit step", &call).await?;
        Ok(match committed {
            1 => CommitOutcome::Committed,
            _ => CommitOutcome::Conflict { current: step },
        })
    }

    async fn mark_published(&self, thread_id: &str, step: u64) -> Result<(), StoreError> {
        let call = Call::new(
            &self.scripts.mark_published,
            vec![self.keys.thread_meta(thread_id)],
        )
        .arg(step.to_string());
        self.run_script("mark published", &call).await
    }

    async fn record_child_result(
        &self,
        parent: &ParentLink,
        result: &ChildResult,
    ) -> Result<u32, StoreError> {
        let call = scripts::record_child_result(
            &self.scripts.record_child_result,
            &self.keys,
            parent,
            result,
        )?;
        let remaining: Option<i64> = self.run_script("record child result", &call).await?;
        match remaining {
            Some(n) => Ok(u32::try_from(n.max(0)).unwrap_or(u32::MAX)),
            None => Err(StoreError::NotFound(format!(
                "fan-in of run {}",
                parent.run_id
            ))),
        }
    }

    async fn child_results(
        &self,
        thread_id: &str,
        run_id: &str,
    ) -> Result<Vec<ChildResult>, StoreError> {
        let key = self.keys.fan_in(thread_id, run_id);
        let raw: Vec<String> = self
            .query("child results", Retry::Once, redis::cmd("HVALS").arg(&key))
            .await?;
        raw.iter().map(|raw| decode(&key, raw)).collect()
    }

    async fn request_cancel(&self, thread_id: &str, run_id: &str) -> Result<(), StoreError> {
        let key = self.keys.cancel(thread_id, run_id);
        self.write(
            "request cancel",
            key.len() + 1,
            redis::cmd("SET").arg(&key).arg("1"),
        )
        .await
    }

    async fn cancel_requested(&self, thread_id: &str, run_id: &str) -> Result<bool, StoreError> {
        self.query(
            "cancel requested",
            Retry::Once,
            redis::cmd("EXISTS").arg(self.keys.cancel(thread_id, run_id)),
        )
        .await
    }

    async fn push_batch_done(&self, batch_id: &str, run_id: &str) -> Result<(), StoreError> {
        let key = self.keys.batch_done(batch_id);
        self.write::<()>(
            "push batch done",
            key.len() + run_id.len(),
            redis::cmd("RPUSH").arg(&key).arg(run_id),
        )
        .await
    }

    async fn pop_batch_done(&self, batch_id: &str, max: usize) -> Result<Vec<String>, StoreError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let key = self.keys.batch_done(batch_id);
        // Not retried: a pop lost on a broken connection may have removed
        // the ids already.
        let popped: Option<Vec<String>> = self
            .query(
                "pop batch done",
                Retry::Never,
                redis::cmd("LPOP").arg(&key).arg(max),
            )
            .await?;
        Ok(popped.unwrap_or_default())
    }

    async fn put_record(&self, kind: &str, id: &str, value: &Value) -> Result<(), StoreError> {
        self.put_record_json(kind, id, value).await
    }

    async fn insert_record(&self, kind: &str, id: &str, value: &Value) -> Result<bool, StoreError> {
        self.insert_record_json(kind, id, value).await
    }

    async fn get_record(&self, kind: &str, id: &str) -> Result<Option<Value>, StoreError> {
        self.get_record_json(kind, id).await
    }

    async fn delete_record(&self, kind: &str, id: &str) -> Result<bool, StoreError> {
        self.delete_record_json(kind, id).await
    }

    async fn list_records(&self, kind: &str) -> Result<Vec<Value>, StoreError> {
        self.list_records_json(kind).await
    }

    async fn put_item(
        &self,
        namespace: &[String],
        key: &str,
        value: &Map<String, Value>,
    ) -> Result<(), StoreError> {
        self.put_item_json(namespace, key, value).await
    }

    async fn get_item(
        &self,
        namespace: &[String],
        key: &str,
    ) -> Result<Option<deepfleet_proto::Item>, StoreError> {
        self.get_item_json(namespace, key).await
    }

    async fn delete_item(&self, namespace: &[String], key: &str) -> Result<(), StoreError> {
        self.delete_item_json(namespace, key).await
    }

    async fn search_items(
        &self,
        search: &deepfleet_proto::ItemSearch,
    ) -> Result<Vec<deepfleet_proto::Item>, StoreError> {
        self.search_items_json(search).await
    }

    async fn list_namespaces(
        &self,
        query: &deepfleet_proto::NamespaceQuery,
    ) -> Result<Vec<Vec<String>>, StoreError> {
        self.list_namespaces_json(query).await
    }
}

/// What one attempt at creating a run did.
enum Creation {
    /// Created; the thread is at this step.
    Created(u64),
    /// The run existed; nothing was written.
    Existed,
    /// A commit changed the thread's state since it was read; nothing was
    /// written, merge again.
    StateMoved,
}

/// The thread state `seen` (as stored) with the seed's fields set on top.
fn merge_state(
    keys: &Keys,
    thread_id: &str,
    seen: &Option<String>,
    seed: &Map<String, Value>,
) -> Result<Map<String, Value>, StoreError> {
    let meta = keys.thread_meta(thread_id);
    let mut state: Map<String, Value> = match seen {
        Some(raw) => decode(&format!("{meta} state"), raw)?,
        None => Map::new(),
    };
    state.extend(seed.iter().map(|(k, v)| (k.clone(), v.clone())));
    Ok(state)
}
