//! [`deepfleet_store::History`] scenarios: a checkpoint per committed
//! step, the thread rebuilt at each (a prefix of the log, the files and
//! state as they were), newest first with `before` and `limit`, and
//! nothing recorded by a commit that wrote nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use deepfleet_store::{CommitOutcome, HistoryQuery, StepCommit, Store, ThreadSeed};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::{commit, file, msg, object, record};

fn before(id: u64, limit: usize) -> HistoryQuery {
    HistoryQuery {
        before: Some(id),
        ..HistoryQuery::newest(limit)
    }
}

/// Thread `t1`: run `r1` seeded with `task`, `/a.md` and `{"todos": []}`,
/// then three steps; returns nothing, the store holds checkpoints 1..=3.
async fn three_steps(store: &dyn Store) {
    let run = record("t1", "r1");
    let seed = ThreadSeed {
        messages: vec![msg("task")],
        files: BTreeMap::from([("/a.md".to_owned(), file("a"))]),
        state: object(json!({"todos": []})),
    };
    store.create_run(&run, &seed).await.unwrap();
    let steps = [
        StepCommit {
            messages: vec![msg("one")],
            files: BTreeMap::from([("/b.md".to_owned(), Some(file("b")))]),
            ..commit(&run, 0)
        },
        StepCommit {
            messages: vec![msg("two"), msg("three")],
            files: BTreeMap::from([
                ("/a.md".to_owned(), None),
                ("/b.md".to_owned(), Some(file("b2"))),
            ]),
            state: Some(object(json!({"todos": ["x"]}))),
            ..commit(&run, 1)
        },
        StepCommit {
            messages: vec![msg("four")],
            ..commit(&run, 2)
        },
    ];
    for step in &steps {
        assert_eq!(
            store.commit_step(step).await.unwrap(),
            CommitOutcome::Committed
        );
    }
}

pub async fn each_commit_is_a_checkpoint(store: Arc<dyn Store>) {
    three_steps(&*store).await;
    let all = store
        .checkpoints("t1", &HistoryQuery::newest(10))
        .await
        .unwrap();
    assert_eq!(all.iter().map(|c| c.id).collect::<Vec<_>>(), [3, 2, 1]);
    assert!(all.iter().all(|c| c.run_id == "r1"));
    assert!(all[0].created_at >= all[2].created_at);

    let first = &all[2].checkpoint;
    assert_eq!(first.step, 1);
    assert_eq!(first.messages, [msg("task"), msg("one")]);
    assert_eq!(
        first.files,
        BTreeMap::from([
            ("/a.md".to_owned(), file("a")),
            ("/b.md".to_owned(), file("b")),
        ])
    );
    assert_eq!(first.state, object(json!({"todos": []})));
    assert_eq!(first.tokens, 6);

    let second = &all[1].checkpoint;
    assert_eq!(second.messages.len(), 4);
    assert_eq!(
        second.files,
        BTreeMap::from([("/b.md".to_owned(), file("b2"))])
    );
    assert_eq!(second.state, object(json!({"todos": ["x"]})));

    // The newest checkpoint is the thread as it is.
    let now = store.load_thread("t1").await.unwrap();
    let last = &all[0].checkpoint;
    assert_eq!(
        (&last.messages, &last.files, &last.state, last.step),
        (&now.messages, &now.files, &now.state, now.step)
    );
}

pub async fn history_pages_back_from_before(store: Arc<dyn Store>) {
    three_steps(&*store).await;
    let page = store.checkpoints("t1", &before(3, 1)).await.unwrap();
    assert_eq!(page.iter().map(|c| c.id).collect::<Vec<_>>(), [2]);
    let rest = store.checkpoints("t1", &before(2, 10)).await.unwrap();
    assert_eq!(rest.iter().map(|c| c.id).collect::<Vec<_>>(), [1]);
    assert!(
        store
            .checkpoints("t1", &before(1, 10))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .checkpoints("t1", &HistoryQuery::newest(0))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .checkpoints("nobody", &HistoryQuery::newest(10))
            .await
            .unwrap()
            .is_empty()
    );

    let at = store.checkpoint_at("t1", 2).await.unwrap().unwrap();
    assert_eq!(at.id, 2);
    assert_eq!(at.checkpoint.messages.len(), 4);
    assert_eq!(store.checkpoint_at("t1", 4).await.unwrap(), None);
    assert_eq!(store.checkpoint_at("t1", 0).await.unwrap(), None);
    assert_eq!(store.checkpoint_at("t1", u64::MAX).await.unwrap(), None);
    let by_run = HistoryQuery {
        run_id: Some("r1".into()),
        ..HistoryQuery::newest(2)
    };
    let ids: Vec<u64> = store
        .checkpoints("t1", &by_run)
        .await
        .unwrap()
        .iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, [3, 2]);
}

