//! Answering submitted runs when they end.
//!
//! The submission intake keeps each run's reply address in the store
//! ([`ReplyRecord`]s, beside the run), not in memory, so a scheduler
//! restart loses no answer: [`Replier::deliver_ended`], run in a loop by
//! every scheduler instance, publishes the answer of every run that has
//! ended (or parked on a human decision) and only then forgets the
//! address. A crash between the publish and the delete answers twice,
//! never zero times; the `correlation_id` lets a caller drop the repeat.
//!
//! Each answer carries its run's tenant, so one that cannot go to its
//! `reply_to` lands in that tenant's results queue, never where another
//! tenant may read it.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::keys::records::REPLIES;
use deepfleet_proto::{ResultLine, ResultStatus, ResultUsage, SubmissionResult, TenantId};
use deepfleet_queue::{Replies, ReplyAddress};
use deepfleet_store::{Order, Store, StoreError};
use tracing::warn;

use crate::batch::{result_line, review_of};
use crate::error::SchedulerError;
use crate::lifecycle::status::occupies_thread;
pub use crate::repo::replies::ReplyRecord;
use crate::repo::replies::replies;
use crate::repo::runs::runs_of;

/// Publishes the answers of ended submitted runs.
#[derive(Clone)]
pub struct Replier {
    store: Arc<dyn Store>,
    replies: Arc<dyn Replies>,
}

impl Replier {
    /// A replier reading `store` and answering through `replies`.
    pub fn new(store: Arc<dyn Store>, replies: Arc<dyn Replies>) -> Self {
        Replier { store, replies }
    }

    /// The channel answers go out on.
    pub(crate) fn replies(&self) -> Arc<dyn Replies> {
        Arc::clone(&self.replies)
    }

    /// Remembers where to answer a submitted run.
    pub async fn remember(&self, record: &ReplyRecord) -> Result<(), SchedulerError> {
        replies(self.store.as_ref())
            .put(&record.run_id, record)
            .await?;
        Ok(())
    }

    /// Answers every remembered run that has ended; returns how many.
    /// A run whose answer fails to publish stays remembered for the next
    /// round.
    pub async fn deliver_ended(&self) -> Result<usize, SchedulerError> {
        let mut answered = 0;
        let repo = replies(self.store.as_ref());
        // Read whole first: answering deletes from the index being read.
        let remembered = repo.walk(REPLIES, Order::Ascending).all().await?;
        for record in remembered {
            let Some(Answer { result, tenant }) = self.result_of(&record).await? else {
                continue;
            };
            let payload = serde_json::to_vec(&result).map_err(|e| corrupt(&record.run_id, &e))?;
            let address = ReplyAddress {
                reply_to: record.reply_to.clone(),
                correlation_id: record.correlation_id.clone(),
                tenant,
            };
            if let Err(e) = self.replies.reply(&address, payload).await {
                warn!(error = %e, run_id = %record.run_id, "publishing a run's answer; will retry");
                continue;
            }
            repo.delete(&record.run_id).await?;
            answered += 1;
        }
        Ok(answered)
    }

    /// The answer of a run that has ended, `None` while it goes on.
    async fn result_of(&self, record: &ReplyRecord) -> Result<Option<Answer>, SchedulerError> {
        let id = record.id.clone().unwrap_or_else(|| record.run_id.clone());
        let Some(run) = self
            .store
            .get_run(&record.thread_id, &record.run_id)
            .await?
        else {
            // Not started: queued behind its thread's active run, unless
            // it was cancelled (or deleted) meanwhile.
            let meta = runs_of(self.store.as_ref(), &record.thread_id)
                .get(&record.run_id)
                .await
                .or_else(|e| match e {
                    // As before the repositories: an unreadable record
                    // counts as none.
                    StoreError::Corrupt { .. } => Ok(None),
                    e => Err(e),
                })?;
            if meta.as_ref().is_some_and(|m| !m.cancelled) {
                return Ok(None);
            }
            return Ok(Some(Answer {
                result: SubmissionResult {
                    run_id: record.run_id.clone(),
                    thread_id: record.thread_id.clone(),
                    result: cancelled_line(id),
                },
                // A run deleted before it started leaves no trace of its
                // tenant: its answer goes where only the fleet reads.
                tenant: meta.map(|m| m.tenant),
            }));
        };
        if occupies_thread(run.status) {
            return Ok(None);
        }
        let thread = self.store.load_thread(&record.thread_id).await?;
        let mut line = result_line(&run, &thread.files);
        line.id = id;
        if line.status == ResultStatus::Interrupted {
            line.review = review_of(&run, &thread);
        }
        Ok(Some(Answer {
            result: SubmissionResult {
                run_id: record.run_id.clone(),
                thread_id: record.thread_id.clone(),
                result: line,
            },
            tenant: Some(run.tenant),
        }))
    }

    /// Runs [`Replier::deliver_ended`] every `every` until the task is
    /// dropped; errors are logged and retried on the next round.
    pub async fn run(self, every: Duration) {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(e) = self.deliver_ended().await {
                warn!(error = %e, "answering ended runs");
            }
        }
    }
}

/// A run's answer, and whose it is.
struct Answer {
    result: SubmissionResult,
    /// The run's tenant; `None` when it can no longer be told.
    tenant: Option<TenantId>,
}

