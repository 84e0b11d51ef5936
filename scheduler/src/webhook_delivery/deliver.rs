//! The delivery loop: every scheduler instance runs it over the pending
//! deliveries in the store, so deliveries survive any scheduler's crash
//! or restart and need no instance in particular.
//!
//! A delivery waits until its run ends, then its body is fixed and sent;
//! a failed attempt is tried again after [`super::backoff`]'s wait, up to
//! the configured attempts, then recorded as failed. Each attempt, its
//! status and error, is kept on the delivery's record.
//!
//! Instances never send the same delivery at once: whatever changes a
//! delivery happens under its lease ([`Store::claim_record`] on
//! [`WEBHOOK_CLAIMS`]), after reading the record again, so once an
//! instance has recorded a delivery as delivered no one sends it again.
//! What remains is the window between a receiver's 2xx and that record:
//! an instance dying there leaves the lease to lapse and the delivery to
//! be sent again, with the same `webhook-id`, which is how a receiver
//! tells the repeat.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use deepfleet_fleet::Metrics;
use deepfleet_fleet::metrics::WebhookOutcome;
use deepfleet_proto::keys::records::{WEBHOOK_CLAIMS, WEBHOOKS};
use deepfleet_store::{Order, Store};
use futures::StreamExt;
use serde_json::json;
use tracing::{info, warn};

use super::payload;
use crate::error::SchedulerError;
use crate::repo::runs::runs_of;
use crate::repo::webhooks::{AttemptRecord, DeliveryState, WebhookRecord, webhooks};
use crate::runs::Runs;
use crate::webhooks::WebhookConfig;
use crate::webhooks::send::{Answer, Sender};

/// Deliveries handled at once by one instance: a receiver that hangs
/// until the timeout holds one slot, not the whole loop.
const CONCURRENCY: usize = 16;
/// Pending deliveries read from the store at once.
pub const PAGE: usize = 256;
/// How long a lease outlives the longest attempt: reading the run and
/// recording the outcome fit in it many times over.
const LEASE_MARGIN: Duration = Duration::from_secs(60);
/// How long a delivery may wait for a run that does not exist (its
/// record is written just before the run; a run deleted with its thread
/// never ends) before it is recorded as failed.
const ORPHAN_AFTER: Duration = Duration::from_secs(600);
/// How long a delivery's record outlives its end when the tenant keeps
/// runs until deleted.
const KEEP_FINISHED: Duration = Duration::from_secs(7 * 24 * 3600);

/// Sends the webhooks of ended runs.
#[derive(Clone)]
pub struct WebhookDeliverer {
    runs: Runs,
    sender: Sender,
    metrics: Option<Arc<Metrics>>,
    /// Who holds a lease taken by this instance, as the lease records it.
    holder: String,
}

impl WebhookDeliverer {
    /// A deliverer over `runs`' store, with its intake's webhook
    /// configuration, counting outcomes into `metrics`.
    pub fn new(
        runs: Runs,
        metrics: Option<Arc<Metrics>>,
    ) -> Result<Self, crate::webhooks::WebhookError> {
        let sender = Sender::new(
            runs.life.intake().webhooks().timeout,
            runs.life.intake().webhooks().allow_private,
        )?;
        Ok(WebhookDeliverer {
            runs,
            sender,
            metrics,
            holder: uuid::Uuid::now_v7().to_string(),
        })
    }

    fn config(&self) -> &WebhookConfig {
        self.runs.life.intake().webhooks()
    }

    fn store(&self) -> &dyn Store {
        self.runs.store()
    }

