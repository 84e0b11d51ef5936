//! The cron loop: claim what is due, create its runs through the same
//! path as `POST /runs` and `POST /threads/{id}/runs`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use deepfleet_proto::keys::records::CRON_DUE;
use deepfleet_store::{IndexEntry, Order};
use serde_json::Value;
use tracing::{debug, warn};

use super::schedule::Schedule;
use crate::api::ApiState;
use crate::api::run_create::create_run;
use crate::repo::crons::{CronRecord, crons};
use crate::repo::score_at;

/// Due entries read per pass; more are taken on the next pass at once.
const PAGE: u64 = 64;

/// Metadata every run a cron creates carries: the cron, and the fire
/// time it was created for.
pub fn fire_metadata(cron_id: &str, due: DateTime<Utc>) -> [(&'static str, Value); 2] {
    [
        ("cron_id", Value::String(cron_id.to_owned())),
        ("cron_fire_at", Value::String(due.to_rfc3339())),
    ]
}

/// Fires the fleet's crons from this scheduler, alongside any others.
#[derive(Clone)]
pub struct CronLoop {
    state: ApiState,
    poll: Duration,
}

impl CronLoop {
    /// A loop creating runs through `state`, looking for new or changed
    /// crons at least every `poll` (it sleeps only until the next known
    /// fire time when that is sooner).
    pub fn new(state: ApiState, poll: Duration) -> Self {
        CronLoop { state, poll }
    }

    /// Runs until the task is dropped. A store error is logged and the
    /// loop goes on at the next poll.
    pub async fn run(self) {
        loop {
            let wait = match self.tick().await {
                Ok(next) => next
                    .map(|at| (at - Utc::now()).to_std().unwrap_or(Duration::ZERO))
                    .map_or(self.poll, |until| until.min(self.poll)),
                Err(e) => {
                    warn!(error = %e, "the cron loop could not read the due crons");
                    self.poll
                }
            };
            tokio::time::sleep(wait).await;
        }
    }

    /// Fires every cron due now (those other schedulers claim first are
    /// theirs); returns when the earliest cron not yet due fires, or now
    /// when more are due than one pass reads.
    pub async fn tick(&self) -> Result<Option<DateTime<Utc>>, crate::SchedulerError> {
        let store = self.state.store();
        let now = Utc::now();
        let due = store
            .index_page(CRON_DUE, Order::Ascending, 0, PAGE)
            .await?;
        let full = due.len() as u64 == PAGE;
        for entry in &due {
            if entry.score > score_at(now) {
                return Ok(DateTime::from_timestamp_micros(entry.score));
            }
            self.claim_and_fire(entry, now).await?;
        }
        Ok(full.then_some(now))
    }

    /// Moves `entry` to its cron's next fire time; if this scheduler won
    /// that move, creates the run.
    async fn claim_and_fire(
        &self,
        entry: &IndexEntry,
        now: DateTime<Utc>,
    ) -> Result<(), crate::SchedulerError> {
        let store = self.state.store();
        let Some(cron) = crons(store).get(&entry.id).await? else {
            // Deleted since it was indexed.
            store
                .index_remove_at(CRON_DUE, &entry.id, entry.score)
                .await?;
            return Ok(());
        };
        let Some(due) = DateTime::from_timestamp_micros(entry.score) else {
            store
                .index_remove_at(CRON_DUE, &entry.id, entry.score)
                .await?;
            return Ok(());
        };
        let next = following(&cron, due.max(now));
        let claimed = match next {
            Some(at) => {
                store
                    .index_move_at(CRON_DUE, &entry.id, entry.score, score_at(at))
                    .await?
            }
            None => {
                store
                    .index_remove_at(CRON_DUE, &entry.id, entry.score)
                    .await?
            }
        };
        if !claimed {
            debug!(cron_id = %cron.cron_id, "another scheduler fired this cron");
            return Ok(());
        }
        if cron.enabled && cron.end_time.is_none_or(|end| due <= end) {
            self.fire(&cron, due).await;
        }
        Ok(())
    }

    /// Creates the run of `cron` for its fire time `due`. A run refused
    /// (its assistant or thread gone, the tenant at its run limit) is
    /// logged: the cron fires again at its next time.
    async fn fire(&self, cron: &CronRecord, due: DateTime<Utc>) {
        let mut body = cron.payload.clone();
        let metadata = body.metadata.get_or_insert_default();
        for (key, value) in fire_metadata(&cron.cron_id, due) {
            metadata.insert(key.to_owned(), value);
        }
        if let Some(sealed) = &cron.context {
            match self.state.life.intake().open_context(sealed) {
                Ok(context) => body.context = Some(context),
                Err(e) => {
                    warn!(cron_id = %cron.cron_id, error = %e, "cannot open the cron's context");
                    return;
                }
            }
        }
        if cron.thread_id.is_none() {
            let keep = cron.on_run_completed.as_deref().unwrap_or("delete");
            body.rest
                .insert("on_completion".to_owned(), Value::String(keep.to_owned()));
        }
        let created = create_run(
            &self.state,
            &cron.tenant,
            cron.thread_id.as_deref(),
            &body,
            None,
        )
        .await;
        match created {
            Ok(run) => debug!(cron_id = %cron.cron_id, run_id = %run.run_id, %due, "cron fired"),
            Err(e) => warn!(
                cron_id = %cron.cron_id,
                %due,
                status = %e.status,
                detail = %e.detail,
                "a cron's run was refused"
            ),
        }
    }
}

/// When `cron` fires after `after`; `None` when it is disabled, its
/// schedule no longer parses, or it has ended.
pub(crate) fn following(cron: &CronRecord, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    if !cron.enabled {
        return None;
    }
    match Schedule::parse(&cron.schedule, cron.timezone.as_deref()) {
        Ok(schedule) => schedule.next_until(after, cron.end_time),
        Err(e) => {
            warn!(cron_id = %cron.cron_id, error = %e, "a stored cron's schedule does not parse");
            None
        }
    }
}
