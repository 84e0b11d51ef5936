//! Following a run over HTTP: `/wait` and `/join` (a JSON body once the
//! run ends, with whitespace keep-alives meanwhile) and the run-creating
//! `/stream` routes (see [`super::stream`]).

use std::convert::Infallible;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body as HttpBody;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use deepfleet_proto::RunStatus;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::ApiState;
use super::convert::{interrupts, thread_values};
use super::error::{ApiError, Body};
use super::runs::{self, RunCreate, run_headers};
use super::stream;
use crate::lifecycle::{RunMeta, occupies_thread};

/// How often a follower looks at the store.
pub const POLL: Duration = Duration::from_millis(150);
/// Keep-alive period of waits and streams (reference: 5 s).
pub const KEEP_ALIVE: Duration = Duration::from_secs(5);

pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/threads/{thread_id}/runs/wait", post(create_wait))
        .route("/runs/wait", post(create_wait_stateless))
        .route("/threads/{thread_id}/runs/{run_id}/join", get(join))
        .route("/threads/{thread_id}/runs/stream", post(create_stream))
        .route("/runs/stream", post(create_stream_stateless))
        .route(
            "/threads/{thread_id}/runs/{run_id}/stream",
            get(join_stream),
        )
}

async fn create_wait(
    State(state): State<ApiState>,
    Path(thread_id): Path<String>,
    Body(body): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let meta = runs::create_run(&state, Some(&thread_id), &body, None).await?;
    Ok(wait_response(state, meta, "/join").await)
}

async fn create_wait_stateless(
    State(state): State<ApiState>,
    Body(body): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let meta = runs::create_run(&state, None, &body, None).await?;
    Ok(wait_response(state, meta, "/join").await)
}

async fn join(
    State(state): State<ApiState>,
    Path((thread_id, run_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let meta = runs::load(&state, &thread_id, &run_id).await?;
    Ok(wait_response(state, meta, "/join").await)
}

async fn create_stream(
    State(state): State<ApiState>,
    Path(thread_id): Path<String>,
    Body(body): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let meta = runs::create_run(&state, Some(&thread_id), &body, None).await?;
    let mut modes = stream::Modes::parse(body.stream_mode.as_ref())?;
    modes.subgraphs = body.stream_subgraphs.unwrap_or(false);
    Ok(stream::sse_response(state, meta, modes, None))
}

async fn create_stream_stateless(
    State(state): State<ApiState>,
    Body(body): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let meta = runs::create_run(&state, None, &body, None).await?;
    let mut modes = stream::Modes::parse(body.stream_mode.as_ref())?;
    modes.subgraphs = body.stream_subgraphs.unwrap_or(false);
    Ok(stream::sse_response(state, meta, modes, None))
}

async fn join_stream(
    State(state): State<ApiState>,
    Path((thread_id, run_id)): Path<(String, String)>,
    headers: HeaderMap,
    axum::extract::Query(query): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let meta = runs::load(&state, &thread_id, &run_id).await?;
    let mut modes = stream::Modes::parse(
        query
            .get("stream_mode")
            .map(|m| Value::String(m.clone()))
            .as_ref(),
    )?;
    modes.subgraphs = query
        .get("stream_subgraphs")
        .is_some_and(|v| v == "true" || v == "1");
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    Ok(stream::sse_response(state, meta, modes, last))
}

/// Whether the run has ended (as the API sees it: a run parked on a human
/// decision has ended too), and its status if it started.
pub async fn finished(
    state: &ApiState,
    meta: &RunMeta,
) -> Result<(bool, Option<RunStatus>), ApiError> {
    let run = state
        .life
        .store()
        .get_run(&meta.thread_id, &meta.run_id)
        .await?;
    Ok(match run {
        Some(run) => (!occupies_thread(run.status), Some(run.status)),
        None => (meta.cancelled, None),
    })
}

/// The `/wait` and `/join` body of an ended run (reference §1.7): the
/// thread's values, or `{"__error__": ...}` when the run failed.
pub async fn final_body(state: &ApiState, meta: &RunMeta) -> Result<Value, ApiError> {
    let run = state
        .life
        .store()
        .get_run(&meta.thread_id, &meta.run_id)
        .await?;
    if let Some(run) = &run
        && run.status == RunStatus::Error
    {
        let (code, message) = run
            .error
            .as_ref()
            .map(|e| (e.code.as_str(), e.message.clone()))
            .unwrap_or(("internal", "the run failed".into()));
        return Ok(json!({"__error__": {"error": code, "message": message}}));
    }
    let checkpoint = state.life.store().load_thread(&meta.thread_id).await?;
    let mut values = thread_values(&meta.thread_id, &checkpoint);
    if run.is_some_and(|r| r.status == RunStatus::Interrupted)
        && let Some(pending) = interrupts(&checkpoint, &meta.run_id)
    {
        values["__interrupt__"] = pending;
    }
    Ok(values)
}

/// A 200 whose body is newlines every [`KEEP_ALIVE`] until the run ends,
/// then its final JSON; `Location` is the join URL.
pub async fn wait_response(state: ApiState, meta: RunMeta, location: &str) -> Response {
    let headers = run_headers(&meta, Some(location));
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(4);
    tokio::spawn(async move {
        let mut last_sent = Instant::now();
        loop {
            let done = match finished(&state, &meta).await {
                Ok((done, _)) => done,
                Err(e) => {
                    let _ = tx.send(Ok(Bytes::from(error_json(&e)))).await;
                    return;
                }
            };
            if done {
                let body = match final_body(&state, &meta).await {
                    Ok(body) => body.to_string(),
                    Err(e) => error_json(&e),
                };
                let _ = tx.send(Ok(Bytes::from(body))).await;
                return;
            }
            if last_sent.elapsed() >= KEEP_ALIVE {
                if tx.send(Ok(Bytes::from_static(b"\n"))).await.is_err() {
                    return;
                }
                last_sent = Instant::now();
            }
            tokio::time::sleep(POLL).await;
        }
    });
    let body = HttpBody::from_stream(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    }));
    (headers, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn error_json(e: &ApiError) -> String {
    json!({"__error__": {"error": e.code.as_str(), "message": e.detail}}).to_string()
}