    /// Goes through the pending deliveries once: fixes the body of those whose
    /// run has ended and sends those due. Returns how many attempts were
    /// made; a delivery that fails to be handled is logged and left for
    /// the next round.
    pub async fn deliver_due(&self) -> Result<usize, SchedulerError> {
        let repo = webhooks(self.store());
        let mut walk = repo.walk(WEBHOOKS, Order::Ascending);
        let mut attempts = 0;
        loop {
            // A page at a time: a due delivery carries its body, so the
            // whole list could be large. A delivery finished meanwhile
            // leaves the index and the ones after it move up, so a few may
            // wait for the next round; none is lost.
            let page = walk.take(PAGE).await?;
            if page.is_empty() {
                return Ok(attempts);
            }
            attempts += futures::stream::iter(page)
                .map(|record| async move {
                    let run_id = record.run_id.clone();
                    self.handle(record).await.unwrap_or_else(|e| {
                        warn!(error = %e, %run_id, "handling a webhook delivery; will retry");
                        false
                    })
                })
                .buffer_unordered(CONCURRENCY)
                .filter(|attempted| futures::future::ready(*attempted))
                .count()
                .await;
        }
    }

    /// Runs [`WebhookDeliverer::deliver_due`] every `every` until the task
    /// is dropped; errors are logged and retried on the next round.
    pub async fn run(self, every: Duration) {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(e) = self.deliver_due().await {
                warn!(error = %e, "delivering webhooks");
            }
        }
    }

    /// One pending delivery as read: whether it has anything to do is
    /// decided without a lease (most rounds find nothing), the work under
    /// one. Returns whether an attempt was made.
    async fn handle(&self, record: WebhookRecord) -> Result<bool, SchedulerError> {
        if !record.state.pending() {
            // Finished, but its unlisting was cut short.
            self.store().index_remove(WEBHOOKS, &record.run_id).await?;
            return Ok(false);
        }
        if !self.has_work(&record, Utc::now()).await? {
            return Ok(false);
        }
        let lease = self.config().timeout + LEASE_MARGIN;
        let holder = json!(self.holder);
        let store = self.store();
        if !store
            .claim_record(WEBHOOK_CLAIMS, &record.run_id, &holder, lease)
            .await?
        {
            return Ok(false);
        }
        let attempted = self.under_lease(&record.run_id).await;
        if attempted.is_ok() {
            // An error leaves the lease to lapse: the outcome may not be
            // recorded, and no one should act on the record meanwhile.
            store.delete_record(WEBHOOK_CLAIMS, &record.run_id).await?;
        }
        attempted
    }

    /// Whether `record` needs a lease now: its run has ended (or is gone
    /// for good) while it waits, or its next attempt is due.
    async fn has_work(
        &self,
        record: &WebhookRecord,
        now: DateTime<Utc>,
    ) -> Result<bool, SchedulerError> {
        match record.state {
            DeliveryState::Waiting => {
                let meta = runs_of(self.store(), &record.thread_id)
                    .get(&record.run_id)
                    .await?;
                Ok(match meta {
                    Some(meta) => self.runs.life.finished(&meta).await?.0,
                    None => older_than(record.created_at, now, ORPHAN_AFTER),
                })
            }
            DeliveryState::Due => Ok(record.next_attempt_at.is_none_or(|at| at <= now)),
            DeliveryState::Delivered | DeliveryState::Failed => Ok(false),
        }
    }

    /// The work on one delivery, holding its lease, from its record as it
    /// is now (another instance may have moved it on since it was read).
    async fn under_lease(&self, run_id: &str) -> Result<bool, SchedulerError> {
        let repo = webhooks(self.store());
        let Some(mut record) = repo.get(run_id).await? else {
            return Ok(false);
        };
        let now = Utc::now();
        if !record.state.pending() || !self.has_work(&record, now).await? {
            return Ok(false);
        }
        if record.state == DeliveryState::Waiting {
            let meta = runs_of(self.store(), &record.thread_id).get(run_id).await?;
            let Some(meta) = meta else {
                let why = "the run no longer exists (its thread was deleted)";
                self.give_up(record, why).await?;
                return Ok(false);
            };
            match payload::body(&self.runs, &meta).await {
                Ok(body) => record.body = Some(body),
                Err(e) => {
                    warn!(error = %e, %run_id, "making a webhook body; will retry");
                    return Ok(false);
                }
            }
            record.state = DeliveryState::Due;
        }
        self.attempt(record, now).await?;
        Ok(true)
    }

    /// Sends a due delivery once and records the outcome.
    async fn attempt(
        &self,
        mut record: WebhookRecord,
        now: DateTime<Utc>,
    ) -> Result<(), SchedulerError> {
        let config = self.config();
        let secret = match config.secret(&record.tenant) {
            Ok(secret) => secret,
            // The secret was removed since the run was accepted.
            Err(e) => return self.give_up(record, &e.to_string()).await,
        };
        let body = record.body.as_deref().unwrap_or_default();
        let answer = self
            .sender
            .send(&record.url, &record.run_id, secret, body)
            .await;
        let (status, error) = match &answer {
            Answer::Accepted(status) => (Some(*status), None),
            Answer::Refused(status, text) => {
                (Some(*status), Some(format!("HTTP {status}: {text}")))
            }
            Answer::Unreachable(why) => (None, Some(why.clone())),
        };
        record.attempts.push(AttemptRecord {
            at: now,
            status,
            error: error.clone(),
        });
        let failures = u32::try_from(record.attempts.len()).unwrap_or(u32::MAX);
        let outcome = if error.is_none() {
            record.state = DeliveryState::Delivered;
            WebhookOutcome::Delivered
        } else if failures >= config.max_attempts {
            record.state = DeliveryState::Failed;
            WebhookOutcome::Failed
        } else {
            let wait = config.backoff.jittered(failures);
            record.next_attempt_at =
                Some(now + chrono::Duration::from_std(wait).unwrap_or_default());
            WebhookOutcome::Retrying
        };
        if let Some(metrics) = &self.metrics {
            metrics.webhook_delivery(outcome);
        }
        match outcome {
            WebhookOutcome::Delivered => {
                info!(run_id = %record.run_id, attempts = failures, "webhook delivered");
            }
            WebhookOutcome::Retrying | WebhookOutcome::Failed => warn!(
                run_id = %record.run_id,
                attempt = failures,
                error = error.as_deref().unwrap_or_default(),
                gave_up = outcome == WebhookOutcome::Failed,
                "webhook attempt failed"
            ),
        }
        self.save(record, now).await
    }

    /// Records a delivery that cannot be made as failed, with why.
    async fn give_up(&self, mut record: WebhookRecord, why: &str) -> Result<(), SchedulerError> {
        warn!(run_id = %record.run_id, reason = why, "webhook not sent");
        let now = Utc::now();
        record.state = DeliveryState::Failed;
        record.attempts.push(AttemptRecord {
            at: now,
            status: None,
            error: Some(why.to_owned()),
        });
        if let Some(metrics) = &self.metrics {
            metrics.webhook_delivery(WebhookOutcome::Failed);
        }
        self.save(record, now).await
    }

    /// Saves `record`; a finished one leaves the pending list and expires
    /// with its tenant's runs.
    async fn save(
        &self,
        mut record: WebhookRecord,
        now: DateTime<Utc>,
    ) -> Result<(), SchedulerError> {
        let store = self.store();
        let finished = !record.state.pending();
        if finished {
            record.finished_at = Some(now);
            record.next_attempt_at = None;
        }
        webhooks(store).put(&record.run_id, &record).await?;
        if finished {
            store.index_remove(WEBHOOKS, &record.run_id).await?;
            let keep = self
                .runs
                .life
                .intake()
                .retention()
                .for_tenant(&record.tenant)
                .unwrap_or(KEEP_FINISHED);
            store.expire_record(WEBHOOKS, &record.run_id, keep).await?;
        }
        Ok(())
    }
}

/// Whether `at` is more than `age` before `now`.
fn older_than(at: DateTime<Utc>, now: DateTime<Utc>, age: Duration) -> bool {
    now.signed_duration_since(at)
        .to_std()
        .is_ok_and(|elapsed| elapsed > age)
}
