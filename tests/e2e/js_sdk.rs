//! The scheduler's HTTP API driven by the official JavaScript client,
//! `@langchain/langgraph-sdk` from the npm registry: a live `deepfleet
//! scheduler` and two `deepfleet worker` processes on RabbitMQ and Redis
//! run `js_sdk/js_flows.cjs`, which calls the client's methods of
//! assistants, threads, runs, crons and the store and checks each answer's
//! shape or documented error status.
//!
//! Skipped with a note without node or the registry, failed under
//! `CI=true`, like a missing RabbitMQ or Redis.

use std::path::Path;
use std::time::Duration;

use tokio::process::Command;

use crate::live_scheduler::{fixtures, node_sdk, run_client};
use crate::support::{distributed, fleet};

#[tokio::test]
async fn langgraph_js_sdk_drives_the_scheduler() {
    let Some(fleet) = distributed(fleet(), 2).await else {
        return;
    };
    let Some(modules) = node_sdk().await else {
        fleet.shutdown().await.unwrap();
        return;
    };
    let flows = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/js_sdk/js_flows.cjs");
    run_client(
        fleet,
        &fixtures().join("agents"),
        "js_sdk/js_flows.cjs",
        Duration::from_secs(180),
        |url, _| {
            let mut command = Command::new("node");
            command.arg(&flows).arg(url).env("NODE_PATH", &modules);
            command
        },
    )
    .await;
}
