//! A2A tasks over runs: a message starts a run of the assistant on its
//! context's thread (a new thread when the message names no context, one
//! made when it names a context not seen yet), the task is that run, and
//! its id finds it again through [`a2a_tasks`].

use std::time::Duration;

use deepfleet_proto::TenantId;
use deepfleet_proto::api::{Assistant, RunCreateParams};
use serde_json::{Value, json};

use crate::a2a::wire::{INTERNAL_ERROR, RpcError, SendParams, TaskState, TaskView};
use crate::error::ApiError;
use crate::state::ApiState;
use deepfleet_scheduler::repo::a2a_tasks::{A2aTask, a2a_tasks};
use deepfleet_scheduler::repo::runs::{RunMeta, runs_of};
use deepfleet_scheduler::runs::create::create_run;

/// How long `message/send` (and `message/stream`) wait for a task's run;
/// past it, the answer is the task as it is then (still working), which
/// `tasks/get` follows.
pub const SEND_WAIT: Duration = Duration::from_secs(600);

/// An API refusal as a JSON-RPC error: the caller's mistakes (4xx) are
/// invalid params saying what is wrong; the server's are internal.
pub fn rpc_error(e: &ApiError) -> RpcError {
    if e.status.is_client_error() {
        RpcError::invalid_params(e.detail.clone())
    } else {
        RpcError::new(INTERNAL_ERROR, e.detail.clone())
    }
}

/// Starts `tenant`'s run of `assistant` with the message of `params` on
/// `context` (a thread id; a new thread without one), through every
/// check a run request passes.
pub async fn start(
    state: &ApiState,
    tenant: &TenantId,
    assistant: &Assistant,
    context: Option<&str>,
    params: &SendParams,
) -> Result<RunMeta, ApiError> {
    let thread_id = context.map_or_else(|| uuid::Uuid::now_v7().to_string(), str::to_owned);
    let body: RunCreateParams = serde_json::from_value(json!({
        "assistant_id": assistant.assistant_id,
        "input": {"messages": [{"role": "user", "content": params.text}]},
        "if_not_exists": "create",
        "metadata": {"a2a": true},
    }))
    .map_err(|e| ApiError::unprocessable(e.to_string()))?;
    let meta = create_run(&state.runs, tenant, Some(&thread_id), &body, None).await?;
    let task = A2aTask {
        thread_id,
        assistant_id: assistant.assistant_id.clone(),
        tenant: tenant.clone(),
    };
    a2a_tasks(state.store()).put(&meta.run_id, &task).await?;
    Ok(meta)
}

/// Answers the human decision the task of `meta` waits for with
/// `decisions` (`{"decisions": [...]}`): its run goes on, as a
/// `command.resume` on its thread would have it.
pub async fn resume(
    state: &ApiState,
    tenant: &TenantId,
    meta: &RunMeta,
    decisions: &Value,
) -> Result<RunMeta, ApiError> {
    let body: RunCreateParams = serde_json::from_value(json!({
        "assistant_id": meta.assistant_id,
        "command": {"resume": decisions},
    }))
    .map_err(|e| ApiError::unprocessable(e.to_string()))?;
    Ok(create_run(&state.runs, tenant, Some(&meta.thread_id), &body, None).await?)
}

/// `tenant`'s task `task_id` that `assistant_id`'s endpoint started;
/// `None` when there is none (or it is another tenant's or assistant's,
/// or its run is gone with its thread).
pub async fn find(
    state: &ApiState,
    tenant: &TenantId,
    assistant_id: &str,
    task_id: &str,
) -> Result<Option<RunMeta>, ApiError> {
    let Some(task) = a2a_tasks(state.store())
        .get_owned(task_id, tenant)
        .await?
        .filter(|task| task.assistant_id == assistant_id)
    else {
        return Ok(None);
    };
    Ok(runs_of(state.store(), &task.thread_id).get(task_id).await?)
}

/// The task of the run of `meta`, as it is now.
pub async fn view(state: &ApiState, meta: &RunMeta) -> Result<TaskView, ApiError> {
    let record = state.runs.life.run_record(meta).await?;
    let task_state = TaskState::of(record.as_ref().map(|r| r.status), meta.cancelled);
    let (timestamp, answer, error) = match record {
        Some(run) => (
            run.updated_at,
            run.output.filter(|_| task_state == TaskState::Completed),
            run.error.map(|e| e.message),
        ),
        None => (meta.created_at, None, None),
    };
    Ok(TaskView {
        id: meta.run_id.clone(),
        context_id: meta.thread_id.clone(),
        state: task_state,
        timestamp,
        answer,
        error,
    })
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    use super::*;
    use crate::a2a::wire::INVALID_PARAMS;

    #[test]
    fn client_mistakes_are_invalid_params_and_server_failures_internal() {
        let e = rpc_error(&ApiError::unprocessable("input is required"));
        assert_eq!(e, RpcError::invalid_params("input is required"));
        let e = rpc_error(&ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: deepfleet_proto::ErrorCode::Internal,
            detail: "the store is down".into(),
            retry_after: None,
        });
        assert_eq!(e.code, INTERNAL_ERROR);
        assert_ne!(e.code, INVALID_PARAMS);
    }
}
