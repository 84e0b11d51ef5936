//! Router tests of `POST /threads/count`.

use axum::http::StatusCode;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::test_support::{KEY_A, KEY_B, api, run_body, two_tenants};

#[tokio::test]
async fn counts_what_a_search_lists_over_all_pages() {
    let api = api().await;
    for (id, team) in [("t1", "red"), ("t2", "blue"), ("t3", "red")] {
        let body = json!({"thread_id": id, "metadata": {"team": team}});
        api.send("POST", "/threads", Some(body)).await;
    }
    api.run_on("t3", run_body("hi")).await;
    // A stateless run's temporary thread is not counted, as not listed.
    api.send("POST", "/runs", Some(run_body("hi"))).await;
    api.send("DELETE", "/threads/t2", None).await;
    for (filter, expected) in [
        (json!({}), 2),
        (json!({"metadata": {"team": "red"}}), 2),
        (json!({"metadata": {"team": "blue"}}), 0),
        (json!({"status": "busy"}), 1),
        (json!({"status": "idle", "metadata": {"team": "red"}}), 1),
    ] {
        let answer = api
            .send("POST", "/threads/count", Some(filter.clone()))
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
        assert_eq!(answer.json(), json!(expected), "{filter}");
    }
    // A values filter matches the thread's current values, key by key;
    // a thread with no state has none to match.
    let t3 = api.send("GET", "/threads/t3", None).await.json();
    let messages = t3["values"]["messages"].clone();
    assert!(messages.as_array().is_some_and(|m| !m.is_empty()), "{t3}");
    for (filter, expected) in [
        (json!({"values": {"messages": messages}}), 1),
        (json!({"values": {"messages": []}}), 0),
        (json!({"values": {"nope": 1}}), 0),
    ] {
        let count = api
            .send("POST", "/threads/count", Some(filter.clone()))
            .await;
        assert_eq!(count.json(), json!(expected), "{filter}");
        let listed = api
            .send("POST", "/threads/search", Some(filter.clone()))
            .await;
        assert_eq!(
            listed.json().as_array().map(Vec::len),
            Some(expected),
            "{filter}"
        );
    }
    let bad = api
        .send("POST", "/threads/count", Some(json!({"metadata": 1})))
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn a_tenant_counts_only_its_own_threads() {
    let api = two_tenants().await;
    for key in [KEY_A, KEY_A, KEY_B] {
        let created = api
            .send_as(Some(key), "POST", "/threads", Some(json!({})))
            .await;
        assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    }
    for (key, expected) in [(KEY_A, 2), (KEY_B, 1)] {
        let answer = api
            .send_as(Some(key), "POST", "/threads/count", Some(json!({})))
            .await;
        assert_eq!(answer.json(), json!(expected), "{key}");
    }
}
