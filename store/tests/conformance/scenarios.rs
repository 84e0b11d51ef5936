//! The scenarios every [`Store`] must pass, whatever its back end.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use deepfleet_proto::{
    AgentSpec, ChildResult, ContentBlock, ContextCursor, EvictedMessage, FileData, LoggedMessage,
    Message, ParentLink, PendingCall, PendingTools, RunRecord, RunStatus, SummaryEvent, ToolCall,
    Usage, UserMessage,
};
use deepfleet_store::{Checkpoint, CommitOutcome, StepCommit, Store, StoreError, ThreadSeed};
use pretty_assertions::assert_eq;

pub use crate::items::*;
pub use crate::run_events::*;
use serde_json::{Map, Value, json};

pub fn at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap()
}

pub fn record(thread: &str, run: &str) -> RunRecord {
    RunRecord::new(run, thread, "agent", at())
}

pub fn msg(text: &str) -> LoggedMessage {
    LoggedMessage {
        message: Message::User(UserMessage {
            content: vec![ContentBlock::text(text)],
            source: None,
        }),
        tokens: 3,
    }
}

pub fn file(content: &str) -> FileData {
    FileData::text(content, at())
}

pub fn commit(run: &RunRecord, step: u64) -> StepCommit {
    StepCommit {
        thread_id: run.thread_id.clone(),
        step,
        messages: Vec::new(),
        files: BTreeMap::new(),
        state: None,
        pending: None,
        run: run.clone(),
        fan_in_expected: None,
        context: None,
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn pending(call_id: &str) -> PendingTools {
    PendingTools {
        calls: vec![PendingCall {
            call: ToolCall {
                id: call_id.into(),
                name: "task".into(),
                arguments: "{}".into(),
            },
            result: None,
        }],
        children: Vec::new(),
        interrupt: None,
    }
}

fn child(call_id: &str, output: &str) -> ChildResult {
    ChildResult {
        tool_call_id: call_id.into(),
        status: RunStatus::Success,
        output: output.into(),
        files: BTreeMap::new(),
        usage: Usage::default(),
    }
}

pub async fn spec_put_get(store: Arc<dyn Store>) {
    let mut spec: AgentSpec =
        serde_json::from_value(json!({"name": "researcher", "model": "replay:a.yaml"})).unwrap();
    assert_eq!(store.get_spec("researcher").await.unwrap(), None);
    store.put_spec(&spec).await.unwrap();
    assert_eq!(
        store.get_spec("researcher").await.unwrap(),
        Some(spec.clone())
    );
    spec.system_prompt = Some("Be brief.".into());
    store.put_spec(&spec).await.unwrap();
    assert_eq!(store.get_spec("researcher").await.unwrap(), Some(spec));
}

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
        files: BTreeMap::from([
            ("/keep.md".to_owned(), file("k2")),
            ("/new.md".to_owned(), file("n")),
        ]),
        state: object(json!({"todos": []})),
        pending: None,
        tokens: 12,
        context: ContextCursor::default(),
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
    assert_eq!(store.load_thread("t1").await.unwrap().published, 0);
    store.mark_published("t1", 3).await.unwrap();
    store.mark_published("t1", 1).await.unwrap();
    let thread = store.load_thread("t1").await.unwrap();
    assert_eq!((thread.step, thread.published), (0, 3));
}

fn parent_of(thread: &str, run: &str, call: &str) -> ParentLink {
    ParentLink {
        run_id: run.into(),
        thread_id: thread.into(),
        tool_call_id: call.into(),
    }
}

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

pub async fn cancel_flags(store: Arc<dyn Store>) {
    assert!(!store.cancel_requested("t1", "r1").await.unwrap());
    store.request_cancel("t1", "r1").await.unwrap();
    store.request_cancel("t1", "r1").await.unwrap();
    assert!(store.cancel_requested("t1", "r1").await.unwrap());
    assert!(!store.cancel_requested("t1", "r2").await.unwrap());
}

pub async fn batch_done_in_order(store: Arc<dyn Store>) {
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

pub async fn records_by_kind(store: Arc<dyn Store>) {
    let a = serde_json::json!({"thread_id": "a", "metadata": {"k": 1}});
    let b = serde_json::json!({"thread_id": "b"});
    assert!(store.insert_record("threads", "a", &a).await.unwrap());
    assert!(!store.insert_record("threads", "a", &b).await.unwrap());
    assert_eq!(
        store.get_record("threads", "a").await.unwrap(),
        Some(a.clone())
    );
    store.put_record("threads", "b", &b).await.unwrap();
    store.put_record("assistants", "a", &b).await.unwrap();
    let mut all = store.list_records("threads").await.unwrap();
    all.sort_by_key(|v| v["thread_id"].as_str().map(str::to_owned));
    assert_eq!(all, vec![a, b.clone()]);
    assert!(store.delete_record("threads", "a").await.unwrap());
    assert!(!store.delete_record("threads", "a").await.unwrap());
    assert_eq!(store.get_record("threads", "a").await.unwrap(), None);
    assert_eq!(store.list_records("threads").await.unwrap(), vec![b]);
    assert_eq!(
        store.list_records("nothing").await.unwrap(),
        Vec::<serde_json::Value>::new()
    );
}
