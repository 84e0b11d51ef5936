//! Router tests of `POST /threads/{thread_id}/copy`.

use axum::http::StatusCode;
use deepfleet_proto::RunStatus;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::test_support::{KEY_A, KEY_B, TestApi, api, finish, run_body, two_tenants};

/// A state's messages without their ids (which name their thread).
fn contents(state: &Value) -> Vec<(Value, Value)> {
    state["values"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["type"].clone(), m["content"].clone()))
        .collect()
}

async fn get(api: &TestApi, uri: &str) -> Value {
    let answer = api.send("GET", uri, None).await;
    assert_eq!(answer.status, StatusCode::OK, "{uri}: {}", answer.text);
    answer.json()
}

#[tokio::test]
async fn a_copy_has_the_state_and_history_of_the_original_then() {
    let api = api().await;
    let body = json!({"thread_id": "t1", "metadata": {"team": "red"}});
    api.send("POST", "/threads", Some(body)).await;
    let run = api.run_on("t1", run_body("hi")).await;
    let run_id = run["run_id"].as_str().unwrap();
    finish(api.store.as_ref(), "t1", run_id, RunStatus::Success).await;

    let copied = api.send("POST", "/threads/t1/copy", None).await;
    assert_eq!(copied.status, StatusCode::OK, "{}", copied.text);
    let copy = copied.json();
    let copy_id = copy["thread_id"].as_str().unwrap().to_owned();
    assert_ne!(copy_id, "t1");
    assert_eq!(
        (&copy["metadata"], &copy["status"]),
        (&json!({"team": "red"}), &json!("idle"))
    );
    let original_state = get(&api, "/threads/t1/state").await;
    let copy_state = get(&api, &format!("/threads/{copy_id}/state")).await;
    assert_eq!(contents(&copy_state), contents(&original_state));
    assert_eq!(contents(&copy_state).len(), 2);
    assert_eq!(
        copy_state["checkpoint"]["checkpoint_id"],
        original_state["checkpoint"]["checkpoint_id"]
    );
    let history = get(&api, &format!("/threads/{copy_id}/history")).await;
    assert_eq!(history.as_array().map(Vec::len), Some(1));
    assert_eq!(history[0]["metadata"]["run_id"], run["run_id"]);

    // The copy lives on its own: deleting the original leaves it whole,
    // and it takes runs of its own.
    api.send("DELETE", "/threads/t1", None).await;
    let after = get(&api, &format!("/threads/{copy_id}/state")).await;
    assert_eq!(contents(&after), contents(&copy_state));
    api.run_on(&copy_id, run_body("again")).await;
}

#[tokio::test]
async fn copying_an_unknown_or_another_tenants_thread_is_404() {
    let api = two_tenants().await;
    api.thread_as(KEY_A, "t1").await;
    for (key, uri) in [(KEY_B, "/threads/t1/copy"), (KEY_A, "/threads/nope/copy")] {
        let answer = api.send_as(Some(key), "POST", uri, None).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{key} {uri}");
    }
    let count = api
        .send_as(Some(KEY_B), "POST", "/threads/count", Some(json!({})))
        .await;
    assert_eq!(count.json(), json!(0));
}
