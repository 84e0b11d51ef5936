//! Lines of a batch tasks file (`deepfleet run`/`submit`), decoded as the
//! CLI decodes them and submitted as the scheduler submits them.
//!
//! Each input is a tasks file: every non-blank line is decoded as a
//! `TaskLine` and, when it decodes, submitted through a real `Intake` over
//! an embedded store, to an agent that declares a `state_schema`, with a
//! context key to seal runtime context. Checked: nothing panics; a decoded
//! line encodes back to itself; a submission fails only as an invalid
//! task, exactly when `validate_task` or `validate_seed` refuse it; an
//! accepted task's thread holds its files under their normalised paths,
//! its sealed context opens to the task's context, and its first step is
//! on the queue.

use std::sync::Arc;

use crate::json::{assert_round_trip, assert_same};
use crate::runtime::block_on;
use deepfleet_proto::{AgentSpec, TaskLine};
use deepfleet_queue::Queue;
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_scheduler::{Intake, SchedulerError, submit_task, validate_seed, validate_task};
use deepfleet_store::Store;
use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_store::sealed::ContextKey;

/// An agent whose runs may be seeded with state.
const AGENT: &str = "name: a\nmodel: openai:x\nstate_schema:\n  type: object\n  properties:\n    ticket: {type: string, maxLength: 16}\n    priority: {type: integer, minimum: 1}\n    tags: {type: array, items: {type: string}}\n";

/// Lines submitted per input at most, so one input stays fast.
const MAX_LINES: usize = 32;

/// Checks one input; a failure panics, as libFuzzer expects.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let tasks: Vec<TaskLine> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .take(MAX_LINES)
        .filter_map(|line| serde_json::from_str::<TaskLine>(line).ok())
        .collect();
    for task in &tasks {
        assert_round_trip(task);
    }
    if !tasks.is_empty() {
        block_on(submit_all(&tasks));
    }
}

async fn submit_all(tasks: &[TaskLine]) {
    let spec = AgentSpec::from_yaml(AGENT).expect("spec");
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
    let queue = Arc::new(MemoryQueue::new());
    let key = ContextKey::generate();
    let intake = Intake::new(Arc::clone(&store), Arc::clone(&queue) as Arc<dyn Queue>)
        .with_context_key(key.clone());
    intake.register(&spec).await.expect("registers");
    // A batch per line: a task id the input repeats is a new run each
    // time, not the one its batch has already.
    for (line, task) in tasks.iter().enumerate() {
        let batch = format!("b{line}");
        let expected = validate_task(task)
            .and_then(|files| validate_seed(&spec, &task.id, task.state.as_ref()).map(|_| files));
        let before = queue.depth().await.expect("depth");
        match (
            submit_task(&intake, "a", task, Some(&batch)).await,
            expected,
        ) {
            (Ok(run), Ok(files)) => {
                let thread = store.load_thread(&run.thread_id).await.expect("thread");
                let stored: Vec<(&String, &String)> =
                    thread.files.iter().map(|(p, f)| (p, &f.content)).collect();
                assert_eq!(stored, files.iter().collect::<Vec<_>>());
                let opened = run.context.as_ref().map(|c| key.open(c).expect("opens"));
                assert_same(&opened, &task.context);
                assert_eq!(
                    queue.depth().await.expect("depth"),
                    before.map(|n| n + 1),
                    "the first step is queued"
                );
            }
            (Err(SchedulerError::InvalidTask { id, .. }), Err(_)) => assert_eq!(id, task.id),
            (Err(SchedulerError::InvalidTask { id, reason }), Ok(_))
                if id == task.id && reason.starts_with("context: ") =>
            {
                assert!(task.context.is_some(), "only a context can fail to seal");
            }
            (got, expected) => panic!("submitting {task:?}: got {got:?}, expected {expected:?}"),
        }
    }
}
