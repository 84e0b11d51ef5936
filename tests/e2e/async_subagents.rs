//! Async subagents: `start_async_task` returns a task id at once, the
//! parent keeps working, checks, cancels and lists its background tasks.

use deepfleet_proto::ResultStatus;

use crate::support::{replay_model, scenario, spec, task};

// The parent starts a slow task and a quick one, writes a file in the
// same turn as its first check, polls the quick one until it succeeds,
// finds the slow one by listing running tasks, cancels it, and answers
// with the full list. Each rule reads the id it needs from the previous
// tool result.
const BACKGROUND: &str = r##"
rules:
  - when: {input: '^Run the fleet$', turn: 0}
    reply:
      tool_calls:
        - {name: start_async_task, args: {subagent_type: worker, description: "Dawdle"}}
        - {name: start_async_task, args: {subagent_type: worker, description: "Say done"}}
  - when: {input: '^Run the fleet$', turn: 1, last_tool: '^(?P<id>\S+)$'}
    reply:
      tool_calls:
        - {name: write_file, args: {file_path: /notes.txt, content: 'working meanwhile'}}
        - {name: check_async_task, args: {task_id: '{{id}}'}}
  - when: {input: '^Run the fleet$', last_tool: '^Task (?P<id>\S+) is running\.$'}
    reply:
      tool_calls:
        - {name: check_async_task, args: {task_id: '{{id}}'}}
  - when: {input: '^Run the fleet$', last_tool: '^Task \S+ succeeded: done$'}
    reply:
      tool_calls:
        - {name: list_async_tasks, args: {status_filter: running}}
  - when: {input: '^Run the fleet$', last_tool: '^- (?P<id>\S+) \[running\] worker$'}
    reply:
      tool_calls:
        - {name: cancel_async_task, args: {task_id: '{{id}}'}}
  - when: {input: '^Run the fleet$', last_tool: '^Cancelled task \S+\.$'}
    reply:
      tool_calls:
        - {name: list_async_tasks, args: {status_filter: cancelled}}
  - when: {input: '^Run the fleet$', last_tool: '^- \S+ \[cancelled\] worker$'}
    reply:
      tool_calls:
        - {name: list_async_tasks, args: {}}
  - when: {input: '^Run the fleet$', last_tool: '^- '}
    reply: {text: "{{last_tool}}"}
  - when: {input: '^Dawdle$'}
    reply:
      tool_calls:
        - {name: ls, args: {path: /}}
  - when: {input: '^Say done$'}
    reply: {text: done}
"##;

const ASYNC_WORKER: &str = "limits: {max_steps: 1000}\nsubagents:\n  - {name: worker, description: Works in the background., async: true}\n";

scenario!(background_tasks_run_while_the_parent_works, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        "background",
        &replay_model(dir.path(), BACKGROUND),
        ASYNC_WORKER,
    );
    let r = &fleet
        .run(&spec, &[task("t1", "Run the fleet")])
        .await
        .unwrap()[0];
    assert_eq!(r.error, None);
    assert_eq!(r.status, ResultStatus::Success);
    let mut lines: Vec<&str> = r
        .output
        .lines()
        .map(|l| l.split_once(" [").map_or(l, |(_, rest)| rest))
        .collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        ["cancelled] worker", "success] worker"],
        "{}",
        r.output
    );
    assert_eq!(
        r.files.get("/notes.txt").map(String::as_str),
        Some("working meanwhile")
    );
});

/// A worker that died between committing a `start_async_task` step and
/// publishing its follow-ups: the redelivered step message creates the
/// background task's run (detached) and the parent's next step.
#[tokio::test]
async fn a_redelivered_step_starts_its_background_tasks() {
    use std::sync::Arc;

    use chrono::Utc;
    use deepfleet_fleet::publish_step;
    use deepfleet_proto::{Envelope, Job, RunRecord, RunStatus, StepJob};
    use deepfleet_queue::Queue;
    use deepfleet_queue::memory::MemoryQueue;
    use deepfleet_store::embedded::EmbeddedStore;
    use deepfleet_store::prelude::*;
    use deepfleet_store::{StepCommit, ThreadSeed};
    use deepfleet_testkit::runner::replay_runner;
    use deepfleet_worker::background::{record_started, spawned_child};
    use tokio_util::sync::CancellationToken;

    let queue = Arc::new(MemoryQueue::new());
    let store = Arc::new(EmbeddedStore::new());
    let spec = spec("redelivered", "replay:/nonexistent.yaml", ASYNC_WORKER);
    store.serve_spec(&spec).await.unwrap();
    let mut run = RunRecord::new("parent-run", "parent-thread", "redelivered", Utc::now());
    run.status = RunStatus::Running;
    store
        .create_run(&run, &ThreadSeed::default())
        .await
        .unwrap();
    // Step 0 committed with one task started, its follow-ups never sent.
    let child = spawned_child(
        "parent-run",
        "call_0_0",
        "worker".into(),
        "Say done".into(),
        None,
    );
    let state = std::sync::Mutex::new(serde_json::Map::new());
    record_started(&state, std::slice::from_ref(&child), 0, Utc::now());
    let commit = StepCommit {
        thread_id: "parent-thread".into(),
        step: 0,
        messages: Vec::new(),
        files: Default::default(),
        state: Some(state.into_inner().unwrap()),
        pending: None,
        run: run.clone(),
        fan_in_expected: None,
        context: None,
    };
    store.commit_step(&commit).await.unwrap();

    let job = |run_id: &str, thread_id: &str, step| StepJob {
        run_id: run_id.into(),
        thread_id: thread_id.into(),
        step,
        priority: Default::default(),
    };
    publish_step(queue.as_ref(), job("parent-run", "parent-thread", 0), None)
        .await
        .unwrap();
    let mut consumer = queue.consume(10).await.unwrap();
    let delivery = consumer.next().await.unwrap().unwrap();
    replay_runner(queue.clone(), store.clone())
        .handle(delivery, &CancellationToken::new())
        .await;

    let started = store
        .get_run(&child.thread_id, &child.run_id)
        .await
        .unwrap()
        .expect("the background task's run was created");
    assert_eq!(started.parent, None);
    assert_eq!(started.subagent.as_deref(), Some("worker"));
    let mut published = Vec::new();
    for _ in 0..2 {
        let d = consumer.next().await.unwrap().unwrap();
        let Job::Step(step) = serde_json::from_slice::<Envelope>(d.payload()).unwrap().job else {
            panic!("a step message was expected");
        };
        published.push(step);
        d.ack().await.unwrap();
    }
    assert_eq!(
        published,
        [
            job(&child.run_id, &child.thread_id, 0),
            job("parent-run", "parent-thread", 1)
        ]
    );
}
