//! `PATCH /threads/{id}/state` (the SDKs' `patch_state`): metadata a
//! client attaches to the checkpoint the thread is at. The keys merge
//! into that checkpoint's metadata (a later patch's value wins) and show
//! wherever it does: the thread's state while it is current, its history
//! for good, and history filters on `metadata` match them. The keys that
//! say what made a checkpoint (`source`, `step`, `run_id`) are not a
//! client's to set.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use deepfleet_proto::Caller;
use deepfleet_proto::api::{MADE_BY_KEYS, ThreadStatePatch};

use crate::error::{ApiError, Body};
use crate::routes::{Routes, SUBMIT};
use crate::state::ApiState;
use deepfleet_scheduler::runs::threads::load;

/// The most bytes one patch's metadata may take (as JSON).
pub const MAX_NOTE_BYTES: usize = 64 * 1024;

pub(crate) fn routes() -> Routes {
    Routes::new().patch("/threads/{thread_id}/state", SUBMIT, patch_state)
}

/// A 204 once noted; 404 for an unknown thread, 409 for one with no
/// checkpoint yet, 422 for a key that says what made a checkpoint or a
/// patch past [`MAX_NOTE_BYTES`].
async fn patch_state(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Body(body): Body<ThreadStatePatch>,
) -> Result<StatusCode, ApiError> {
    let record = load(&state.runs, &caller.tenant, &id).await?;
    if let Some(key) = body
        .metadata
        .keys()
        .find(|k| MADE_BY_KEYS.contains(&k.as_str()))
    {
        return Err(ApiError::unprocessable(format!(
            "metadata.{key} says what made the checkpoint; it cannot be patched"
        )));
    }
    let bytes = serde_json::to_vec(&body.metadata).map_or(usize::MAX, |b| b.len());
    if bytes > MAX_NOTE_BYTES {
        return Err(ApiError::unprocessable(format!(
            "metadata takes {bytes} bytes; a patch may take at most {MAX_NOTE_BYTES}"
        )));
    }
    match state
        .store()
        .note_checkpoint(&record.thread_id, &body.metadata)
        .await?
    {
        Some(_) => Ok(StatusCode::NO_CONTENT),
        None => Err(ApiError::conflict(
            "the thread has no checkpoint yet: run it or update its state first",
        )),
    }
}

#[cfg(test)]
#[path = "state_notes_tests.rs"]
mod router_tests;
