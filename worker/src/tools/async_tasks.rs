//! Async subagents: `start_async_task`, `check_async_task`,
//! `cancel_async_task` and `list_async_tasks`.
//!
//! A background task is a detached child run on the fleet. Tools cannot
//! write to the store or the queue, so `start_async_task` only returns
//! [`ToolOutput::Spawn`]; the step turns it into a child run and records
//! the task in the thread's custom state (the ledger of
//! [`crate::background`]), and the driver creates the run after the
//! commit. The other tools read the child's run record through
//! [`ToolView::fleet_store`].

use std::sync::Arc;

use async_trait::async_trait;
use deepfleet_proto::{RunRecord, SubagentSpec};
use deepfleet_store::Store;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::background::{AsyncTask, TaskStatus, tasks_of, write_tasks};
use crate::context::ToolView;
use crate::tools::{Tool, ToolError, ToolOutput, ToolResult};

/// How much of a finished task's output `check_async_task` returns.
const MAX_OUTPUT_CHARS: usize = 80_000;

fn find_task(ctx: &ToolView<'_>, task_id: &str) -> Result<AsyncTask, ToolError> {
    let state = ctx.state().lock().unwrap_or_else(|e| e.into_inner());
    tasks_of(&state)
        .into_iter()
        .find(|t| t.task_id == task_id)
        .ok_or_else(|| {
            ToolError::Model(format!(
                "Error: no async task with id `{task_id}`; list_async_tasks shows the known ones."
            ))
        })
}

fn store_of<'a>(ctx: &ToolView<'a>) -> Result<&'a Arc<dyn Store>, ToolError> {
    ctx.fleet_store()
        .ok_or_else(|| ToolError::Fatal("async task tools need the fleet store".to_owned()))
}

async fn run_of(store: &dyn Store, task: &AsyncTask) -> Result<RunRecord, ToolError> {
    store
        .get_run(&task.thread_id, &task.run_id)
        .await
        .map_err(|e| ToolError::Fatal(format!("reading async task {}: {e}", task.task_id)))?
        // Created after the step that started it commits: not there yet.
        .ok_or_else(|| ToolError::Model(format!("Task {} is running.", task.task_id)))
}

/// The status to report: a cancel the model asked for sticks until the
/// child's own record says it ended otherwise.
fn refreshed(task: &AsyncTask, run: &RunRecord) -> TaskStatus {
    match TaskStatus::of(run.status) {
        TaskStatus::Running if task.status == TaskStatus::Cancelled => TaskStatus::Cancelled,
        status => status,
    }
}

fn save_status(ctx: &ToolView<'_>, task_id: &str, status: TaskStatus) {
    let mut state = ctx.state().lock().unwrap_or_else(|e| e.into_inner());
    let mut tasks = tasks_of(&state);
    for task in tasks.iter_mut().filter(|t| t.task_id == task_id) {
        task.status = status;
    }
    write_tasks(&mut state, &tasks);
}

fn allowed_names(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `start_async_task` over the async subagents.
pub struct StartAsyncTask {
    names: Vec<String>,
    description: String,
}

/// Arguments of `start_async_task`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartArgs {
    /// Everything the subagent needs; it sees nothing else of this
    /// conversation.
    pub description: String,
    /// Which async subagent type to use.
    pub subagent_type: String,
}

impl StartAsyncTask {
    /// The tool offering `subagents`.
    pub fn new(subagents: &[SubagentSpec]) -> Self {
        let mut description = String::from(
            "Start a subagent in the background and get its task id at once; you keep \
             working while it runs. Use check_async_task with the id to get its answer later. \
             Put all instructions in `description`.\n\nAvailable async agent types:",
        );
        for sub in subagents {
            description.push_str(&format!("\n- {}: {}", sub.name, sub.description));
        }
        StartAsyncTask {
            names: subagents.iter().map(|s| s.name.clone()).collect(),
            description,
        }
    }
}

#[async_trait]
impl Tool for StartAsyncTask {
    const NAME: &'static str = "start_async_task";
    type Args = StartArgs;

    fn description(&self) -> String {
        self.description.clone()
    }

    async fn call(&self, _ctx: &ToolView<'_>, args: StartArgs) -> ToolResult {
        if !self.names.contains(&args.subagent_type) {
            return Err(ToolError::Model(format!(
                "Error: no async subagent `{}`; the allowed types are {}",
                args.subagent_type,
                allowed_names(&self.names)
            )));
        }
        Ok(ToolOutput::Spawn {
            subagent: args.subagent_type,
            description: args.description,
        })
    }
}

/// Arguments of the tools that name one task.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskIdArgs {
    /// The id `start_async_task` returned.
    pub task_id: String,
}

/// `check_async_task`: a task's status, and its answer once it finished.
pub struct CheckAsyncTask;

#[async_trait]
impl Tool for CheckAsyncTask {
    const NAME: &'static str = "check_async_task";
    type Args = TaskIdArgs;

