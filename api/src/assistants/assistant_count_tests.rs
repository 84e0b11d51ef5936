//! Router tests of `POST /assistants/count`.

use axum::http::StatusCode;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::test_support::{GRAPH, KEY_A, KEY_B, api, two_tenants};

#[tokio::test]
async fn counts_the_system_and_created_assistants_a_search_lists() {
    let api = api().await;
    for (id, team) in [("a1", "red"), ("a2", "blue"), ("a3", "red")] {
        let body = json!({"graph_id": GRAPH, "assistant_id": id, "metadata": {"team": team}});
        let created = api.send("POST", "/assistants", Some(body)).await;
        assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    }
    api.send("DELETE", "/assistants/a2", None).await;
    for (filter, expected) in [
        (json!({}), 3),
        (json!({"graph_id": GRAPH}), 3),
        (json!({"graph_id": "other"}), 0),
        (json!({"metadata": {"team": "red"}}), 2),
        (json!({"metadata": {"created_by": "system"}}), 1),
    ] {
        let answer = api
            .send("POST", "/assistants/count", Some(filter.clone()))
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
        assert_eq!(answer.json(), json!(expected), "{filter}");
    }
    let bad = api
        .send("POST", "/assistants/count", Some(json!({"metadata": 1})))
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn a_tenant_counts_only_its_own_assistants() {
    let api = two_tenants().await;
    let body = json!({"graph_id": GRAPH, "assistant_id": "a1"});
    let created = api
        .send_as(Some(KEY_A), "POST", "/assistants", Some(body))
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    for (key, expected) in [(KEY_A, 2), (KEY_B, 1)] {
        let answer = api
            .send_as(Some(key), "POST", "/assistants/count", Some(json!({})))
            .await;
        assert_eq!(answer.json(), json!(expected), "{key}");
    }
}
