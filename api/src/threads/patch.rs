//! `PATCH /threads/{thread_id}`: a thread's metadata, merged, and its
//! time to live, replaced.

use axum::Extension;
use axum::Json;
use axum::extract::{Path, State};
use chrono::Utc;
use deepfleet_proto::Caller;
use deepfleet_proto::api::{Thread, ThreadPatchParams};

use crate::error::{ApiError, Body};
use crate::routes::{Routes, SUBMIT};
use crate::state::ApiState;
use crate::threads::thread_resource;
use deepfleet_scheduler::repo::threads::threads;
use deepfleet_scheduler::runs::threads::load;

pub(crate) fn routes() -> Routes {
    Routes::new().patch("/threads/{thread_id}", SUBMIT, update)
}

/// Sets each given metadata key and keeps the others, as the reference
/// merges; replaces the time to live when `ttl` is given (null removes
/// it), which then counts from now. Answers the thread as it is now.
async fn update(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Body(body): Body<ThreadPatchParams>,
) -> Result<Json<Thread>, ApiError> {
    let mut record = load(&state.runs, &caller.tenant, &id).await?;
    record.metadata.extend(body.metadata.unwrap_or_default());
    record.updated_at = Utc::now();
    let ttl_changed = body.ttl.is_some();
    if let Some(ttl) = body.ttl {
        record.ttl = ttl;
    }
    threads(state.store()).put(&id, &record).await?;
    // An unchanged ttl's entry stays: the sweep finds the later
    // `updated_at` and moves it on.
    if ttl_changed {
        state.runs.life.schedule_ttl(&record).await?;
    }
    Ok(Json(thread_resource(&state, &record).await?))
}

#[cfg(test)]
#[path = "thread_patch_tests.rs"]
mod router_tests;
