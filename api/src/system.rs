//! `/ok`, `/info` and `/metrics`.

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use deepfleet_proto::api::{InfoFlags, InfoMetadata, InfoResponse, OkResponse};

use crate::routes::{PUBLIC, Routes};
use crate::state::ApiState;

pub(crate) fn routes() -> Routes {
    Routes::new()
        .get("/ok", PUBLIC, ok)
        .get("/info", PUBLIC, info)
        .get("/metrics", PUBLIC, metrics)
}

async fn ok() -> Json<OkResponse> {
    Json(OkResponse { ok: true })
}

async fn info(State(state): State<ApiState>) -> Json<InfoResponse> {
    Json(InfoResponse {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        langgraph_py_version: None,
        flags: InfoFlags {
            assistants: true,
            crons: true,
            langsmith: false,
            strict_resume: true,
        },
        metadata: InfoMetadata {
            server: "deepfleet".to_owned(),
            graphs: state.runs.graphs.names(),
        },
    })
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

#[cfg(test)]
#[path = "system_tests.rs"]
mod router_tests;
