//! The search options the SDKs send, through the router.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::test_support::{GRAPH, api};

fn field(items: &Value, name: &str) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i[name].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn thread_searches_sort_and_pick_by_id() {
    let api = api().await;
    let mut ids = Vec::new();
    for id in ["t-b", "t-a", "t-c"] {
        let made = api
            .send("POST", "/threads", Some(json!({"thread_id": id})))
            .await;
        assert_eq!(made.status, StatusCode::OK, "{}", made.text);
        ids.push(id);
    }
    let search = |body: Value| api.send("POST", "/threads/search", Some(body));
    let by_id = search(json!({"sort_by": "thread_id", "sort_order": "asc"}))
        .await
        .json();
    assert_eq!(field(&by_id, "thread_id"), ["t-a", "t-b", "t-c"]);
    let newest = search(json!({"sort_order": "desc", "limit": 1, "offset": 1}))
        .await
        .json();
    assert_eq!(field(&newest, "thread_id"), ["t-a"]);
    let picked = search(json!({"ids": ["t-c", "t-b"]})).await.json();
    assert_eq!(field(&picked, "thread_id"), ["t-c", "t-b"]);
    // Each refusal names the field it refuses.
    for (bad, field) in [
        (json!({"sort_by": "values"}), "sort_by"),
        (json!({"sort_order": "sideways"}), "sort_order"),
        (json!({"limit": 1001}), "limit"),
        (json!({"extract": {"m": "values.messages"}}), "extract"),
    ] {
        let refused = search(bad.clone()).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        assert!(refused.text.contains(field), "{bad}: {}", refused.text);
    }
}

#[tokio::test]
async fn a_query_strings_limit_is_bounded_as_a_bodys() {
    let api = api().await;
    let thread = api.thread().await;
    let path = format!("/threads/{thread}/runs");
    let ok = api.send("GET", &format!("{path}?limit=1000"), None).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.text);
    for bad in ["limit=1001", "limit=ten"] {
        let refused = api.send("GET", &format!("{path}?{bad}"), None).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        assert!(refused.text.contains("limit"), "{bad}: {}", refused.text);
    }
}

#[tokio::test]
async fn assistant_searches_filter_by_name_and_sort() {
    let api = api().await;
    for name in ["zed", "amy"] {
        let made = api
            .send(
                "POST",
                "/assistants",
                Some(json!({"graph_id": GRAPH, "name": name})),
            )
            .await;
        assert_eq!(made.status, StatusCode::OK, "{}", made.text);
    }
    let search = |body: Value| api.send("POST", "/assistants/search", Some(body));
    let named = search(json!({"name": "amy"})).await.json();
    assert_eq!(field(&named, "name"), ["amy"]);
    let counted = api
        .send("POST", "/assistants/count", Some(json!({"name": "amy"})))
        .await;
    assert_eq!(counted.json(), json!(1));
    let sorted = search(json!({"sort_by": "name", "sort_order": "desc"}))
        .await
        .json();
    let names = field(&sorted, "name");
    assert_eq!(names.first().map(String::as_str), Some("zed"), "{names:?}");
    let created = field(&search(json!({"name": "zed"})).await.json(), "assistant_id");
    let refused = api
        .send(
            "DELETE",
            &format!("/assistants/{}?delete_threads=true", created[0]),
            None,
        )
        .await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        refused.text
    );
    let deleted = api
        .send(
            "DELETE",
            &format!("/assistants/{}?delete_threads=false", created[0]),
            None,
        )
        .await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text);
}
