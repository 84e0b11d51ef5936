//! The HTTP API, compatible with the LangGraph Agent Server protocol that
//! `langgraph-sdk` clients and UIs speak (reference `agent-server.md` §1).
//!
//! Routes are split by resource: [`assistants`], [`threads`], [`runs`]
//! (creation, listing, cancel), [`follow`] (wait, join, streaming) and
//! [`system`] (`/ok`, `/info`, `/metrics`), [`store_items`] (the long-term
//! store), plus [`batches`] to follow thousands of runs. Every failure is an [`ApiError`]. One
//! `ServiceBuilder` adds request ids, tracing, a timeout on producing the
//! response head and a body limit.

pub mod assistants;
pub mod batches;
pub mod convert;
pub mod error;
pub mod follow;
pub mod multitask;
pub mod partials;
pub mod runs;
pub mod store_items;
pub mod stream;
pub mod system;
pub mod threads;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderName, StatusCode};
use chrono::{DateTime, Utc};
use tower::ServiceBuilder;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

pub use error::ApiError;

use crate::lifecycle::Lifecycle;

/// Largest request body accepted.
pub const BODY_LIMIT: usize = 16 * 1024 * 1024;
/// How long a handler may take to produce the response head. Waits and
/// streams answer at once and keep the body open, so they are not cut.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Renders the process's Prometheus metrics for `/metrics`.
pub type MetricsRender = Arc<dyn Fn() -> String + Send + Sync>;

/// What every handler shares.
#[derive(Clone)]
pub struct ApiState {
    /// Run lifecycle over the store and queue.
    pub life: Lifecycle,
    /// The registered graphs (agent spec names), sorted.
    pub graphs: Arc<Vec<String>>,
    /// When this scheduler started: the system assistants' timestamps.
    pub started_at: DateTime<Utc>,
    /// The metrics registry's renderer, when the binary has one.
    pub metrics: Option<MetricsRender>,
}

/// The API router with its layers.
pub fn router(state: ApiState) -> Router {
    let request_id = HeaderName::from_static("x-request-id");
    let layers = ServiceBuilder::new()
        .layer(SetRequestIdLayer::new(request_id.clone(), MakeRequestUuid))
        .layer(TraceLayer::new_for_http())
        .layer(PropagateRequestIdLayer::new(request_id))
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            HEAD_TIMEOUT,
        ));
    Router::new()
        .merge(system::routes())
        .merge(assistants::routes())
        .merge(threads::routes())
        .merge(runs::routes())
        .merge(follow::routes())
        .merge(batches::routes())
        .merge(store_items::routes())
        .layer(layers)
        .with_state(state)
}
