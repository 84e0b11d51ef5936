//! What only Redis can show: write volume per step, corrupt values,
//! tear-down on every cluster master, connection errors.

use deepfleet_proto::Keys;
use deepfleet_store::prelude::*;
use deepfleet_store::redis::RedisStore;
use deepfleet_store::{CommitOutcome, StepCommit, StoreError, ThreadSeed};
use pretty_assertions::assert_eq;

use crate::harness::{REDIS_URL, START_REDIS, cluster_store, connect, with_cleanup};
use crate::support::{commit, file, msg, record};

/// Per-step write volume stays flat as the conversation grows: the commit
/// appends, it never rewrites the log or the files.
#[tokio::test]
async fn redis_bytes_per_step_do_not_grow() {
    let Some((store, _)) = connect(REDIS_URL, START_REDIS).await else {
        return;
    };
    with_cleanup(store, |store| async move {
        let mut run = record("long", "r1");
        store
            .create_run(&run, &ThreadSeed::default())
            .await
            .unwrap();
        let mut per_step = Vec::new();
        for step in 0..500 {
            run.steps = u32::try_from(step + 1).unwrap();
            let step_commit = StepCommit {
                messages: vec![msg("what does the plan say?"), msg("it says to wait")],
                files: [("/notes.md".to_owned(), Some(file("plan: wait")))].into(),
                ..commit(&run, step)
            };
            let before = store.bytes_written();
            assert_eq!(
                store.commit_step(&step_commit).await.unwrap(),
                CommitOutcome::Committed
            );
            per_step.push(store.bytes_written() - before);
        }
        let (at_50, at_500) = (per_step[49] as f64, per_step[499] as f64);
        assert!(
            (at_500 - at_50).abs() / at_50 < 0.03,
            "step 50 wrote {at_50} bytes, step 500 wrote {at_500}"
        );
        let thread = store.load_thread("long").await.unwrap();
        assert_eq!((thread.step, thread.messages.len()), (500, 1000));
    })
    .await;
}

/// A value this build cannot decode is reported with its key.
#[tokio::test]
async fn redis_corrupt_log_entry_is_reported() {
    let Some((store, prefix)) = connect(REDIS_URL, START_REDIS).await else {
        return;
    };
    with_cleanup(store, |store| async move {
        let log = Keys::new(prefix).thread_log("t1");
        let client = redis::Client::open(REDIS_URL).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let _: () = redis::cmd("RPUSH")
            .arg(&log)
            .arg("{not a message")
            .query_async(&mut conn)
            .await
            .unwrap();
        match store.load_thread("t1").await {
            Err(StoreError::Corrupt { key, .. }) => assert_eq!(key, format!("{log}[0]")),
            other => panic!("expected Corrupt, got {other:?}"),
        }
    })
    .await;
}

/// `delete_prefix` finds keys on every cluster master, not just one.
#[tokio::test]
async fn redis_cluster_delete_prefix_reaches_every_master() {
    let Some(store) = cluster_store().await else {
        return;
    };
    let seed = ThreadSeed {
        messages: vec![msg("hi")],
        files: [("/f".to_owned(), file("f"))].into(),
        ..ThreadSeed::default()
    };
    // Run record, meta (latest run, token total), log, files, history (the
    // seed wrote a file), run ids and run index: seven keys per thread,
    // spread over the slots of all three masters.
    for i in 0..30 {
        let run = record(&format!("thread-{i}"), &format!("run-{i}"));
        store.create_run(&run, &seed).await.unwrap();
    }
    assert_eq!(store.delete_prefix().await.unwrap(), 210);
    assert_eq!(store.find_run("run-3").await.unwrap(), None);
    assert_eq!(store.delete_prefix().await.unwrap(), 0);
}

#[tokio::test]
async fn unreachable_server_is_a_connection_error() {
    match RedisStore::connect("redis://127.0.0.1:1", "p").await {
        Err(e @ StoreError::Connection(_)) => assert!(e.is_retryable()),
        Err(e) => panic!("expected a connection error, got {e}"),
        Ok(_) => panic!("connected to port 1"),
    }
    assert!(RedisStore::connect(REDIS_URL, "a{b}").await.is_err());
}
