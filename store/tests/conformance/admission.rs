//! [`deepfleet_store::Admission`] scenarios.

use std::sync::Arc;

use deepfleet_store::{Admission, Entered};
use pretty_assertions::assert_eq;

pub async fn admission_window(store: Arc<dyn Admission>) {
    let batch = "b1";
    let ids: Vec<String> = (0..5).map(|i| format!("r{i}")).collect();
    let mut entered = Vec::new();
    for id in &ids {
        entered.push(store.enter_admission(batch, id, 2).await.unwrap());
    }
    use Entered::{Hold, Start};
    assert_eq!(entered, [Start, Start, Hold, Hold, Hold]);
    // A run entered before holds, started or not: another intake (a
    // concurrent submit of the same batch) publishes it, and a stranded
    // one is the sweep's to start again.
    assert_eq!(store.enter_admission(batch, "r0", 2).await.unwrap(), Hold);
    store.admission_started(batch, &ids[..2]).await.unwrap();
    assert_eq!(store.enter_admission(batch, "r0", 2).await.unwrap(), Hold);
    assert_eq!(store.enter_admission(batch, "r3", 2).await.unwrap(), Hold);
    let state = store.admission_state(batch).await.unwrap();
    assert_eq!(
        (state.window, state.waiting, state.admitted.len()),
        (2, 3, 2)
    );
    assert!(state.unstarted.is_empty());
    // An end admits the next, once.
    let next = store.admit_after(batch, "r0").await.unwrap();
    assert_eq!(next.as_deref(), Some("r2"));
    assert_eq!(store.admit_after(batch, "r0").await.unwrap(), next);
    assert_eq!(store.top_up(batch).await.unwrap(), Vec::<String>::new());
    // A run never admitted here frees nothing.
    assert_eq!(store.admit_after(batch, "stranger").await.unwrap(), None);
    assert_eq!(
        store.admission_state(batch).await.unwrap().unstarted,
        ["r2"]
    );
    // A wider window tops up.
    store.enter_admission(batch, "r4", 4).await.unwrap();
    assert_eq!(store.top_up(batch).await.unwrap(), ["r3", "r4"]);
    assert_eq!(store.admission_batches().await.unwrap(), [batch]);
    assert!(!store.close_admission(batch).await.unwrap());
    for id in ["r1", "r2", "r3", "r4"] {
        assert_eq!(store.admit_after(batch, id).await.unwrap(), None);
    }
    assert_eq!(store.admission_state(batch).await.unwrap().waiting, 0);
    assert!(store.close_admission(batch).await.unwrap());
    assert!(store.admission_batches().await.unwrap().is_empty());
}

conformance!(admission_window);
