//! Hard ceilings on delegation: a model that always delegates, under a
//! deep `max_subagent_depth`, makes a bounded number of runs (issue 14:
//! 39,369 nested runs in 15 s). Refused delegations are tool errors the
//! model reads; every run ends, here with `max_steps`.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::ResultStatus;
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::script::{Call, ScriptBuilder, When};
use pretty_assertions::assert_eq;

use crate::support::{Fleet, distributed, fleet, spec, task};

const LIMIT: Duration = Duration::from_secs(120);

/// Every turn of every run hands three tasks to subagents.
fn always_delegating() -> Script {
    let script = ScriptBuilder::new()
        .call(
            When::always(),
            [
                Call::task("Go deeper"),
                Call::task("Go deeper"),
                Call::task("Go deeper"),
            ],
        )
        .build();
    Script::from_yaml(&script).unwrap()
}

/// Runs the model served: each run's first request has no assistant turn.
fn runs_served(server: &ScriptedServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| {
            r["messages"]
                .as_array()
                .is_some_and(|m| !m.iter().any(|m| m["role"] == "assistant"))
        })
        .count()
}

/// Runs the always-delegating agent of `limits` (YAML lines) on `fleet`;
/// the root run's result and how many runs the batch made.
async fn delegate_forever(fleet: &mut Fleet, server: &ScriptedServer, limits: &str) -> usize {
    let spec = spec("forever", "openai:scripted", limits);
    let results = fleet.run(&spec, &[task("t1", "Go deeper")]).await.unwrap();
    let r = &results[0];
    assert_eq!(r.status, ResultStatus::Error, "{r:?}");
    let error = r.error.as_deref().unwrap_or_default();
    assert!(error.starts_with("max_steps: "), "{error}");
    runs_served(server)
}

async fn server() -> ScriptedServer {
    ScriptedServer::start(
        Arc::new(ReplayEngine::new(always_delegating())),
        Duration::ZERO,
    )
    .await
    .unwrap()
}

const DEEP: &str = "limits: {max_steps: 2, max_subagent_depth: 6, max_fanout: 3}\n";
const SMALL: &str =
    "limits: {max_steps: 2, max_subagent_depth: 6, max_fanout: 3, max_total_runs: 12}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_always_delegating_model_makes_bounded_runs_embedded() {
    for (limits, most) in [(DEEP, 100), (SMALL, 12)] {
        let server = server().await;
        let mut fleet = fleet()
            .run_limit(LIMIT)
            .model_url(Some(server.url()))
            .embedded()
            .unwrap();
        let runs = delegate_forever(&mut fleet, &server, limits).await;
        assert!(runs > 1 && runs <= most, "{runs} runs under {limits}");
        fleet.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_always_delegating_model_makes_bounded_runs_distributed() {
    let server = server().await;
    let builder = fleet().run_limit(LIMIT).model_url(Some(server.url()));
    let Some(mut fleet) = distributed(builder, 2).await else {
        return;
    };
    let runs = delegate_forever(&mut fleet, &server, SMALL).await;
    assert!(runs > 1 && runs <= 12, "{runs} runs");
    fleet.shutdown().await.unwrap();
}

/// The refusals the model read say which limit it hit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_delegations_are_tool_errors_naming_the_limit() {
    let server = server().await;
    let mut fleet = fleet()
        .run_limit(LIMIT)
        .model_url(Some(server.url()))
        .embedded()
        .unwrap();
    let spec = spec(
        "tiny",
        "openai:scripted",
        "limits: {max_steps: 2, max_subagent_depth: 3, max_fanout: 3, max_total_runs: 3}\n",
    );
    fleet.run(&spec, &[task("t1", "Go deeper")]).await.unwrap();
    let tool_results: Vec<String> = server
        .requests()
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect();
    assert!(
        tool_results
            .iter()
            .any(|t| t.contains("limits.max_total_runs")),
        "{tool_results:?}"
    );
    assert!(runs_served(&server) <= 3);
    fleet.shutdown().await.unwrap();
}
