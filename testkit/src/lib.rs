//! Test and benchmark support for deepfleet.
//!
//! [`ScriptedServer`] serves a [`ReplayEngine`] over HTTP on a loopback
//! port in all three wire protocols the model clients speak, so the real
//! HTTP clients, the worker and the CLI can run against scripted answers:
//!
//! - OpenAI Chat Completions: `POST /v1/chat/completions` (and
//!   `/chat/completions`), JSON or, with `stream: true`, SSE chunks;
//! - Anthropic Messages: `POST /v1/messages`, JSON or SSE events;
//! - Gemini: `POST /v1beta/models/{model}:generateContent` and
//!   `:streamGenerateContent` (SSE).
//!
//! Each protocol's request is converted into the engine's input and the
//! engine's answer into that protocol's response, so one script drives a
//! run on any provider. Streamed answers cut text and tool arguments into
//! small pieces, so clients really assemble them. Every request body is
//! recorded for assertions. [`ScriptedServer::start_faulty`] injects
//! provider faults ([`faults`]): error statuses, hangs, stalls, cut or
//! undecodable answers, broken tool calls, empty and oversized answers.
//! [`serve`] runs the same endpoints on a listener of the caller's (this
//! crate's `scripted-server` binary).
//!
//! [`fleet`] is the fleet under test, embedded or on RabbitMQ and Redis,
//! shared by the e2e suite and the benchmarks; [`script`] builds the
//! replay scripts they run; [`growth`] measures what each step of a long
//! run writes to Redis; [`servers`] starts RabbitMQ and Redis servers of a
//! test's own, to stop, kill and restart.
#![warn(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod anthropic;
pub mod exactly_once;
pub mod faults;
pub mod fleet;
mod gemini;
pub mod growth;
pub mod limits;
mod listen;
mod openai;
pub mod runner;
pub mod script;
pub mod servers;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Version, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use deepfleet_model::openai::convert::{from_wire, to_wire};
use deepfleet_model::{ModelRequest, ModelResponse};
use deepfleet_replay::{ReplayEngine, ScriptedError};
use faults::{Fault, Faults};
use limits::{Enforcer, ServerLimits};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Characters per piece of streamed text or arguments.
const PIECE_CHARS: usize = 7;
/// Most pieces one text streams in: a huge text streams in pieces of
/// its thousandth.
const MAX_PIECES: usize = 1_000;

/// Request bodies with their arrival times, shared with the handlers.
type RequestLog = Arc<Mutex<Vec<(Instant, Value)>>>;

#[derive(Clone)]
struct AppState {
    engine: Arc<ReplayEngine>,
    latency: Duration,
    /// Request bodies received, with when they arrived, when someone
    /// wants them.
    requests: Option<RequestLog>,
    /// The faults to inject, if any.
    faults: Option<Arc<Faults>>,
    /// Provider-style rate limits, if any.
    limits: Option<Arc<Enforcer>>,
}

impl AppState {
    /// Parses a request body as `T`, a protocol's request (`what`, for
    /// the error), and records it when the server keeps a log (before
    /// anything can reject it, so a test can inspect a request the engine
    /// refuses), then waits out the latency. A body that is not JSON is
    /// refused at once.
    async fn receive<T: DeserializeOwned>(&self, body: &Bytes, what: &str) -> Result<T, String> {
        let arrived = Instant::now();
        let not_json = |e: serde_json::Error| format!("the body is not JSON: {e}");
        let parsed = match &self.requests {
            Some(requests) => {
                let value: Value = serde_json::from_slice(body).map_err(not_json)?;
                requests
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((arrived, value.clone()));
                serde_json::from_value(value).map_err(|e| format!("not a {what}: {e}"))
            }
            // Without a log, each body is read once, straight into the
            // request: the bench's server shares the machine it measures.
            None => match serde_json::from_slice(body) {
                Ok(request) => Ok(request),
                Err(e) => {
                    serde_json::from_slice::<IgnoredAny>(body).map_err(not_json)?;
                    Err(format!("not a {what}: {e}"))
                }
            },
        };
        let latency = self.latency + self.engine.latency();
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        parsed
    }