pub async fn a_later_run_leaves_earlier_checkpoints_alone(store: Arc<dyn Store>) {
    three_steps(&*store).await;
    let before = store
        .checkpoints("t1", &HistoryQuery::newest(10))
        .await
        .unwrap();
    let run = record("t1", "r2");
    let seed = ThreadSeed {
        messages: vec![msg("again")],
        files: BTreeMap::from([("/c.md".to_owned(), file("c"))]),
        state: object(json!({"mood": "ok"})),
    };
    store.create_run(&run, &seed).await.unwrap();
    // A seed is no checkpoint.
    assert_eq!(
        store
            .checkpoints("t1", &HistoryQuery::newest(10))
            .await
            .unwrap(),
        before
    );
    let step = StepCommit {
        messages: vec![msg("five")],
        ..commit(&run, 3)
    };
    store.commit_step(&step).await.unwrap();
    let after = store
        .checkpoints("t1", &HistoryQuery::newest(10))
        .await
        .unwrap();
    assert_eq!(after[1..], before[..]);
    let fourth = &after[0];
    assert_eq!((fourth.id, fourth.run_id.as_str()), (4, "r2"));
    assert_eq!(fourth.checkpoint.messages.len(), 7);
    assert_eq!(fourth.checkpoint.files["/c.md"], file("c"));
    assert_eq!(
        fourth.checkpoint.state,
        object(json!({"todos": ["x"], "mood": "ok"}))
    );
}

pub async fn a_commit_that_writes_nothing_records_nothing(store: Arc<dyn Store>) {
    three_steps(&*store).await;
    let run = record("t1", "r1");
    let stale = StepCommit {
        messages: vec![msg("late")],
        ..commit(&run, 1)
    };
    assert_eq!(
        store.commit_step(&stale).await.unwrap(),
        CommitOutcome::Conflict { current: 3 }
    );
    let gone = commit(&record("t1", "nobody"), 3);
    assert_eq!(store.commit_step(&gone).await.unwrap(), CommitOutcome::Gone);
    assert_eq!(
        store
            .checkpoints("t1", &HistoryQuery::newest(10))
            .await
            .unwrap()
            .len(),
        3
    );
}

pub async fn keeping_the_latest_drops_older_checkpoints_only(store: Arc<dyn Store>) {
    three_steps(&*store).await;
    let all = HistoryQuery::newest(10);
    let before = store.checkpoints("t1", &all).await.unwrap();
    let current = store.load_thread("t1").await.unwrap();
    assert!(store.keep_latest_checkpoint("t1").await.unwrap());
    let after = store.checkpoints("t1", &all).await.unwrap();
    assert_eq!(after, before[..1]);
    assert_eq!(store.load_thread("t1").await.unwrap(), current);
    // One checkpoint left: nothing more to drop.
    assert!(!store.keep_latest_checkpoint("t1").await.unwrap());
    assert!(!store.keep_latest_checkpoint("nobody").await.unwrap());

    // Later steps build on the kept checkpoint as on the whole history.
    let mut run = record("t1", "r1");
    run.steps = 4;
    let next = StepCommit {
        messages: vec![msg("five")],
        files: BTreeMap::from([("/c.md".to_owned(), Some(file("c")))]),
        ..commit(&run, 3)
    };
    store.commit_step(&next).await.unwrap();
    let newest = store.checkpoints("t1", &all).await.unwrap();
    assert_eq!(newest.iter().map(|c| c.id).collect::<Vec<_>>(), [4, 3]);
    assert_eq!(
        newest[0].checkpoint.messages,
        store.load_thread("t1").await.unwrap().messages
    );
    let mut files = before[0].checkpoint.files.clone();
    files.insert("/c.md".to_owned(), file("c"));
    assert_eq!(newest[0].checkpoint.files, files);
    assert_eq!(newest[0].checkpoint.state, before[0].checkpoint.state);
}

conformance!(
    keeping_the_latest_drops_older_checkpoints_only,
    each_commit_is_a_checkpoint,
    history_pages_back_from_before,
    a_later_run_leaves_earlier_checkpoints_alone,
    a_commit_that_writes_nothing_records_nothing,
);
