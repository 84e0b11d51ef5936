//! Router tests of `POST /threads/prune`.

use axum::http::StatusCode;
use deepfleet_proto::RunStatus;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::MAX_PRUNE;
use crate::test_support::{KEY_A, KEY_B, TestApi, api, finish, run_body, two_tenants};

/// A thread with a run of two committed steps: two checkpoints.
async fn two_checkpoints(api: &TestApi) -> String {
    let thread_id = api.thread().await;
    let run = api.run_on(&thread_id, run_body("hi")).await;
    let run_id = run["run_id"].as_str().unwrap();
    for _ in 0..2 {
        finish(api.store.as_ref(), &thread_id, run_id, RunStatus::Success).await;
    }
    thread_id
}

async fn history(api: &TestApi, thread_id: &str) -> Value {
    api.send("GET", &format!("/threads/{thread_id}/history"), None)
        .await
        .json()
}

#[tokio::test]
async fn keep_latest_leaves_the_current_state_and_drops_older_checkpoints() {
    let api = api().await;
    let thread_id = two_checkpoints(&api).await;
    let state_uri = format!("/threads/{thread_id}/state");
    let state = api.send("GET", &state_uri, None).await.json();
    assert_eq!(
        history(&api, &thread_id).await.as_array().map(Vec::len),
        Some(2)
    );
    let body = json!({"thread_ids": [thread_id, "nope"], "strategy": "keep_latest"});
    let pruned = api.send("POST", "/threads/prune", Some(body.clone())).await;
    assert_eq!(pruned.status, StatusCode::OK, "{}", pruned.text);
    assert_eq!(pruned.json(), json!({"pruned_count": 1}));
    let kept = history(&api, &thread_id).await;
    assert_eq!(kept.as_array().map(Vec::len), Some(1));
    assert_eq!(kept[0]["values"], state["values"]);
    assert_eq!(api.send("GET", &state_uri, None).await.json(), state);
    // Nothing older is left to drop.
    let again = api.send("POST", "/threads/prune", Some(body)).await;
    assert_eq!(again.json(), json!({"pruned_count": 0}));
}

#[tokio::test]
async fn delete_removes_each_thread_and_is_the_default() {
    let api = api().await;
    let (first, second) = (api.thread().await, two_checkpoints(&api).await);
    let body = json!({"thread_ids": [first, second, first]});
    let pruned = api.send("POST", "/threads/prune", Some(body)).await;
    assert_eq!(pruned.json(), json!({"pruned_count": 2}));
    for id in [first, second] {
        let answer = api.send("GET", &format!("/threads/{id}"), None).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND);
    }
}

#[tokio::test]
async fn bad_bodies_are_refused() {
    let api = api().await;
    let too_many: Vec<String> = (0..=MAX_PRUNE).map(|i| i.to_string()).collect();
    for body in [
        json!({"thread_ids": too_many}),
        json!({"thread_ids": [], "strategy": "shred"}),
        json!({"strategy": "delete"}),
    ] {
        let answer = api.send("POST", "/threads/prune", Some(body)).await;
        assert_eq!(
            answer.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            answer.text
        );
    }
}

#[tokio::test]
async fn another_tenants_threads_are_left_alone() {
    let api = two_tenants().await;
    api.thread_as(KEY_A, "t1").await;
    for strategy in ["keep_latest", "delete"] {
        let body = json!({"thread_ids": ["t1"], "strategy": strategy});
        let answer = api
            .send_as(Some(KEY_B), "POST", "/threads/prune", Some(body))
            .await;
        assert_eq!(answer.json(), json!({"pruned_count": 0}), "{strategy}");
    }
    let thread = api.send_as(Some(KEY_A), "GET", "/threads/t1", None).await;
    assert_eq!(thread.status, StatusCode::OK);
}
