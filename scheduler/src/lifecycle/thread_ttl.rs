//! Threads with a time to live (`ttl`), deleted once it has run out.
//!
//! A thread runs out `ttl` minutes after its `updated_at` (a run's start
//! or a PATCH moves it). Each such thread is in one index
//! ([`THREAD_TTL_DUE`]) scored by when it runs out as last computed;
//! only creating or patching a ttl writes that score, so a touch costs
//! nothing more. The sweep ([`Lifecycle::sweep_thread_ttls`]), run by
//! every scheduler's run starter, reads the due head of the index and
//! for each entry:
//!
//! - claims it, moving it to a lease with a compare-and-set on the score
//!   it read, so of several schedulers exactly one handles it (and one
//!   that dies leaves it due again at the lease's deadline);
//! - takes the thread's lease, so no run is admitted meanwhile, and
//!   reads the thread again;
//! - moves the entry on to the real time when the thread was touched
//!   since, to a little later while it is busy, removes it when the
//!   thread or its ttl is gone, and otherwise deletes the thread as
//!   `DELETE /threads/{id}` does ([`Lifecycle::delete_thread`]).
//!
//! Everything is in the store, so a restarted scheduler carries on. A
//! thread deleted otherwise (`DELETE`, prune) leaves its entry, which
//! the sweep removes when it comes due.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use deepfleet_proto::api::ThreadStatus;
use deepfleet_proto::keys::records::THREAD_TTL_DUE;
use deepfleet_store::{IndexEntry, Order};

use super::Lifecycle;
use crate::error::SchedulerError;
use crate::repo::score_at;
use crate::repo::threads::{ThreadRecord, threads};

/// How many due threads one sweep handles at most; the rest wait for the
/// next round.
const CHUNK: u64 = 256;
/// How long a claim holds an entry: far longer than deleting a thread.
const CLAIM: TimeDelta = TimeDelta::seconds(120);
/// How long a busy thread that ran out waits before it is looked at
/// again.
const BUSY_RECHECK: TimeDelta = TimeDelta::seconds(10);

/// When `record`'s thread runs out, if it has a ttl; a ttl too long to
/// add never runs out.
fn runs_out_at(record: &ThreadRecord) -> Option<DateTime<Utc>> {
    let ttl = record.ttl?;
    let after = Duration::try_from_secs_f64(ttl.ttl * 60.0)
        .ok()
        .and_then(|d| TimeDelta::from_std(d).ok());
    Some(
        after
            .and_then(|d| record.updated_at.checked_add_signed(d))
            .unwrap_or(DateTime::<Utc>::MAX_UTC),
    )
}

/// What the sweep does with one claimed thread.
enum Outcome {
    /// No thread, or no ttl: the entry goes.
    Gone,
    /// Not run out yet (touched since), or busy: looked at again then.
    Later(DateTime<Utc>),
    /// Run out and idle: deleted.
    Delete(ThreadRecord),
}

impl Lifecycle {
    /// Puts `record`'s thread in the ttl index at the time it runs out, or
    /// takes it out when it has no ttl. Called after the record is written
    /// with a new or changed ttl.
    pub async fn schedule_ttl(&self, record: &ThreadRecord) -> Result<(), SchedulerError> {
        let store = self.store();
        let id = &record.thread_id;
        match runs_out_at(record) {
            Some(at) => store.index_put(THREAD_TTL_DUE, id, score_at(at)).await?,
            None => {
                store.index_remove(THREAD_TTL_DUE, id).await?;
            }
        }
        Ok(())
    }

    /// Deletes the threads whose ttl has run out and that are not busy;
    /// moves on the entries of the others. Returns how many it deleted.
    pub async fn sweep_thread_ttls(&self) -> Result<usize, SchedulerError> {
        let now = Utc::now();
        let head = self
            .store()
            .index_page(THREAD_TTL_DUE, Order::Ascending, 0, CHUNK)
            .await?;
        let mut deleted = 0;
        for entry in head.into_iter().take_while(|e| e.score <= score_at(now)) {
            if self.sweep_one(&entry, now).await? {
                deleted += 1;
            }
        }
        Ok(deleted)
    }

    /// Handles one due entry, if this scheduler wins its claim; answers
    /// whether it deleted the thread.
    async fn sweep_one(
        &self,
        entry: &IndexEntry,
        now: DateTime<Utc>,
    ) -> Result<bool, SchedulerError> {
        let store = self.store();
        let claim = score_at(now + CLAIM);
        if !store
            .index_move_at(THREAD_TTL_DUE, &entry.id, entry.score, claim)
            .await?
        {
            // Another scheduler claimed it, or a PATCH moved it.
            return Ok(false);
        }
        let lease = match self.lease_thread(&entry.id).await {
            Ok(lease) => lease,
            // A run is being admitted there: the next round looks again.
            Err(SchedulerError::ThreadContended) => {
                store
                    .index_move_at(THREAD_TTL_DUE, &entry.id, claim, score_at(now))
                    .await?;
                return Ok(false);
            }
            Err(e) => return Err(e),
        };
        let outcome = async {
            let outcome = self.outcome(&entry.id, now).await?;
            if let Outcome::Delete(record) = &outcome {
                self.delete_thread(record).await?;
            }
            Ok::<_, SchedulerError>(outcome)
        }
        .await;
        self.release_thread(lease).await;
        // Each from the claim only: a PATCH meanwhile put its own score.
        match outcome? {
            Outcome::Later(at) => {
                store
                    .index_move_at(THREAD_TTL_DUE, &entry.id, claim, score_at(at))
                    .await?;
                Ok(false)
            }
            done => {
                store
                    .index_remove_at(THREAD_TTL_DUE, &entry.id, claim)
                    .await?;
                Ok(matches!(done, Outcome::Delete(_)))
            }
        }
    }

    /// What to do with `thread_id` at `now`, read under its lease.
    async fn outcome(
        &self,
        thread_id: &str,
        now: DateTime<Utc>,
    ) -> Result<Outcome, SchedulerError> {
        let Some(record) = threads(self.store().as_ref()).get(thread_id).await? else {
            return Ok(Outcome::Gone);
        };
        let Some(at) = runs_out_at(&record) else {
            return Ok(Outcome::Gone);
        };
        if at > now {
            return Ok(Outcome::Later(at));
        }
        if self.thread_status(&record).await? == ThreadStatus::Busy {
            return Ok(Outcome::Later(now + BUSY_RECHECK));
        }
        Ok(Outcome::Delete(record))
    }
}
