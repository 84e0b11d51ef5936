//! What only Redis can show: write volume per step, corrupt values,
//! tear-down on every cluster master, connection errors.

use deepfleet_proto::Keys;
use deepfleet_store::prelude::*;
use deepfleet_store::redis::RedisStore;
use deepfleet_store::{
    Checkpoint, CheckpointSource, CommitOutcome, StepCommit, StoreError, ThreadSeed, ThreadUpdate,
};
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

/// A store holding the threads it read answers every load as a store
/// holding none would: after steps written by another store, a fork that
/// moves the conversation's base, a thread deleted and made again with the
/// same log length and files revision, and a copy made again after the
/// first was deleted. And once the conversation is long, a load reads a
/// fraction of what a full read does.
#[tokio::test]
async fn redis_held_threads_read_as_a_full_read_would() {
    let Some((store, prefix)) = connect(REDIS_URL, START_REDIS).await else {
        return;
    };
    with_cleanup(store, |store| async move {
        let full = RedisStore::connect(REDIS_URL, &prefix)
            .await
            .unwrap()
            .with_thread_cache(0);
        let other = RedisStore::connect(REDIS_URL, &prefix).await.unwrap();
        let seed = |text: &str| ThreadSeed {
            messages: vec![msg(text)],
            files: [("/a.md".to_owned(), file(text))].into(),
            ..ThreadSeed::default()
        };
        let step = |run: &deepfleet_proto::RunRecord, n: u64, text: &str| StepCommit {
            messages: vec![msg(text)],
            files: [("/b.md".to_owned(), Some(file(text)))].into(),
            ..commit(run, n)
        };

        let run = record("t1", "r1");
        store.create_run(&run, &seed("task")).await.unwrap();
        same(&store, &full, "t1").await;
        other.commit_step(&step(&run, 0, "one")).await.unwrap();
        let held = same(&store, &full, "t1").await;
        assert_eq!(held.messages.len(), 2);

        // Deleted and made again: the same log length and files revision,
        // other content.
        store.purge_thread("t1").await.unwrap();
        other.create_run(&run, &seed("again")).await.unwrap();
        other.commit_step(&step(&run, 0, "uno")).await.unwrap();
        let again = same(&store, &full, "t1").await;
        assert_eq!(again.messages, [msg("again"), msg("uno")]);

        // A step without files keeps the held files; a fork moves the base.
        let mut run = run;
        run.steps = 1;
        other
            .commit_step(&StepCommit {
                messages: vec![msg("two")],
                ..commit(&run, 1)
            })
            .await
            .unwrap();
        same(&store, &full, "t1").await;
        let timeline = store.timeline("t1").await.unwrap();
        let to = timeline.restore_checkpoint(1).unwrap();
        let fork = ThreadUpdate::restoring("t1", &timeline, to, CheckpointSource::Fork);
        other.update_thread(&fork).await.unwrap();
        let forked = same(&store, &full, "t1").await;
        assert!(forked.log_base > 0);

        // A copy, deleted and made again from a source that moved on.
        assert!(store.copy_thread("t1", "t2").await.unwrap());
        same(&store, &full, "t2").await;
        store.purge_thread("t2").await.unwrap();
        run.steps = 2;
        let at = store.load_thread("t1").await.unwrap().step;
        other.commit_step(&step(&run, at, "three")).await.unwrap();
        assert!(other.copy_thread("t1", "t2").await.unwrap());
        same(&store, &full, "t2").await;

        // A long conversation: a load after one more step reads its tail.
        for _ in 0..200 {
            let at = other.load_thread("t1").await.unwrap().step;
            other
                .commit_step(&StepCommit {
                    messages: vec![msg("and again, with some more words")],
                    ..commit(&run, at)
                })
                .await
                .unwrap();
            same(&store, &full, "t1").await;
        }
        let (held_before, full_before) = (store.bytes_read(), full.bytes_read());
        same(&store, &full, "t1").await;
        let (held_read, full_read) = (
            store.bytes_read() - held_before,
            full.bytes_read() - full_before,
        );
        assert!(
            held_read * 10 < full_read,
            "a held load read {held_read} bytes, a full one {full_read}"
        );
    })
    .await;
}

/// Loads `thread` through `held` and through `full` (which holds nothing)
/// and checks they agree.
async fn same(held: &RedisStore, full: &RedisStore, thread: &str) -> Checkpoint {
    let checkpoint = held.load_thread(thread).await.unwrap();
    assert_eq!(checkpoint, full.load_thread(thread).await.unwrap());
    checkpoint
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
