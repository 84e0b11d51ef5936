//! The scheduler's HTTP API driven by the official `langgraph-sdk`
//! Python client: a live `deepfleet scheduler` and two `deepfleet worker`
//! processes on RabbitMQ and Redis run `agent_server/sdk_flows.py`
//! (assistants, threads, run + wait, stream, background run + join,
//! batch, store, interrupt + resume, multitask reject/enqueue, cancel).
//!
//! Skipped with a note without PyPI, failed under `CI=true`, like a
//! missing RabbitMQ or Redis (see `live_scheduler`).

use std::time::Duration;

use crate::live_scheduler::{fixtures, run_flows};
use crate::support::{distributed, fleet};

#[tokio::test]
async fn langgraph_sdk_drives_the_scheduler() {
    let Some(fleet) = distributed(fleet(), 2).await else {
        return;
    };
    run_flows(
        fleet,
        &fixtures().join("agents"),
        &fixtures().join("sdk_flows.py"),
        |url, _| vec![url.to_owned()],
        Duration::from_secs(180),
    )
    .await;
}
