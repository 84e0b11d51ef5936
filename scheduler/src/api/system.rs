//! `/ok`, `/info` and `/metrics`.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::ApiState;

pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/ok", get(ok))
        .route("/info", get(info))
        .route("/metrics", get(metrics))
}

async fn ok() -> Json<Value> {
    Json(json!({"ok": true}))
}

async fn info(State(state): State<ApiState>) -> Json<Value> {
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "langgraph_py_version": null,
        "flags": {"assistants": true, "crons": false, "langsmith": false},
        "metadata": {"server": "deepfleet", "graphs": *state.graphs},
    }))
}

/// The Prometheus text format. Until the binary hands in a registry the
/// body is empty, which scrapers read as "no samples".
async fn metrics(State(state): State<ApiState>) -> Response {
    let body = state
        .metrics
        .as_ref()
        .map(|render| render())
        .unwrap_or_default();
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}
