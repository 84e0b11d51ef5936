//! [`deepfleet_store::Runs`] scenarios: creation (with its thread seed),
//! lookups and cancel flags.

use std::collections::BTreeMap;
use std::sync::Arc;

use deepfleet_proto::RunStatus;
use deepfleet_store::{Checkpoint, CommitOutcome, Runs, Store, ThreadSeed};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::{commit, file, msg, object, record};

pub async fn create_run_is_idempotent_and_seeds(store: Arc<dyn Store>) {
    let run = record("t1", "r1");
    let seed = ThreadSeed {
        messages: vec![msg("hello"), msg("there")],
        files: BTreeMap::from([("/a.md".to_owned(), file("A"))]),
        state: object(json!({"todos": [], "n": 12345678901234567_u64})),
    };
    assert_eq!(store.create_run(&run, &seed).await.unwrap(), Some(0));
    let expected = Checkpoint {
        messages: seed.messages.clone(),
        files: seed.files.clone(),
        state: seed.state.clone(),
        tokens: 6,
        ..Checkpoint::default()
    };
    assert_eq!(store.load_thread("t1").await.unwrap(), expected);

    // A repeated intake changes nothing, not even the run record.
    let mut again = run.clone();
    again.status = RunStatus::Running;
    assert_eq!(store.create_run(&again, &seed).await.unwrap(), None);
    assert_eq!(store.load_thread("t1").await.unwrap(), expected);
    assert_eq!(store.get_run("t1", "r1").await.unwrap(), Some(run.clone()));
    assert_eq!(store.get_run("t2", "r1").await.unwrap(), None);

    // A second run on the thread starts at the thread's step and merges.
    assert_eq!(
        store.commit_step(&commit(&run, 0)).await.unwrap(),
        CommitOutcome::Committed
    );
    let seed2 = ThreadSeed {
        messages: vec![msg("more")],
        files: BTreeMap::from([("/b.md".to_owned(), file("B"))]),
        state: object(json!({"n": 2, "extra": {"k": [1, 2]}})),
    };
    assert_eq!(
        store.create_run(&record("t1", "r2"), &seed2).await.unwrap(),
        Some(1)
    );
    let thread = store.load_thread("t1").await.unwrap();
    assert_eq!(
        thread.messages,
        vec![msg("hello"), msg("there"), msg("more")]
    );
    assert_eq!(
        thread.files,
        BTreeMap::from([
            ("/a.md".to_owned(), file("A")),
            ("/b.md".to_owned(), file("B"))
        ])
    );
    assert_eq!(
        thread.state,
        object(json!({"todos": [], "n": 2, "extra": {"k": [1, 2]}}))
    );
    assert_eq!(thread.step, 1);
}

pub async fn cancel_flags(store: Arc<dyn Runs>) {
    assert!(!store.cancel_requested("t1", "r1").await.unwrap());
    store.request_cancel("t1", "r1").await.unwrap();
    store.request_cancel("t1", "r1").await.unwrap();
    assert!(store.cancel_requested("t1", "r1").await.unwrap());
    assert!(!store.cancel_requested("t1", "r2").await.unwrap());
}

pub async fn find_run_by_index(store: Arc<dyn Store>) {
    assert_eq!(store.find_run("r1").await.unwrap(), None);
    let mut run = record("t7", "r1");
    store
        .create_run(&run, &ThreadSeed::default())
        .await
        .unwrap();
    assert_eq!(store.find_run("r1").await.unwrap(), Some(run.clone()));
    run.status = RunStatus::Success;
    run.output = Some("done".into());
    store.commit_step(&commit(&run, 0)).await.unwrap();
    assert_eq!(store.find_run("r1").await.unwrap(), Some(run));
}

conformance!(
    create_run_is_idempotent_and_seeds,
    cancel_flags,
    find_run_by_index,
);
