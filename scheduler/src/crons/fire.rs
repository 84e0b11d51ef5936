//! The cron loop: claim what is due, create its runs through the same
//! path as `POST /runs` and `POST /threads/{id}/runs`.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use deepfleet_proto::keys::records::CRON_DUE;
use deepfleet_store::{IndexEntry, Order};
use serde_json::Value;
use tokio::sync::Mutex;
use tracing::{debug, warn};

use super::schedule::Schedule;
use crate::api::ApiState;
use crate::api::run_create::create_run;
use crate::repo::crons::{CronRecord, crons, set_next_run};
use crate::repo::score_at;
use crate::repo::threads::threads;

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
    /// Held while a claimed fire creates its run.
    creating: Arc<Mutex<()>>,
}

impl CronLoop {
    /// A loop creating runs through `state`, looking for new or changed
    /// crons at least every `poll` (it sleeps only until the next known
    /// fire time when that is sooner).
    pub fn new(state: ApiState, poll: Duration) -> Self {
        CronLoop {
            state,
            poll,
            creating: Arc::new(Mutex::new(())),
        }
    }

    /// Runs until `stop` completes (a draining scheduler claims nothing
    /// more: a claim whose run it never created would be a lost fire). A
    /// store error is logged and the loop goes on at the next poll.
    pub async fn run(self, stop: impl Future<Output = ()>) {
        tokio::select! {
            () = stop => {}
            () = self.forever() => {}
        }
    }

    async fn forever(&self) {
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
    /// when this pass claimed any (their next times are read again) or
    /// more are due than one pass reads.
    pub async fn tick(&self) -> Result<Option<DateTime<Utc>>, crate::SchedulerError> {
        let store = self.state.store();
        let now = Utc::now();
        let due = store
            .index_page(CRON_DUE, Order::Ascending, 0, PAGE)
            .await?;
        let full = due.len() as u64 == PAGE;
        let mut claimed = false;
        for entry in &due {
            if entry.score > score_at(now) {
                let next = DateTime::from_timestamp_micros(entry.score);
                return Ok(if claimed { Some(now) } else { next });
            }
            self.claim_and_fire(entry, now).await?;
            claimed = true;
        }
        Ok((claimed || full).then_some(now))
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
        if !cron.enabled || cron.end_time.is_some_and(|end| due > end) {
            return Ok(());
        }
        if let Some(thread_id) = &cron.thread_id
            && threads(store)
                .get_owned(thread_id, &cron.tenant)
                .await?
                .is_none()
        {
            // A thread's crons go with it, as the Agent Server's do.
            debug!(cron_id = %cron.cron_id, %thread_id, "the cron's thread is gone: deleting it");
            crons(store).delete(&cron.cron_id).await?;
            set_next_run(store, &cron.cron_id, None).await?;
            return Ok(());
        }
        // Creating a run takes a few store round trips (the first of a
        // process much longer): the loop goes on claiming on time
        // meanwhile. The runs are created one at a time in claim order
        // (the lock is fair), so a slow fire is never overtaken by the
        // next fire of its thread.
        let this = self.clone();
        tokio::spawn(async move {
            let _turn = this.creating.lock().await;
            this.fire(&cron, due).await;
        });
        Ok(())
    }

    /// Creates the run of `cron` for its fire time `due`. A run refused
    /// (its assistant gone, the tenant at its run limit) is logged: the
    /// cron fires again at its next time.
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
