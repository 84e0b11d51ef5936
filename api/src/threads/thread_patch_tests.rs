//! Router tests of `PATCH /threads/{thread_id}`.

use axum::http::StatusCode;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::test_support::{KEY_A, KEY_B, api, two_tenants};

#[tokio::test]
async fn patching_merges_metadata_and_moves_updated_at() {
    let api = api().await;
    let body = json!({"thread_id": "t1", "metadata": {"team": "red", "tier": 1}});
    let created = api.send("POST", "/threads", Some(body)).await.json();
    let patched = api
        .send(
            "PATCH",
            "/threads/t1",
            Some(json!({"metadata": {"tier": 2, "owner": "u1"}})),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.text);
    let thread = patched.json();
    assert_eq!(
        thread["metadata"],
        json!({"team": "red", "tier": 2, "owner": "u1"})
    );
    assert_eq!(thread["created_at"], created["created_at"]);
    assert!(thread["updated_at"].as_str() >= created["updated_at"].as_str());
    assert_eq!(api.send("GET", "/threads/t1", None).await.json(), thread);
    // No metadata changes nothing but the time.
    let empty = api.send("PATCH", "/threads/t1", Some(json!({}))).await;
    assert_eq!(empty.json()["metadata"], thread["metadata"]);
    let bad = api
        .send("PATCH", "/threads/t1", Some(json!({"metadata": [1]})))
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn patching_an_unknown_or_another_tenants_thread_is_404() {
    let api = two_tenants().await;
    let body = json!({"thread_id": "t1", "metadata": {"team": "red"}});
    let created = api
        .send_as(Some(KEY_A), "POST", "/threads", Some(body))
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    let patch = Some(json!({"metadata": {"team": "blue"}}));
    for (key, uri) in [(KEY_B, "/threads/t1"), (KEY_A, "/threads/nope")] {
        let answer = api.send_as(Some(key), "PATCH", uri, patch.clone()).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{key} {uri}");
    }
    let thread = api.send_as(Some(KEY_A), "GET", "/threads/t1", None).await;
    assert_eq!(thread.json()["metadata"], json!({"team": "red"}));
}
