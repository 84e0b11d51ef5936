//! `PATCH /threads/{id}/state` through the router, on the embedded store.

use axum::http::StatusCode;
use deepfleet_proto::RunStatus;
use serde_json::{Value, json};

use crate::test_support::{api, finish, run_body};

fn ids(history: &Value) -> Vec<String> {
    history
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s["checkpoint"]["checkpoint_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn notes_merge_into_the_current_checkpoint_and_stay_in_its_history() {
    let api = api().await;
    let (thread_id, _) = api.two_runs().await;
    let path = format!("/threads/{thread_id}/state");
    let patch = |body: Value| api.send("PATCH", &path, Some(body));
    let first = patch(json!({"metadata": {"user": "u", "k": 1}})).await;
    assert_eq!(first.status, StatusCode::NO_CONTENT, "{}", first.text);
    assert_eq!(
        patch(json!({"metadata": {"k": 2}})).await.status,
        StatusCode::NO_CONTENT
    );
    let state = api.send("GET", &path, None).await.json();
    assert_eq!(state["metadata"]["user"], "u");
    assert_eq!(state["metadata"]["k"], 2);
    assert_eq!(state["metadata"]["source"], "loop");

    let history = format!("/threads/{thread_id}/history");
    let found = api.send("POST", &history, Some(json!({}))).await.json();
    assert_eq!(found[0]["metadata"]["k"], 2, "{found}");
    assert!(found[1]["metadata"].get("k").is_none(), "{found}");
    let filtered = api
        .send(
            "POST",
            &history,
            Some(json!({"metadata": {"user": "u", "source": "loop"}})),
        )
        .await;
    assert_eq!(ids(&filtered.json()), ["2"]);
    let other = api
        .send("POST", &history, Some(json!({"metadata": {"user": "v"}})))
        .await;
    assert!(ids(&other.json()).is_empty());

    // The next step's checkpoint starts without notes; the history keeps
    // the old ones.
    let run = api.run_on(&thread_id, run_body("third")).await;
    let run_id = run["run_id"].as_str().unwrap();
    finish(api.store.as_ref(), &thread_id, run_id, RunStatus::Success).await;
    let state = api.send("GET", &path, None).await.json();
    assert!(state["metadata"].get("user").is_none(), "{state}");
    let at = api
        .send("GET", &format!("/threads/{thread_id}/state/2"), None)
        .await
        .json();
    assert_eq!(at["metadata"]["user"], "u");
}

#[tokio::test]
async fn notes_that_cannot_be_kept_are_refused() {
    let api = api().await;
    let (thread_id, _) = api.two_runs().await;
    let path = format!("/threads/{thread_id}/state");
    for (body, status) in [
        (
            json!({"metadata": {"step": 9}}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            json!({"metadata": {"source": "me"}}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (json!({"metadata": 3}), StatusCode::UNPROCESSABLE_ENTITY),
        (json!({"values": {}}), StatusCode::UNPROCESSABLE_ENTITY),
        (
            json!({"metadata": {"big": "x".repeat(super::MAX_NOTE_BYTES)}}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
    ] {
        let answer = api.send("PATCH", &path, Some(body.clone())).await;
        assert_eq!(answer.status, status, "{body}: {}", answer.text);
    }
    let fresh = api.thread().await;
    let empty = api
        .send(
            "PATCH",
            &format!("/threads/{fresh}/state"),
            Some(json!({"metadata": {"a": 1}})),
        )
        .await;
    assert_eq!(empty.status, StatusCode::CONFLICT, "{}", empty.text);
    let unknown = api
        .send(
            "PATCH",
            "/threads/nope/state",
            Some(json!({"metadata": {}})),
        )
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
}
