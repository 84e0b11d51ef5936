//! Async subagents: `start_async_task`, `check_async_task`,
//! `cancel_async_task` and `list_async_tasks`.
//!
//! A background task is a detached child run on the fleet. Tools cannot
//! write to the store or the queue, so `start_async_task` only returns
//! [`ToolOutput::Spawn`]; the step derives the child's ids from the parent
//! run and the call id (a redelivered step starts no second child), records
//! the task in the thread's custom state under `async_tasks`, and the
//! driver creates the run after the commit. The other tools read the
//! child's run record through [`ToolCtx::store`].

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use deepfleet_proto::{ChildRun, RunRecord, RunStatus, SubagentSpec};
use deepfleet_store::Store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::{Tool, ToolCtx, ToolError, ToolOutput, ToolResult};

/// The custom state key holding the tasks, by task id.
pub const STATE_KEY: &str = "async_tasks";

/// How much of a finished task's output `check_async_task` returns.
const MAX_OUTPUT_CHARS: usize = 80_000;

/// Where a background task stands, as the model sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    /// Queued or working.
    Running,
    /// Paused for a human decision.
    Waiting,
    /// Finished with an answer.
    Success,
    /// Failed.
    Error,
    /// Cancelled by `cancel_async_task` (or by an operator).
    Cancelled,
}

impl TaskStatus {
    fn of(status: RunStatus) -> Self {
        match status {
            RunStatus::Pending | RunStatus::Running | RunStatus::Waiting => TaskStatus::Running,
            RunStatus::Interrupted => TaskStatus::Waiting,
            RunStatus::Success => TaskStatus::Success,
            RunStatus::Error => TaskStatus::Error,
            RunStatus::Cancelled => TaskStatus::Cancelled,
        }
    }

    fn label(self) -> &'static str {
        match self {
            TaskStatus::Running => "running",
            TaskStatus::Waiting => "waiting",
            TaskStatus::Success => "success",
            TaskStatus::Error => "error",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

/// One background task, as kept in the parent's `async_tasks` state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AsyncTask {
    /// The id the model uses (the child's run id).
    pub task_id: String,
    /// The subagent type.
    pub agent_name: String,
    /// The child's thread.
    pub thread_id: String,
    /// The child's run.
    pub run_id: String,
    /// The status last seen.
    pub status: TaskStatus,
    /// When it was started.
    pub created_at: DateTime<Utc>,
    /// The task: the child's only user message.
    pub description: String,
    /// The `start_async_task` call that started it.
    pub tool_call_id: String,
    /// The parent's thread step that started it, whose follow-ups create
    /// the child run.
    pub step: u64,
}

/// The child run a `start_async_task` call starts. Its ids are derived
/// from the parent run and the call, so executing the step again names
/// the same child, which the store creates only once.
pub fn spawned_child(
    parent_run_id: &str,
    call_id: &str,
    subagent: String,
    description: String,
    traceparent: Option<String>,
) -> ChildRun {
    let derive = |what: &str| {
        let name = format!("{parent_run_id}/{call_id}/{what}");
        uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, name.as_bytes()).to_string()
    };
    ChildRun {
        run_id: derive("run"),
        thread_id: derive("thread"),
        tool_call_id: call_id.to_owned(),
        subagent,
        description,
        traceparent,
        detached: true,
    }
}

/// Records the tasks thread step `step` started in the thread's state.
pub fn record_started(
    state: &Mutex<Map<String, Value>>,
    children: &[ChildRun],
    step: u64,
    now: DateTime<Utc>,
) {
    if children.is_empty() {
        return;
    }
    let started: Vec<AsyncTask> = children
        .iter()
        .map(|child| AsyncTask {
            task_id: child.run_id.clone(),
            agent_name: child.subagent.clone(),
            thread_id: child.thread_id.clone(),
            run_id: child.run_id.clone(),
            status: TaskStatus::Running,
            created_at: now,
            description: child.description.clone(),
            tool_call_id: child.tool_call_id.clone(),
            step,
        })
        .collect();
    let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
    write_tasks(&mut state, &started);
}

/// The child runs thread step `step` started, rebuilt from the state for
/// a redelivered step whose follow-ups may not have gone out (creating
/// them again is harmless: the store creates a run once).
pub fn started_at(state: &Map<String, Value>, step: u64) -> Vec<ChildRun> {
    tasks_of(state)
        .into_iter()
        .filter(|t| t.step == step)
        .map(|t| ChildRun {
            run_id: t.run_id,
            thread_id: t.thread_id,
            tool_call_id: t.tool_call_id,
            subagent: t.agent_name,
            description: t.description,
            traceparent: None,
            detached: true,
        })
        .collect()
}

/// The tasks in `state`, oldest first; entries that do not parse (state
/// written by hand) are left out.
fn tasks_of(state: &Map<String, Value>) -> Vec<AsyncTask> {
    let mut tasks: Vec<AsyncTask> = state
        .get(STATE_KEY)
        .and_then(Value::as_object)
        .map(|m| {
            m.values()
                .filter_map(|v| serde_json::from_value(v.clone()).ok())
                .collect()
        })
        .unwrap_or_default();
    tasks.sort_by(|a, b| (a.created_at, &a.task_id).cmp(&(b.created_at, &b.task_id)));
    tasks
}

/// Writes `tasks` back, keeping entries this module could not parse.
fn write_tasks(state: &mut Map<String, Value>, tasks: &[AsyncTask]) {
    let entry = state
        .entry(STATE_KEY)
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Value::Object(map) = entry {
        for task in tasks {
            if let Ok(value) = serde_json::to_value(task) {
                map.insert(task.task_id.clone(), value);
            }
        }
    }
}

fn find_task(ctx: &ToolCtx, task_id: &str) -> Result<AsyncTask, ToolError> {
    let state = ctx.state.lock().unwrap_or_else(|e| e.into_inner());
    tasks_of(&state)
        .into_iter()
        .find(|t| t.task_id == task_id)
        .ok_or_else(|| {
            ToolError::Model(format!(
                "Error: no async task with id `{task_id}`; list_async_tasks shows the known ones."
            ))
        })
}

fn store_of(ctx: &ToolCtx) -> Result<&Arc<dyn Store>, ToolError> {
    ctx.store
        .as_ref()
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

fn save_status(ctx: &ToolCtx, task_id: &str, status: TaskStatus) {
    let mut state = ctx.state.lock().unwrap_or_else(|e| e.into_inner());
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

    async fn call(&self, _ctx: &ToolCtx, args: StartArgs) -> ToolResult {
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

    async fn call(&self, ctx: &ToolCtx, args: TaskIdArgs) -> ToolResult {
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

    async fn call(&self, ctx: &ToolCtx, args: TaskIdArgs) -> ToolResult {
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

    async fn call(&self, ctx: &ToolCtx, args: ListArgs) -> ToolResult {
        let tasks = {
            let state = ctx.state.lock().unwrap_or_else(|e| e.into_inner());
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
