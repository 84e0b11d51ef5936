//! Where runs and threads are, as the Agent Server API reports them, and
//! what is queued on a thread: the queries, which only read. The files
//! that change runs and threads (`queue.rs`, `rewind.rs`, `cancel.rs`, ...)
//! ask here and nowhere else, so their calls go one way.

use chrono::{DateTime, Utc};
use deepfleet_proto::api::{self, ThreadStatus};
use deepfleet_proto::keys::records::thread_queue;
use deepfleet_proto::{RunRecord, RunStatus};
use deepfleet_store::Order;

use super::Lifecycle;
use crate::error::SchedulerError;
use crate::repo::queued::queued;
use crate::repo::runs::RunMeta;
use crate::repo::threads::ThreadRecord;

/// The run status the Agent Server API reports.
pub fn api_status(status: RunStatus) -> api::RunStatus {
    match status {
        RunStatus::Pending => api::RunStatus::Pending,
        RunStatus::Running | RunStatus::Waiting => api::RunStatus::Running,
        // A run parked on a human decision ends `success`; its thread shows
        // `interrupted` (reference §1.4).
        RunStatus::Success | RunStatus::AwaitingHuman => api::RunStatus::Success,
        RunStatus::Error => api::RunStatus::Error,
        // A user cancel is `interrupted` on the API.
        RunStatus::Cancelled => api::RunStatus::Interrupted,
        RunStatus::Timeout => api::RunStatus::Timeout,
    }
}

/// Whether a run still occupies its thread (a run parked on a human
/// decision does not: the thread is `interrupted`, and a new run resumes
/// or replaces it).
pub fn occupies_thread(status: RunStatus) -> bool {
    match status {
        RunStatus::Pending | RunStatus::Running | RunStatus::Waiting => true,
        RunStatus::AwaitingHuman
        | RunStatus::Success
        | RunStatus::Error
        | RunStatus::Cancelled
        | RunStatus::Timeout => false,
    }
}

/// The API status of the run of `meta` with `record` and when it last
/// changed; a run that never started is `pending`, or `interrupted` once
/// cancelled.
pub fn status_of(meta: &RunMeta, record: Option<&RunRecord>) -> (api::RunStatus, DateTime<Utc>) {
    match record {
        Some(run) => (api_status(run.status), run.updated_at),
        None if meta.cancelled => (api::RunStatus::Interrupted, meta.created_at),
        None => (api::RunStatus::Pending, meta.created_at),
    }
}

impl Lifecycle {
    /// The queued runs of `thread_id`, oldest first.
    pub async fn queued(&self, thread_id: &str) -> Result<Vec<RunMeta>, SchedulerError> {
        let repo = queued(self.store().as_ref());
        let mut ahead = repo
            .walk(thread_queue(thread_id), Order::Ascending)
            .all()
            .await?;
        // The index orders by the microsecond; the age by the nanosecond.
        ahead.sort_by(|a, b| a.age().cmp(&b.age()));
        Ok(ahead)
    }

    /// The oldest queued run of `thread_id`, if it has any.
    pub async fn queue_head(&self, thread_id: &str) -> Result<Option<RunMeta>, SchedulerError> {
        let repo = queued(self.store().as_ref());
        let mut walk = repo
            .walk(thread_queue(thread_id), Order::Ascending)
            .chunk(1);
        Ok(walk.next().await?)
    }

    /// The run record of `meta`, once it started.
    pub async fn run_record(&self, meta: &RunMeta) -> Result<Option<RunRecord>, SchedulerError> {
        Ok(self.store().get_run(&meta.thread_id, &meta.run_id).await?)
    }

    /// A run's API status and when it last changed ([`status_of`]).
    pub async fn run_status(
        &self,
        meta: &RunMeta,
    ) -> Result<(api::RunStatus, DateTime<Utc>), SchedulerError> {
        Ok(status_of(meta, self.run_record(meta).await?.as_ref()))
    }

    /// Whether the run has ended (as the API sees it: a run parked on a
    /// human decision has ended too), and its status if it started.
    pub async fn finished(
        &self,
        meta: &RunMeta,
    ) -> Result<(bool, Option<RunStatus>), SchedulerError> {
        Ok(match self.run_record(meta).await? {
            Some(run) => (!occupies_thread(run.status), Some(run.status)),
            None => (meta.cancelled, None),
        })
    }

    /// The run that occupies `thread` now, if any.
    pub async fn active_run(
        &self,
        thread: &ThreadRecord,
    ) -> Result<Option<RunRecord>, SchedulerError> {
        let Some(run_id) = &thread.active_run else {
            return Ok(None);
        };
        let run = self.store().get_run(&thread.thread_id, run_id).await?;
        Ok(run.filter(|r| occupies_thread(r.status)))
    }

    /// `idle`, `busy` (a run in flight or queued), `interrupted` (the last
    /// run waits for a human) or `error`.
    pub async fn thread_status(
        &self,
        record: &ThreadRecord,
    ) -> Result<ThreadStatus, SchedulerError> {
        let Some(run_id) = &record.active_run else {
            let queued = self.queue_head(&record.thread_id).await?;
            return Ok(if queued.is_none() {
                ThreadStatus::Idle
            } else {
                ThreadStatus::Busy
            });
        };
        let run = self.store().get_run(&record.thread_id, run_id).await?;
        let status = run.map(|r| r.status);
        if status.is_some_and(occupies_thread)
            || self.queue_head(&record.thread_id).await?.is_some()
        {
            return Ok(ThreadStatus::Busy);
        }
        Ok(match status {
            Some(RunStatus::AwaitingHuman) => ThreadStatus::Interrupted,
            Some(RunStatus::Error) => ThreadStatus::Error,
            _ => ThreadStatus::Idle,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_reference() {
        assert_eq!(api_status(RunStatus::Waiting), api::RunStatus::Running);
        assert_eq!(
            api_status(RunStatus::AwaitingHuman),
            api::RunStatus::Success
        );
        assert_eq!(
            api_status(RunStatus::Cancelled),
            api::RunStatus::Interrupted
        );
        assert!(occupies_thread(RunStatus::Waiting));
        assert!(!occupies_thread(RunStatus::AwaitingHuman));
    }
}
