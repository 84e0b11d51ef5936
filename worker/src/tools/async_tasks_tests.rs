use super::*;
use crate::background::{record_started, spawned_child};
use crate::context::StepContext;
use crate::tools::DynTool;
use crate::tools::tests::ctx;
use chrono::Utc;
use deepfleet_proto::RunStatus;
use deepfleet_store::ThreadSeed;
use deepfleet_store::embedded::EmbeddedStore;
use pretty_assertions::assert_eq;

fn worker() -> SubagentSpec {
    SubagentSpec {
        name: "worker".into(),
        description: "Does things.".into(),
        run_async: true,
        ..deepfleet_proto::spec::general_purpose()
    }
}

/// A context over a fresh store, with one started task whose child run
/// exists with `status`.
async fn with_task(status: RunStatus, output: Option<&str>) -> (StepContext, AsyncTask) {
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
    let mut ctx = ctx();
    ctx.fleet_store = Some(Arc::clone(&store));
    let child = spawned_child("parent", "call_1", "worker".into(), "d".into(), None);
    record_started(&ctx.state, std::slice::from_ref(&child), 3, Utc::now());
    let mut run = RunRecord::new(&child.run_id, &child.thread_id, "agent", Utc::now());
    run.status = status;
    run.output = output.map(str::to_owned);
    store
        .create_run(&run, &ThreadSeed::default())
        .await
        .unwrap();
    let task = tasks_of(&ctx.state.lock().unwrap()).remove(0);
    (ctx, task)
}

#[tokio::test]
async fn start_spawns_a_known_type_and_refuses_others() {
    let tool = StartAsyncTask::new(&[worker()]);
    let out = tool
        .call_json(
            &ctx().tool("call_1"),
            r#"{"description": "go", "subagent_type": "worker"}"#,
        )
        .await;
    assert_eq!(
        out,
        Ok(ToolOutput::Spawn {
            subagent: "worker".into(),
            description: "go".into()
        })
    );
    let out = tool
        .call_json(
            &ctx().tool("call_1"),
            r#"{"description": "go", "subagent_type": "nope"}"#,
        )
        .await;
    assert_eq!(
        out,
        Err(ToolError::Model(
            "Error: no async subagent `nope`; the allowed types are `worker`".into()
        ))
    );
}

#[tokio::test]
async fn check_reports_running_then_the_answer() {
    let (ctx, task) = with_task(RunStatus::Running, None).await;
    let args = format!(r#"{{"task_id": "{}"}}"#, task.task_id);
    let out = CheckAsyncTask.call_json(&ctx.tool("call_1"), &args).await;
    assert_eq!(
        out,
        Ok(ToolOutput::Text(format!(
            "Task {} is running.",
            task.task_id
        )))
    );

    let (ctx, task) = with_task(RunStatus::Success, Some("all done")).await;
    let args = format!(r#"{{"task_id": "{}"}}"#, task.task_id);
    let out = CheckAsyncTask.call_json(&ctx.tool("call_1"), &args).await;
    assert_eq!(
        out,
        Ok(ToolOutput::Text(format!(
            "Task {} succeeded: all done",
            task.task_id
        )))
    );
    let saved = tasks_of(&ctx.state.lock().unwrap()).remove(0);
    assert_eq!(saved.status, TaskStatus::Success);
}

#[tokio::test]
async fn check_of_an_unknown_id_is_an_error_for_the_model() {
    let out = CheckAsyncTask
        .call_json(&ctx().tool("call_1"), r#"{"task_id": "nope"}"#)
        .await;
    assert!(matches!(out, Err(ToolError::Model(m)) if m.contains("no async task with id `nope`")));
}

#[tokio::test]
async fn cancel_raises_the_flag_and_marks_the_task() {
    let (ctx, task) = with_task(RunStatus::Running, None).await;
    let args = format!(r#"{{"task_id": "{}"}}"#, task.task_id);
    let out = CancelAsyncTask.call_json(&ctx.tool("call_1"), &args).await;
    assert_eq!(
        out,
        Ok(ToolOutput::Text(format!(
            "Cancelled task {}.",
            task.task_id
        )))
    );
    let store = ctx.fleet_store.clone().unwrap();
    assert!(
        store
            .cancel_requested(&task.thread_id, &task.run_id)
            .await
            .unwrap()
    );
    let out = CheckAsyncTask.call_json(&ctx.tool("call_1"), &args).await;
    assert_eq!(
        out,
        Ok(ToolOutput::Text(format!(
            "Task {} is cancelled.",
            task.task_id
        )))
    );
}

#[tokio::test]
async fn cancel_of_a_finished_task_changes_nothing() {
    let (ctx, task) = with_task(RunStatus::Success, Some("x")).await;
    let args = format!(r#"{{"task_id": "{}"}}"#, task.task_id);
    let out = CancelAsyncTask.call_json(&ctx.tool("call_1"), &args).await;
    assert_eq!(
        out,
        Ok(ToolOutput::Text(format!(
            "Task {} already ended (success); nothing to cancel.",
            task.task_id
        )))
    );
    let store = ctx.fleet_store.clone().unwrap();
    assert!(
        !store
            .cancel_requested(&task.thread_id, &task.run_id)
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn list_filters_by_fresh_status() {
    let (ctx, task) = with_task(RunStatus::Error, None).await;
    let line = format!("- {} [error] worker", task.task_id);
    let all = ListAsyncTasks.call_json(&ctx.tool("call_1"), "{}").await;
    assert_eq!(all, Ok(ToolOutput::Text(line.clone())));
    let errors = ListAsyncTasks
        .call_json(&ctx.tool("call_1"), r#"{"status_filter": "error"}"#)
        .await;
    assert_eq!(errors, Ok(ToolOutput::Text(line)));
    let running = ListAsyncTasks
        .call_json(&ctx.tool("call_1"), r#"{"status_filter": "running"}"#)
        .await;
    assert_eq!(
        running,
        Ok(ToolOutput::Text("No async tasks match.".into()))
    );
    let bad = ListAsyncTasks
        .call_json(&ctx.tool("call_1"), r#"{"status_filter": "sideways"}"#)
        .await;
    assert!(matches!(bad, Err(ToolError::Model(_))));
}
