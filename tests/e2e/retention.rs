//! The data's life cycle on both modes: a thousand-run batch leaves no
//! key once its retention has passed, deleting a thread (`DELETE
//! /threads/{id}`) leaves no key of it, and a stateless run (`POST
//! /runs/wait`) leaves nothing once it ends.
//!
//! Distributed, what is left is counted as Redis keys under the fleet's
//! prefix; embedded, as the runs and threads the store still finds. The
//! agent spec and its versions (`{prefix}:spec:*`) are the keys allowed to
//! stay: they are deployment-level, registered once for every run of the
//! agent (a version is shared by every run that pinned it), never a run's.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use chrono::Utc;
use deepfleet_api::{ApiState, router};
use deepfleet_proto::{AgentSpec, ResultStatus, RunRecord, RunStatus};
use deepfleet_scheduler::keys::ApiKeys;
use deepfleet_scheduler::runs::{Graphs, Runs};
use deepfleet_scheduler::submit_task;
use deepfleet_scheduler::{BatchFollower, Lifecycle, RetentionPolicy, TaskBatches};
use deepfleet_testkit::script::{Call, ScriptBuilder, When, write_task};
use futures::StreamExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::batch::{briefing_tasks, briefings_spec};
use crate::support::{Fleet, REDIS_URL, replay_model, scenario, spec};

/// The batch's retention: 30 s as the issue asks, on Redis; embedded, the
/// same mechanism on a shorter clock.
fn retention_of(fleet: &Fleet) -> Duration {
    if fleet.prefix.is_empty() {
        Duration::from_secs(3)
    } else {
        Duration::from_secs(30)
    }
}

/// Redis keys under the fleet's prefix but the agent specs', with the
/// bytes `MEMORY USAGE` gives each.
async fn redis_keys(prefix: &str) -> Vec<(String, u64)> {
    let client = redis::Client::open(REDIS_URL).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    let spec = format!("{prefix}:spec:");
    let mut out = Vec::new();
    for key in keys.into_iter().filter(|k| !k.starts_with(&spec)) {
        let bytes: Option<u64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        // A key that expired between the two reads is not left.
        if let Some(bytes) = bytes {
            out.push((key, bytes));
        }
    }
    out
}

/// What is left of `runs` (and their threads): Redis keys under the
/// prefix when distributed, else the runs and non-empty threads the
/// embedded store still finds.
async fn left(fleet: &Fleet, runs: &[RunRecord]) -> Vec<String> {
    if !fleet.prefix.is_empty() {
        return redis_keys(&fleet.prefix)
            .await
            .into_iter()
            .map(|(key, _)| key)
            .collect();
    }
    let mut left = Vec::new();
    for run in runs {
        if fleet.store.find_run(&run.run_id).await.unwrap().is_some() {
            left.push(format!("run {}", run.run_id));
        }
        let thread = fleet.store.load_thread(&run.thread_id).await.unwrap();
        if !thread.messages.is_empty() {
            left.push(format!("thread {}", run.thread_id));
        }
    }
    left
}

