//! Router tests of `POST /runs/cancel`.

use axum::http::StatusCode;
use deepfleet_proto::RunStatus;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::MAX_RUN_IDS;
use crate::test_support::{KEY_A, KEY_B, TestApi, api, finish, run_body, two_tenants};

fn id(value: &Value) -> String {
    value["run_id"].as_str().unwrap().to_owned()
}

/// A thread with a started run and one queued behind it; their ids.
async fn active_and_queued(api: &TestApi) -> (String, String, String) {
    let thread_id = api.thread().await;
    let active = id(&api.run_on(&thread_id, run_body("one")).await);
    let queued = id(&api.run_on(&thread_id, run_body("two")).await);
    (thread_id, active, queued)
}

async fn status_of(api: &TestApi, thread_id: &str, run_id: &str) -> Value {
    let uri = format!("/threads/{thread_id}/runs/{run_id}");
    api.send("GET", &uri, None).await.json()["status"].clone()
}

async fn stop_requested(api: &TestApi, thread_id: &str, run_id: &str) -> bool {
    api.store.cancel_requested(thread_id, run_id).await.unwrap()
}

#[tokio::test]
async fn a_thread_cancels_all_its_pending_and_running_runs() {
    let api = api().await;
    let (thread_id, active, queued) = active_and_queued(&api).await;
    let (done_thread, done) = api.ended_run(RunStatus::Success).await;
    let body = json!({"thread_id": thread_id});
    let answer = api.send("POST", "/runs/cancel", Some(body)).await;
    assert_eq!(
        (answer.status, answer.text.as_str()),
        (StatusCode::NO_CONTENT, "")
    );
    assert!(stop_requested(&api, &thread_id, &active).await);
    assert_eq!(status_of(&api, &thread_id, &queued).await, "interrupted");
    // A run that ended is left as it was.
    let body = json!({"thread_id": done_thread, "run_ids": [done]});
    api.send("POST", "/runs/cancel", Some(body)).await;
    assert!(!stop_requested(&api, &done_thread, &done).await);
    assert_eq!(status_of(&api, &done_thread, &done).await, "success");
}

#[tokio::test]
async fn ids_alone_or_a_status_pick_the_runs() {
    let api = api().await;
    let (thread_id, active, queued) = active_and_queued(&api).await;
    finish(api.store.as_ref(), &thread_id, &active, RunStatus::Running).await;
    // `pending` leaves the running run alone.
    let body = json!({"status": "pending"});
    api.send("POST", "/runs/cancel", Some(body)).await;
    assert_eq!(status_of(&api, &thread_id, &queued).await, "interrupted");
    assert!(!stop_requested(&api, &thread_id, &active).await);
    // An id is found without its thread; rollback also drops the run.
    let body = json!({"run_ids": [active]});
    let answer = api
        .send("POST", "/runs/cancel?action=rollback", Some(body))
        .await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT, "{}", answer.text);
    assert!(stop_requested(&api, &thread_id, &active).await);
    let uri = format!("/threads/{thread_id}/runs/{active}");
    assert_eq!(
        api.send("GET", &uri, None).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn an_unknown_run_or_thread_is_404_and_cancels_nothing() {
    let api = api().await;
    let (thread_id, active, _) = active_and_queued(&api).await;
    for body in [
        json!({"run_ids": [active, "nope"]}),
        json!({"thread_id": thread_id, "run_ids": ["nope"]}),
        json!({"thread_id": "nope"}),
    ] {
        let answer = api.send("POST", "/runs/cancel", Some(body.clone())).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{body}");
    }
    assert!(!stop_requested(&api, &thread_id, &active).await);
}

#[tokio::test]
async fn bad_requests_are_422() {
    let api = api().await;
    let too_many: Vec<String> = (0..=MAX_RUN_IDS).map(|i| i.to_string()).collect();
    for (uri, body) in [
        ("/runs/cancel", json!({})),
        ("/runs/cancel", json!({"status": "done"})),
        ("/runs/cancel", json!({"run_ids": too_many})),
        ("/runs/cancel?action=shred", json!({"status": "all"})),
        ("/runs/cancel", json!({"status": "all", "action": "shred"})),
    ] {
        let answer = api.send("POST", uri, Some(body)).await;
        assert_eq!(
            answer.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{uri}: {}",
            answer.text
        );
    }
}

#[tokio::test]
async fn a_tenant_cannot_cancel_another_tenants_runs() {
    let api = two_tenants().await;
    api.thread_as(KEY_A, "t1").await;
    let run = api
        .send_as(
            Some(KEY_A),
            "POST",
            "/threads/t1/runs",
            Some(run_body("hi")),
        )
        .await;
    let run_id = id(&run.json());
    for (body, expected) in [
        (json!({"run_ids": [run_id]}), StatusCode::NOT_FOUND),
        (json!({"thread_id": "t1"}), StatusCode::NOT_FOUND),
        (json!({"status": "all"}), StatusCode::NO_CONTENT),
    ] {
        let answer = api
            .send_as(Some(KEY_B), "POST", "/runs/cancel", Some(body.clone()))
            .await;
        assert_eq!(answer.status, expected, "{body}");
    }
    assert!(!stop_requested(&api, "t1", &run_id).await);
}
