//! [`deepfleet_store::Retention`] scenarios: a finished thread expires
//! whole (its runs, their streams, its subagent threads) unless a later
//! run started on it; a purged thread is gone at once and stays gone
//! whatever a step in flight writes; a batch's done list expires.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::{RunEvent, RunStatus};
use deepfleet_store::{
    Checkpoint, CommitOutcome, HistoryQuery, Retention, StepCommit, Store, ThreadSeed,
};
use pretty_assertions::assert_eq;

use crate::harness::{REDIS_URL, START_REDIS, connect, with_cleanup};
use crate::support::{commit, file, msg, parent_of, record};

/// Past a one-second expiry.
const PAST_EXPIRY: Duration = Duration::from_millis(1_600);

fn event(run: &str, thread: &str) -> RunEvent {
    RunEvent {
        run_id: run.into(),
        thread_id: thread.into(),
        step: 0,
        status: RunStatus::Success,
        from: 0,
        to: 1,
        namespace: vec![],
    }
}

/// A thread `t1` whose run `r1` delegated to `rc` on thread `tc`, both
/// ended, with files, messages and events; returns the ended parent.
async fn finished_tree(store: &dyn Store) -> deepfleet_proto::RunRecord {
    let seed = ThreadSeed {
        messages: vec![msg("task")],
        files: BTreeMap::from([("/a.md".to_owned(), file("a"))]),
        ..ThreadSeed::default()
    };
    let mut parent = record("t1", "r1");
    store.create_run(&parent, &seed).await.unwrap();
    let mut child = deepfleet_proto::RunRecord {
        parent: Some(parent_of("t1", "r1", "call-1")),
        depth: 1,
        ..record("tc", "rc")
    };
    store.create_run(&child, &seed).await.unwrap();
    child.status = RunStatus::Success;
    store.commit_step(&commit(&child, 0)).await.unwrap();
    parent.status = RunStatus::Success;
    let done = StepCommit {
        messages: vec![msg("answer")],
        ..commit(&parent, 0)
    };
    store.commit_step(&done).await.unwrap();
    store.request_cancel("t1", "r1").await.unwrap();
    for (run, thread) in [("r1", "t1"), ("rc", "tc")] {
        store
            .append_run_event(run, &event(run, thread))
            .await
            .unwrap();
    }
    parent
}

/// Nothing of `finished_tree` is left.
async fn assert_tree_gone(store: &dyn Store) {
    for thread in ["t1", "tc"] {
        assert_eq!(
            store.load_thread(thread).await.unwrap(),
            Checkpoint::default()
        );
        assert!(
            store
                .checkpoints(thread, &HistoryQuery::newest(10))
                .await
                .unwrap()
                .is_empty()
        );
    }
    assert_eq!(store.get_run("t1", "r1").await.unwrap(), None);
    assert_eq!(store.find_run("r1").await.unwrap(), None);
    assert_eq!(store.find_run("rc").await.unwrap(), None);
    assert!(!store.cancel_requested("t1", "r1").await.unwrap());
    assert!(store.run_events("r1", None, 10).await.unwrap().is_empty());
    assert!(store.run_events("rc", None, 10).await.unwrap().is_empty());
}

pub async fn a_finished_thread_expires_with_its_subagents(store: Arc<dyn Store>) {
    finished_tree(&*store).await;
    assert!(
        store
            .expire_thread("t1", "r1", Duration::from_secs(1))
            .await
            .unwrap()
    );
    // Still there until the expiry.
    assert_eq!(store.load_thread("t1").await.unwrap().messages.len(), 2);
    assert!(store.find_run("rc").await.unwrap().is_some());
    tokio::time::sleep(PAST_EXPIRY).await;
    assert_tree_gone(&*store).await;
}

pub async fn a_later_run_keeps_its_thread(store: Arc<dyn Store>) {
    finished_tree(&*store).await;
    assert!(
        store
            .expire_thread("t1", "r1", Duration::from_secs(1))
            .await
            .unwrap()
    );
    // A new run on the thread makes it live again, earlier runs and all...
    store
        .create_run(&record("t1", "r2"), &ThreadSeed::default())
        .await
        .unwrap();
    // ...and the end of an earlier run no longer expires it.
    assert!(
        !store
            .expire_thread("t1", "r1", Duration::from_secs(1))
            .await
            .unwrap()
    );
    tokio::time::sleep(PAST_EXPIRY).await;
    assert_eq!(store.load_thread("t1").await.unwrap().messages.len(), 2);
    assert_eq!(
        store
            .checkpoints("t1", &HistoryQuery::newest(10))
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(store.get_run("t1", "r1").await.unwrap().is_some());
    assert!(store.get_run("t1", "r2").await.unwrap().is_some());
}

pub async fn a_purged_thread_stays_gone(store: Arc<dyn Store>) {
    let parent = finished_tree(&*store).await;
    store.purge_thread("t1").await.unwrap();
    assert_tree_gone(&*store).await;
    // A step that was in flight commits late: nothing comes back.
    let late = StepCommit {
        messages: vec![msg("late")],
        files: BTreeMap::from([("/late.md".to_owned(), Some(file("l")))]),
        ..commit(&parent, 1)
    };
    assert_eq!(store.commit_step(&late).await.unwrap(), CommitOutcome::Gone);
    store.mark_published("t1", 2).await.unwrap();
    assert_tree_gone(&*store).await;
    // Purging what is gone is no error.
    store.purge_thread("t1").await.unwrap();
}

pub async fn a_batch_done_list_expires(store: Arc<dyn Store>) {
    store.push_batch_done("b1", "r1").await.unwrap();
    store
        .expire_batch("b1", Duration::from_secs(1))
        .await
        .unwrap();
    tokio::time::sleep(PAST_EXPIRY).await;
    assert!(store.pop_batch_done("b1", 10).await.unwrap().is_empty());
}

/// On Redis, nothing of a purged or expired tree is left under the prefix
/// (`delete_prefix` counts what it finds).
#[tokio::test]
async fn redis_leaves_no_key_of_a_disposed_thread() {
    let Some((store, _)) = connect(REDIS_URL, START_REDIS).await else {
        return;
    };
    with_cleanup(store, |store| async move {
        finished_tree(&*store).await;
        store.purge_thread("t1").await.unwrap();
        assert_eq!(store.delete_prefix().await.unwrap(), 0, "left by the purge");
        finished_tree(&*store).await;
        assert!(
            store
                .expire_thread("t1", "r1", Duration::from_secs(1))
                .await
                .unwrap()
        );
        tokio::time::sleep(PAST_EXPIRY).await;
        assert_eq!(
            store.delete_prefix().await.unwrap(),
            0,
            "left by the expiry"
        );
    })
    .await;
}

conformance!(
    a_finished_thread_expires_with_its_subagents,
    a_later_run_keeps_its_thread,
    a_purged_thread_stays_gone,
    a_batch_done_list_expires,
);
