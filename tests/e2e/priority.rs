//! Priorities: an interactive run submitted while a batch's steps fill
//! the queue is served before them. The oracle is the scripted model's
//! request log, not a clock: between the interactive run's submission
//! and its first model call, only steps the workers held already (at most
//! two per slot: one running, one handed on) may call the model, out of a
//! backlog many times larger.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::{Priority, TaskLine};
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::script::{Call, ScriptBuilder, When};
use serde_json::Value;

use crate::support::{Fleet, distributed, fleet, spec, task};

/// Steps one worker runs at once.
const CONCURRENCY: u16 = 2;
const BATCH: usize = 40;

async fn server() -> ScriptedServer {
    let script = ScriptBuilder::new()
        .calls_then_answer(When::input("^(Job \\d+|Now)$"), [Call::ls("/")], "done")
        .build();
    let engine = ReplayEngine::new(Script::from_yaml(&script).unwrap());
    ScriptedServer::start(Arc::new(engine), Duration::from_millis(20))
        .await
        .unwrap()
}

fn input_of(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

async fn interactive_goes_first(mut fleet: Fleet, server: &ScriptedServer, slots: usize) {
    let spec = spec("lanes", "openai:scripted-model", "");
    let jobs: Vec<TaskLine> = (0..BATCH)
        .map(|i| task(&format!("j{i}"), &format!("Job {i}")))
        .collect();
    let (follower, _) = fleet.submit(&spec, &jobs).await.unwrap();
    // Wait until the batch has started, so its steps are queued ahead.
    while server.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let intake = fleet.intake().unwrap().with_priority(Priority::Interactive);
    let interactive =
        deepfleet_scheduler::submit_task(&intake, &spec.name, &task("now", "Now"), None)
            .await
            .unwrap();
    // Counted from when its first step is queued: calls made while the
    // submission itself was under way (slower on a loaded machine) are not
    // the queue's order.
    let before = server.requests().len();
    assert_eq!(interactive.priority, Priority::Interactive);
    fleet.follow(follower).await.unwrap();
    let requests = server.requests();
    let first = requests
        .iter()
        .position(|r| input_of(r) == "Now")
        .expect("the interactive run called the model");
    let ahead = first.saturating_sub(before);
    let started_after: BTreeSet<String> = requests[first..].iter().map(input_of).collect();
    assert!(
        ahead <= 2 * slots,
        "{ahead} batch calls went ahead of the interactive run ({slots} slots)"
    );
    assert!(
        started_after.len() > 2 * slots,
        "a backlog was still queued: {} runs called after it",
        started_after.len()
    );
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interactive_run_is_served_before_queued_batch_steps_embedded() {
    let server = server().await;
    let fleet = fleet()
        .concurrency(CONCURRENCY)
        .model_url(Some(server.url()))
        .embedded()
        .unwrap();
    interactive_goes_first(fleet, &server, usize::from(CONCURRENCY)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interactive_run_is_served_before_queued_batch_steps_distributed() {
    let server = server().await;
    let builder = fleet()
        .concurrency(CONCURRENCY)
        .model_url(Some(server.url()));
    let Some(fleet) = distributed(builder, 2).await else {
        return;
    };
    interactive_goes_first(fleet, &server, 2 * usize::from(CONCURRENCY)).await;
}
