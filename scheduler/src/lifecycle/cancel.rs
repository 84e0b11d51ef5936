//! Stopping and forgetting runs.

use deepfleet_proto::api;

use super::Lifecycle;
use crate::error::SchedulerError;
use crate::repo::a2a_tasks::a2a_tasks;
use crate::repo::queued::queued;
use crate::repo::runs::{RunMeta, runs_of};

impl Lifecycle {
    /// Asks a run to stop at its next step boundary; a run still queued
    /// leaves the queue and is marked cancelled (in `meta` too).
    pub async fn cancel(&self, meta: &mut RunMeta) -> Result<(), SchedulerError> {
        let store = self.store().as_ref();
        store.request_cancel(&meta.thread_id, &meta.run_id).await?;
        if queued(store).delete(&meta.run_id).await? {
            meta.cancelled = true;
            runs_of(store, &meta.thread_id)
                .put(&meta.run_id, meta)
                .await?;
        }
        Ok(())
    }

    /// Drops a run from its thread's list (a delete, or a rollback).
    pub async fn forget(&self, thread_id: &str, run_id: &str) -> Result<(), SchedulerError> {
        a2a_tasks(self.store().as_ref()).delete(run_id).await?;
        runs_of(self.store().as_ref(), thread_id)
            .delete(run_id)
            .await?;
        Ok(())
    }

    /// Deletes a run that is not running; a running one must be cancelled
    /// first.
    pub async fn delete_run(&self, meta: &RunMeta) -> Result<(), SchedulerError> {
        if self.run_status(meta).await?.0 == api::RunStatus::Running {
            return Err(SchedulerError::RunStillRunning(meta.run_id.clone()));
        }
        queued(self.store().as_ref()).delete(&meta.run_id).await?;
        self.forget(&meta.thread_id, &meta.run_id).await
    }
}
