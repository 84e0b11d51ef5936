//! [`deepfleet_store::Items`] scenarios: the long-term store.

use std::sync::Arc;

use deepfleet_proto::{ItemSearch, NamespaceQuery};
use deepfleet_store::{Items, StoreError};
use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};

fn ns(labels: &[&str]) -> Vec<String> {
    labels.iter().map(|l| (*l).to_owned()).collect()
}

fn obj(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

pub async fn items_put_get_delete(store: Arc<dyn Items>) {
    let at = ns(&["agent", "u1"]);
    assert_eq!(store.get_item(&at, "prefs").await.unwrap(), None);
    store
        .put_item(
            &at,
            "prefs",
            &obj(json!({"theme": "dark", "n": 12345678901234567_u64})),
        )
        .await
        .unwrap();
    let first = store.get_item(&at, "prefs").await.unwrap().unwrap();
    assert_eq!(first.namespace, at);
    assert_eq!(first.key, "prefs");
    assert_eq!(
        first.value,
        obj(json!({"theme": "dark", "n": 12345678901234567_u64}))
    );
    assert_eq!(first.created_at, first.updated_at);

    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    store
        .put_item(&at, "prefs", &obj(json!({"theme": "light"})))
        .await
        .unwrap();
    let second = store.get_item(&at, "prefs").await.unwrap().unwrap();
    assert_eq!(second.value, obj(json!({"theme": "light"})));
    assert_eq!(second.created_at, first.created_at, "created_at is kept");
    assert!(second.updated_at > first.updated_at);

    // Another user's namespace is a different item.
    assert_eq!(
        store
            .get_item(&ns(&["agent", "u2"]), "prefs")
            .await
            .unwrap(),
        None
    );

    store.delete_item(&at, "prefs").await.unwrap();
    store.delete_item(&at, "prefs").await.unwrap();
    assert_eq!(store.get_item(&at, "prefs").await.unwrap(), None);
    let listed = store
        .list_namespaces(&NamespaceQuery::default())
        .await
        .unwrap();
    assert_eq!(
        listed,
        Vec::<Vec<String>>::new(),
        "an empty namespace is not listed"
    );
}

pub async fn items_search_by_prefix_filter_and_page(store: Arc<dyn Items>) {
    for (labels, key, kind) in [
        (&["agent", "u1"][..], "b", "pref"),
        (&["agent", "u1"][..], "a", "note"),
        (&["agent", "u1", "deep"][..], "c", "pref"),
        (&["agent", "u10"][..], "d", "pref"),
        (&["agent-x", "u1"][..], "e", "pref"),
        (&["other"][..], "f", "pref"),
    ] {
        store
            .put_item(&ns(labels), key, &obj(json!({"kind": kind})))
            .await
            .unwrap();
    }
    let keys = |items: Vec<deepfleet_proto::Item>| -> Vec<String> {
        items.into_iter().map(|i| i.key).collect()
    };
    let search = |prefix: &[&str]| ItemSearch {
        namespace_prefix: ns(prefix),
        ..ItemSearch::default()
    };
    // Label-wise prefixes: `u1` does not match `u10`, `agent` not `agent-x`.
    assert_eq!(
        keys(store.search_items(&search(&["agent", "u1"])).await.unwrap()),
        ["a", "b", "c"]
    );
    assert_eq!(
        keys(store.search_items(&search(&["agent"])).await.unwrap()),
        ["a", "b", "c", "d"]
    );
    assert_eq!(
        keys(store.search_items(&search(&[])).await.unwrap()),
        ["a", "b", "c", "d", "e", "f"]
    );
    let filtered = ItemSearch {
        filter: obj(json!({"kind": "pref"})),
        offset: 1,
        limit: 2,
        ..search(&["agent"])
    };
    assert_eq!(
        keys(store.search_items(&filtered).await.unwrap()),
        ["c", "d"]
    );
    assert_eq!(
        store.search_items(&search(&["nobody"])).await.unwrap(),
        Vec::new()
    );

    let all = store
        .list_namespaces(&NamespaceQuery::default())
        .await
        .unwrap();
    assert_eq!(
        all,
        vec![
            ns(&["agent", "u1"]),
            ns(&["agent", "u1", "deep"]),
            ns(&["agent", "u10"]),
            ns(&["agent-x", "u1"]),
            ns(&["other"]),
        ]
    );
    let cut = NamespaceQuery {
        prefix: ns(&["agent"]),
        max_depth: Some(2),
        limit: 1,
        offset: 1,
        ..NamespaceQuery::default()
    };
    assert_eq!(
        store.list_namespaces(&cut).await.unwrap(),
        vec![ns(&["agent", "u10"])]
    );
    let suffix = NamespaceQuery {
        suffix: ns(&["u1"]),
        ..NamespaceQuery::default()
    };
    assert_eq!(
        store.list_namespaces(&suffix).await.unwrap(),
        vec![ns(&["agent", "u1"]), ns(&["agent-x", "u1"])]
    );
}

pub async fn items_bad_namespaces_are_refused(store: Arc<dyn Items>) {
    let value = obj(json!({}));
    for (labels, key) in [
        (&[][..], "k"),
        (&["a", ""][..], "k"),
        (&["a.b"][..], "k"),
        (&["a"][..], ""),
    ] {
        match store.put_item(&ns(labels), key, &value).await {
            Err(e @ StoreError::Invalid(_)) => assert!(!e.is_retryable()),
            other => panic!("{labels:?}/{key:?}: expected Invalid, got {other:?}"),
        }
    }
    let bad = ItemSearch {
        namespace_prefix: ns(&["a."]),
        ..ItemSearch::default()
    };
    let err = store.search_items(&bad).await.unwrap_err();
    assert!(err.to_string().contains("must not contain '.'"), "{err}");
    assert_eq!(
        store
            .list_namespaces(&NamespaceQuery::default())
            .await
            .unwrap(),
        Vec::<Vec<String>>::new(),
        "nothing was written"
    );
}

conformance!(
    items_put_get_delete,
    items_search_by_prefix_filter_and_page,
    items_bad_namespaces_are_refused,
);
