//! `POST /threads/prune`: many threads deleted, or cut down to their
//! newest checkpoint, at once.

use axum::Extension;
use axum::Json;
use axum::extract::State;
use deepfleet_proto::Caller;
use deepfleet_proto::api::{PruneStrategy, ThreadPruneParams, ThreadPruneResponse};

use crate::error::{ApiError, Body};
use crate::routes::{Routes, SUBMIT};
use crate::state::ApiState;
use deepfleet_scheduler::repo::threads::threads;

/// The most threads one request prunes, so a request's work is bounded.
pub const MAX_PRUNE: usize = 1000;

pub(crate) fn routes() -> Routes {
    Routes::new().post("/threads/prune", SUBMIT, prune)
}

/// Ids the caller has no thread of (unknown, or another tenant's) are
/// skipped, not refused, so a retried prune answers as the first did
/// minus what it already did.
async fn prune(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<ThreadPruneParams>,
) -> Result<Json<ThreadPruneResponse>, ApiError> {
    if body.thread_ids.len() > MAX_PRUNE {
        return Err(ApiError::unprocessable(format!(
            "thread_ids must hold at most {MAX_PRUNE} ids, got {}",
            body.thread_ids.len()
        )));
    }
    let repo = threads(state.store());
    let mut pruned_count = 0;
    for id in &body.thread_ids {
        let Some(record) = repo.get_owned(id, &caller.tenant).await? else {
            continue;
        };
        let pruned = match body.strategy {
            PruneStrategy::Delete => {
                state.runs.life.delete_thread(&record).await?;
                true
            }
            PruneStrategy::KeepLatest => state.store().keep_latest_checkpoint(id).await?,
        };
        pruned_count += u64::from(pruned);
    }
    Ok(Json(ThreadPruneResponse { pruned_count }))
}

#[cfg(test)]
#[path = "thread_prune_tests.rs"]
mod router_tests;
