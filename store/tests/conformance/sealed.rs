//! Encryption at rest on Redis: what the keyspace holds, migration from
//! clear values, key rotation with `reseal`, and values whose key is gone.

use std::sync::Arc;

use deepfleet_store::at_rest::{self, OpenError};
use deepfleet_store::prelude::*;
use deepfleet_store::redis::RedisStore;
use deepfleet_store::redis::reseal::ResealReport;
use deepfleet_store::{CommitOutcome, Keyring, StepCommit, StoreError, ThreadSeed};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::harness::{
    REDIS_URL, START_REDIS, assert_no_clear_content, connect, dump, with_cleanup,
};
use crate::support::{child, commit, file, msg, object, parent_of, pending, record};

fn ring(entries: &[(&str, &str)], current: &str) -> Arc<Keyring> {
    let text: Vec<String> = entries.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    Arc::new(Keyring::parse(&text.join(","), Some(current)).unwrap())
}

/// A thread with messages, files, state, pending calls, a child result,
/// a spec, a record, a store item and a run event.
async fn fill(store: &RedisStore, thread: &str) {
    let mut run = record(thread, "r1");
    let seed = ThreadSeed {
        messages: vec![msg("seeded marker")],
        state: object(json!({"ticket": "state marker"})),
        ..ThreadSeed::default()
    };
    store.create_run(&run, &seed).await.unwrap();
    run.steps = 1;
    let step = StepCommit {
        messages: vec![msg("message marker")],
        files: [("/notes.md".to_owned(), Some(file("file marker")))].into(),
        state: Some(object(json!({"ticket": "state marker 2"}))),
        pending: Some(pending("call-1")),
        fan_in_expected: Some(1),
        ..commit(&run, 0)
    };
    assert_eq!(
        store.commit_step(&step).await.unwrap(),
        CommitOutcome::Committed
    );
    store
        .record_child_result(
            &parent_of(thread, "r1", "call-1"),
            &child("call-1", "child marker"),
        )
        .await
        .unwrap();
    let ns = ["memories".to_owned(), thread.to_owned()];
    store
        .put_item(&ns, "prefs", &object(json!({"text": "memory marker"})))
        .await
        .unwrap();
    store
        .put_record("threads", thread, &json!({"metadata": "record marker"}))
        .await
        .unwrap();
}

/// Reads back what [`fill`] wrote.
async fn read_back(store: &RedisStore, thread: &str) -> Result<(), StoreError> {
    let loaded = store.load_thread(thread).await?;
    assert_eq!(loaded.messages.len(), 2);
    assert_eq!(loaded.state["ticket"], "state marker 2");
    assert!(loaded.files.contains_key("/notes.md"));
    store.get_run(thread, "r1").await?.unwrap();
    assert_eq!(store.child_results(thread, "r1").await?.len(), 1);
    let ns = ["memories".to_owned(), thread.to_owned()];
    let item = store.get_item(&ns, "prefs").await?.unwrap();
    assert_eq!(item.value["text"], "memory marker");
    store.get_record("threads", thread).await?.unwrap();
    Ok(())
}

/// A store under `prefix`'s keys, sealing with `keyring`.
async fn sealed_at(prefix: &str, keyring: Arc<Keyring>) -> RedisStore {
    RedisStore::connect(REDIS_URL, prefix)
        .await
        .unwrap()
        .with_keyring(keyring)
}

#[tokio::test]
async fn redis_sealed_keyspace_holds_no_marker() {
    let Some((store, prefix)) = connect(REDIS_URL, START_REDIS).await else {
        return;
    };
    with_cleanup(store, |_| async move {
        let sealed = sealed_at(&prefix, Arc::new(Keyring::generate("k1").unwrap())).await;
        fill(&sealed, "t1").await;
        read_back(&sealed, "t1").await.unwrap();
        let values = dump(&prefix).await;
        assert!(values.len() > 8, "{values:?}");
        for (key, value) in &values {
            assert!(!value.contains("marker"), "plaintext at {key}: {value}");
        }
        assert_no_clear_content(&prefix).await;
    })
    .await;
}

#[tokio::test]
async fn redis_rotation_reseals_clear_and_old_values() {
    let Some((plain, prefix)) = connect(REDIS_URL, START_REDIS).await else {
        return;
    };
    with_cleanup(plain, |plain| async move {
        let (a, b) = (
            deepfleet_store::sealed::ContextKey::generate_base64(),
            deepfleet_store::sealed::ContextKey::generate_base64(),
        );
        // Written in clear before encryption was on, then under k1.
        fill(&plain, "clear").await;
        let first = sealed_at(&prefix, ring(&[("k1", &a)], "k1")).await;
        read_back(&first, "clear").await.unwrap();
        fill(&first, "old").await;

        let rotated = sealed_at(&prefix, ring(&[("k1", &a), ("k2", &b)], "k2")).await;
        assert!(matches!(plain.reseal().await, Err(StoreError::Invalid(_))));
        let report = rotated.reseal().await.unwrap();
        assert!(report.resealed >= 16, "{report:?}");
        assert_eq!((report.unreadable, report.changed), (0, 0), "{report:?}");
        for (key, value) in dump(&prefix).await {
            if at_rest::is_sealed(&value) {
                assert_eq!(at_rest::key_id(&value), Some("k2"), "{key}");
            }
        }
        assert_no_clear_content(&prefix).await;

        // Idempotent: a second pass finds everything current.
        let again = rotated.reseal().await.unwrap();
        assert_eq!(
            again,
            ResealReport {
                resealed: 0,
                current: report.resealed + report.current,
                ..again.clone()
            }
        );
        // k1 can now be retired.
        let only_new = sealed_at(&prefix, ring(&[("k2", &b)], "k2")).await;
        read_back(&only_new, "clear").await.unwrap();
        read_back(&only_new, "old").await.unwrap();
        // Without the key a value names, reads fail saying which key.
        fill(&only_new, "new").await;
        let only_old = sealed_at(&prefix, ring(&[("k1", &a)], "k1")).await;
        match only_old.load_thread("new").await {
            Err(StoreError::Sealed { reason, .. }) => {
                assert_eq!(reason, OpenError::UnknownKey("k2".into()));
            }
            other => panic!("{other:?}"),
        }
        match plain.load_thread("new").await {
            Err(StoreError::Sealed { reason, .. }) => {
                assert_eq!(reason, OpenError::NoKeyring("k2".into()));
            }
            other => panic!("{other:?}"),
        }
    })
    .await;
}
