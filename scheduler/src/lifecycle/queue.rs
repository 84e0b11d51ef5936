//! The per-thread run queue: a run starts at once on a free thread, or
//! waits in the queue until its thread's active run has ended.
//!
//! Each thread's queue is an index
//! ([`thread_queue`](deepfleet_proto::keys::records::thread_queue), read
//! by [`Lifecycle::queued`] and [`Lifecycle::queue_head`] with the other
//! queries in `status.rs`); the threads that have queued runs are another
//! ([`QUEUED_THREADS`]), which the starter walks, so a round costs the
//! threads with queued runs, not every queued run. A thread leaves that
//! index only when the starter finds its queue empty and the thread was
//! not queued on again since it looked (a conditional removal), so no
//! queued run is ever left unseen.

use chrono::Utc;
use deepfleet_proto::keys::records::QUEUED_THREADS;
use deepfleet_store::{IndexEntry, Order};
use serde_json::Map;

use super::Lifecycle;
use crate::error::SchedulerError;
use crate::make_run::{BatchLink, RunDraft, make_run};
use crate::repo::queued::queued;
use crate::repo::runs::{RunMeta, runs_of};
use crate::repo::score_at;
use crate::repo::threads::threads;

impl Lifecycle {
    /// Records `meta` and starts it at once, or queues it behind the
    /// thread's active run when `queue_behind` says so.
    pub async fn submit(&self, meta: &RunMeta, queue_behind: bool) -> Result<(), SchedulerError> {
        let store = self.store().as_ref();
        runs_of(store, &meta.thread_id)
            .put(&meta.run_id, meta)
            .await?;
        if queue_behind {
            queued(store).put(&meta.run_id, meta).await?;
            // After the run is in the thread's queue, so the starter that
            // sees the thread sees the run.
            store
                .index_put(QUEUED_THREADS, &meta.thread_id, score_at(Utc::now()))
                .await?;
            Ok(())
        } else {
            self.start(meta).await
        }
    }

    /// Starts a recorded run: settles a rollback of the run before it,
    /// writes its fork or update, applies its input to the thread and
    /// publishes its first step.
    pub async fn start(&self, meta: &RunMeta) -> Result<(), SchedulerError> {
        let store = self.store().as_ref();
        // A rollback of the run before it, then its own fork or update:
        // the run starts from the thread they leave.
        let mut settled = false;
        for _ in 0..3 {
            settled = self.settle_rollback(&meta.thread_id).await?;
            if settled {
                break;
            }
        }
        if !settled {
            return Err(SchedulerError::ThreadChanged);
        }
        if let Some(rewind) = &meta.rewind {
            self.rewind_for_run(&meta.thread_id, &meta.run_id, rewind)
                .await?;
        }
        let mut temporary_thread = false;
        if let Some(mut thread) = threads(store).get(&meta.thread_id).await? {
            temporary_thread = thread.temporary;
            thread.active_run = Some(meta.run_id.clone());
            thread.updated_at = Utc::now();
            threads(store).put(&thread.thread_id, &thread).await?;
        }
        // The spec its graph serves when it starts; its steps keep it.
        let spec = self.intake.spec_for(&meta.graph_id).await?;
        let draft = RunDraft {
            run_id: meta.run_id.clone(),
            thread_id: meta.thread_id.clone(),
            tenant: meta.tenant.clone(),
            spec,
            priority: meta.priority,
            created_at: meta.created_at,
            context: meta.context.clone(),
            // API batches are followed through their own records, not the
            // done list `deepfleet submit` drains.
            batch: meta
                .batch_id
                .clone()
                .map_or(BatchLink::None, BatchLink::Api),
            task_id: None,
            timeout_secs: meta.requested_timeout_secs(),
            temporary_thread,
            input: meta.input.clone(),
            files: meta.files.clone(),
            state: Map::new(),
        };
        make_run(&self.intake, draft).await?;
        queued(store).delete(&meta.run_id).await?;
        Ok(())
    }

    /// Starts the oldest queued run of every thread that is free, unless
    /// it is delayed (`after_seconds`) past now. Returns how many runs it
    /// started.
    pub async fn start_queued(&self) -> Result<usize, SchedulerError> {
        let mut started = 0;
        for entry in self.queued_threads().await? {
            let Some(meta) = self.queue_head(&entry.id).await? else {
                self.store()
                    .index_remove_at(QUEUED_THREADS, &entry.id, entry.score)
                    .await?;
                continue;
            };
            if meta.cancelled {
                queued(self.store().as_ref()).delete(&meta.run_id).await?;
                continue;
            }
            // A delayed run holds its thread's queue until its time.
            if meta.not_before.is_some_and(|at| at > Utc::now()) {
                continue;
            }
            let busy = match threads(self.store().as_ref()).get(&entry.id).await? {
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

    /// The threads with queued runs (and those whose queue emptied since),
    /// each with the score the starter's conditional removal compares.
    async fn queued_threads(&self) -> Result<Vec<IndexEntry>, SchedulerError> {
        const CHUNK: u64 = 512;
        let store = self.store();
        let mut out = Vec::new();
        loop {
            let at = u64::try_from(out.len()).unwrap_or(u64::MAX);
            let chunk = store
                .index_page(QUEUED_THREADS, Order::Ascending, at, CHUNK)
                .await?;
            let last = (chunk.len() as u64) < CHUNK;
            out.extend(chunk);
            if last {
                return Ok(out);
            }
        }
    }
}
