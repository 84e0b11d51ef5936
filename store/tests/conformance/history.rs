//! [`deepfleet_store::History`] scenarios: a checkpoint per committed
//! step, the thread rebuilt at each (a prefix of the log, the files and
//! state as they were), newest first with `before` and `limit`, and
//! nothing recorded by a commit that wrote nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use deepfleet_store::{
    CheckpointSource, CheckpointState, CommitOutcome, Conversation, HistoryQuery, StepCommit,
    Store, ThreadSeed, ThreadUpdate, UpdateOutcome,
};
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
    // The kept checkpoint's parent is gone, so it names none.
    let kept = CheckpointState {
        parent: None,
        ..before[0].clone()
    };
    assert_eq!(after, [kept]);
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

pub async fn an_update_is_a_checkpoint_fenced_by_what_it_read(store: Arc<dyn Store>) {
    three_steps(&*store).await;
    let current = store.load_thread("t1").await.unwrap();
    let mut update = ThreadUpdate::of("t1", &current);
    update.conversation = Conversation::Append(vec![msg("edited")]);
    update.files.remove("/b.md");
    update.state = object(json!({"todos": ["y"]}));
    assert_eq!(
        store.update_thread(&update).await.unwrap(),
        UpdateOutcome::Updated { checkpoint: 4 }
    );
    // Read again, the same update is stale.
    assert_eq!(
        store.update_thread(&update).await.unwrap(),
        UpdateOutcome::Conflict
    );
    let now = store.load_thread("t1").await.unwrap();
    assert_eq!((now.step, now.published), (4, 4));
    assert_eq!(now.messages.len(), current.messages.len() + 1);
    assert_eq!(now.tokens, current.tokens + u64::from(msg("edited").tokens));
    assert!(now.files.is_empty());
    assert_eq!(now.state, object(json!({"todos": ["y"]})));
    let mark = now.update.expect("the update is the current checkpoint");
    assert_eq!(
        (mark.checkpoint, mark.parent, mark.source),
        (4, Some(3), CheckpointSource::Update)
    );
    let newest = store.checkpoint_at("t1", 4).await.unwrap().unwrap();
    assert_eq!(
        (newest.parent, newest.source, newest.run_id.as_str()),
        (Some(3), CheckpointSource::Update, "")
    );
    assert_eq!(newest.checkpoint.messages, now.messages);

    // A run's seed in between is a conflict too: its input is not lost.
    let stale = ThreadUpdate::of("t1", &now);
    let run = record("t1", "r2");
    let seed = ThreadSeed {
        messages: vec![msg("more")],
        ..ThreadSeed::default()
    };
    store.create_run(&run, &seed).await.unwrap();
    assert_eq!(
        store.update_thread(&stale).await.unwrap(),
        UpdateOutcome::Conflict
    );
    // A step after it: the mark no longer tells of the current state.
    store
        .commit_step(&StepCommit {
            messages: vec![msg("five")],
            ..commit(&run, 4)
        })
        .await
        .unwrap();
    assert_eq!(store.load_thread("t1").await.unwrap().update, None);
}

pub async fn a_fork_is_a_new_branch_and_the_old_one_reads_as_it_did(store: Arc<dyn Store>) {
    three_steps(&*store).await;
    let all = HistoryQuery::newest(10);
    let before = store.checkpoints("t1", &all).await.unwrap();
    let timeline = store.timeline("t1").await.unwrap();
    let to = timeline.restore_checkpoint(1).unwrap();
    let fork = ThreadUpdate::restoring("t1", &timeline, to, CheckpointSource::Fork);
    assert_eq!(
        store.update_thread(&fork).await.unwrap(),
        UpdateOutcome::Updated { checkpoint: 4 }
    );
    let now = store.load_thread("t1").await.unwrap();
    assert_eq!(now.messages, before[2].checkpoint.messages);
    assert_eq!(now.files, before[2].checkpoint.files);
    assert_eq!(now.state, before[2].checkpoint.state);
    assert_eq!(now.tokens, before[2].checkpoint.tokens);
    assert_eq!(now.log_base, 5);
    // A follower reads the conversation by its own index.
    assert_eq!(
        store.load_messages("t1", 1).await.unwrap(),
        now.messages[1..]
    );

    // The next step goes on from the fork; the old branch is unchanged.
    let run = record("t1", "r2");
    store
        .create_run(&run, &ThreadSeed::default())
        .await
        .unwrap();
    store
        .commit_step(&StepCommit {
            messages: vec![msg("other")],
            ..commit(&run, 4)
        })
        .await
        .unwrap();
    let after = store.checkpoints("t1", &all).await.unwrap();
    assert_eq!(
        after.iter().map(|c| c.id).collect::<Vec<_>>(),
        [5, 4, 3, 2, 1]
    );
    assert_eq!(after[2..], before[..]);
    assert_eq!(
        (after[1].parent, after[1].source),
        (Some(1), CheckpointSource::Fork)
    );
    assert_eq!(after[0].parent, Some(4));
    assert_eq!(
        after[0].checkpoint.messages,
        [msg("task"), msg("one"), msg("other")]
    );
    assert_eq!(
        store.load_thread("t1").await.unwrap().messages,
        after[0].checkpoint.messages
    );

    // A copy keeps the branch.
    assert!(store.copy_thread("t1", "t2").await.unwrap());
    assert_eq!(
        store.load_thread("t2").await.unwrap().messages,
        after[0].checkpoint.messages
    );
    assert_eq!(store.checkpoints("t2", &all).await.unwrap(), after);
}

