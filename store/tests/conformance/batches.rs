//! [`deepfleet_store::Batches`] scenarios.

use std::sync::Arc;

use deepfleet_store::Batches;
use pretty_assertions::assert_eq;

pub async fn batch_done_in_order(store: Arc<dyn Batches>) {
    assert_eq!(
        store.pop_batch_done("b1", 10).await.unwrap(),
        Vec::<String>::new()
    );
    for run in ["a", "b", "c"] {
        store.push_batch_done("b1", run).await.unwrap();
    }
    store.push_batch_done("b2", "z").await.unwrap();
    assert_eq!(
        store.pop_batch_done("b1", 0).await.unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(store.pop_batch_done("b1", 2).await.unwrap(), vec!["a", "b"]);
    assert_eq!(store.pop_batch_done("b1", 5).await.unwrap(), vec!["c"]);
    assert_eq!(
        store.pop_batch_done("b1", 5).await.unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(store.pop_batch_done("b2", 5).await.unwrap(), vec!["z"]);
}

conformance!(batch_done_in_order);
