//! [`deepfleet_store::Checkpoints`] scenarios: loading, the fenced atomic
//! commit, the published mark and partial message reads.

use std::collections::BTreeMap;
use std::sync::Arc;

use deepfleet_proto::{ContextCursor, EvictedMessage, RunStatus, SummaryEvent};
use deepfleet_store::{
    Checkpoint, CommitOutcome, HistoryQuery, StepCommit, Store, StoreError, ThreadSeed,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::{at, child, commit, file, msg, object, parent_of, pending, record};

pub async fn unknown_thread_is_empty(store: Arc<dyn Store>) {
    assert_eq!(
        store.load_thread("nobody").await.unwrap(),
        Checkpoint::default()
    );
    assert_eq!(store.get_run("nobody", "r").await.unwrap(), None);
}

pub async fn commit_step_applies_everything(store: Arc<dyn Store>) {
    let mut run = record("t1", "r1");
    let seed = ThreadSeed {
        messages: vec![msg("task")],
        files: BTreeMap::from([
            ("/keep.md".to_owned(), file("k")),
            ("/gone.md".to_owned(), file("g")),
        ]),
        state: object(json!({"todos": ["a"]})),
    };
    store.create_run(&run, &seed).await.unwrap();

    run.status = RunStatus::Waiting;
    let first = StepCommit {
        messages: vec![msg("call")],
        pending: Some(pending("c1")),
        ..commit(&run, 0)
    };
    assert_eq!(
        store.commit_step(&first).await.unwrap(),
        CommitOutcome::Committed
    );
    let thread = store.load_thread("t1").await.unwrap();
    assert_eq!(thread.pending, Some(pending("c1")));
    // `state: None` leaves the state alone.
    assert_eq!(thread.state, seed.state);

    run.status = RunStatus::Running;
    run.steps = 2;
    let second = StepCommit {
        messages: vec![msg("result"), msg("answer")],
        files: BTreeMap::from([
            ("/gone.md".to_owned(), None),
            ("/keep.md".to_owned(), Some(file("k2"))),
            ("/new.md".to_owned(), Some(file("n"))),
        ]),
        state: Some(object(json!({"todos": []}))),
        ..commit(&run, 1)
    };
    assert_eq!(
        store.commit_step(&second).await.unwrap(),
        CommitOutcome::Committed
    );
    let expected = Checkpoint {
        step: 2,
        published: 0,
        messages: vec![msg("task"), msg("call"), msg("result"), msg("answer")],
        log_base: 0,
        files: BTreeMap::from([
            ("/keep.md".to_owned(), file("k2")),
            ("/new.md".to_owned(), file("n")),
        ]),
        state: object(json!({"todos": []})),
        pending: None,
        tokens: 12,
        context: ContextCursor::default(),
        update: None,
        notes: None,
    };
    assert_eq!(store.load_thread("t1").await.unwrap(), expected);
    assert_eq!(store.get_run("t1", "r1").await.unwrap(), Some(run));
}

/// The compression cursor is stored when a commit sets it and left alone
/// by commits that do not; the token total grows by every append.
pub async fn context_cursor_and_token_total(store: Arc<dyn Store>) {
    let mut run = record("t1", "r1");
    let seed = ThreadSeed {
        messages: vec![msg("task")],
        ..ThreadSeed::default()
    };
    store.create_run(&run, &seed).await.unwrap();
    let cursor = ContextCursor {
        summary: Some(SummaryEvent {
            cutoff: 1,
            message: msg("summary so far"),
            file_path: Some("/conversation_history/session_1.md".into()),
            session: "session_1".into(),
            created_at_index: 2,
            summarized_tokens: 3,
            created_at: at(),
        }),
        evicted: vec![EvictedMessage {
            index: 0,
            path: "/conversation_history/x.md".into(),
            stub: msg("stub"),
        }],
    };
    let first = StepCommit {
        messages: vec![msg("a")],
        context: Some(cursor.clone()),
        ..commit(&run, 0)
    };
    assert_eq!(
        store.commit_step(&first).await.unwrap(),
        CommitOutcome::Committed
    );
    run.steps = 1;
    let second = StepCommit {
        messages: vec![msg("b"), msg("c")],
        ..commit(&run, 1)
    };
    assert_eq!(
        store.commit_step(&second).await.unwrap(),
        CommitOutcome::Committed
    );
    let thread = store.load_thread("t1").await.unwrap();
    assert_eq!(thread.context, cursor);
    assert_eq!(thread.tokens, 4 * 3);
    assert_eq!(thread.messages.len(), 4);
}

pub async fn commit_conflict_writes_nothing(store: Arc<dyn Store>) {
    let run = record("t1", "r1");
    store
        .create_run(&run, &ThreadSeed::default())
        .await
        .unwrap();
    let step = StepCommit {
        messages: vec![msg("one")],
        ..commit(&run, 0)
    };
    assert_eq!(
        store.commit_step(&step).await.unwrap(),
        CommitOutcome::Committed
    );
    let before = store.load_thread("t1").await.unwrap();

    let mut other = record("t1", "r1");
    other.status = RunStatus::Error;
    for stale in [0, 5] {
        let replay = StepCommit {
            messages: vec![msg("two")],
            files: BTreeMap::from([("/x".to_owned(), Some(file("x")))]),
            state: Some(object(json!({"x": 1}))),
            pending: Some(pending("c")),
            fan_in_expected: Some(1),
            ..commit(&other, stale)
        };
        assert_eq!(
            store.commit_step(&replay).await.unwrap(),
            CommitOutcome::Conflict { current: 1 }
        );
    }
    assert_eq!(store.load_thread("t1").await.unwrap(), before);
    assert_eq!(store.get_run("t1", "r1").await.unwrap(), Some(run));
    assert!(matches!(
        store
            .record_child_result(&parent_of("t1", "r1", "c"), &child("c", "x"))
            .await,
        Err(StoreError::NotFound(_))
    ));
}

pub async fn mark_published_only_rises(store: Arc<dyn Store>) {
    // A thread that does not exist stays so.
    store.mark_published("t1", 3).await.unwrap();
    assert_eq!(
        store.load_thread("t1").await.unwrap(),
        Checkpoint::default()
    );
    store
        .create_run(&record("t1", "r1"), &ThreadSeed::default())
        .await
        .unwrap();
    assert_eq!(store.load_thread("t1").await.unwrap().published, 0);
    store.mark_published("t1", 3).await.unwrap();
    store.mark_published("t1", 1).await.unwrap();
    let thread = store.load_thread("t1").await.unwrap();
    assert_eq!((thread.step, thread.published), (0, 3));
}

/// A commit of a run that was never created (or is gone) writes nothing.
pub async fn a_commit_without_its_run_is_gone(store: Arc<dyn Store>) {
    let run = record("t1", "r1");
    let step = StepCommit {
        messages: vec![msg("late")],
        ..commit(&run, 0)
    };
    assert_eq!(store.commit_step(&step).await.unwrap(), CommitOutcome::Gone);
    assert_eq!(
        store.load_thread("t1").await.unwrap(),
        Checkpoint::default()
    );
    assert_eq!(store.get_run("t1", "r1").await.unwrap(), None);
}

pub async fn load_messages_from_an_index(store: Arc<dyn Store>) {
    let run = record("t1", "r1");
    store
        .create_run(
            &run,
            &ThreadSeed {
                messages: vec![msg("a")],
                ..ThreadSeed::default()
            },
        )
        .await
        .unwrap();
    let mut step = commit(&run, 0);
    step.messages = vec![msg("b"), msg("c")];
    store.commit_step(&step).await.unwrap();
    assert_eq!(
        store.load_messages("t1", 1).await.unwrap(),
        vec![msg("b"), msg("c")]
    );
    assert_eq!(store.load_messages("t1", 0).await.unwrap().len(), 3);
    assert!(store.load_messages("t1", 3).await.unwrap().is_empty());
    assert!(store.load_messages("nobody", 0).await.unwrap().is_empty());
}

pub async fn a_copy_is_the_thread_with_its_history_and_no_run(store: Arc<dyn Store>) {
    let mut run = record("t1", "r1");
    let seed = ThreadSeed {
        messages: vec![msg("task")],
        files: BTreeMap::from([("/a.md".to_owned(), file("a"))]),
        state: object(json!({"todos": ["a"]})),
    };
    store.create_run(&run, &seed).await.unwrap();
    let first = StepCommit {
        messages: vec![msg("one")],
        files: BTreeMap::from([("/b.md".to_owned(), Some(file("b")))]),
        ..commit(&run, 0)
    };
    store.commit_step(&first).await.unwrap();
    run.steps = 2;
    let second = StepCommit {
        messages: vec![msg("two")],
        pending: Some(pending("c1")),
        ..commit(&run, 1)
    };
    store.commit_step(&second).await.unwrap();

    assert!(store.copy_thread("t1", "t2").await.unwrap());
    let original = store.load_thread("t1").await.unwrap();
    let copy = store.load_thread("t2").await.unwrap();
    // The parked calls are the original run's; the copy has none.
    assert_eq!(
        copy,
        Checkpoint {
            pending: None,
            ..original.clone()
        }
    );
    let all = HistoryQuery::newest(10);
    let history = |thread| {
        let store = Arc::clone(&store);
        let all = all.clone();
        async move {
            store
                .checkpoints(thread, &all)
                .await
                .unwrap()
                .into_iter()
                .map(|c| (c.id, c.run_id, c.checkpoint))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(history("t2").await, history("t1").await);
    assert_eq!(history("t2").await.len(), 2);

    // The copy is on its own: the original moves on without it, and an
    // existing thread is never overwritten.
    run.steps = 3;
    let third = StepCommit {
        messages: vec![msg("three")],
        ..commit(&run, 2)
    };
    store.commit_step(&third).await.unwrap();
    assert_eq!(store.load_thread("t2").await.unwrap(), copy);
    assert!(!store.copy_thread("t1", "t2").await.unwrap());
    assert_eq!(store.load_thread("t2").await.unwrap(), copy);
    // An unknown thread copies as the empty thread it reads as.
    assert!(store.copy_thread("nobody", "t3").await.unwrap());
    assert_eq!(
        store.load_thread("t3").await.unwrap(),
        Checkpoint::default()
    );
}

conformance!(
    a_copy_is_the_thread_with_its_history_and_no_run,
    unknown_thread_is_empty,
    commit_step_applies_everything,
    context_cursor_and_token_total,
    commit_conflict_writes_nothing,
    mark_published_only_rises,
    a_commit_without_its_run_is_gone,
    load_messages_from_an_index,
);
