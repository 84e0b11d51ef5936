//! Time travel, the write side: `POST /threads/{id}/state`
//! (`update_state`) writes values as a new checkpoint, on top of the
//! thread as it is or of an earlier checkpoint (a fork, on a new branch
//! of the log), while no run occupies the thread.

use axum::extract::{Path, State};
use axum::{Extension, Json};
use chrono::Utc;
use deepfleet_proto::Caller;
use deepfleet_proto::api::{ThreadStateUpdate, ThreadStateUpdateResponse, ThreadStatus};
use serde_json::Value;

use crate::assistants::graph::is_node;
use crate::checkpoint_ref::checkpoint_ref;
use crate::error::{ApiError, Body};
use crate::routes::{Routes, SUBMIT};
use crate::state::ApiState;
use deepfleet_scheduler::repo::threads::threads;
use deepfleet_scheduler::runs::state_values::checkpoint_of;
use deepfleet_scheduler::runs::state_values::state_edit;
use deepfleet_scheduler::runs::threads::load;

pub(crate) fn routes() -> Routes {
    Routes::new().post("/threads/{thread_id}/state", SUBMIT, update_state)
}

async fn update_state(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Body(body): Body<ThreadStateUpdate>,
) -> Result<Json<ThreadStateUpdateResponse>, ApiError> {
    let record = load(&state.runs, &caller.tenant, &id).await?;
    // Whichever node an update is written as, the next run goes on from
    // the model's turn: the name is checked, not kept.
    if let Some(node) = body.as_node.as_deref().filter(|node| !is_node(node)) {
        return Err(ApiError::unprocessable(format!(
            "as_node: node '{node}' does not exist (see /assistants/{{id}}/graph)"
        )));
    }
    let from = checkpoint_of(body.checkpoint_id.as_deref(), body.checkpoint.as_ref())?;
    let values = body.values.as_ref().unwrap_or(&Value::Null);
    let edit = state_edit("values", values, state.runs.life.intake().limits())?;
    // One change of what the thread runs or holds at a time, as for a
    // run's admission: a run admitted meanwhile waits for this update.
    let lease = state.runs.life.lease_thread(&record.thread_id).await?;
    let written = async {
        let mut record = load(&state.runs, &caller.tenant, &id).await?;
        if state.runs.life.thread_status(&record).await? == ThreadStatus::Busy {
            return Err(ApiError::conflict(
                "Thread is busy: update its state once its runs have ended.",
            ));
        }
        let checkpoint = state
            .runs
            .life
            .update_state(&record.thread_id, from, &edit)
            .await?;
        record.updated_at = Utc::now();
        threads(state.store())
            .put(&record.thread_id, &record)
            .await?;
        Ok::<_, ApiError>(checkpoint)
    }
    .await;
    state.runs.life.release_thread(lease).await;
    Ok(Json(ThreadStateUpdateResponse {
        checkpoint: checkpoint_ref(&record.thread_id, written?),
    }))
}

#[cfg(test)]
#[path = "state_update_tests.rs"]
mod router_tests;
