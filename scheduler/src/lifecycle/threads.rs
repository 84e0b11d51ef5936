//! The threads runs go to: found or made for a new run, and deleted with
//! everything they own, the run they have in flight first.

use std::time::{Duration, Instant};

use deepfleet_proto::TenantId;
use deepfleet_proto::keys::records::thread_runs;
use deepfleet_store::{Checkpoint, Order};
use serde_json::Map;

use super::Lifecycle;
use crate::error::SchedulerError;
use crate::repo::a2a_tasks::a2a_tasks;
use crate::repo::follow_marks::follow_marks;
use crate::repo::queued::queued;
use crate::repo::runs::{RunMeta, runs_of};
use crate::repo::threads::{ThreadRecord, threads};
use crate::repo::webhooks::{DeliveryState, webhooks};

/// The longest a stateless run's follower waits for the run's last event
/// before removing its thread anyway (an append is best effort).
const LAST_EVENT_WAIT: Duration = Duration::from_secs(2);
/// How often it looks.
const LAST_EVENT_POLL: Duration = Duration::from_millis(20);

impl Lifecycle {
    /// Deletes a thread and everything it owns: the run it has in flight
    /// is cancelled first (its next commit then finds the run gone), then
    /// the checkpoint, the runs and the subagent threads go
    /// ([`deepfleet_store::Retention::purge_thread`]), then the API's
    /// records of its runs, and the thread's record last, so a failure
    /// part-way leaves a thread a second delete finishes.
    pub async fn delete_thread(&self, record: &ThreadRecord) -> Result<(), SchedulerError> {
        let store = self.store().as_ref();
        let thread_id = record.thread_id.as_str();
        if let Some(run) = self.active_run(record).await? {
            store.request_cancel(thread_id, &run.run_id).await?;
        }
        store.purge_thread(thread_id).await?;
        let runs = runs_of(store, thread_id);
        let metas = runs
            .walk(thread_runs(thread_id), Order::Ascending)
            .all()
            .await?;
        for meta in metas {
            queued(store).delete(&meta.run_id).await?;
            follow_marks(store).delete(&meta.run_id).await?;
            a2a_tasks(store).delete(&meta.run_id).await?;
            runs.delete(&meta.run_id).await?;
        }
        threads(store).delete(thread_id).await?;
        Ok(())
    }

    /// Deletes a stateless run's temporary thread once the run has ended
    /// (not while it waits for a human: the thread is what resumes it).
    /// What a follower of the run calls once it has answered.
    pub async fn dispose_temporary(&self, meta: &RunMeta) -> Result<(), SchedulerError> {
        let Some(thread) = threads(self.store().as_ref())
            .get(&meta.thread_id)
            .await?
            .filter(|t| t.temporary)
        else {
            return Ok(());
        };
        let ended = match self.run_record(meta).await? {
            Some(run) => run.status.is_terminal(),
            None => meta.cancelled,
        };
        // A webhook still to be made reads the run's records: the thread's
        // expiry removes it instead, a minute after the run ended.
        let webhook_waits = webhooks(self.store().as_ref())
            .get(&meta.run_id)
            .await?
            .is_some_and(|w| w.state == DeliveryState::Waiting);
        if ended && !webhook_waits {
            self.last_event_of(&meta.run_id).await?;
            self.delete_thread(&thread).await?;
        }
        Ok(())
    }

    /// Waits (at most [`LAST_EVENT_WAIT`]) until an ended run's worker has
    /// appended the event of its last commit, which it does just after the
    /// commit: a stream deleted before that append would be made again by
    /// it.
    async fn last_event_of(&self, run_id: &str) -> Result<(), SchedulerError> {
        let store = self.store();
        let deadline = Instant::now() + LAST_EVENT_WAIT;
        let mut after: Option<String> = None;
        while Instant::now() < deadline {
            let events = store.run_events(run_id, after.as_deref(), 512).await?;
            let last = events.iter().any(|(_, e)| {
                e.run_id == run_id && e.namespace.is_empty() && e.status.is_terminal()
            });
            if last {
                return Ok(());
            }
            match events.last() {
                Some((id, _)) => after = Some(id.clone()),
                None => tokio::time::sleep(LAST_EVENT_POLL).await,
            }
        }
        Ok(())
    }

    /// The thread of `tenant` a new run goes to: `thread_id`'s (made when
    /// missing and `create_missing`), or a new temporary one for a
    /// stateless run. `None` when the thread does not exist, or is another
    /// tenant's (which is never replaced), or is a thread the store holds
    /// that no API record owns (see [`Lifecycle::unowned_thread`]).
    pub async fn thread_for_run(
        &self,
        tenant: &TenantId,
        thread_id: Option<&str>,
        create_missing: bool,
    ) -> Result<Option<ThreadRecord>, SchedulerError> {
        let repo = threads(self.store().as_ref());
        let record = match thread_id {
            Some(id) => match repo.get(id).await? {
                Some(thread) => return Ok((thread.tenant == *tenant).then_some(thread)),
                None if create_missing => {
                    crate::ids::check_id("thread_id", id).map_err(|reason| {
                        SchedulerError::InvalidTask {
                            id: id.to_owned(),
                            reason,
                        }
                    })?;
                    if self.unowned_thread(id).await? {
                        return Ok(None);
                    }
                    ThreadRecord::new(tenant.clone(), id.to_owned(), Map::new())
                }
                None => return Ok(None),
            },
            None => ThreadRecord {
                temporary: true,
                ..ThreadRecord::new(tenant.clone(), uuid::Uuid::now_v7().to_string(), Map::new())
            },
        };
        // Another request may have made the thread meanwhile: only the one
        // that inserted it uses a new record, the others read the winner's.
        if repo.insert(&record.thread_id, &record).await? {
            return Ok(Some(record));
        }
        Ok(repo.get_owned(&record.thread_id, tenant).await?)
    }

    /// Whether the store holds thread `thread_id` although no API record
    /// owns it: a batch's thread, a subagent's, or one whose record is
    /// gone. Such a thread belongs to whoever made it, so no caller may
    /// adopt its id: its files and messages would become theirs.
    pub async fn unowned_thread(&self, thread_id: &str) -> Result<bool, SchedulerError> {
        let checkpoint = self.store().load_thread(thread_id).await?;
        Ok(checkpoint != Checkpoint::default())
    }
}
