//! [`deepfleet_store::RecordIndex`] scenarios.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_store::{IndexEntry, Order, RecordIndex};
use pretty_assertions::assert_eq;

fn ids(entries: &[IndexEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.id.as_str()).collect()
}

/// Microseconds since the epoch, as the scheduler scores by time.
const T0: i64 = 1_767_225_600_000_000;

pub async fn indexes_page_in_score_order(store: Arc<dyn RecordIndex>) {
    let index = "threads/acme";
    assert_eq!(store.index_count(index).await.unwrap(), 0);
    assert!(
        store
            .index_page(index, Order::Descending, 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
    for (id, score) in [("c", T0 + 3), ("a", T0 + 1), ("b2", T0 + 2), ("b1", T0 + 2)] {
        store.index_put(index, id, score).await.unwrap();
    }
    // Another index, even of the same scope, is apart.
    store.index_put("in_flight/acme", "x", 0).await.unwrap();
    assert_eq!(store.index_count(index).await.unwrap(), 4);
    let all = store
        .index_page(index, Order::Ascending, 0, 10)
        .await
        .unwrap();
    assert_eq!(ids(&all), ["a", "b1", "b2", "c"]);
    assert_eq!(
        all[0],
        IndexEntry {
            id: "a".into(),
            score: T0 + 1
        }
    );
    let desc = store
        .index_page(index, Order::Descending, 1, 2)
        .await
        .unwrap();
    assert_eq!(ids(&desc), ["b2", "b1"]);
    assert!(
        store
            .index_page(index, Order::Ascending, 4, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .index_page(index, Order::Ascending, 0, 0)
            .await
            .unwrap()
            .is_empty()
    );
    // A put moves a member; a negative score sorts first.
    store.index_put(index, "c", -5).await.unwrap();
    let first = store
        .index_page(index, Order::Ascending, 0, 1)
        .await
        .unwrap();
    assert_eq!(
        first,
        [IndexEntry {
            id: "c".into(),
            score: -5
        }]
    );
    assert_eq!(store.index_count(index).await.unwrap(), 4);
    assert!(store.index_remove(index, "c").await.unwrap());
    assert!(!store.index_remove(index, "c").await.unwrap());
    // A conditional removal leaves a member re-scored meanwhile.
    assert!(!store.index_remove_at(index, "a", T0).await.unwrap());
    assert!(store.index_remove_at(index, "a", T0 + 1).await.unwrap());
    assert!(!store.index_remove_at(index, "nobody", T0).await.unwrap());
    let left = store
        .index_page(index, Order::Ascending, 0, 10)
        .await
        .unwrap();
    assert_eq!(ids(&left), ["b1", "b2"]);
    assert_eq!(store.index_count("in_flight/acme").await.unwrap(), 1);
}

pub async fn indexes_trim_and_expire(store: Arc<dyn RecordIndex>) {
    let index = "runs/t1";
    for i in 0..10 {
        store
            .index_put(index, &format!("r{i}"), T0 + i)
            .await
            .unwrap();
    }
    assert_eq!(store.index_trim(index, T0 + 4).await.unwrap(), 4);
    assert_eq!(store.index_trim(index, T0 + 4).await.unwrap(), 0);
    let left = store
        .index_page(index, Order::Ascending, 0, 2)
        .await
        .unwrap();
    assert_eq!(ids(&left), ["r4", "r5"]);
    assert_eq!(store.index_trim(index, i64::MAX).await.unwrap(), 6);
    assert_eq!(store.index_count(index).await.unwrap(), 0);
    assert!(
        !store
            .index_expire(index, Duration::from_secs(1))
            .await
            .unwrap(),
        "an emptied index is gone"
    );

    let short = Duration::from_millis(150);
    store.index_put("batch/b1", "r1", 0).await.unwrap();
    store.index_put("batch/b2", "r1", 0).await.unwrap();
    store.index_put("batch/b3", "r1", 0).await.unwrap();
    assert!(store.index_expire("batch/b1", short).await.unwrap());
    assert!(store.index_expire("batch/b2", short).await.unwrap());
    assert!(
        store
            .index_expire("batch/b3", Duration::ZERO)
            .await
            .unwrap()
    );
    assert_eq!(store.index_count("batch/b3").await.unwrap(), 0);
    // Adding a member clears the expiry: its record may outlive it.
    store.index_put("batch/b2", "r2", 1).await.unwrap();
    assert_eq!(store.index_count("batch/b1").await.unwrap(), 1);
    tokio::time::sleep(short + Duration::from_millis(400)).await;
    assert_eq!(store.index_count("batch/b1").await.unwrap(), 0);
    assert!(
        store
            .index_page("batch/b1", Order::Ascending, 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.index_count("batch/b2").await.unwrap(), 2);
    // An expired index starts afresh.
    store.index_put("batch/b1", "r9", 9).await.unwrap();
    let fresh = store
        .index_page("batch/b1", Order::Ascending, 0, 10)
        .await
        .unwrap();
    assert_eq!(ids(&fresh), ["r9"]);
}

/// The due index of crons: each due entry moves to its next time for
/// exactly one of the schedulers that read it.
pub async fn indexes_move_a_member_once(store: Arc<dyn RecordIndex>) {
    let index = "cron_due";
    assert_eq!(store.index_score(index, "c1").await.unwrap(), None);
    assert!(!store.index_move_at(index, "c1", T0, T0 + 1).await.unwrap());
    assert_eq!(
        store.index_count(index).await.unwrap(),
        0,
        "a move adds nobody"
    );
    store.index_put(index, "c1", T0).await.unwrap();
    store.index_put(index, "c2", T0 + 5).await.unwrap();
    assert_eq!(store.index_score(index, "c1").await.unwrap(), Some(T0));
    // Many callers that saw the same score: one moves it.
    let moves = (0..8).map(|_| {
        let store = Arc::clone(&store);
        tokio::spawn(async move { store.index_move_at(index, "c1", T0, T0 + 10).await })
    });
    let mut moved = 0;
    for handle in moves {
        if handle.await.unwrap().unwrap() {
            moved += 1;
        }
    }
    assert_eq!(moved, 1);
    assert_eq!(store.index_score(index, "c1").await.unwrap(), Some(T0 + 10));
    let order = store
        .index_page(index, Order::Ascending, 0, 10)
        .await
        .unwrap();
    assert_eq!(ids(&order), ["c2", "c1"]);
    // A stale score moves nothing.
    assert!(!store.index_move_at(index, "c1", T0, T0 + 20).await.unwrap());
    assert_eq!(store.index_score(index, "c1").await.unwrap(), Some(T0 + 10));
}

conformance!(
    indexes_page_in_score_order,
    indexes_trim_and_expire,
    indexes_move_a_member_once
);
