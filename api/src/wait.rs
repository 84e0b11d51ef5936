//! Waiting for a run: `/wait` and `/join` answer a JSON body once the run
//! ends, with whitespace keep-alives meanwhile (reference §1.7).

use std::convert::Infallible;
use std::time::{Duration, Instant};

use axum::body::{Body as HttpBody, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use deepfleet_proto::RunStatus;
use deepfleet_proto::api::{RunFailure, WaitErrorResponse};
use serde_json::Value;
use tokio::sync::mpsc;
use tracing::warn;

use super::convert::{interrupts, thread_values, to_json};
use super::error::ApiError;
use super::run_resource::run_headers;
use super::state::ApiState;
use crate::repo::runs::RunMeta;

/// How often a follower looks at the store.
pub const POLL: Duration = Duration::from_millis(150);
/// Keep-alive period of waits and streams (reference: 5 s).
pub const KEEP_ALIVE: Duration = Duration::from_secs(5);

/// What an ended run answers: its thread's values, or why it failed.
pub enum FinalBody {
    /// The thread's values (with `__interrupt__` while a human decides).
    Values(Value),
    /// The run failed.
    Failed(RunFailure),
}

impl FinalBody {
    /// The `/wait` body.
    pub fn to_json(&self) -> Value {
        match self {
            FinalBody::Values(values) => values.clone(),
            FinalBody::Failed(failure) => to_json(&WaitErrorResponse {
                error: failure.clone(),
            }),
        }
    }
}

/// The answer of an ended run.
pub async fn final_body(state: &ApiState, meta: &RunMeta) -> Result<FinalBody, ApiError> {
    let run = state.life.run_record(meta).await?;
    if let Some(run) = &run
        && run.status == RunStatus::Error
    {
        let (code, message) = run
            .error
            .as_ref()
            .map(|e| (e.code.as_str(), e.message.clone()))
            .unwrap_or(("internal", "the run failed".into()));
        return Ok(FinalBody::Failed(RunFailure {
            error: code.to_owned(),
            message,
        }));
    }
    let checkpoint = state.store().load_thread(&meta.thread_id).await?;
    let mut values = thread_values(&meta.thread_id, &checkpoint);
    if run.is_some_and(|r| r.status == RunStatus::Interrupted)
        && let Some(pending) = interrupts(&checkpoint, &meta.run_id)
        && let Some(map) = values.as_object_mut()
    {
        map.insert("__interrupt__".into(), to_json(&pending));
    }
    Ok(FinalBody::Values(values))
}

/// Waits until the run of `meta` has ended (as [`Lifecycle::finished`]
/// sees it: a run parked on a human decision has too), at most `limit`;
/// returns whether it did. The bound is what keeps the A2A and MCP calls,
/// which answer only once the run ends, from waiting for ever.
///
/// [`Lifecycle::finished`]: crate::lifecycle::Lifecycle::finished
pub async fn ended_within(
    state: &ApiState,
    meta: &RunMeta,
    limit: Duration,
) -> Result<bool, ApiError> {
    let deadline = Instant::now() + limit;
    loop {
        if state.life.finished(meta).await?.0 {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(POLL.min(deadline.saturating_duration_since(Instant::now()))).await;
    }
}

/// A 200 whose body is newlines every [`KEEP_ALIVE`] until the run ends,
/// then its final JSON; `Location` is the join URL.
pub async fn wait_response(state: ApiState, meta: RunMeta, location: &str) -> Response {
    let headers = run_headers(&meta, Some(location));
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(4);
    tokio::spawn(async move {
        let mut last_sent = Instant::now();
        loop {
            let done = match state.life.finished(&meta).await {
                Ok((done, _)) => done,
                Err(e) => {
                    let _ = tx.send(Ok(Bytes::from(error_json(&e.into())))).await;
                    return;
                }
            };
            if done {
                let body = match final_body(&state, &meta).await {
                    Ok(body) => body.to_json().to_string(),
                    Err(e) => error_json(&e),
                };
                let _ = tx.send(Ok(Bytes::from(body))).await;
                // Answered: a stateless run's thread goes now (else its
                // expiry takes it).
                if let Err(e) = state.life.dispose_temporary(&meta).await {
                    warn!(error = %e, run_id = %meta.run_id, "removing a stateless run's thread");
                }
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
    let body = WaitErrorResponse {
        error: RunFailure {
            error: e.code.as_str().to_owned(),
            message: e.detail.clone(),
        },
    };
    to_json(&body).to_string()
}
