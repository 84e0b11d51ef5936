//! The runs one tenant may have in flight (`api.tenant_runs_in_flight`):
//! past the limit a new run is refused with 429, a reason and
//! `Retry-After`, before anything is written.
//!
//! A run is in flight while it occupies its thread (pending, running,
//! waiting on its subagents) or waits in a thread's queue. Counting reads
//! the tenant's thread records, so it is done only when a limit is set.

use deepfleet_proto::TenantId;

use super::error::ApiError;
use super::state::ApiState;
use crate::repo::queued::queued;
use crate::repo::threads::threads;

/// What a refused caller is told to wait before trying again.
pub const RETRY_AFTER_SECS: u64 = 5;

/// Refuses `adding` new runs of `tenant` when they would take it past its
/// limit.
pub async fn check(state: &ApiState, tenant: &TenantId, adding: usize) -> Result<(), ApiError> {
    let Some(limit) = state.tenant_runs_in_flight else {
        return Ok(());
    };
    let store = state.store();
    let mut in_flight = queued(store)
        .list()
        .await?
        .iter()
        .filter(|meta| meta.tenant == *tenant && !meta.cancelled)
        .count();
    for thread in threads(store).list_owned(tenant).await? {
        if state.life.active_run(&thread).await?.is_some() {
            in_flight += 1;
        }
    }
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if in_flight.saturating_add(adding) > limit {
        return Err(ApiError::too_many_runs(
            format!(
                "Tenant '{tenant}' has {in_flight} runs in flight, its limit is {limit}; \
                 retry when some have ended."
            ),
            RETRY_AFTER_SECS,
        ));
    }
    Ok(())
}
