//! Changes to a thread that no step makes: `update_state`, a run that
//! starts from an earlier checkpoint (a fork) or with a `command.update`,
//! and a rollback that returns the thread to its state before a run. Each
//! is one [`ThreadUpdate`]: a checkpoint of its own, written on a new
//! branch of the log when it rewrites the conversation (see
//! `deepfleet_store::history`).

use deepfleet_proto::keys::records::ROLLBACK_THREADS;
use deepfleet_store::{CheckpointSource, Order, ThreadUpdate, UpdateOutcome};
use tracing::warn;

use super::Lifecycle;
use crate::error::SchedulerError;
use crate::repo::score_at;
use crate::repo::threads::threads;
use crate::state_edit::{Rewind, StateEdit};

/// How often a start-time or rollback update is read again after a
/// conflict: the thread is idle then, so one more read settles it.
const ATTEMPTS: usize = 3;

impl Lifecycle {
    /// `update_state`: writes `edit` on `thread_id` as a new checkpoint,
    /// on top of the thread as it is or (`from`) of an earlier
    /// checkpoint. The caller has found the thread idle; a step or a
    /// run's seed since is a [`SchedulerError::ThreadChanged`].
    pub async fn update_state(
        &self,
        thread_id: &str,
        from: Option<u64>,
        edit: &StateEdit,
    ) -> Result<u64, SchedulerError> {
        self.write_update(thread_id, "", from, Some(edit), CheckpointSource::Update, 1)
            .await
    }

    /// Writes a starting run's rewind: its fork, then its update, as one
    /// checkpoint that belongs to the run (a rollback of it undoes both).
    /// A fork from the thread's current checkpoint is no fork: UIs name
    /// the newest checkpoint they read with every message they send.
    pub(super) async fn rewind_for_run(
        &self,
        thread_id: &str,
        run_id: &str,
        rewind: &Rewind,
    ) -> Result<(), SchedulerError> {
        let mut rewind = rewind.clone();
        if let Some(id) = rewind.checkpoint
            && self.store().load_thread(thread_id).await?.step == id
        {
            rewind.checkpoint = None;
        }
        if rewind.checkpoint.is_none() && rewind.edit.is_none() {
            return Ok(());
        }
        let source = if rewind.checkpoint.is_some() {
            CheckpointSource::Fork
        } else {
            CheckpointSource::Update
        };
        self.write_update(
            thread_id,
            run_id,
            rewind.checkpoint,
            rewind.edit.as_ref(),
            source,
            ATTEMPTS,
        )
        .await
        .map(drop)
    }

    /// Reads the thread (as it is, or at checkpoint `from`), applies
    /// `edit`, and writes the result; a conflict reads again, up to
    /// `attempts` times in all.
    async fn write_update(
        &self,
        thread_id: &str,
        run_id: &str,
        from: Option<u64>,
        edit: Option<&StateEdit>,
        source: CheckpointSource,
        attempts: usize,
    ) -> Result<u64, SchedulerError> {
        let store = self.store();
        for _ in 0..attempts {
            let current = store.load_thread(thread_id).await?;
            let mut update = match from {
                Some(id) => {
                    let timeline = store.timeline(thread_id).await?;
                    let to = timeline
                        .restore_checkpoint(id)
                        .ok_or(SchedulerError::UnknownCheckpoint(id))?;
                    ThreadUpdate::restoring(thread_id, &timeline, to, source)
                }
                None => ThreadUpdate {
                    source,
                    ..ThreadUpdate::of(thread_id, &current)
                },
            };
            update.run_id = run_id.to_owned();
            if let Some(edit) = edit {
                edit.apply(
                    thread_id,
                    &current.messages,
                    current.pending.is_some(),
                    &mut update,
                )?;
            }
            if let UpdateOutcome::Updated { checkpoint } = store.update_thread(&update).await? {
                return Ok(checkpoint);
            }
        }
        Err(SchedulerError::ThreadChanged)
    }

    /// Rolls back `run_id` (`action=rollback`, `multitask_strategy=
    /// rollback`): forgets the run, and once it no longer occupies its
    /// thread returns the thread to its state before the run (now if it
    /// has stopped, else at the next run's start or the starter's next
    /// round, whichever comes first). A run that never started only goes.
    pub async fn roll_back(&self, thread_id: &str, run_id: &str) -> Result<(), SchedulerError> {
        self.forget(thread_id, run_id).await?;
        let store = self.store().as_ref();
        if store.get_run(thread_id, run_id).await?.is_none() {
            return Ok(());
        }
        let Some(mut thread) = threads(store).get(thread_id).await? else {
            return Ok(());
        };
        thread.rollback = Some(run_id.to_owned());
        threads(store).put(thread_id, &thread).await?;
        store
            .index_put(ROLLBACK_THREADS, thread_id, score_at(chrono::Utc::now()))
            .await?;
        self.settle_rollback(thread_id).await?;
        Ok(())
    }

    /// Rolls back the run marked on `thread_id`, if it has stopped.
    /// Answers whether the thread is settled (no rollback left to do).
    pub(super) async fn settle_rollback(&self, thread_id: &str) -> Result<bool, SchedulerError> {
        let store = self.store().as_ref();
        let Some(mut thread) = threads(store).get(thread_id).await? else {
            return Ok(true);
        };
        let Some(run_id) = thread.rollback.clone() else {
            return Ok(true);
        };
        if self.active_run(&thread).await?.is_some() {
            return Ok(false);
        }
        let timeline = store.timeline(thread_id).await?;
        match timeline.restore_before_run(&run_id) {
            Some(to) => {
                let rollback =
                    ThreadUpdate::restoring(thread_id, &timeline, to, CheckpointSource::Rollback);
                if store.update_thread(&rollback).await? == UpdateOutcome::Conflict {
                    // Moved since it was read: the next round reads again.
                    return Ok(false);
                }
            }
            None => warn!(
                thread = thread_id,
                run = %run_id,
                "nothing to roll back: the run changed nothing, or later changes followed it"
            ),
        }
        thread.rollback = None;
        threads(store).put(thread_id, &thread).await?;
        Ok(true)
    }

    /// Settles every thread marked for a rollback whose run has stopped.
    pub async fn settle_rollbacks(&self) -> Result<(), SchedulerError> {
        const CHUNK: u64 = 512;
        let store = self.store();
        let mut marked = Vec::new();
        loop {
            let at = u64::try_from(marked.len()).unwrap_or(u64::MAX);
            let chunk = store
                .index_page(ROLLBACK_THREADS, Order::Ascending, at, CHUNK)
                .await?;
            let last = (chunk.len() as u64) < CHUNK;
            marked.extend(chunk);
            if last {
                break;
            }
        }
        for entry in marked {
            if self.settle_rollback(&entry.id).await? {
                store
                    .index_remove_at(ROLLBACK_THREADS, &entry.id, entry.score)
                    .await?;
            }
        }
        Ok(())
    }
}
