//! Runs: create (stateful on a thread, or stateless on a temporary one),
//! list, get, delete and cancel. Creating is [`deepfleet_scheduler::runs::create`]; the
//! lifecycle rules (admission, cancel, rollback) are the
//! [`Lifecycle`](deepfleet_scheduler::lifecycle::Lifecycle)'s.

pub mod batches;
pub mod bulk_cancel;
pub mod follow;
pub mod follower;
pub mod headers;
pub mod partials;
pub mod step_trace;
pub mod stream;
pub mod thread_stream;
pub mod wait;

use axum::Extension;
use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use deepfleet_proto::Caller;
use deepfleet_proto::api::{Run, RunCancelQuery, RunCreateParams, RunListQuery};
use deepfleet_proto::keys::records::thread_runs;
use deepfleet_store::Order;
use serde_json::Value;

use crate::error::{ApiError, Body, QueryString};
use crate::routes::{READ, Routes, SUBMIT};
use crate::runs::headers::run_headers;
use crate::runs::wait::wait_response;
use crate::search::Paging;
use crate::select::{Select, fields_of};
use crate::state::ApiState;
use deepfleet_scheduler::repo::runs::{RunMeta, runs_of};
use deepfleet_scheduler::runs::create::create_run;
use deepfleet_scheduler::runs::created_resource;
use deepfleet_scheduler::runs::load_run;
use deepfleet_scheduler::runs::run_resource;
use deepfleet_scheduler::runs::threads as owned_threads;

pub(crate) fn routes() -> Routes {
    Routes::new()
        .post("/threads/{thread_id}/runs", SUBMIT, create_background)
        .get("/threads/{thread_id}/runs", READ, list)
        .get("/threads/{thread_id}/runs/{run_id}", READ, get_one)
        .delete("/threads/{thread_id}/runs/{run_id}", SUBMIT, delete)
        .post("/threads/{thread_id}/runs/{run_id}/cancel", SUBMIT, cancel)
        .post("/runs", SUBMIT, create_stateless)
}

async fn create_background(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(thread_id): Path<String>,
    Body(body): Body<RunCreateParams>,
) -> Result<Response, ApiError> {
    let meta = create_run(&state.runs, &caller.tenant, Some(&thread_id), &body, None).await?;
    // A resume goes on with the interrupted run: answered as it is now.
    if body.command.as_ref().is_some_and(|c| c.resume.is_some()) {
        let run = run_resource(&state.runs, &meta).await?;
        return Ok((run_headers(&meta, None), Json(run)).into_response());
    }
    Ok(created(&meta))
}

async fn create_stateless(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<RunCreateParams>,
) -> Result<Response, ApiError> {
    let meta = create_run(&state.runs, &caller.tenant, None, &body, None).await?;
    Ok(created(&meta))
}

/// The answer to a created run: the Run as created, and where it lives.
fn created(meta: &RunMeta) -> Response {
    (run_headers(meta, None), Json(created_resource(meta))).into_response()
}

async fn list(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(thread_id): Path<String>,
    QueryString(query): QueryString<RunListQuery>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Vec<Value>>, ApiError> {
    let select = Select::parse(
        Select::from_query(raw.as_deref()).as_deref(),
        &fields_of::<Run>(),
        "a run",
        false,
    )?;
    owned_threads::load(&state.runs, &caller.tenant, &thread_id).await?;
    let mut paging = Paging::new(query.offset, query.limit, query.status.is_some());
    let repo = runs_of(state.store(), &thread_id);
    // Newest first (by age, as [`RunMeta::age`] orders).
    let mut walk = repo
        .walk(thread_runs(&thread_id), Order::Descending)
        .from(paging.from)
        .chunk(paging.chunk());
    let mut out = Vec::new();
    while out.len() < paging.limit {
        let Some(meta) = walk.next().await? else {
            break;
        };
        let run = run_resource(&state.runs, &meta).await?;
        if query
            .status
            .as_ref()
            .is_some_and(|s| run.status.as_str() != s)
        {
            continue;
        }
        if !paging.skips() {
            out.push(run);
        }
    }
    Ok(Json(select.apply_all(&out)))
}

async fn get_one(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path((thread_id, run_id)): Path<(String, String)>,
) -> Result<Json<Run>, ApiError> {
    let meta = load_run(&state.runs, &caller.tenant, &thread_id, &run_id).await?;
    Ok(Json(run_resource(&state.runs, &meta).await?))
}

async fn delete(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path((thread_id, run_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let meta = load_run(&state.runs, &caller.tenant, &thread_id, &run_id).await?;
    state.runs.life.delete_run(&meta).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A query flag as the SDK sends it.
pub(crate) fn flag(value: Option<&str>) -> Result<bool, ApiError> {
    match value {
        None | Some("0" | "false") => Ok(false),
        Some("1" | "true") => Ok(true),
        Some(other) => Err(ApiError::unprocessable(format!(
            "expected a boolean (true/false/1/0), got '{other}'"
        ))),
    }
}

/// Whether a cancel's `action` also drops the run (`rollback`) rather
/// than only stopping it (`interrupt`, the default).
pub(crate) fn rolls_back(action: Option<&str>) -> Result<bool, ApiError> {
    match action {
        None | Some("interrupt") => Ok(false),
        Some("rollback") => Ok(true),
        Some(other) => Err(ApiError::unprocessable(format!(
            "action must be interrupt or rollback; got '{other}'"
        ))),
    }
}

async fn cancel(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path((thread_id, run_id)): Path<(String, String)>,
    QueryString(query): QueryString<RunCancelQuery>,
) -> Result<Response, ApiError> {
    let mut meta = load_run(&state.runs, &caller.tenant, &thread_id, &run_id).await?;
    let rollback = rolls_back(query.action.as_deref())?;
    state.runs.life.cancel(&mut meta).await?;
    let response = if flag(query.wait.as_deref())? {
        wait_response(state.clone(), meta, "/join").await
    } else {
        StatusCode::ACCEPTED.into_response()
    };
    if rollback {
        state.runs.life.roll_back(&thread_id, &run_id).await?;
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_flags_take_numbers_and_words() {
        assert!(flag(Some("1")).unwrap() && !flag(Some("0")).unwrap() && !flag(None).unwrap());
        assert!(flag(Some("maybe")).is_err());
    }
}

#[cfg(test)]
#[path = "runs_tests.rs"]
mod router_tests;

#[cfg(test)]
#[path = "run_request_tests.rs"]
mod run_request_tests;
