//! `POST /threads/{thread_id}/copy`: a new thread with the original's
//! metadata, state, files, checkpoints and history as they are now.

use axum::Extension;
use axum::Json;
use axum::extract::{Path, State};
use deepfleet_proto::Caller;
use deepfleet_proto::api::Thread;

use crate::error::ApiError;
use crate::routes::{Routes, SUBMIT};
use crate::state::ApiState;
use crate::threads::thread_resource;
use deepfleet_scheduler::repo::threads::{ThreadRecord, threads};
use deepfleet_scheduler::runs::threads::load;

pub(crate) fn routes() -> Routes {
    Routes::new().post("/threads/{thread_id}/copy", SUBMIT, copy)
}

/// The checkpoint is copied before the record is written, so the copy
/// is never listed without its state; it owns none of the original's
/// runs, so it starts idle.
async fn copy(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Thread>, ApiError> {
    let original = load(&state.runs, &caller.tenant, &id).await?;
    let copy_id = uuid::Uuid::new_v4().to_string();
    let conflict = || ApiError::conflict(format!("Thread '{copy_id}' already exists."));
    if !state.store().copy_thread(&id, &copy_id).await? {
        return Err(conflict());
    }
    let record = ThreadRecord::new(
        caller.tenant.clone(),
        copy_id.clone(),
        original.metadata.clone(),
    );
    if !threads(state.store()).insert(&copy_id, &record).await? {
        return Err(conflict());
    }
    Ok(Json(thread_resource(&state, &record).await?))
}

#[cfg(test)]
#[path = "thread_copy_tests.rs"]
mod router_tests;
