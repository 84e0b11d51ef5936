//! Router tests of `/store/items` and `/store/namespaces`.

use axum::http::StatusCode;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::test_support::api;

#[tokio::test]
async fn items_are_put_read_searched_and_deleted() {
    let api = api().await;
    for (ns, key, value) in [
        (json!(["agent", "u1"]), "prefs", json!({"theme": "dark"})),
        (json!(["agent", "u2"]), "prefs", json!({"theme": "light"})),
    ] {
        let put = api
            .send(
                "PUT",
                "/store/items",
                Some(json!({"namespace": ns, "key": key, "value": value})),
            )
            .await;
        assert_eq!(
            (put.status, put.text.as_str()),
            (StatusCode::NO_CONTENT, "")
        );
    }
    let got = api
        .send("GET", "/store/items?namespace=agent.u1&key=prefs", None)
        .await;
    let item = got.json();
    assert_eq!(
        item,
        json!({"namespace": ["agent", "u1"], "key": "prefs", "value": {"theme": "dark"},
            "created_at": item["created_at"], "updated_at": item["updated_at"]})
    );
    let found = api
        .send(
            "POST",
            "/store/items/search",
            Some(json!({"namespace_prefix": ["agent"], "filter": {"theme": "light"}})),
        )
        .await;
    assert_eq!(
        found.json()["items"][0]["namespace"],
        json!(["agent", "u2"])
    );
    assert_eq!(found.json()["items"].as_array().map(Vec::len), Some(1));
    let namespaces = api
        .send(
            "POST",
            "/store/namespaces",
            Some(json!({"prefix": ["agent"], "max_depth": 1})),
        )
        .await;
    assert_eq!(namespaces.json(), json!({"namespaces": [["agent"]]}));
    let all = api.send("POST", "/store/namespaces", Some(json!({}))).await;
    assert_eq!(
        all.json(),
        json!({"namespaces": [["agent", "u1"], ["agent", "u2"]]})
    );
    let deleted = api
        .send(
            "DELETE",
            "/store/items",
            Some(json!({"namespace": ["agent", "u1"], "key": "prefs"})),
        )
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let gone = api
        .send("GET", "/store/items?namespace=agent.u1&key=prefs", None)
        .await;
    assert_eq!((gone.status, gone.json()), (StatusCode::OK, json!(null)));
}

#[tokio::test]
async fn bad_addresses_and_bodies_are_refused() {
    let api = api().await;
    let no_namespace = api
        .send(
            "PUT",
            "/store/items",
            Some(json!({"namespace": [], "key": "k", "value": {}})),
        )
        .await;
    assert_eq!(no_namespace.status, StatusCode::UNPROCESSABLE_ENTITY);
    let not_object = api
        .send(
            "PUT",
            "/store/items",
            Some(json!({"namespace": ["a"], "key": "k", "value": 3})),
        )
        .await;
    assert_eq!(not_object.status, StatusCode::UNPROCESSABLE_ENTITY);
    let bad_get = api.send("GET", "/store/items?key=k", None).await;
    assert_eq!(bad_get.status, StatusCode::BAD_REQUEST);
    // A query string missing a field is refused as a body would be.
    let no_key = api.send("GET", "/store/items?namespace=a", None).await;
    assert_eq!(no_key.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(no_key.json()["code"], "invalid_request", "{}", no_key.text);
    let bad_delete = api
        .send("DELETE", "/store/items", Some(json!({"namespace": ["a"]})))
        .await;
    assert_eq!(bad_delete.status, StatusCode::UNPROCESSABLE_ENTITY);
    let semantic = api
        .send(
            "POST",
            "/store/items/search",
            Some(json!({"query": "dark themes"})),
        )
        .await;
    assert_eq!(
        (semantic.status, semantic.json()["detail"].clone()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!("semantic `query` search is not supported by this store")
        )
    );
    let bad_prefix = api
        .send(
            "POST",
            "/store/items/search",
            Some(json!({"namespace_prefix": [""]})),
        )
        .await;
    assert_eq!(bad_prefix.status, StatusCode::UNPROCESSABLE_ENTITY);
    let bad_namespaces = api
        .send("POST", "/store/namespaces", Some(json!({"limit": -1})))
        .await;
    assert_eq!(bad_namespaces.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn empty_namespace_labels_are_refused_with_422() {
    let api = api().await;
    for body in [json!({"prefix": [""]}), json!({"suffix": ["a", ""]})] {
        let answer = api.send("POST", "/store/namespaces", Some(body)).await;
        assert_eq!(
            answer.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            answer.text
        );
    }
    let missing = api.send("GET", "/store/items?namespace=", None).await;
    assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        missing.json()["code"],
        "invalid_request",
        "{}",
        missing.text
    );
}