/// Waits until nothing of `runs` is left, for at most `within`.
async fn wait_until_gone(fleet: &Fleet, runs: &[RunRecord], within: Duration) -> Vec<String> {
    let deadline = Instant::now() + within;
    loop {
        let left = left(fleet, runs).await;
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

scenario!(
    a_thousand_run_batch_leaves_no_key_once_its_retention_passed,
    |fleet| {
        let retention = retention_of(&fleet);
        let spec = briefings_spec();
        let intake = fleet
            .intake()
            .unwrap()
            .with_retention(RetentionPolicy::new(Some(retention), BTreeMap::new()));
        intake.register(&spec).await.unwrap();
        let mut follower =
            BatchFollower::new(fleet.store.clone(), uuid::Uuid::new_v4().to_string());
        let batch = follower.batch_id().to_owned();
        let tasks = briefing_tasks(1000);
        // The roster `deepfleet run` and `submit` keep, so that it too is
        // counted among the batch's keys.
        let roster = TaskBatches::new(fleet.store.clone());
        roster.open(&batch, &spec.name).await.unwrap();
        for (index, task) in (0_u64..).zip(&tasks) {
            roster.add(&batch, index, &task.id).await.unwrap();
        }
        let runs: Vec<RunRecord> = futures::stream::iter(&tasks)
            .map(|task| submit_task(&intake, &spec.name, task, Some(&batch)))
            .buffered(32)
            .map(Result::unwrap)
            .collect()
            .await;
        for run in &runs {
            follower.track(run);
        }
        let results = fleet.follow(follower).await.unwrap();
        assert_eq!(results.len(), 1000);
        assert!(results.iter().all(|r| r.status == ResultStatus::Success));
        let ended = Instant::now();

        // The last runs ended a moment ago: their keys are all there.
        let finished = left(&fleet, &runs).await;
        assert!(!finished.is_empty(), "the batch left nothing to expire");
        if !fleet.prefix.is_empty() {
            let keys = redis_keys(&fleet.prefix).await;
            let bytes: u64 = keys.iter().map(|(_, b)| b).sum();
            eprintln!(
                "retention: {} keys, {} bytes ({} per run) right after the batch",
                keys.len(),
                bytes,
                bytes / 1000
            );
        }
        // And nothing once the retention has passed since the last run ended.
        let slack = Duration::from_secs(10);
        let left = wait_until_gone(&fleet, &runs, retention + slack).await;
        assert!(
            left.is_empty(),
            "{} left {:?} after the retention: {:?}",
            left.len(),
            ended.elapsed(),
            &left[..left.len().min(10)]
        );
    }
);

/// The API over the fleet's store and queue, serving `spec`, its runs
/// kept `retention` once ended (`None`: until deleted).
async fn api_on(fleet: &Fleet, spec: &AgentSpec, retention: Option<Duration>) -> axum::Router {
    let intake = fleet
        .intake()
        .unwrap()
        .with_retention(RetentionPolicy::new(retention, BTreeMap::new()));
    intake.register(spec).await.unwrap();
    router(ApiState {
        runs: Runs {
            life: Lifecycle::new(intake),
            graphs: Graphs::new([spec.name.clone()]),
            started_at: Utc::now(),
            tenant_runs_in_flight: None,
        },
        metrics: None,
        keys: ApiKeys::open(),
        max_body_bytes: deepfleet_api::BODY_LIMIT,
        allowed_hosts: Default::default(),
    })
}

/// The status and JSON body of a request, and its `Content-Location`.
async fn send_located(
    api: &axum::Router,
    method: &str,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value, Option<String>) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .unwrap();
    let response = api.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let location = response
        .headers()
        .get("content-location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let json = serde_json::from_str(text.trim()).unwrap_or(Value::Null);
    (status, json, location)
}

async fn send(
    api: &axum::Router,
    method: &str,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let (status, json, _) = send_located(api, method, uri, body).await;
    (status, json)
}

fn input(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": text}]})
}

/// The runs of `thread_id` the store still has, with its subagents'.
async fn runs_of(fleet: &Fleet, thread_id: &str, run_id: &str) -> Vec<RunRecord> {
    let run = fleet.store.find_run(run_id).await.unwrap().unwrap();
    assert_eq!(run.thread_id, thread_id);
    assert_eq!(run.status, RunStatus::Success);
    vec![run]
}

/// Waits until the run's last event is in its stream, as a follower
/// would, so nothing the worker appends comes after the deletion.
async fn wait_for_last_event(fleet: &Fleet, run_id: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let events = fleet.store.run_events(run_id, None, 1000).await.unwrap();
        if events
            .iter()
            .any(|(_, e)| e.run_id == run_id && e.status.is_terminal())
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("run {run_id} never announced its end");
}

scenario!(deleted_threads_and_stateless_runs_leave_no_key, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let script = ScriptBuilder::new()
        .delegating("^Delegate$", &[&write_task("gamma", "/g.txt")])
        .writing_subagents()
        .calls_then_answer(
            When::input("^Write two files$"),
            [
                Call::write_file("/a.txt", "alpha"),
                Call::write_file("/b.txt", "beta"),
            ],
            "written",
        )
        .build();
    let spec = spec("lifecycle", &replay_model(dir.path(), &script), "");
    let api = api_on(&fleet, &spec, None).await;

    // A thread whose run delegated to a subagent, on a thread of its own.
    let (status, thread) = send(&api, "POST", "/threads", Some(json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{thread}");
    let thread_id = thread["thread_id"].as_str().unwrap().to_owned();
    let (status, values) = send(
        &api,
        "POST",
        &format!("/threads/{thread_id}/runs/wait"),
        Some(json!({"assistant_id": spec.name, "input": input("Delegate")})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{values}");
    let (_, listed) = send(&api, "GET", &format!("/threads/{thread_id}/runs"), None).await;
    let run_id = listed[0]["run_id"].as_str().unwrap().to_owned();
    wait_for_last_event(&fleet, &run_id).await;
    let runs = runs_of(&fleet, &thread_id, &run_id).await;
    let before = left(&fleet, &runs).await;
    assert!(!before.is_empty());
    if !fleet.prefix.is_empty() {
        assert!(
            before.iter().any(|k| k.contains(":children")),
            "the run had a subagent thread: {before:?}"
        );
    }
    let (status, _) = send(&api, "DELETE", &format!("/threads/{thread_id}"), None).await;
    assert_eq!(status, StatusCode::OK);
    let left_by_delete = left(&fleet, &runs).await;
    assert!(
        left_by_delete.is_empty(),
        "left by the delete: {left_by_delete:?}"
    );
    let (status, _) = send(&api, "GET", &format!("/threads/{thread_id}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A stateless run: its temporary thread goes once `/wait` answered.
    let (status, values, location) = send_located(
        &api,
        "POST",
        "/runs/wait",
        Some(json!({"assistant_id": spec.name, "input": input("Write two files")})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{values}");
    let location = location.unwrap();
    let (thread_id, run_id) = location
        .strip_prefix("/threads/")
        .and_then(|rest| rest.split_once("/runs/"))
        .unwrap();
    let stateless = RunRecord::new(run_id, thread_id, spec.name.as_str(), Utc::now());
    let left_by_stateless = wait_until_gone(
        &fleet,
        std::slice::from_ref(&stateless),
        Duration::from_secs(10),
    )
    .await;
    assert!(
        left_by_stateless.is_empty(),
        "left by the stateless run: {left_by_stateless:?}"
    );
    let (status, _) = send(&api, "GET", &format!("/threads/{thread_id}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A thread of a tenant keeping ended runs 2 s: it expires whole, its
    // API records with it.
    let api = api_on(&fleet, &spec, Some(Duration::from_secs(2))).await;
    let (_, thread) = send(&api, "POST", "/threads", Some(json!({}))).await;
    let thread_id = thread["thread_id"].as_str().unwrap().to_owned();
    let (status, _, location) = send_located(
        &api,
        "POST",
        &format!("/threads/{thread_id}/runs/wait"),
        Some(json!({"assistant_id": spec.name, "input": input("Write two files")})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let run_id = location.unwrap().rsplit('/').next().unwrap().to_owned();
    let kept = RunRecord::new(run_id, thread_id.as_str(), spec.name.as_str(), Utc::now());
    assert!(!left(&fleet, std::slice::from_ref(&kept)).await.is_empty());
    tokio::time::sleep(Duration::from_secs(3)).await;
    // A listing meets the expired thread and drops it from the tenant's
    // thread index, the one key that outlives its records until then.
    let (_, found) = send(&api, "POST", "/threads/search", Some(json!({}))).await;
    assert_eq!(found, json!([]));
    let left_by_expiry =
        wait_until_gone(&fleet, std::slice::from_ref(&kept), Duration::from_secs(10)).await;
    assert!(
        left_by_expiry.is_empty(),
        "left by the expiry: {left_by_expiry:?}"
    );
    let (status, _) = send(&api, "GET", &format!("/threads/{thread_id}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // An API batch under the same retention: its runs, threads, header,
    // members and their index all expire.
    let body = json!({"assistant_id": spec.name, "input": input("Write two files")});
    let (status, created) = send(
        &api,
        "POST",
        "/runs/batch",
        Some(json!([body.clone(), body.clone(), body])),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let batch_id = created[0]["metadata"]["batch_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let runs: Vec<RunRecord> = created
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            RunRecord::new(
                run["run_id"].as_str().unwrap(),
                run["thread_id"].as_str().unwrap(),
                spec.name.as_str(),
                Utc::now(),
            )
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, counts) = send(&api, "GET", &format!("/batches/{batch_id}"), None).await;
        if counts["counts"]["success"] == 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the batch did not finish: {counts}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let left_by_batch = wait_until_gone(&fleet, &runs, Duration::from_secs(15)).await;
    assert!(
        left_by_batch.is_empty(),
        "left by the API batch: {left_by_batch:?}"
    );
    let (status, _) = send(&api, "GET", &format!("/batches/{batch_id}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
});