    /// The fault the current request gets, if any.
    fn fault(&self) -> Option<Fault> {
        self.faults.as_ref().and_then(|faults| faults.take())
    }

    /// Answers a provider-neutral request through the engine, as the
    /// engine's Chat Completions answer would arrive at a client.
    fn answer(&self, request: &ModelRequest) -> Result<ModelResponse, ScriptedError> {
        let response = self.engine.answer(&to_wire(request, None))?;
        // The engine always answers with one choice; anything else is a
        // bug of the test kit, reported as a server error.
        from_wire(response).map_err(|error| ScriptedError {
            status: 500,
            body: deepfleet_model::openai::wire::ErrorBody {
                error: deepfleet_model::openai::wire::ErrorDetail {
                    message: error.message,
                    kind: Some("server_error".to_owned()),
                    code: None,
                },
            },
            retry_after: None,
        })
    }
}

/// A scripted model server on `127.0.0.1`; stops when dropped.
pub struct ScriptedServer {
    address: SocketAddr,
    requests: RequestLog,
    http2_requests: Arc<AtomicUsize>,
    limits: Option<Arc<Enforcer>>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl ScriptedServer {
    /// Starts serving `engine` on a free loopback port; every answer waits
    /// `latency` first (to model a provider's response time).
    pub async fn start(engine: Arc<ReplayEngine>, latency: Duration) -> anyhow::Result<Self> {
        Self::serving(engine, latency, None, None).await
    }

    /// Like [`ScriptedServer::start`], enforcing `limits` on Chat
    /// Completions calls the way providers do (see [`limits`]).
    pub async fn start_limited(
        engine: Arc<ReplayEngine>,
        latency: Duration,
        limits: ServerLimits,
    ) -> anyhow::Result<Self> {
        Self::serving(engine, latency, None, Some(Arc::new(Enforcer::new(limits)))).await
    }

    /// Calls refused with a 429 and calls admitted under the server's
    /// limits (zeros without limits).
    pub fn rate_limited(&self) -> (u64, u64) {
        self.limits
            .as_ref()
            .map_or((0, 0), |limits| (limits.refused(), limits.admitted()))
    }

    /// Like [`ScriptedServer::start`], injecting `faults` (see
    /// [`faults::Faults`]).
    pub async fn start_faulty(
        engine: Arc<ReplayEngine>,
        latency: Duration,
        faults: Arc<Faults>,
    ) -> anyhow::Result<Self> {
        Self::serving(engine, latency, Some(faults), None).await
    }

    async fn serving(
        engine: Arc<ReplayEngine>,
        latency: Duration,
        faults: Option<Arc<Faults>>,
        limits: Option<Arc<Enforcer>>,
    ) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let http2_requests = Arc::new(AtomicUsize::new(0));
        let counted = http2_requests.clone();
        let app = router(AppState {
            engine,
            latency,
            requests: Some(requests.clone()),
            faults,
            limits: limits.clone(),
        })
        .layer(axum::middleware::map_request(move |request: Request| {
            if request.version() == Version::HTTP_2 {
                counted.fetch_add(1, Ordering::Relaxed);
            }
            std::future::ready(request)
        }));
        let (shutdown, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            listen::serve(listener, app, async {
                let _ = stopped.await;
            })
            .await;
        });
        Ok(ScriptedServer {
            address,
            requests,
            http2_requests,
            limits,
            shutdown: Some(shutdown),
            task,
        })
    }

    /// `http://127.0.0.1:PORT/v1`: the base URL for OpenAI-compatible and
    /// Anthropic clients (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`).
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// `http://127.0.0.1:PORT`: the root, for clients that add their API
    /// version themselves (Gemini adds `/v1beta`, Anthropic `/v1`).
    pub fn root_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Requests that came over HTTP/2 so far (h2c clients').
    pub fn http2_requests(&self) -> usize {
        self.http2_requests.load(Ordering::Relaxed)
    }

    /// The request bodies received so far, in order, whatever the
    /// protocol.
    pub fn requests(&self) -> Vec<Value> {
        self.timed_requests()
            .into_iter()
            .map(|(_, body)| body)
            .collect()
    }

    /// The request bodies received so far with their arrival times (the
    /// body fully read, before the latency): what benchmarks measure the
    /// time between model calls with.
    pub fn timed_requests(&self) -> Vec<(Instant, Value)> {
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
/// bodies are not kept), injecting `faults` when given. HTTP/1.1 and, by
/// prior knowledge, HTTP/2 without TLS, with no limit on a connection's
/// streams.
pub async fn serve(
    engine: Arc<ReplayEngine>,
    latency: Duration,
    faults: Option<Arc<Faults>>,
    listener: TcpListener,
) {
    let app = router(AppState {
        engine,
        latency,
        requests: None,
        faults,
        limits: None,
    });
    listen::serve(listener, app, std::future::pending()).await;
}

fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(openai::complete))
        .route("/chat/completions", post(openai::complete))
        .route("/v1/messages", post(anthropic::messages))
        .route("/v1beta/models/{call}", post(gemini::generate))
        .route("/v1/models/{call}", post(gemini::generate))
        .route("/models", get(list_models))
        .route("/v1/models", get(list_models))
        .route("/v1beta/models", get(list_models))
        .with_state(state)
}

