//! [`deepfleet_store::Records`] scenarios.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_store::Records;
use pretty_assertions::assert_eq;
use serde_json::json;

pub async fn records_by_kind(store: Arc<dyn Records>) {
    let a = json!({"thread_id": "a", "metadata": {"k": 1}});
    let b = json!({"thread_id": "b"});
    assert!(store.insert_record("threads", "a", &a).await.unwrap());
    assert!(!store.insert_record("threads", "a", &b).await.unwrap());
    assert_eq!(
        store.get_record("threads", "a").await.unwrap(),
        Some(a.clone())
    );
    store.put_record("threads", "b", &b).await.unwrap();
    store.put_record("assistants", "a", &b).await.unwrap();
    // Scoped kinds keep their records apart from each other's.
    store.put_record("runs/t1", "r1", &a).await.unwrap();
    store.put_record("runs/t2", "r1", &b).await.unwrap();
    assert_eq!(store.get_record("runs/t1", "r1").await.unwrap(), Some(a));
    assert_eq!(
        store.get_record("runs/t2", "r1").await.unwrap(),
        Some(b.clone())
    );
    assert!(store.delete_record("threads", "a").await.unwrap());
    assert!(!store.delete_record("threads", "a").await.unwrap());
    assert_eq!(store.get_record("threads", "a").await.unwrap(), None);
    assert_eq!(
        store.get_record("threads", "b").await.unwrap(),
        Some(b.clone())
    );
    assert_eq!(store.get_record("assistants", "a").await.unwrap(), Some(b));
    assert_eq!(store.get_record("nothing", "a").await.unwrap(), None);
}

/// How long the expiry scenarios wait past a deadline.
const PAST: Duration = Duration::from_millis(400);

pub async fn records_expire(store: Arc<dyn Records>) {
    let v = json!({"n": 1});
    assert!(
        !store
            .expire_record("runs/t1", "missing", Duration::from_secs(1))
            .await
            .unwrap()
    );
    for id in ["gone", "kept", "replaced", "now"] {
        store.put_record("runs/t1", id, &v).await.unwrap();
    }
    let short = Duration::from_millis(150);
    assert!(store.expire_record("runs/t1", "gone", short).await.unwrap());
    assert!(
        store
            .expire_record("runs/t1", "replaced", short)
            .await
            .unwrap()
    );
    assert!(
        store
            .expire_record("runs/t1", "kept", Duration::from_secs(60))
            .await
            .unwrap()
    );
    assert!(
        store
            .expire_record("runs/t1", "now", Duration::ZERO)
            .await
            .unwrap()
    );
    assert_eq!(store.get_record("runs/t1", "now").await.unwrap(), None);
    // Visible until its deadline; a put replaces the expiry.
    assert_eq!(
        store.get_record("runs/t1", "gone").await.unwrap(),
        Some(v.clone())
    );
    store.put_record("runs/t1", "replaced", &v).await.unwrap();
    tokio::time::sleep(short + PAST).await;
    assert_eq!(store.get_record("runs/t1", "gone").await.unwrap(), None);
    assert!(!store.delete_record("runs/t1", "gone").await.unwrap());
    assert_eq!(
        store.get_record("runs/t1", "kept").await.unwrap(),
        Some(v.clone())
    );
    assert_eq!(
        store.get_record("runs/t1", "replaced").await.unwrap(),
        Some(v.clone())
    );
    // An expired record is absent for an insert too.
    store.put_record("runs/t1", "again", &v).await.unwrap();
    store
        .expire_record("runs/t1", "again", short)
        .await
        .unwrap();
    tokio::time::sleep(short + PAST).await;
    assert!(store.insert_record("runs/t1", "again", &v).await.unwrap());
    assert_eq!(store.get_record("runs/t1", "again").await.unwrap(), Some(v));
}

pub async fn records_claim(store: Arc<dyn Records>) {
    let (a, b) = (json!({"by": "a"}), json!({"by": "b"}));
    let short = Duration::from_millis(150);
    assert!(store.claim_record("claims", "x", &a, short).await.unwrap());
    // Held: a second claimant loses, whatever its lease.
    let long = Duration::from_secs(60);
    assert!(!store.claim_record("claims", "x", &b, long).await.unwrap());
    assert_eq!(
        store.get_record("claims", "x").await.unwrap(),
        Some(a.clone())
    );
    // Never released: the lease lapses at its deadline by itself.
    tokio::time::sleep(short + PAST).await;
    assert_eq!(store.get_record("claims", "x").await.unwrap(), None);
    assert!(store.claim_record("claims", "x", &b, long).await.unwrap());
    // Released: the next claim wins at once.
    assert!(store.delete_record("claims", "x").await.unwrap());
    assert!(store.claim_record("claims", "x", &a, long).await.unwrap());
    assert!(store.delete_record("claims", "x").await.unwrap());
}

conformance!(records_by_kind, records_expire, records_claim);
