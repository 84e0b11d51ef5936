//! The runs one tenant may have in flight (`api.tenant_runs_in_flight`):
//! past the limit a new run is refused with a reason and a time to try
//! again, before anything is written.
//!
//! A run is in flight while it occupies its thread (pending, running,
//! waiting on its subagents) or waits in a thread's queue. While a limit
//! is set, every run created is listed in its tenant's
//! [`tenant_in_flight`] index, and counting walks that index, dropping the
//! runs that have ended: its cost follows the runs in flight, not the
//! tenant's threads. Runs created while no limit was set are not listed,
//! so a limit set later counts the runs created from then on.

use deepfleet_proto::TenantId;
use deepfleet_proto::keys::records::tenant_in_flight;
use deepfleet_store::{IndexEntry, Order};

use super::Runs;
use super::error::RunsError;
use crate::lifecycle::status::occupies_thread;
use crate::repo::queued::queued;
use crate::repo::runs::RunMeta;
use crate::repo::score_at;

/// What a refused caller is told to wait before trying again.
pub const RETRY_AFTER_SECS: u64 = 5;

/// Ids read from the index at a time.
const CHUNK: u64 = 256;

/// Refuses `adding` new runs of `tenant` when they would take it past its
/// limit.
pub async fn check(runs: &Runs, tenant: &TenantId, adding: usize) -> Result<(), RunsError> {
    let Some(limit) = runs.tenant_runs_in_flight else {
        return Ok(());
    };
    let in_flight = count(runs, tenant).await?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if in_flight.saturating_add(adding) > limit {
        return Err(RunsError::TooManyRuns {
            detail: format!(
                "Tenant '{tenant}' has {in_flight} runs in flight, its limit is {limit}; \
                 retry when some have ended."
            ),
            retry_after: RETRY_AFTER_SECS,
        });
    }
    Ok(())
}

/// Lists a created run as in flight, while a limit is set.
pub async fn track(runs: &Runs, meta: &RunMeta) -> Result<(), RunsError> {
    if runs.tenant_runs_in_flight.is_none() {
        return Ok(());
    }
    let index = tenant_in_flight(meta.tenant.as_str());
    runs.store()
        .index_put(&index, &meta.run_id, score_at(meta.created_at))
        .await?;
    Ok(())
}

/// The tenant's runs in flight; those that ended leave the index.
async fn count(runs: &Runs, tenant: &TenantId) -> Result<usize, RunsError> {
    let store = runs.store();
    let index = tenant_in_flight(tenant.as_str());
    let mut in_flight = 0;
    let mut at = 0;
    loop {
        let chunk = store
            .index_page(&index, Order::Ascending, at, CHUNK)
            .await?;
        let last = (chunk.len() as u64) < CHUNK;
        for entry in &chunk {
            if is_in_flight(runs, entry).await? {
                in_flight += 1;
                at += 1;
            } else if !store
                .index_remove_at(&index, &entry.id, entry.score)
                .await?
            {
                at += 1;
            }
        }
        if last {
            return Ok(in_flight);
        }
    }
}

/// Whether the run is queued (and not cancelled) or occupies its thread.
/// A run that started is out of the queue only once its run record
/// exists, so one of the two is always found.
async fn is_in_flight(runs: &Runs, entry: &IndexEntry) -> Result<bool, RunsError> {
    if let Some(meta) = queued(runs.store()).get(&entry.id).await? {
        return Ok(!meta.cancelled);
    }
    let run = runs.store().find_run(&entry.id).await?;
    Ok(run.is_some_and(|r| occupies_thread(r.status)))
}
