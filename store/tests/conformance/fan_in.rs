//! [`deepfleet_store::FanIn`] scenarios: a parked run collects each
//! child's result once.

use std::sync::Arc;

use deepfleet_store::{StepCommit, Store, StoreError, ThreadSeed};
use pretty_assertions::assert_eq;

use crate::support::{child, commit, parent_of, record};

pub async fn fan_in_counts_each_child_once(store: Arc<dyn Store>) {
    let run = record("t1", "r1");
    store
        .create_run(&run, &ThreadSeed::default())
        .await
        .unwrap();
    let p1 = parent_of("t1", "r1", "c1");
    assert!(matches!(
        store.record_child_result(&p1, &child("c1", "x")).await,
        Err(StoreError::NotFound(_))
    ));

    let park = StepCommit {
        fan_in_expected: Some(2),
        ..commit(&run, 0)
    };
    store.commit_step(&park).await.unwrap();
    assert_eq!(store.child_results("t1", "r1").await.unwrap(), Vec::new());
    assert_eq!(
        store
            .record_child_result(&p1, &child("c1", "first"))
            .await
            .unwrap(),
        1
    );
    // A redelivered completion is ignored, the first result kept.
    assert_eq!(
        store
            .record_child_result(&p1, &child("c1", "second"))
            .await
            .unwrap(),
        1
    );
    let p2 = parent_of("t1", "r1", "c2");
    assert_eq!(
        store
            .record_child_result(&p2, &child("c2", "other"))
            .await
            .unwrap(),
        0
    );
    let mut results = store.child_results("t1", "r1").await.unwrap();
    results.sort_by(|a, b| a.tool_call_id.cmp(&b.tool_call_id));
    assert_eq!(results, vec![child("c1", "first"), child("c2", "other")]);

    // Parking again starts a fresh fan-in.
    let repark = StepCommit {
        fan_in_expected: Some(1),
        ..commit(&run, 1)
    };
    store.commit_step(&repark).await.unwrap();
    assert_eq!(store.child_results("t1", "r1").await.unwrap(), Vec::new());
    let p3 = parent_of("t1", "r1", "c3");
    assert_eq!(
        store
            .record_child_result(&p3, &child("c3", "again"))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store.child_results("t1", "r1").await.unwrap(),
        vec![child("c3", "again")]
    );
}

conformance!(fan_in_counts_each_child_once);
