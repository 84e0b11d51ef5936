//! Retention on Redis. A thread's own slot is handled by
//! `lua/dispose_thread.lua` (EXPIRE or DEL of its checkpoint, its run and
//! subagent sets and its runs' keys, guarded by the thread's latest run),
//! which returns the run ids and subagent threads; the run id index and
//! the streams (each in a slot of its own) then get single-key commands,
//! and the subagent threads the same treatment, depth first.

use std::collections::HashSet;
use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;

use crate::error::StoreError;
use crate::redis::RedisStore;
use crate::redis::scripts::Call;
use crate::retention::{Retention, ttl_secs};

static DISPOSE_THREAD: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/dispose_thread.lua")));

/// What happens to a thread's keys.
#[derive(Clone, Copy)]
enum Disposal {
    /// They expire after this many seconds.
    Expire(u64),
    /// They are deleted now.
    Delete,
}

#[async_trait]
impl Retention for RedisStore {
    async fn expire_thread(
        &self,
        thread_id: &str,
        ended_run: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        self.dispose_tree(thread_id, ended_run, Disposal::Expire(ttl_secs(ttl)))
            .await
    }

    async fn purge_thread(&self, thread_id: &str) -> Result<(), StoreError> {
        self.dispose_tree(thread_id, "", Disposal::Delete).await?;
        Ok(())
    }

    async fn expire_batch(&self, batch_id: &str, ttl: Duration) -> Result<(), StoreError> {
        let keys = self.keys();
        for key in [
            keys.batch_done(batch_id),
            keys.batch(batch_id),
            keys.batch_runs(batch_id),
        ]
        .into_iter()
        .chain(
            [
                "size",
                "waiting",
                "members",
                "admitted",
                "unstarted",
                "after",
            ]
            .map(|part| keys.batch_admission(batch_id, part)),
        ) {
            self.write::<()>(
                "expire batch",
                key.len(),
                redis::cmd("EXPIRE").arg(&key).arg(ttl_secs(ttl)),
            )
            .await?;
        }
        Ok(())
    }
}

impl RedisStore {
    /// Disposes of `root` (guarded by `ended_run`, `""` = unguarded) and,
    /// once it was, of every subagent thread under it. Returns whether the
    /// root was disposed of.
    async fn dispose_tree(
        &self,
        root: &str,
        ended_run: &str,
        disposal: Disposal,
    ) -> Result<bool, StoreError> {
        let mut seen = HashSet::from([root.to_owned()]);
        let mut todo = vec![(root.to_owned(), ended_run)];
        let mut disposed_root = false;
        while let Some((thread, guard)) = todo.pop() {
            let Some((runs, children)) = self.dispose_thread(&thread, guard, disposal).await?
            else {
                continue;
            };
            disposed_root |= thread == root;
            for run in &runs {
                self.dispose_run_keys(run, disposal).await?;
            }
            for child in children {
                if seen.insert(child.clone()) {
                    todo.push((child, ""));
                }
            }
        }
        Ok(disposed_root)
    }

    /// `dispose_thread.lua` on one thread: its run ids and subagent
    /// threads, or `None` when `guard` is no longer its latest run.
    async fn dispose_thread(
        &self,
        thread: &str,
        guard: &str,
        disposal: Disposal,
    ) -> Result<Option<(Vec<String>, Vec<String>)>, StoreError> {
        let keys = self.keys();
        let ttl = match disposal {
            Disposal::Expire(secs) => secs,
            Disposal::Delete => 0,
        };
        let call = Call::new(
            &DISPOSE_THREAD,
            vec![
                keys.thread_meta(thread),
                keys.thread_log(thread),
                keys.thread_files(thread),
                keys.thread_run_ids(thread),
                keys.thread_children(thread),
                keys.thread_history(thread),
            ],
        )
        .arg(ttl.to_string())
        .arg(guard)
        .arg(keys.thread_prefix(thread));
        self.run_script("dispose thread", &call).await
    }

    /// The keys of `run` outside its thread's slot: its id index and its
    /// streams. A stream's own, shorter expiry is kept (`LT`).
    async fn dispose_run_keys(&self, run: &str, disposal: Disposal) -> Result<(), StoreError> {
        let keys = self.keys();
        let index = keys.run_index(run);
        let streams = [keys.run_events(run), keys.run_deltas(run)];
        match disposal {
            Disposal::Delete => {
                for key in std::iter::once(&index).chain(&streams) {
                    self.write::<()>("delete run key", key.len(), redis::cmd("DEL").arg(key))
                        .await?;
                }
            }
            Disposal::Expire(secs) => {
                self.write::<()>(
                    "expire run index",
                    index.len(),
                    redis::cmd("EXPIRE").arg(&index).arg(secs),
                )
                .await?;
                for key in &streams {
                    self.write::<()>(
                        "expire run stream",
                        key.len(),
                        redis::cmd("EXPIRE").arg(key).arg(secs).arg("LT"),
                    )
                    .await?;
                }
            }
        }
        Ok(())
    }
}
