//! `/metrics` of a worker or an embedded run: the process's
//! [`Metrics`] in the Prometheus text format, with the queue depth sampled
//! at scrape time; `/healthz` and `/readyz` share its port.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use deepfleet_fleet::Metrics;
use deepfleet_queue::Queue;
use tokio_util::sync::CancellationToken;

#[derive(Clone)]
struct Scrape {
    metrics: Arc<Metrics>,
    queue: Arc<dyn Queue>,
}

/// Binds `addr` and serves `/metrics` and the routes of `health` in the
/// background; returns the bound address (useful with port 0).
pub async fn serve(
    addr: &str,
    metrics: Arc<Metrics>,
    queue: Arc<dyn Queue>,
    health: Router,
) -> anyhow::Result<std::net::SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening for metrics on {addr}"))?;
    let bound = listener.local_addr()?;
    let app = Router::new()
        .route("/metrics", get(scrape))
        .with_state(Scrape { metrics, queue })
        .merge(health);
    // Served for the life of the process: nothing stops it.
    tokio::spawn(super::http_serve::serve(
        listener,
        app,
        CancellationToken::new(),
        Duration::ZERO,
        super::http_serve::HEADER_READ_TIMEOUT,
    ));
    Ok(bound)
}

async fn scrape(State(s): State<Scrape>) -> Response {
    match s.queue.depth().await {
        Ok(Some(depth)) => s.metrics.set_queue_depth(depth),
        Ok(None) => {}
        // A broker hiccup must not fail the scrape; the gauge keeps its
        // last value.
        Err(e) => tracing::warn!(error = %e, "sampling the queue depth failed"),
    }
    match s.metrics.render() {
        Ok(body) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            body,
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}
