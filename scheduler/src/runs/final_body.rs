//! What an ended run answers: its thread's values (with the pending
//! interrupt while a human decides), or why it failed. `/wait`, `/join`,
//! webhooks, A2A and MCP all answer this.

use deepfleet_proto::RunStatus;
use deepfleet_proto::api::{RunFailure, WaitErrorResponse};
use serde_json::Value;

use super::Runs;
use super::error::RunsError;
use crate::convert::{interrupts, thread_values, to_json};
use crate::repo::runs::RunMeta;

/// What an ended run answers.
pub enum FinalBody {
    /// The thread's values (with `__interrupt__` while a human decides).
    Values(Value),
    /// The run failed.
    Failed(RunFailure),
}

impl FinalBody {
    /// The `/wait` body.
    pub fn to_json(&self) -> Value {
        match self {
            FinalBody::Values(values) => values.clone(),
            FinalBody::Failed(failure) => to_json(&WaitErrorResponse {
                error: failure.clone(),
            }),
        }
    }
}

/// The answer of an ended run.
pub async fn final_body(runs: &Runs, meta: &RunMeta) -> Result<FinalBody, RunsError> {
    let run = runs.life.run_record(meta).await?;
    if let Some(run) = &run
        && run.status == RunStatus::Error
    {
        let (code, message) = run
            .error
            .as_ref()
            .map(|e| (e.code.as_str(), e.message.clone()))
            .unwrap_or(("internal", "the run failed".into()));
        return Ok(FinalBody::Failed(RunFailure {
            error: code.to_owned(),
            message,
        }));
    }
    let checkpoint = runs.store().load_thread(&meta.thread_id).await?;
    let mut values = thread_values(&meta.thread_id, &checkpoint);
    if run.is_some_and(|r| r.status == RunStatus::AwaitingHuman)
        && let Some(pending) = interrupts(&checkpoint, &meta.run_id)
        && let Some(map) = values.as_object_mut()
    {
        map.insert("__interrupt__".into(), to_json(&pending));
    }
    Ok(FinalBody::Values(values))
}
