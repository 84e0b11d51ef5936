//! What a run's followers hear: one [`RunEvent`] per committed step,
//! appended by the worker to the run's event stream (a Redis Stream on a
//! fleet) right after the commit.
//!
//! An event names the commit (run, thread, step, status) and the range of
//! messages it appended, not the messages themselves: a follower reads just
//! that range, so streaming costs O(new messages) per step whatever the
//! conversation's length, and the stream stays small.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::run::RunStatus;

/// One committed step of a run, or of one of its subagents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunEvent {
    /// The run that committed (the followed run, or a subagent's run).
    pub run_id: String,
    /// Its thread, where the messages are.
    pub thread_id: String,
    /// The step committed.
    pub step: u64,
    /// The run's status after the step.
    pub status: RunStatus,
    /// Index of the first message the step appended to the thread.
    pub from: u64,
    /// The thread's message count after the step.
    pub to: u64,
    /// Empty for the followed run's own steps; `["task:<tool_call_id>"]`
    /// for the steps of the subagent that `task` call started (the Agent
    /// Server's subgraph namespace).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespace: Vec<String>,
}

impl RunEvent {
    /// The namespace of a subagent run started by `tool_call_id`.
    pub fn task_namespace(tool_call_id: &str) -> Vec<String> {
        vec![format!("task:{tool_call_id}")]
    }
}
