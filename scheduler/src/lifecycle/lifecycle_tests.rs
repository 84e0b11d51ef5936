//! The lifecycle's rules over the embedded store and the in-process
//! queue: the run queue, admission under each multitask strategy, cancel
//! and delete, and the threads runs go to.

use std::sync::Arc;

use chrono::{Duration, Utc};
use deepfleet_proto::api::{self, MultitaskStrategy};
use deepfleet_proto::{AgentSpec, Message, RunStatus, TenantId};
use deepfleet_queue::Queue;
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_store::Store;
use deepfleet_store::embedded::EmbeddedStore;
use pretty_assertions::assert_eq;

use super::Lifecycle;
use super::multitask::Admission;
use crate::error::SchedulerError;
use crate::intake::Intake;
use crate::repo::runs::{RunMeta, runs_of};
use crate::repo::threads::threads;

async fn lifecycle() -> (Lifecycle, Arc<MemoryQueue>) {
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
    let queue = Arc::new(MemoryQueue::new());
    let steps: Arc<dyn Queue> = queue.clone();
    let intake = Intake::new(store, steps);
    let spec = AgentSpec::from_yaml("name: agent\nmodel: openai:x\n").unwrap();
    intake.register(&spec).await.unwrap();
    (Lifecycle::new(intake), queue)
}

fn meta(run_id: &str, thread_id: &str, age_s: i64) -> RunMeta {
    RunMeta {
        run_id: run_id.into(),
        thread_id: thread_id.into(),
        tenant: TenantId::default(),
        assistant_id: "a".into(),
        graph_id: "agent".into(),
        metadata: Default::default(),
        kwargs: Default::default(),
        multitask_strategy: MultitaskStrategy::Enqueue,
        batch_id: None,
        input: vec![Message::user(format!("from {run_id}"))],
        files: Default::default(),
        context: None,
        cancelled: false,
        not_before: None,
        rewind: None,
        priority: Default::default(),
        created_at: Utc::now() - Duration::seconds(age_s),
    }
}

/// Ends a run as its last commit does.
async fn end(life: &Lifecycle, thread_id: &str, run_id: &str) {
    set_status(life, thread_id, run_id, RunStatus::Success).await;
}

/// Commits an empty step that leaves the run at `status`.
async fn set_status(life: &Lifecycle, thread_id: &str, run_id: &str, status: RunStatus) {
    let store = life.store();
    let mut run = store.get_run(thread_id, run_id).await.unwrap().unwrap();
    run.status = status;
    let checkpoint = store.load_thread(thread_id).await.unwrap();
    let commit = deepfleet_store::StepCommit {
        thread_id: thread_id.into(),
        step: checkpoint.step,
        messages: vec![],
        files: Default::default(),
        state: None,
        pending: None,
        run,
        fan_in_expected: None,
        context: None,
    };
    store.commit_step(&commit).await.unwrap();
}

#[tokio::test]
async fn a_free_thread_starts_at_once_and_a_busy_one_queues_oldest_first() {
    let (life, queue) = lifecycle().await;
    let thread = life
        .thread_for_run(&TenantId::default(), Some("t"), true)
        .await
        .unwrap()
        .unwrap();
    life.submit(&meta("r1", "t", 3), false).await.unwrap();
    assert_eq!(queue.depth().await.unwrap(), Some(1));
    let started = life.store().load_thread("t").await.unwrap();
    let first = &started.messages[0];
    assert_eq!(
        first.tokens,
        deepfleet_fleet::tokens::count_message(&first.message),
        "tokens are counted once, at start"
    );
    let thread = threads(life.store().as_ref())
        .get(&thread.thread_id)
        .await
        .unwrap();
    assert_eq!(thread.unwrap().active_run.as_deref(), Some("r1"));
    life.submit(&meta("r3", "t", 1), true).await.unwrap();
    life.submit(&meta("r2", "t", 2), true).await.unwrap();
    let ahead: Vec<String> = life
        .queued("t")
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.run_id)
        .collect();
    assert_eq!(ahead, ["r2", "r3"]);
    assert_eq!(
        life.start_queued().await.unwrap(),
        0,
        "r1 still occupies the thread"
    );
    end(&life, "t", "r1").await;
    assert_eq!(life.start_queued().await.unwrap(), 1);
    assert!(life.store().get_run("t", "r2").await.unwrap().is_some());
    assert!(life.store().get_run("t", "r3").await.unwrap().is_none());
}

