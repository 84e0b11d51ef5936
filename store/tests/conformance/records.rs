//! [`deepfleet_store::Records`] scenarios.

use std::sync::Arc;

use deepfleet_store::Records;
use pretty_assertions::assert_eq;

pub async fn records_by_kind(store: Arc<dyn Records>) {
    let a = serde_json::json!({"thread_id": "a", "metadata": {"k": 1}});
    let b = serde_json::json!({"thread_id": "b"});
    assert!(store.insert_record("threads", "a", &a).await.unwrap());
    assert!(!store.insert_record("threads", "a", &b).await.unwrap());
    assert_eq!(
        store.get_record("threads", "a").await.unwrap(),
        Some(a.clone())
    );
    store.put_record("threads", "b", &b).await.unwrap();
    store.put_record("assistants", "a", &b).await.unwrap();
    let mut all = store.list_records("threads").await.unwrap();
    all.sort_by_key(|v| v["thread_id"].as_str().map(str::to_owned));
    assert_eq!(all, vec![a, b.clone()]);
    assert!(store.delete_record("threads", "a").await.unwrap());
    assert!(!store.delete_record("threads", "a").await.unwrap());
    assert_eq!(store.get_record("threads", "a").await.unwrap(), None);
    assert_eq!(store.list_records("threads").await.unwrap(), vec![b]);
    assert_eq!(
        store.list_records("nothing").await.unwrap(),
        Vec::<serde_json::Value>::new()
    );
}

conformance!(records_by_kind);
