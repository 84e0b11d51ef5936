//! Runs against a local OpenAI-compatible server: the real HTTP client,
//! the real wire format, and the request layout the model receives.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::ResultStatus;
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::ScriptedServer;
use pretty_assertions::assert_eq;

use crate::batch::{briefing_tasks, expected_briefing};
use crate::support::{Fleet, distributed, fleet, spec};

async fn server() -> ScriptedServer {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/briefings/script.yaml");
    let engine = ReplayEngine::new(Script::load(&path).unwrap());
    ScriptedServer::start(Arc::new(engine), Duration::ZERO)
        .await
        .unwrap()
}

async fn briefings(mut fleet: Fleet, server: &ScriptedServer, runs: usize) {
    let spec = spec("briefings-http", "openai:scripted-model", "");
    let results = fleet.run(&spec, &briefing_tasks(runs)).await.unwrap();
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.status, ResultStatus::Success, "{:?}", r.error);
        assert_eq!(r.output, expected_briefing(i));
    }
    // 4 main-agent calls and 3 subagent calls per run.
    assert_eq!(server.requests().len(), runs * 7);
    fleet.shutdown().await.unwrap();
}

async fn two_hundred_briefings(fleet: Fleet, server: &ScriptedServer) {
    briefings(fleet, server, 200).await;
    assert_eq!(server.http2_requests(), 0, "HTTP/1.1 unless configured");
}

/// `http2_prior_knowledge`: every call speaks HTTP/2 without TLS (h2c).
async fn briefings_over_h2c(fleet: Fleet, server: &ScriptedServer) {
    briefings(fleet, server, 50).await;
    assert_eq!(server.http2_requests(), 50 * 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_runs_over_http_embedded() {
    let server = server().await;
    let fleet = fleet().model_url(Some(server.url())).embedded().unwrap();
    two_hundred_briefings(fleet, &server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_runs_over_http_distributed() {
    let server = server().await;
    let Some(fleet) = distributed(fleet().model_url(Some(server.url())), 2).await else {
        return;
    };
    two_hundred_briefings(fleet, &server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_over_h2c_embedded() {
    let server = server().await;
    let fleet = fleet()
        .model_url(Some(server.url()))
        .model_http2()
        .embedded()
        .unwrap();
    briefings_over_h2c(fleet, &server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_over_h2c_distributed() {
    let server = server().await;
    let builder = fleet().model_url(Some(server.url())).model_http2();
    let Some(fleet) = distributed(builder, 2).await else {
        return;
    };
    briefings_over_h2c(fleet, &server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_sees_prompt_tools_and_history_in_order() {
    let server = server().await;
    let mut fleet = fleet().model_url(Some(server.url())).embedded().unwrap();
    let spec = spec(
        "layout",
        "openai:scripted-model",
        "system_prompt: You write short briefings.\n",
    );
    fleet.run(&spec, &briefing_tasks(1)).await.unwrap();
    let requests = server.requests();
    let first = &requests[0];
    assert_eq!(first["model"], "scripted-model");
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    // deepagents conformance §13.2 item 1 (our stack adds `delete` and
    // `task` as deepagents does; `execute` only with a sandbox).
    assert_eq!(
        tools,
        [
            "ls",
            "read_file",
            "write_file",
            "edit_file",
            "delete",
            "glob",
            "grep",
            "task"
        ]
    );
    let messages = first["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    let system = messages[0]["content"].as_str().unwrap();
    let order = [
        "You write short briefings.",
        "You are a capable agent",
        "## Files",
        "## Subagents",
    ];
    let positions: Vec<usize> = order.iter().map(|s| system.find(s).unwrap()).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    assert_eq!(
        messages[1],
        serde_json::json!({"role": "user", "content": "Write a briefing on topic 0."})
    );
    // The prompt prefix is identical on every main-agent step (cache hits).
    let main_systems: Vec<&serde_json::Value> = requests
        .iter()
        .filter(|r| r["messages"][1]["content"] == "Write a briefing on topic 0.")
        .map(|r| &r["messages"][0])
        .collect();
    assert_eq!(main_systems.len(), 4);
    assert!(main_systems.iter().all(|s| *s == main_systems[0]));
    fleet.shutdown().await.unwrap();
}
