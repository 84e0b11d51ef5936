//! Stopping and forgetting runs and threads, and finding the thread a new
//! run goes to.

use deepfleet_proto::api;
use serde_json::Map;

use super::Lifecycle;
use crate::error::SchedulerError;
use crate::repo::queued::queued;
use crate::repo::runs::{RunMeta, runs_of};
use crate::repo::threads::{ThreadRecord, threads};

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

    /// Drops a run from its thread's list (a rollback).
    pub async fn forget(&self, thread_id: &str, run_id: &str) -> Result<(), SchedulerError> {
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

    /// Deletes a thread's record, cancelling the run it has in flight.
    pub async fn delete_thread(&self, record: &ThreadRecord) -> Result<(), SchedulerError> {
        let store = self.store().as_ref();
        if let Some(run) = self.active_run(record).await? {
            store.request_cancel(&record.thread_id, &run.run_id).await?;
        }
        threads(store).delete(&record.thread_id).await?;
        Ok(())
    }

    /// The thread a new run goes to: `thread_id`'s (made when missing and
    /// `create_missing`), or a new temporary one for a stateless run.
    /// `None` when the thread does not exist.
    pub async fn thread_for_run(
        &self,
        thread_id: Option<&str>,
        create_missing: bool,
    ) -> Result<Option<ThreadRecord>, SchedulerError> {
        let repo = threads(self.store().as_ref());
        let record = match thread_id {
            Some(id) => match repo.get(id).await? {
                Some(thread) => return Ok(Some(thread)),
                None if create_missing => ThreadRecord::new(id.to_owned(), Map::new()),
                None => return Ok(None),
            },
            None => ThreadRecord {
                temporary: true,
                ..ThreadRecord::new(uuid::Uuid::now_v7().to_string(), Map::new())
            },
        };
        repo.put(&record.thread_id, &record).await?;
        Ok(Some(record))
    }
}
