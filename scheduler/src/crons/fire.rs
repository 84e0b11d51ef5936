//! The cron loop: claim what is due, create its runs through the same
//! path as `POST /runs` and `POST /threads/{id}/runs`.
//!
//! A claim moves the due entry to a *lease*: a score [`LEASE`] ahead
//! that is never a fire time (fire times are whole seconds, a lease is
//! not). While the run is created no scheduler sees the cron due, so one
//! cron's runs are never created by two schedulers at once (two runs
//! admitted on one thread at the same moment is a race the run lifecycle
//! does not settle). Once the run exists, the entry moves from the lease
//! to the next fire time. A lease still there when it comes due is that
//! of a scheduler that died while creating the run: its cron is
//! rescheduled without firing again (at most once).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use deepfleet_proto::keys::records::CRON_DUE;
use deepfleet_store::{IndexEntry, Order};
use serde_json::Value;
use tokio::sync::Notify;
use tracing::{debug, warn};

use super::schedule::Schedule;
use crate::SchedulerError;
use crate::repo::crons::{CronRecord, crons, set_next_run};
use crate::repo::score_at;
use crate::repo::threads::threads;
use crate::runs::{Runs, create_run};

/// Due entries read per pass; more are taken on the next pass at once.
const PAGE: u64 = 64;
/// How long a claimed fire may take to create its run before its cron is
/// taken back.
const LEASE: TimeDelta = TimeDelta::seconds(30);
/// Fire times at most this far behind a claim are each fired, late; older
/// ones (an outage) are skipped.
const CATCH_UP: TimeDelta = TimeDelta::seconds(5);
/// Microseconds in a second: fire times are whole seconds.
const SECOND_MICROS: i64 = 1_000_000;

/// Metadata every run a cron creates carries: the cron, and the fire
/// time it was created for.
pub fn fire_metadata(cron_id: &str, due: DateTime<Utc>) -> [(&'static str, Value); 2] {
    [
        ("cron_id", Value::String(cron_id.to_owned())),
        ("cron_fire_at", Value::String(due.to_rfc3339())),
    ]
}

/// The score of a lease taken at `now`: [`LEASE`] ahead, never a whole
/// second.
fn lease_score(now: DateTime<Utc>) -> i64 {
    let score = score_at(now + LEASE);
    if is_lease(score) { score } else { score + 1 }
}

/// Whether a due index score is a lease rather than a fire time.
fn is_lease(score: i64) -> bool {
    score.rem_euclid(SECOND_MICROS) != 0
}

/// Fires the fleet's crons from this scheduler, alongside any others.
#[derive(Clone)]
pub struct CronLoop {
    runs: Runs,
    poll: Duration,
    /// Woken when a fire's cron has its next time, so the loop need not
    /// wait for its poll to see it.
    rescheduled: Arc<Notify>,
}

impl CronLoop {
    /// A loop creating runs through `runs`, looking for new or changed
    /// crons at least every `poll` (it sleeps only until the next known
    /// fire time when that is sooner).
    pub fn new(runs: Runs, poll: Duration) -> Self {
        CronLoop {
            runs,
            poll,
            rescheduled: Arc::new(Notify::new()),
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
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.rescheduled.notified() => {}
            }
        }
    }

    /// Claims every cron due now (those other schedulers claim first are
    /// theirs) and starts creating their runs; returns when the earliest
    /// cron not yet due fires, or now when more are due than one pass
    /// reads.
    pub async fn tick(&self) -> Result<Option<DateTime<Utc>>, SchedulerError> {
        let store = self.runs.store();
        let now = Utc::now();
        let due = store
            .index_page(CRON_DUE, Order::Ascending, 0, PAGE)
            .await?;
        let full = due.len() as u64 == PAGE;
        for entry in &due {
            if entry.score > score_at(now) {
                return Ok(DateTime::from_timestamp_micros(entry.score));
            }
            self.claim(entry, now).await?;
        }
        Ok(full.then_some(now))
    }

    /// Moves `entry` to a lease; if this scheduler won that move, creates
    /// the run beside the loop.
    async fn claim(&self, entry: &IndexEntry, now: DateTime<Utc>) -> Result<(), SchedulerError> {
        let store = self.runs.store();
        let cron = crons(store).get(&entry.id).await?;
        let (Some(cron), Some(due)) = (cron, DateTime::from_timestamp_micros(entry.score)) else {
            // Deleted since it was indexed.
            store
                .index_remove_at(CRON_DUE, &entry.id, entry.score)
                .await?;
            return Ok(());
        };
        if is_lease(entry.score) {
            warn!(cron_id = %cron.cron_id, "a scheduler died creating a cron's run: rescheduling it");
            self.reschedule(&cron, entry.score, following(&cron, now))
                .await?;
            return Ok(());
        }
        let lease = lease_score(now);
        if !store
            .index_move_at(CRON_DUE, &entry.id, entry.score, lease)
            .await?
        {
            debug!(cron_id = %cron.cron_id, "another scheduler fired this cron");
            return Ok(());
        }
        let this = self.clone();
        tokio::spawn(async move {
            if let Err(e) = this.fire_claimed(&cron, due, now, lease).await {
                warn!(cron_id = %cron.cron_id, error = %e, "a claimed cron fire failed");
            }
        });
        Ok(())
    }

    /// Creates the run of `cron` for `due`, claimed at `claimed_at` under
    /// `lease`; then moves the cron to its next time: the first after
    /// `due` and after [`CATCH_UP`] before the claim. Times missed longer
    /// before the claim (while no scheduler ran) are skipped; those a busy
    /// scheduler claims late, or that passed while the run was created,
    /// are each fired.
    async fn fire_claimed(
        &self,
        cron: &CronRecord,
        due: DateTime<Utc>,
        claimed_at: DateTime<Utc>,
        lease: i64,
    ) -> Result<(), SchedulerError> {
        let store = self.runs.store();
        if cron.enabled && cron.end_time.is_none_or(|end| due <= end) {
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
            self.fire(cron, due).await;
        }
        let after = due.max(claimed_at - CATCH_UP);
        self.reschedule(cron, lease, following(cron, after)).await
    }

    /// Moves `cron` from `score` to `next` (off the index for none), unless
    /// a change (a `PATCH`, a delete) moved it meanwhile.
    async fn reschedule(
        &self,
        cron: &CronRecord,
        score: i64,
        next: Option<DateTime<Utc>>,
    ) -> Result<(), SchedulerError> {
        let store = self.runs.store();
        match next {
            Some(at) => {
                store
                    .index_move_at(CRON_DUE, &cron.cron_id, score, score_at(at))
                    .await?
            }
            None => {
                store
                    .index_remove_at(CRON_DUE, &cron.cron_id, score)
                    .await?
            }
        };
        self.rescheduled.notify_one();
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
            match self.runs.life.intake().open_context(sealed) {
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
            &self.runs,
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
                code = e.code().as_str(),
                error = %e,
                "a cron's run was refused"
            ),
        }
    }
}

/// When `cron` fires after `after`; `None` when it is disabled, its
/// schedule no longer parses, or it has ended.
pub fn following(cron: &CronRecord, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
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

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn a_lease_is_never_a_fire_time() {
        let whole = Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0).unwrap();
        assert!(!is_lease(score_at(whole)));
        assert!(is_lease(lease_score(whole)));
        assert!(is_lease(lease_score(whole + TimeDelta::microseconds(7))));
        assert!(lease_score(whole) > score_at(whole + LEASE - TimeDelta::seconds(1)));
        assert!(!is_lease(-SECOND_MICROS) && is_lease(-1));
    }
}
