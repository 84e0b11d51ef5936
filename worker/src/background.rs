//! Background-task bookkeeping for async subagents.
//!
//! A `start_async_task` call starts a detached child run. Its ids are
//! derived from the parent run and the call ([`spawned_child`]), so a step
//! executed twice names the same child, which the store creates once. The
//! step records each task in the thread's custom state under
//! [`STATE_KEY`] with the step that started it ([`record_started`]); a
//! step redelivered after its commit rebuilds the children from there
//! ([`started_at`]) and creates them again with the run's follow-ups. The
//! async task tools (`tools/async_tasks.rs`) read and update the same
//! ledger, so it lies below both.

use std::sync::Mutex;

use chrono::{DateTime, Utc};
use deepfleet_proto::{ChildRun, RunStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The custom state key holding the tasks, by task id.
pub const STATE_KEY: &str = "async_tasks";

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
    /// The task status of a child run in `status`.
    pub fn of(status: RunStatus) -> Self {
        match status {
            RunStatus::Pending | RunStatus::Running | RunStatus::Waiting => TaskStatus::Running,
            RunStatus::AwaitingHuman => TaskStatus::Waiting,
            RunStatus::Success => TaskStatus::Success,
            // A task past its deadline failed, as far as its model knows.
            RunStatus::Error | RunStatus::Timeout => TaskStatus::Error,
            RunStatus::Cancelled => TaskStatus::Cancelled,
        }
    }

    /// The status as the model reads it.
    pub fn label(self) -> &'static str {
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
        run_budget: 0,
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
            // The share the first delivery handed it is not in the ledger;
            // a child created only now starts no runs of its own.
            run_budget: 0,
        })
        .collect()
}

/// The tasks in `state`, oldest first; entries that do not parse (state
/// written by hand) are left out.
pub fn tasks_of(state: &Map<String, Value>) -> Vec<AsyncTask> {
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
pub fn write_tasks(state: &mut Map<String, Value>, tasks: &[AsyncTask]) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::{assert_eq, assert_ne};

    #[test]
    fn child_ids_follow_from_the_parent_run_and_the_call() {
        let a = spawned_child("run", "call_1", "w".into(), "d".into(), None);
        let again = spawned_child("run", "call_1", "w".into(), "d".into(), None);
        let other = spawned_child("run", "call_2", "w".into(), "d".into(), None);
        assert_eq!(a, again);
        assert_ne!(a.run_id, other.run_id);
        assert_ne!(a.run_id, a.thread_id);
        assert!(a.detached);
    }

    #[test]
    fn a_redelivered_step_rebuilds_the_children_it_started() {
        let state = Mutex::new(Map::new());
        let first = spawned_child("run", "call_1", "w".into(), "one".into(), None);
        let second = spawned_child("run", "call_9", "w".into(), "two".into(), None);
        record_started(&state, std::slice::from_ref(&first), 2, Utc::now());
        record_started(&state, std::slice::from_ref(&second), 5, Utc::now());
        let state = state.into_inner().unwrap();
        assert_eq!(started_at(&state, 2), vec![first]);
        assert_eq!(started_at(&state, 5), vec![second]);
        assert!(started_at(&state, 3).is_empty());
    }
}
