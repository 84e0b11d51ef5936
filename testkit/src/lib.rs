//! Test and benchmark support for deepfleet.
//!
//! [`ScriptedServer`] serves a [`ReplayEngine`] as an OpenAI-compatible
//! HTTP endpoint on a loopback port, so the real HTTP client, the worker
//! and the CLI can run against scripted answers; it records every request
//! body for assertions. [`serve`] runs the same endpoint on a listener of
//! the caller's (the CLI's scripted-server subcommand).
#![warn(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use deepfleet_model::openai::wire::{ChatRequest, ErrorBody, ErrorDetail};
use deepfleet_model::replay::{ReplayEngine, ScriptedError};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

#[derive(Clone)]
struct AppState {
    engine: Arc<ReplayEngine>,
    latency: Duration,
    /// Request bodies received, when someone wants them.
    requests: Option<Arc<Mutex<Vec<Value>>>>,
}

/// A scripted OpenAI-compatible server on `127.0.0.1`; stops when dropped.
pub struct ScriptedServer {
    address: SocketAddr,
    requests: Arc<Mutex<Vec<Value>>>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl ScriptedServer {
    /// Starts serving `engine` on a free loopback port; every answer waits
    /// `latency` first (to model a provider's response time).
    pub async fn start(engine: Arc<ReplayEngine>, latency: Duration) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let app = router(AppState {
            engine,
            latency,
            requests: Some(requests.clone()),
        });
        let (shutdown, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            // A serve error can only come from the listener; the server is
            // gone then, and the test sees connection failures.
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(ScriptedServer {
            address,
            requests,
            shutdown: Some(shutdown),
            task,
        })
    }

    /// The base URL to use as `OPENAI_BASE_URL`: `http://127.0.0.1:PORT/v1`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// The request bodies received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        // Graceful shutdown waits for open keep-alive connections; a test
        // server has no reason to.
        self.task.abort();
    }
}

/// Serves `engine` on `listener` until the task is cancelled (request
/// bodies are not kept).
pub async fn serve(
    engine: Arc<ReplayEngine>,
    latency: Duration,
    listener: TcpListener,
) -> anyhow::Result<()> {
    let app = router(AppState {
        engine,
        latency,
        requests: None,
    });
    axum::serve(listener, app).await?;
    Ok(())
}

fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(complete))
        .route("/chat/completions", post(complete))
        .with_state(state)
}

async fn complete(State(state): State<AppState>, body: Bytes) -> Response {
    // Record the raw JSON first, so a test can inspect even a request the
    // engine rejects.
    let value: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(e) => return invalid_request(format!("the body is not JSON: {e}")),
    };
    if let Some(requests) = &state.requests {
        requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(value.clone());
    }
    let request: ChatRequest = match serde_json::from_value(value) {
        Ok(request) => request,
        Err(e) => return invalid_request(format!("not a chat completions request: {e}")),
    };
    if !state.latency.is_zero() {
        tokio::time::sleep(state.latency).await;
    }
    match state.engine.answer(&request) {
        Ok(response) => axum::Json(response).into_response(),
        Err(error) => scripted_error(error),
    }
}

fn scripted_error(error: ScriptedError) -> Response {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, axum::Json(error.body)).into_response();
    if let Some(delay) = error.retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(delay.as_secs()));
    }
    response
}

fn invalid_request(message: String) -> Response {
    let body = ErrorBody {
        error: ErrorDetail {
            message,
            kind: Some("invalid_request_error".to_owned()),
            code: None,
        },
    };
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}
