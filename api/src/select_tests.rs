//! `select` on every read that takes it, through the router.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::test_support::api;

fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

#[tokio::test]
async fn searches_and_lists_answer_with_the_fields_selected() {
    let api = api().await;
    let (thread_id, _) = api.two_runs().await;

    let threads = api
        .send(
            "POST",
            "/threads/search",
            Some(json!({"select": ["thread_id", "status"]})),
        )
        .await
        .json();
    assert_eq!(keys(&threads[0]), ["status", "thread_id"]);
    let assistants = api
        .send(
            "POST",
            "/assistants/search",
            Some(json!({"select": ["assistant_id"]})),
        )
        .await
        .json();
    assert_eq!(keys(&assistants[0]), ["assistant_id"]);
    let runs = api
        .send(
            "GET",
            &format!("/threads/{thread_id}/runs?select=run_id,status"),
            None,
        )
        .await
        .json();
    assert_eq!(keys(&runs[0]), ["run_id", "status"]);
}

#[tokio::test]
async fn a_thread_states_fields_and_values_keys_are_selected() {
    let api = api().await;
    let (thread_id, [first, _]) = api.two_runs().await;
    let state = api
        .send(
            "GET",
            &format!("/threads/{thread_id}/state?select=values.messages&select=next"),
            None,
        )
        .await
        .json();
    assert_eq!(keys(&state), ["next", "values"]);
    assert_eq!(keys(&state["values"]), ["messages"]);
    let history = api
        .send(
            "POST",
            &format!("/threads/{thread_id}/history"),
            Some(json!({"select": ["checkpoint", "metadata"]})),
        )
        .await
        .json();
    assert_eq!(keys(&history[1]), ["checkpoint", "metadata"]);
    assert_eq!(history[1]["metadata"]["run_id"], json!(first));
    let got = api
        .send(
            "GET",
            &format!("/threads/{thread_id}/history?select=checkpoint"),
            None,
        )
        .await
        .json();
    assert_eq!(keys(&got[0]), ["checkpoint"]);
    let at = api
        .send(
            "POST",
            &format!("/threads/{thread_id}/state/checkpoint"),
            Some(json!({"checkpoint": {"checkpoint_id": "1"}, "select": ["values"]})),
        )
        .await
        .json();
    assert_eq!(keys(&at), ["values"]);
    let at = api
        .send(
            "GET",
            &format!("/threads/{thread_id}/state/1?select=metadata"),
            None,
        )
        .await
        .json();
    assert_eq!(keys(&at), ["metadata"]);

    for (method, path, body) in [
        (
            "POST",
            "/threads/search".to_owned(),
            Some(json!({"select": ["secret"]})),
        ),
        (
            "POST",
            "/assistants/search".to_owned(),
            Some(json!({"select": ["values.x"]})),
        ),
        (
            "GET",
            format!("/threads/{thread_id}/runs?select=nope"),
            None,
        ),
        (
            "GET",
            format!("/threads/{thread_id}/state?select=nope"),
            None,
        ),
    ] {
        let refused = api.send(method, &path, body).await;
        assert_eq!(
            refused.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{path}: {}",
            refused.text
        );
    }
}
