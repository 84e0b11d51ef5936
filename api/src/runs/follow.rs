//! The routes that follow a run over HTTP: `/wait` and `/join` (see
//! [`crate::runs::wait`]) and the run-creating and joining `/stream` routes (see
//! [`crate::runs::stream`]).

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use deepfleet_proto::api::{RunCreateParams, RunStreamQuery, StreamMode};
use deepfleet_proto::{Caller, Role};

use crate::error::{ApiError, Body, QueryString};
use crate::routes::{READ, Routes, SUBMIT, require};
use crate::runs::flag;
use crate::runs::follower::sse_response;
use crate::runs::wait::wait_response;
use crate::state::ApiState;
use deepfleet_scheduler::runs::create::{create_checked, create_run};
use deepfleet_scheduler::runs::in_flight;
use deepfleet_scheduler::runs::load_run;
use deepfleet_scheduler::runs::modes::Modes;
use deepfleet_scheduler::runs::options::OnDisconnect;
use deepfleet_scheduler::runs::request as run_request;

pub(crate) fn routes() -> Routes {
    Routes::new()
        .post("/threads/{thread_id}/runs/wait", SUBMIT, create_wait)
        .post("/runs/wait", SUBMIT, create_wait_stateless)
        .get("/threads/{thread_id}/runs/{run_id}/join", READ, join)
        .post("/threads/{thread_id}/runs/stream", SUBMIT, create_stream)
        .post("/runs/stream", SUBMIT, create_stream_stateless)
        .get(
            "/threads/{thread_id}/runs/{run_id}/stream",
            READ,
            join_stream,
        )
}

async fn create_wait(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(thread_id): Path<String>,
    Body(body): Body<RunCreateParams>,
) -> Result<Response, ApiError> {
    let meta = create_run(&state.runs, &caller.tenant, Some(&thread_id), &body, None).await?;
    Ok(wait_response(state, meta, "/join").await)
}

async fn create_wait_stateless(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<RunCreateParams>,
) -> Result<Response, ApiError> {
    let meta = create_run(&state.runs, &caller.tenant, None, &body, None).await?;
    Ok(wait_response(state, meta, "/join").await)
}

async fn join(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path((thread_id, run_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let meta = load_run(&state.runs, &caller.tenant, &thread_id, &run_id).await?;
    Ok(wait_response(state, meta, "/join").await)
}

async fn create_stream(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(thread_id): Path<String>,
    Body(body): Body<RunCreateParams>,
) -> Result<Response, ApiError> {
    stream_new_run(state, &caller, Some(&thread_id), &body).await
}

async fn create_stream_stateless(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<RunCreateParams>,
) -> Result<Response, ApiError> {
    stream_new_run(state, &caller, None, &body).await
}

async fn stream_new_run(
    state: ApiState,
    caller: &Caller,
    thread_id: Option<&str>,
    body: &RunCreateParams,
) -> Result<Response, ApiError> {
    let checked = run_request::check(&state.runs, &caller.tenant, thread_id, body).await?;
    if checked.starts_a_run() {
        in_flight::check(&state.runs, &caller.tenant, 1).await?;
    }
    let modes = checked.modes;
    let on_disconnect = checked.options.on_disconnect;
    let meta = create_checked(&state.runs, &caller.tenant, thread_id, body, checked, None).await?;
    Ok(sse_response(state, meta, modes, None, on_disconnect))
}

async fn join_stream(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path((thread_id, run_id)): Path<(String, String)>,
    headers: HeaderMap,
    QueryString(query): QueryString<RunStreamQuery>,
) -> Result<Response, ApiError> {
    let meta = load_run(&state.runs, &caller.tenant, &thread_id, &run_id).await?;
    let mode = query.stream_mode.map(StreamMode::One);
    let mut modes = Modes::parse(mode.as_ref())?;
    modes.subgraphs = query
        .stream_subgraphs
        .is_some_and(|v| v == "true" || v == "1");
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let on_disconnect = if flag(query.cancel_on_disconnect.as_deref())? {
        // Following is a read; cancelling, even when the client leaves,
        // is a write.
        require(&caller, Role::Submit)?;
        OnDisconnect::Cancel
    } else {
        OnDisconnect::Continue
    };
    Ok(sse_response(state, meta, modes, last, on_disconnect))
}

#[cfg(test)]
#[path = "follow_tests.rs"]
mod router_tests;
