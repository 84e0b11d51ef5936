//! The per-thread run queue: a run starts at once on a free thread, or
//! waits in the queue until its thread's active run has ended.

use std::collections::BTreeMap;

use chrono::Utc;
use deepfleet_fleet::tokens::logged;
use deepfleet_proto::RunRecord;
use deepfleet_store::ThreadSeed;
use serde_json::Map;

use super::Lifecycle;
use crate::error::SchedulerError;
use crate::repo::queued::queued;
use crate::repo::runs::{RunMeta, runs_of};
use crate::repo::threads::threads;
use crate::retention::TEMPORARY_THREAD_SECS;

impl Lifecycle {
    /// The queued runs of `thread_id`, oldest first.
    pub async fn queued(&self, thread_id: &str) -> Result<Vec<RunMeta>, SchedulerError> {
        let mut ahead: Vec<RunMeta> = queued(self.store().as_ref())
            .list()
            .await?
            .into_iter()
            .filter(|m| m.thread_id == thread_id)
            .collect();
        ahead.sort_by(|a, b| a.age().cmp(&b.age()));
        Ok(ahead)
    }

    /// Records `meta` and starts it at once, or queues it behind the
    /// thread's active run when `queue_behind` says so.
    pub async fn submit(&self, meta: &RunMeta, queue_behind: bool) -> Result<(), SchedulerError> {
        let store = self.store().as_ref();
        runs_of(store, &meta.thread_id)
            .put(&meta.run_id, meta)
            .await?;
        if queue_behind {
            queued(store).put(&meta.run_id, meta).await?;
            Ok(())
        } else {
            self.start(meta).await
        }
    }

    /// Starts a recorded run: applies its input to the thread and
    /// publishes its first step.
    pub async fn start(&self, meta: &RunMeta) -> Result<(), SchedulerError> {
        let store = self.store().as_ref();
        let mut temporary = false;
        if let Some(mut thread) = threads(store).get(&meta.thread_id).await? {
            temporary = thread.temporary;
            thread.active_run = Some(meta.run_id.clone());
            thread.updated_at = Utc::now();
            threads(store).put(&thread.thread_id, &thread).await?;
        }
        // A stateless run's thread goes with it (a follower that waits for
        // the run removes it sooner); a batch's runs hold its results, so
        // they live as long as the tenant keeps ended runs.
        let expire_after_secs = if temporary && meta.batch_id.is_none() {
            Some(TEMPORARY_THREAD_SECS)
        } else {
            self.intake().retention().expire_after_secs(&meta.tenant)
        };
        let now = Utc::now();
        // The spec its graph serves when it starts; its steps keep it.
        let version = self.intake.spec_for(&meta.graph_id).await?.version;
        // API batches are followed through their own records, not the done
        // list `deepfleet submit` drains: no batch id.
        let run = RunRecord {
            tenant: meta.tenant.clone(),
            context: meta.context.clone(),
            expire_after_secs,
            spec_version: Some(version),
            updated_at: now,
            ..RunRecord::new(
                meta.run_id.clone(),
                meta.thread_id.clone(),
                meta.graph_id.clone(),
                meta.created_at,
            )
        };
        let seed = ThreadSeed {
            messages: meta.input.iter().cloned().map(logged).collect(),
            files: meta.files.clone(),
            state: Map::new(),
        };
        self.intake.start(&run, &seed).await?;
        queued(store).delete(&meta.run_id).await?;
        Ok(())
    }

    /// Starts the oldest queued run of every thread that is free. Returns
    /// how many runs it started.
    pub async fn start_queued(&self) -> Result<usize, SchedulerError> {
        let store = self.store().as_ref();
        let mut heads: BTreeMap<String, RunMeta> = BTreeMap::new();
        for meta in queued(store).list().await? {
            let older = heads
                .get(&meta.thread_id)
                .is_none_or(|head| meta.age() < head.age());
            if older {
                heads.insert(meta.thread_id.clone(), meta);
            }
        }
        let mut started = 0;
        for (thread_id, meta) in heads {
            if meta.cancelled {
                queued(store).delete(&meta.run_id).await?;
                continue;
            }
            let busy = match threads(store).get(&thread_id).await? {
                Some(thread) => self.active_run(&thread).await?.is_some(),
                None => false,
            };
            if !busy {
                self.start(&meta).await?;
                started += 1;
            }
        }
        Ok(started)
    }
}