#[tokio::test]
async fn a_cancelled_queued_run_never_starts() {
    let (life, _queue) = lifecycle().await;
    life.thread_for_run(&TenantId::default(), Some("t"), true)
        .await
        .unwrap();
    life.submit(&meta("r1", "t", 2), false).await.unwrap();
    let mut waiting = meta("r2", "t", 1);
    life.submit(&waiting, true).await.unwrap();
    life.cancel(&mut waiting).await.unwrap();
    assert!(waiting.cancelled);
    let (status, _) = life.run_status(&waiting).await.unwrap();
    assert_eq!(status, api::RunStatus::Interrupted);
    assert_eq!(life.finished(&waiting).await.unwrap(), (true, None));
    end(&life, "t", "r1").await;
    assert_eq!(life.start_queued().await.unwrap(), 0);
    assert!(life.store().get_run("t", "r2").await.unwrap().is_none());
}

#[tokio::test]
async fn admission_follows_the_strategy_on_a_busy_thread() {
    let (life, _queue) = lifecycle().await;
    let thread = life
        .thread_for_run(&TenantId::default(), Some("t"), true)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        life.admit(&thread, MultitaskStrategy::Reject)
            .await
            .unwrap(),
        Admission::Start
    );
    life.submit(&meta("r1", "t", 3), false).await.unwrap();
    let thread = threads(life.store().as_ref())
        .get("t")
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(
        life.admit(&thread, MultitaskStrategy::Reject).await,
        Err(SchedulerError::ThreadBusy)
    ));
    assert_eq!(
        life.admit(&thread, MultitaskStrategy::Enqueue)
            .await
            .unwrap(),
        Admission::Queue
    );
    life.submit(&meta("r2", "t", 2), true).await.unwrap();
    assert_eq!(
        life.admit(&thread, MultitaskStrategy::Interrupt)
            .await
            .unwrap(),
        Admission::Supersede { rollback: false }
    );
    assert!(life.store().cancel_requested("t", "r1").await.unwrap());
    let runs = runs_of(life.store().as_ref(), "t");
    assert!(runs.get("r2").await.unwrap().unwrap().cancelled);
    assert!(life.queued("t").await.unwrap().is_empty());
    life.submit(&meta("r3", "t", 1), true).await.unwrap();
    assert_eq!(
        life.admit(&thread, MultitaskStrategy::Rollback)
            .await
            .unwrap(),
        Admission::Supersede { rollback: true }
    );
    assert!(runs.get("r1").await.unwrap().is_none());
    assert!(runs.get("r3").await.unwrap().is_none());
    assert!(
        runs.get("r2").await.unwrap().is_some(),
        "already cancelled, kept"
    );
}

#[tokio::test]
async fn a_running_run_is_not_deleted_and_a_deleted_thread_takes_it_along() {
    let (life, _queue) = lifecycle().await;
    let thread = life
        .thread_for_run(&TenantId::default(), Some("t"), true)
        .await
        .unwrap()
        .unwrap();
    let run = meta("r1", "t", 1);
    life.submit(&run, false).await.unwrap();
    set_status(&life, "t", "r1", RunStatus::Running).await;
    assert!(matches!(
        life.delete_run(&run).await,
        Err(SchedulerError::RunStillRunning(id)) if id == "r1"
    ));
    let thread = threads(life.store().as_ref())
        .get(&thread.thread_id)
        .await
        .unwrap()
        .unwrap();
    let in_flight = life.store().get_run("t", "r1").await.unwrap().unwrap();
    life.delete_thread(&thread).await.unwrap();
    // Cancelled, then deleted with everything the thread owns; the step
    // in flight commits into nothing.
    assert_eq!(life.store().get_run("t", "r1").await.unwrap(), None);
    assert_eq!(
        runs_of(life.store().as_ref(), "t").get("r1").await.unwrap(),
        None
    );
    let late = deepfleet_store::StepCommit {
        thread_id: "t".into(),
        step: 0,
        messages: vec![],
        files: Default::default(),
        state: None,
        pending: None,
        run: in_flight,
        fan_in_expected: None,
        context: None,
    };
    assert_eq!(
        life.store().commit_step(&late).await.unwrap(),
        deepfleet_store::CommitOutcome::Gone
    );
    assert!(
        threads(life.store().as_ref())
            .get("t")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn new_runs_go_to_their_thread_a_made_one_or_a_temporary_one() {
    let (life, _queue) = lifecycle().await;
    assert_eq!(
        life.thread_for_run(&TenantId::default(), Some("t"), false)
            .await
            .unwrap(),
        None
    );
    let made = life
        .thread_for_run(&TenantId::default(), Some("t"), true)
        .await
        .unwrap()
        .unwrap();
    assert!(!made.temporary);
    let found = life
        .thread_for_run(&TenantId::default(), Some("t"), false)
        .await
        .unwrap();
    assert_eq!(found, Some(made));
    let temporary = life
        .thread_for_run(&TenantId::default(), None, false)
        .await
        .unwrap()
        .unwrap();
    assert!(temporary.temporary);
    let stored = threads(life.store().as_ref())
        .get(&temporary.thread_id)
        .await
        .unwrap();
    assert_eq!(stored, Some(temporary));
}
