//! Batch admission: a batch larger than its window never has more runs
//! in flight than the window, every run still ends exactly once, and
//! cancelling the batch ends the runs that were still waiting.
//!
//! The oracle of "in flight" is the scripted model's request log: each
//! run makes two model calls (an `ls`, then its answer), so a run is open
//! from its first request to its second. A run admitted in an ended run's
//! place can only call the model after that run's second call came back
//! and committed, so at no point of the log may more than the window's
//! runs be open, whatever the timing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::{ResultStatus, RunStatus, TaskLine};
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_scheduler::TaskBatches;
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::script::{Call, ScriptBuilder, When};

use crate::support::{Fleet, distributed, fleet, most_open, request_of, spec, task};

const WINDOW: u32 = 3;
const TASKS: usize = 24;

async fn server(latency: Duration) -> ScriptedServer {
    let script = ScriptBuilder::new()
        .calls_then_answer(When::input("^Job \\d+$"), [Call::ls("/")], "done")
        .build();
    let engine = ReplayEngine::new(Script::from_yaml(&script).unwrap());
    ScriptedServer::start(Arc::new(engine), latency)
        .await
        .unwrap()
}

fn jobs(n: usize) -> Vec<TaskLine> {
    (0..n)
        .map(|i| task(&format!("j{i}"), &format!("Job {i}")))
        .collect()
}

async fn a_batch_keeps_its_window(mut fleet: Fleet, server: &ScriptedServer) {
    let spec = spec("windowed", "openai:scripted-model", "");
    let (follower, runs) = fleet
        .submit_windowed(&spec, &jobs(TASKS), WINDOW)
        .await
        .unwrap();
    let results = fleet.follow(follower).await.unwrap();
    let by_id: BTreeMap<&str, usize> = results.iter().fold(BTreeMap::new(), |mut m, r| {
        *m.entry(r.id.as_str()).or_default() += 1;
        m
    });
    assert_eq!(by_id.len(), TASKS, "every task has its line");
    assert!(by_id.values().all(|n| *n == 1), "{by_id:?}");
    assert!(results.iter().all(|r| r.status == ResultStatus::Success));
    let requests = server.requests();
    assert_eq!(requests.len(), 2 * TASKS, "each run called the model twice");
    let most = most_open(&requests, "");
    assert!(
        most <= WINDOW as usize,
        "{most} runs were in flight at once, over the window of {WINDOW}"
    );
    for run in &runs {
        let ended = fleet.store.find_run(&run.run_id).await.unwrap().unwrap();
        assert_eq!(ended.status, RunStatus::Success);
    }
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_never_has_more_than_its_window_in_flight_embedded() {
    let server = server(Duration::from_millis(5)).await;
    let fleet = fleet().model_url(Some(server.url())).embedded().unwrap();
    a_batch_keeps_its_window(fleet, &server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_never_has_more_than_its_window_in_flight_distributed() {
    let server = server(Duration::from_millis(5)).await;
    let Some(fleet) = distributed(fleet().model_url(Some(server.url())), 2).await else {
        return;
    };
    a_batch_keeps_its_window(fleet, &server).await;
}

/// Cancelled while most of its runs wait (a window of one): every run
/// ends once (its line written once), and each that never called the
/// model ends `cancelled`.
async fn cancelling_ends_waiting_runs(mut fleet: Fleet, server: &ScriptedServer) {
    let spec = spec("windowed-cancel", "openai:scripted-model", "");
    let (follower, runs) = fleet.submit_windowed(&spec, &jobs(TASKS), 1).await.unwrap();
    let batch = follower.batch_id().to_owned();
    let asked = TaskBatches::new(fleet.store.clone())
        .cancel(&batch)
        .await
        .unwrap();
    assert!(asked.is_some(), "the batch is known by its roster");
    let results = fleet.follow(follower).await.unwrap();
    assert_eq!(results.len(), TASKS);
    let started: BTreeSet<String> = server
        .requests()
        .iter()
        .map(request_of)
        .map(|(input, _)| input)
        .collect();
    let ids: BTreeSet<&str> = results.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len(), TASKS, "one line per task");
    for run in &runs {
        let ended = fleet.store.find_run(&run.run_id).await.unwrap().unwrap();
        let id = ended.task_id.clone().unwrap_or_default();
        let input = format!("Job {}", id.trim_start_matches('j'));
        if !started.contains(&input) {
            assert_eq!(ended.status, RunStatus::Cancelled, "{id} never started");
        }
    }
    assert!(
        started.len() < TASKS,
        "the batch was cancelled while runs waited"
    );
    for run in &runs {
        let ended = fleet.store.find_run(&run.run_id).await.unwrap().unwrap();
        assert!(ended.status.is_terminal(), "{:?}", ended.status);
    }
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_batch_ends_its_waiting_runs_embedded() {
    let server = server(Duration::from_millis(200)).await;
    let fleet = fleet().model_url(Some(server.url())).embedded().unwrap();
    cancelling_ends_waiting_runs(fleet, &server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_batch_ends_its_waiting_runs_distributed() {
    let server = server(Duration::from_millis(200)).await;
    let Some(fleet) = distributed(fleet().model_url(Some(server.url())), 2).await else {
        return;
    };
    cancelling_ends_waiting_runs(fleet, &server).await;
}