/// Every protocol's model list, the call `--check-providers` makes: empty
/// for [`fleet::API_KEY`] in the protocol's key header, else a 401.
async fn list_models(headers: HeaderMap) -> Response {
    let key = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let bearer = format!("Bearer {}", fleet::API_KEY);
    let authorized = key("authorization") == Some(bearer.as_str())
        || key("x-api-key") == Some(fleet::API_KEY)
        || key("x-goog-api-key") == Some(fleet::API_KEY);
    if authorized {
        return axum::Json(serde_json::json!({"data": [], "models": []})).into_response();
    }
    let body = serde_json::json!({"error": {"message": "invalid API key", "type": "invalid_request_error"}});
    error_response(401, body, None)
}

/// A JSON error answer with `Retry-After` when the script asks for one.
fn error_response(status: u16, body: Value, retry_after: Option<Duration>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, axum::Json(body)).into_response();
    if let Some(delay) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(delay.as_secs()));
    }
    response
}

/// An SSE answer from `(event name, data)` pairs (`""` = unnamed).
fn sse_response(events: Vec<(&'static str, String)>) -> Response {
    let mut body = String::new();
    for (name, data) in events {
        if !name.is_empty() {
            body.push_str("event: ");
            body.push_str(name);
            body.push('\n');
        }
        body.push_str("data: ");
        body.push_str(&data);
        body.push_str("\n\n");
    }
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from(body),
    )
        .into_response()
}

/// `text` in pieces of [`PIECE_CHARS`] characters, or in [`MAX_PIECES`]
/// pieces when that makes them longer (none for "").
fn pieces(text: &str) -> Vec<String> {
    let size = PIECE_CHARS.max(text.len() / MAX_PIECES);
    let mut pieces = Vec::new();
    let mut piece = String::new();
    let mut count = 0;
    for c in text.chars() {
        piece.push(c);
        count += 1;
        if count == size {
            pieces.push(std::mem::take(&mut piece));
            count = 0;
        }
    }
    if !piece.is_empty() {
        pieces.push(piece);
    }
    pieces
}

/// Tool-call arguments as a JSON object for protocols that carry objects:
/// text that is not an object (a script's `raw_args`) becomes `{}`.
fn arguments_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => Value::Object(Default::default()),
    }
}
