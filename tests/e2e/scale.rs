//! `deepfleet submit` of a thousand tasks into a running fleet, against a
//! local OpenAI-compatible server, with one and with two workers.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::{ResultLine, ResultStatus};
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::fleet::API_KEY;

use crate::batch::{briefing_tasks, expected_briefing};
use crate::support::{AMQP_URL, REDIS_URL, distributed, fleet};

async fn submit_thousand(workers: usize) {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/briefings/script.yaml");
    let engine = ReplayEngine::new(Script::load(&script).unwrap());
    let server = ScriptedServer::start(Arc::new(engine), Duration::ZERO)
        .await
        .unwrap();
    let Some(fleet) = distributed(fleet().model_url(Some(server.url())), workers).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tasks_path = dir.path().join("tasks.jsonl");
    let tasks: String = briefing_tasks(1000)
        .iter()
        .map(|t| serde_json::to_string(t).unwrap() + "\n")
        .collect();
    std::fs::write(&tasks_path, tasks).unwrap();
    let agent_path = dir.path().join("agent.yaml");
    std::fs::write(
        &agent_path,
        "name: briefings-scale\nmodel: openai:scripted-model\n",
    )
    .unwrap();
    let out = dir.path().join("results.jsonl");

    let status = tokio::process::Command::new(env!("CARGO_BIN_EXE_deepfleet"))
        .arg("submit")
        .arg(&tasks_path)
        .arg("--agent")
        .arg(&agent_path)
        .args(["--queue", AMQP_URL, "--store", REDIS_URL, "--out"])
        .arg(&out)
        .env("DEEPFLEET__QUEUE_NAME", &fleet.queue_name)
        .env("DEEPFLEET__KEY_PREFIX", &fleet.prefix)
        // Submit refuses a spec whose provider has no key.
        .env("OPENAI_API_KEY", API_KEY)
        .stdout(std::process::Stdio::null())
        .status()
        .await
        .unwrap();
    assert!(status.success(), "submit exited with {status}");

    let mut results: Vec<ResultLine> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(results.len(), 1000);
    results.sort_by_key(|r| r.id[1..].parse::<usize>().unwrap());
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.status, ResultStatus::Success, "{:?}", r.error);
        assert_eq!(r.output, expected_briefing(i));
    }
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_a_thousand_tasks_with_one_worker() {
    submit_thousand(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_a_thousand_tasks_with_two_workers() {
    submit_thousand(2).await;
}