pub async fn a_rollback_returns_the_thread_to_before_the_run(store: Arc<dyn Store>) {
    three_steps(&*store).await;
    let before = store.load_thread("t1").await.unwrap();
    let run = record("t1", "r2");
    let seed = ThreadSeed {
        messages: vec![msg("again")],
        files: BTreeMap::from([("/c.md".to_owned(), file("c"))]),
        state: object(json!({"mood": "ok"})),
    };
    store.create_run(&run, &seed).await.unwrap();
    store
        .commit_step(&StepCommit {
            messages: vec![msg("five")],
            ..commit(&run, 3)
        })
        .await
        .unwrap();
    let timeline = store.timeline("t1").await.unwrap();
    let to = timeline.restore_before_run("r2").unwrap();
    assert_eq!(to.parent, Some(3));
    let rollback = ThreadUpdate::restoring("t1", &timeline, to, CheckpointSource::Rollback);
    assert_eq!(
        store.update_thread(&rollback).await.unwrap(),
        UpdateOutcome::Updated { checkpoint: 5 }
    );
    let now = store.load_thread("t1").await.unwrap();
    assert_eq!(
        (&now.messages, &now.files, &now.state, now.tokens),
        (
            &before.messages,
            &before.files,
            &before.state,
            before.tokens
        )
    );
    assert_eq!(
        store
            .checkpoints("t1", &HistoryQuery::newest(10))
            .await
            .unwrap()
            .len(),
        5
    );
}

/// Notes on checkpoints: merged on the current one beside the thread
/// until a step follows, kept in the history for good, no obstacle to a
/// rollback, and kept by a prune with the newest checkpoint.
pub async fn notes_stay_with_the_checkpoint_they_name(store: Arc<dyn Store>) {
    assert_eq!(
        store
            .note_checkpoint("t1", &object(json!({"a": 1})))
            .await
            .unwrap(),
        None,
        "no thread, no checkpoint to note"
    );
    three_steps(&*store).await;
    store
        .note_checkpoint("t1", &object(json!({"a": 1, "b": "x"})))
        .await
        .unwrap();
    let noted = store
        .note_checkpoint("t1", &object(json!({"b": "y"})))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(noted.checkpoint, 3);
    assert_eq!(noted.metadata, object(json!({"a": 1, "b": "y"})));
    let now = store.load_thread("t1").await.unwrap();
    assert_eq!(now.notes.as_ref(), Some(&noted));
    let at = store.checkpoint_at("t1", 3).await.unwrap().unwrap();
    assert_eq!(at.checkpoint.notes.as_ref(), Some(&noted));
    assert_eq!(
        store
            .checkpoint_at("t1", 2)
            .await
            .unwrap()
            .unwrap()
            .checkpoint
            .notes,
        None
    );

    // A note after a run does not stop its rollback; a step moves on.
    let run = record("t1", "r2");
    store
        .create_run(
            &run,
            &ThreadSeed {
                messages: vec![msg("again")],
                ..ThreadSeed::default()
            },
        )
        .await
        .unwrap();
    store
        .commit_step(&StepCommit {
            messages: vec![msg("five")],
            ..commit(&run, 3)
        })
        .await
        .unwrap();
    assert_eq!(store.load_thread("t1").await.unwrap().notes, None);
    store
        .note_checkpoint("t1", &object(json!({"c": true})))
        .await
        .unwrap();
    let timeline = store.timeline("t1").await.unwrap();
    let to = timeline
        .restore_before_run("r2")
        .expect("a note is no obstacle");
    assert_eq!(to.parent, Some(3));
    let history = store
        .checkpoints("t1", &HistoryQuery::newest(10))
        .await
        .unwrap();
    let notes: Vec<Option<u64>> = history
        .iter()
        .map(|c| c.checkpoint.notes.as_ref().map(|n| n.checkpoint))
        .collect();
    assert_eq!(notes, vec![Some(4), Some(3), None, None]);

    assert!(store.keep_latest_checkpoint("t1").await.unwrap());
    let kept = store
        .checkpoints("t1", &HistoryQuery::newest(10))
        .await
        .unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(
        kept[0].checkpoint.notes.as_ref().map(|n| &n.metadata),
        Some(&object(json!({"c": true})))
    );
}

conformance!(
    notes_stay_with_the_checkpoint_they_name,
    an_update_is_a_checkpoint_fenced_by_what_it_read,
    a_fork_is_a_new_branch_and_the_old_one_reads_as_it_did,
    a_rollback_returns_the_thread_to_before_the_run,
    keeping_the_latest_drops_older_checkpoints_only,
    each_commit_is_a_checkpoint,
    history_pages_back_from_before,
    a_later_run_leaves_earlier_checkpoints_alone,
    a_commit_that_writes_nothing_records_nothing,
);
