//! `POST /a2a/{assistant_id}`: each assistant as an A2A agent, over
//! JSON-RPC 2.0 (the Agent Server's A2A endpoint). `message/send` runs
//! the assistant on the message's context (its thread) and answers the
//! task once the run ends, `message/stream` streams the task's events
//! ([`crate::a2a::stream`]), `tasks/get` and `tasks/cancel` read and stop
//! it. A task that waits for a human decision (`input-required`) goes on
//! when a message names it (`taskId`) with a data part
//! `{"decisions": [...]}`, as a `command.resume` would. The wire is
//! [`crate::a2a::wire`], the tasks [`crate::a2a::task`], the agent card
//! [`crate::a2a::card`].
//!
//! JSON-RPC errors answer 200, as the protocol has them; an assistant
//! the caller does not have answers 404 before the body is read, as
//! every route naming one does.

pub mod card;
pub mod stream;
pub mod task;
pub mod wire;

use std::convert::Infallible;
use std::time::Duration;

use axum::Extension;
use axum::body::{Body as HttpBody, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use deepfleet_proto::Caller;
use deepfleet_proto::api::Assistant;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::{Instant, interval_at};

use crate::a2a::stream::stream;
use crate::a2a::task::{SEND_WAIT, find, rpc_error, view};
use crate::a2a::wire::{
    METHOD_NOT_FOUND, Method, RpcError, RpcRequest, SendParams, TASK_NOT_CANCELABLE, TaskState,
    error, parse_request, result, send_params, task_id,
};
use crate::error::ApiError;
use crate::routes::{READ, Routes, require};
use crate::state::ApiState;
use deepfleet_scheduler::repo::runs::RunMeta;
use deepfleet_scheduler::runs::follow::{KEEP_ALIVE, ended_within};

/// How long `tasks/cancel` waits for a running run to stop at its next
/// step boundary before answering the task as it is.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

pub(crate) fn routes() -> Routes {
    Routes::new().post("/a2a/{assistant_id}", READ, rpc)
}

async fn rpc(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(assistant_id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let assistant =
        deepfleet_scheduler::runs::assistants::find(&state.runs, &caller.tenant, &assistant_id)
            .await?;
    // A body past the limit (or cut off) is refused as every route
    // refuses it; what it holds is the JSON-RPC layer's to judge.
    let body = body.map_err(|e| ApiError::client(e.status(), e.body_text()))?;
    let request = match parse_request(&body) {
        Ok(request) => request,
        Err((id, e)) => return Ok(json_answer(error(&id, &e))),
    };
    let Some(method) = Method::of(&request.method) else {
        let e = RpcError::new(
            METHOD_NOT_FOUND,
            format!("Method '{}' not found.", request.method),
        );
        return Ok(json_answer(error(&request.id, &e)));
    };
    require(&caller, method.needs())?;
    let RpcRequest { id, params, .. } = request;
    Ok(match method {
        Method::Send => send(state, &caller, &assistant, id, &params).await,
        Method::Stream => {
            let begun = match send_params(&params) {
                Ok(message) => begin(&state, &caller, &assistant, &message).await,
                Err(e) => Err(e),
            };
            match begun {
                Ok(meta) => stream(state, meta, id),
                Err(e) => json_answer(error(&id, &e)),
            }
        }
        Method::Get => answer(&id, get(&state, &caller, &assistant, &params).await),
        Method::Cancel => answer(&id, cancel(&state, &caller, &assistant, &params).await),
    })
}

/// `message/send`: starts the run, then (unless the client asked not to
/// block) answers once it ends, at most [`SEND_WAIT`] later, with blank
/// lines every [`KEEP_ALIVE`] meanwhile (whitespace before JSON is still
/// JSON), so no proxy or client read timeout takes a long run for a dead
/// connection.
async fn send(
    state: ApiState,
    caller: &Caller,
    assistant: &Assistant,
    id: Value,
    params: &Value,
) -> Response {
    let message = match send_params(params) {
        Ok(message) => message,
        Err(e) => return json_answer(error(&id, &e)),
    };
    let meta = match begin(&state, caller, assistant, &message).await {
        Ok(meta) => meta,
        Err(e) => return json_answer(error(&id, &e)),
    };
    if !message.blocking {
        let task = view(&state, &meta).await.map(|v| v.task());
        return answer(&id, task.map_err(|e| rpc_error(&e)));
    }
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(4);
    tokio::spawn(async move {
        let ended = ended_within(&state.runs, &meta, SEND_WAIT);
        tokio::pin!(ended);
        let mut beat = interval_at(Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
        let waited = loop {
            tokio::select! {
                waited = &mut ended => break waited,
                _ = beat.tick() => {
                    if tx.send(Ok(Bytes::from_static(b"\n"))).await.is_err() {
                        return;
                    }
                }
            }
        };
        let task = match waited {
            Ok(_) => view(&state, &meta).await.map(|v| v.task()),
            Err(e) => Err(e.into()),
        };
        let body = match task {
            Ok(task) => result(&id, task),
            Err(e) => error(&id, &rpc_error(&e)),
        };
        let _ = tx.send(Ok(Bytes::from(body.to_string()))).await;
    });
    let body = HttpBody::from_stream(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    }));
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// The run a message makes go: a new one on its context, or, when it
/// names a task that waits for a human decision, that task's run, which
/// its `decisions` answer. A message naming an ended task starts a new
/// task on that task's context.
async fn begin(
    state: &ApiState,
    caller: &Caller,
    assistant: &Assistant,
    message: &SendParams,
) -> Result<RunMeta, RpcError> {
    let Some(task_id) = &message.task_id else {
        let context = message.context_id.as_deref();
        return task::start(state, &caller.tenant, assistant, context, message)
            .await
            .map_err(|e| rpc_error(&e));
    };
    let meta = known_task(state, caller, assistant, task_id).await?;
    if message
        .context_id
        .as_ref()
        .is_some_and(|context| *context != meta.thread_id)
    {
        return Err(RpcError::invalid_params(format!(
            "Task '{task_id}' belongs to another context."
        )));
    }
    let task = view(state, &meta).await.map_err(|e| rpc_error(&e))?;
    match (task.state, &message.decisions) {
        (TaskState::InputRequired, Some(decisions)) => {
            task::resume(state, &caller.tenant, &meta, decisions)
                .await
                .map_err(|e| rpc_error(&e))
        }
        (TaskState::InputRequired, None) => Err(RpcError::invalid_params(format!(
            "Task '{task_id}' waits for a human decision: answer with a data part \
             {{\"decisions\": [...]}}."
        ))),
        (state, _) if !state.is_final() => Err(RpcError::invalid_params(format!(
            "Task '{task_id}' is still {}; send the message without its taskId.",
            state.as_str()
        ))),
        _ => task::start(
            state,
            &caller.tenant,
            assistant,
            Some(&meta.thread_id),
            message,
        )
        .await
        .map_err(|e| rpc_error(&e)),
    }
}

/// The run of the caller's task `task_id` of `assistant`; an unknown
/// task (or another tenant's) is TaskNotFound.
async fn known_task(
    state: &ApiState,
    caller: &Caller,
    assistant: &Assistant,
    task_id: &str,
) -> Result<RunMeta, RpcError> {
    find(state, &caller.tenant, &assistant.assistant_id, task_id)
        .await
        .map_err(|e| rpc_error(&e))?
        .ok_or_else(|| RpcError::task_not_found(task_id))
}

/// `tasks/get`: the task as it is now.
async fn get(
    state: &ApiState,
    caller: &Caller,
    assistant: &Assistant,
    params: &Value,
) -> Result<Value, RpcError> {
    let task_id = task_id(params)?;
    let meta = known_task(state, caller, assistant, &task_id).await?;
    let view = view(state, &meta).await.map_err(|e| rpc_error(&e))?;
    Ok(view.task())
}

/// `tasks/cancel`: stops the task's run (a queued one at once, a running
/// one at its next step boundary). A task that has ended cannot be
/// cancelled, nor one that waits for a human decision: its run takes no
/// step until the decision comes.
async fn cancel(
    state: &ApiState,
    caller: &Caller,
    assistant: &Assistant,
    params: &Value,
) -> Result<Value, RpcError> {
    let task_id = task_id(params)?;
    let mut meta = known_task(state, caller, assistant, &task_id).await?;
    let before = view(state, &meta).await.map_err(|e| rpc_error(&e))?;
    if before.state.is_final() {
        return Err(RpcError::new(
            TASK_NOT_CANCELABLE,
            format!(
                "Task '{task_id}' is {} and cannot be cancelled.",
                before.state.as_str()
            ),
        ));
    }
    state
        .runs
        .life
        .cancel(&mut meta)
        .await
        .map_err(|e| rpc_error(&e.into()))?;
    ended_within(&state.runs, &meta, CANCEL_WAIT)
        .await
        .map_err(|e| rpc_error(&e.into()))?;
    let after = view(state, &meta).await.map_err(|e| rpc_error(&e))?;
    Ok(after.task())
}

/// The answer to request `id`: its result or its error.
fn answer(id: &Value, outcome: Result<Value, RpcError>) -> Response {
    json_answer(match outcome {
        Ok(value) => result(id, value),
        Err(e) => error(id, &e),
    })
}

/// A JSON-RPC answer: always 200, errors included.
fn json_answer(body: Value) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
#[path = "a2a_tests.rs"]
mod router_tests;