    fn description(&self) -> String {
        "Check a background task started with start_async_task: its status, and its final \
         answer once it finished."
            .to_owned()
    }

    async fn call(&self, ctx: &ToolView<'_>, args: TaskIdArgs) -> ToolResult {
        let task = find_task(ctx, &args.task_id)?;
        let run = match run_of(store_of(ctx)?.as_ref(), &task).await {
            Err(ToolError::Model(text)) => return Ok(ToolOutput::Text(text)),
            other => other?,
        };
        let status = refreshed(&task, &run);
        save_status(ctx, &task.task_id, status);
        let id = &task.task_id;
        let text = match status {
            TaskStatus::Success => {
                let output = run.output.unwrap_or_default();
                let clipped: String = output.chars().take(MAX_OUTPUT_CHARS).collect();
                format!("Task {id} succeeded: {clipped}")
            }
            TaskStatus::Error => match run.error {
                Some(e) => format!("Task {id} failed ({}): {}", e.code, e.message),
                None => format!("Task {id} failed."),
            },
            other => format!("Task {id} is {}.", other.label()),
        };
        Ok(ToolOutput::Text(text))
    }
}

/// `cancel_async_task`: raises the child's cancel flag.
pub struct CancelAsyncTask;

#[async_trait]
impl Tool for CancelAsyncTask {
    const NAME: &'static str = "cancel_async_task";
    type Args = TaskIdArgs;

    fn description(&self) -> String {
        "Cancel a background task started with start_async_task; it stops at its next step."
            .to_owned()
    }

    async fn call(&self, ctx: &ToolView<'_>, args: TaskIdArgs) -> ToolResult {
        let task = find_task(ctx, &args.task_id)?;
        let store = store_of(ctx)?;
        if let Ok(run) = run_of(store.as_ref(), &task).await
            && run.status.is_terminal()
        {
            let status = refreshed(&task, &run);
            save_status(ctx, &task.task_id, status);
            return Ok(ToolOutput::Text(format!(
                "Task {} already ended ({}); nothing to cancel.",
                task.task_id,
                status.label()
            )));
        }
        store
            .request_cancel(&task.thread_id, &task.run_id)
            .await
            .map_err(|e| ToolError::Fatal(format!("cancelling task {}: {e}", task.task_id)))?;
        save_status(ctx, &task.task_id, TaskStatus::Cancelled);
        Ok(ToolOutput::Text(format!(
            "Cancelled task {}.",
            task.task_id
        )))
    }
}

/// `list_async_tasks`: the thread's background tasks with fresh statuses.
pub struct ListAsyncTasks;

/// Which tasks `list_async_tasks` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StatusFilter {
    /// Every task.
    #[default]
    All,
    /// Queued or working.
    Running,
    /// Paused for a human decision.
    Waiting,
    /// Finished with an answer.
    Success,
    /// Failed.
    Error,
    /// Cancelled.
    Cancelled,
}

impl StatusFilter {
    fn admits(self, status: TaskStatus) -> bool {
        match self {
            StatusFilter::All => true,
            StatusFilter::Running => status == TaskStatus::Running,
            StatusFilter::Waiting => status == TaskStatus::Waiting,
            StatusFilter::Success => status == TaskStatus::Success,
            StatusFilter::Error => status == TaskStatus::Error,
            StatusFilter::Cancelled => status == TaskStatus::Cancelled,
        }
    }
}

/// Arguments of `list_async_tasks`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Only tasks with this status; all of them when absent.
    #[serde(default)]
    pub status_filter: StatusFilter,
}

#[async_trait]
impl Tool for ListAsyncTasks {
    const NAME: &'static str = "list_async_tasks";
    type Args = ListArgs;

    fn description(&self) -> String {
        "List the background tasks of this conversation with their current status, \
         optionally only those with one status."
            .to_owned()
    }

    async fn call(&self, ctx: &ToolView<'_>, args: ListArgs) -> ToolResult {
        let tasks = {
            let state = ctx.state().lock().unwrap_or_else(|e| e.into_inner());
            tasks_of(&state)
        };
        let store = store_of(ctx)?;
        let mut lines = Vec::new();
        for task in tasks {
            let status = match run_of(store.as_ref(), &task).await {
                Ok(run) => refreshed(&task, &run),
                Err(ToolError::Model(_)) => task.status,
                Err(fatal) => return Err(fatal),
            };
            if status != task.status {
                save_status(ctx, &task.task_id, status);
            }
            if args.status_filter.admits(status) {
                lines.push(format!(
                    "- {} [{}] {}",
                    task.task_id,
                    status.label(),
                    task.agent_name
                ));
            }
        }
        if lines.is_empty() {
            return Ok(ToolOutput::Text("No async tasks match.".to_owned()));
        }
        Ok(ToolOutput::Text(lines.join("\n")))
    }
}

#[cfg(test)]
#[path = "async_tasks_tests.rs"]
mod tests;