/// The answer of a run cancelled before it started.
fn cancelled_line(id: String) -> ResultLine {
    ResultLine {
        id,
        status: ResultStatus::Error,
        output: String::new(),
        error: Some("cancelled: the run was cancelled before it started".into()),
        steps: 0,
        usage: ResultUsage::default(),
        by_caller: Default::default(),
        cost_usd: 0.0,
        files: Default::default(),
        review: None,
    }
}

fn corrupt(run_id: &str, e: &serde_json::Error) -> SchedulerError {
    SchedulerError::Store(deepfleet_store::StoreError::Corrupt {
        key: format!("{REPLIES}/{run_id}"),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use chrono::Utc;
    use deepfleet_proto::{RunRecord, RunStatus};
    use deepfleet_queue::QueueError;
    use deepfleet_store::ThreadSeed;
    use deepfleet_store::embedded::EmbeddedStore;
    use pretty_assertions::assert_eq;

    use super::*;

    /// Records what it was asked to publish; refuses while `down`.
    #[derive(Default)]
    struct Outbox {
        sent: Mutex<Vec<(ReplyAddress, SubmissionResult)>>,
        down: Mutex<bool>,
    }

    #[async_trait]
    impl Replies for Outbox {
        async fn reply(&self, to: &ReplyAddress, payload: Vec<u8>) -> Result<(), QueueError> {
            if *self.down.lock().unwrap() {
                return Err(QueueError::Connection("down".into()));
            }
            let result = serde_json::from_slice(&payload).unwrap();
            self.sent.lock().unwrap().push((to.clone(), result));
            Ok(())
        }
    }

    fn run(id: &str, status: RunStatus) -> RunRecord {
        RunRecord {
            status,
            steps: 2,
            output: Some("done".into()),
            ..RunRecord::new(id, format!("t-{id}"), "helper", Utc::now())
        }
    }

    fn record(id: &str) -> ReplyRecord {
        ReplyRecord {
            run_id: id.into(),
            thread_id: format!("t-{id}"),
            id: Some(format!("job-{id}")),
            reply_to: Some("replies".into()),
            correlation_id: Some(format!("c-{id}")),
        }
    }

    #[tokio::test]
    async fn answers_ended_runs_once_and_waits_for_the_others() {
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let outbox = Arc::new(Outbox::default());
        let replier = Replier::new(Arc::clone(&store), outbox.clone());
        for (id, status) in [("a", RunStatus::Success), ("b", RunStatus::Running)] {
            store
                .create_run(&run(id, status), &ThreadSeed::default())
                .await
                .unwrap();
            replier.remember(&record(id)).await.unwrap();
        }
        *outbox.down.lock().unwrap() = true;
        assert_eq!(replier.deliver_ended().await.unwrap(), 0);
        *outbox.down.lock().unwrap() = false;
        assert_eq!(replier.deliver_ended().await.unwrap(), 1);
        assert_eq!(replier.deliver_ended().await.unwrap(), 0);
        let sent = outbox.sent.lock().unwrap().clone();
        assert_eq!(sent.len(), 1);
        let (to, result) = &sent[0];
        assert_eq!(to.correlation_id.as_deref(), Some("c-a"));
        assert_eq!(
            (
                result.run_id.as_str(),
                result.result.id.as_str(),
                result.result.status,
                result.result.output.as_str()
            ),
            ("a", "job-a", ResultStatus::Success, "done")
        );
        let repo = replies(store.as_ref());
        let left = repo.walk(REPLIES, Order::Ascending).all().await.unwrap();
        assert_eq!(left, vec![record("b")]);
    }

    #[tokio::test]
    async fn a_run_that_never_started_is_answered_as_cancelled() {
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let outbox = Arc::new(Outbox::default());
        let replier = Replier::new(Arc::clone(&store), outbox.clone());
        replier.remember(&record("gone")).await.unwrap();
        assert_eq!(replier.deliver_ended().await.unwrap(), 1);
        let sent = outbox.sent.lock().unwrap().clone();
        assert_eq!(sent[0].1.result.status, ResultStatus::Error);
        assert!(
            sent[0]
                .1
                .result
                .error
                .as_deref()
                .unwrap()
                .contains("cancelled")
        );
        assert_eq!(sent[0].0.tenant, None, "no trace of its tenant is left");
    }

    /// Each answer names its run's tenant, so that without a live
    /// `reply_to` it lands in that tenant's results queue only.
    #[tokio::test]
    async fn answers_carry_their_runs_tenant() {
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let outbox = Arc::new(Outbox::default());
        let replier = Replier::new(Arc::clone(&store), outbox.clone());
        for (id, tenant) in [("a", "tenant-a"), ("b", "tenant-b")] {
            let run = RunRecord {
                tenant: TenantId::new(tenant).unwrap(),
                ..run(id, RunStatus::Success)
            };
            store
                .create_run(&run, &ThreadSeed::default())
                .await
                .unwrap();
            let unaddressed = ReplyRecord {
                reply_to: None,
                ..record(id)
            };
            replier.remember(&unaddressed).await.unwrap();
        }
        assert_eq!(replier.deliver_ended().await.unwrap(), 2);
        let mut sent: Vec<(String, Option<String>)> = outbox
            .sent
            .lock()
            .unwrap()
            .iter()
            .map(|(to, result)| {
                (
                    result.run_id.clone(),
                    to.tenant.as_ref().map(|t| t.to_string()),
                )
            })
            .collect();
        sent.sort();
        assert_eq!(
            sent,
            vec![
                ("a".to_owned(), Some("tenant-a".to_owned())),
                ("b".to_owned(), Some("tenant-b".to_owned()))
            ]
        );
    }
}
