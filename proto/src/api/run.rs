//! Runs: what creates one, the Run resource and the query strings of the
//! run routes.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::search::PageLimit;
use crate::hitl::Decision;

/// The body of every run-creating request (`/threads/{id}/runs`, `/runs`,
/// their `/wait` and `/stream` forms, and each entry of `/runs/batch`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunCreateParams {
    /// An assistant id or a graph name.
    pub assistant_id: String,
    /// `{"messages": [...], "files"?: {...}}`.
    #[serde(default)]
    pub input: Option<Value>,
    /// Resumes the thread's interrupted run instead of starting one.
    #[serde(default)]
    pub command: Option<RunCommand>,
    /// Caller metadata.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// `{configurable?, tags?, recursion_limit?}`.
    #[serde(default)]
    pub config: Option<Value>,
    /// Runtime context.
    #[serde(default)]
    pub context: Option<Value>,
    /// What to do when the thread is busy (default `enqueue`).
    #[serde(default)]
    pub multitask_strategy: Option<MultitaskStrategy>,
    /// `create` makes a missing thread; `reject` (the default) answers 404;
    /// anything else is refused (422).
    #[serde(default)]
    pub if_not_exists: Option<String>,
    /// Stream modes for `/stream` (default `values`).
    #[serde(default)]
    pub stream_mode: Option<StreamMode>,
    /// Namespaced subagent events.
    #[serde(default)]
    pub stream_subgraphs: Option<bool>,
    /// `interactive` (the default for a single run) serves the run ahead
    /// of batch runs; `batch` (the default in `/runs/batch`) queues it
    /// with them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<crate::Priority>,
    /// Every other field, echoed in the run's `kwargs`.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// A run request's `command`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunCommand {
    /// The human's answer to the pending interrupt (see
    /// [`ResumeDecisions`]).
    #[serde(default)]
    pub resume: Option<Value>,
    /// Values written to the thread before the run goes on, as
    /// `update_state` takes them.
    #[serde(default)]
    pub update: Option<Value>,
    /// Node to go to (refused: a deep agent has no nodes to name).
    #[serde(default)]
    pub goto: Option<Value>,
}

/// A resume value: `{"decisions": [...]}`, also found under the
/// interrupt's id (`{"<id>": {"decisions": [...]}}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResumeDecisions {
    /// One decision per action request, in order.
    pub decisions: Vec<Decision>,
}

/// Multitask strategies ("double texting"): what a new run on a thread
/// does when the thread already has a run in flight.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MultitaskStrategy {
    /// Refuse with 409 while the thread is busy.
    Reject,
    /// Wait for the runs ahead (the server default).
    #[default]
    Enqueue,
    /// Cancel the runs ahead, keeping their work, then run.
    Interrupt,
    /// Cancel the runs ahead and drop them from the thread's run list.
    Rollback,
}

impl MultitaskStrategy {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            MultitaskStrategy::Reject => "reject",
            MultitaskStrategy::Enqueue => "enqueue",
            MultitaskStrategy::Interrupt => "interrupt",
            MultitaskStrategy::Rollback => "rollback",
        }
    }
}

/// `stream_mode`: one mode or a list of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum StreamMode {
    /// One mode (`values`, `updates`, `messages`, `messages-tuple`, ...).
    One(String),
    /// Several modes.
    Many(Vec<String>),
}

impl StreamMode {
    /// The mode names.
    pub fn names(&self) -> Vec<&str> {
        match self {
            StreamMode::One(name) => vec![name.as_str()],
            StreamMode::Many(names) => names.iter().map(String::as_str).collect(),
        }
    }
}

/// The status of a run as the API reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Accepted, not started (queued behind its thread's run).
    Pending,
    /// Taking steps, or parked on subagents.
    Running,
    /// Finished, or parked on a human decision (its thread shows
    /// `interrupted`).
    Success,
    /// Finished with an error.
    Error,
    /// Cancelled.
    Interrupted,
    /// Stopped at its deadline.
    Timeout,
}

impl RunStatus {
    /// Every status, in the order batch counts list them.
    pub const ALL: [RunStatus; 6] = [
        RunStatus::Pending,
        RunStatus::Running,
        RunStatus::Success,
        RunStatus::Error,
        RunStatus::Interrupted,
        RunStatus::Timeout,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Pending => "pending",
            RunStatus::Running => "running",
            RunStatus::Success => "success",
            RunStatus::Error => "error",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Timeout => "timeout",
        }
    }
}

/// The Run resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Run {
    /// The run.
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
    /// The assistant it runs.
    pub assistant_id: String,
    /// When it was accepted.
    pub created_at: DateTime<Utc>,
    /// When its record last changed.
    pub updated_at: DateTime<Utc>,
    /// Where it is.
    pub status: RunStatus,
    /// Caller metadata (with `assistant_id`, and `batch_id` in a batch).
    pub metadata: Map<String, Value>,
    /// The request's arguments (`input`, `config` without `configurable`,
    /// `stream_mode`, and any others), never its context.
    pub kwargs: Map<String, Value>,
    /// The strategy it was created with.
    pub multitask_strategy: MultitaskStrategy,
    /// What it cost so far in dollars, its subagents and summaries
    /// included (deepfleet's, beside the Agent Server's fields); absent
    /// before it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// What a run's webhook receives when the run ends (as the Agent
/// Server's webhooks send it): the Run resource, with the thread's values
/// or the failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunWebhook {
    /// The run, with its final status.
    #[serde(flatten)]
    pub run: Run,
    /// The thread's values at the end (as `/wait` answers them); absent
    /// when the run failed or the values are too large to send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Value>,
    /// Why the run failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::api::RunFailure>,
}

/// `GET /threads/{id}/runs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunListQuery {
    /// At most this many (default 10).
    #[serde(default)]
    pub limit: Option<PageLimit>,
    /// Skipped first.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Only runs with this status.
    #[serde(default)]
    pub status: Option<String>,
}

/// `POST /threads/{id}/runs/{run_id}/cancel`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunCancelQuery {
    /// `1`/`true` waits for the run to stop (the SDK sends numbers).
    #[serde(default)]
    pub wait: Option<String>,
    /// `interrupt` (default) or `rollback` (also drop the run).
    #[serde(default)]
    pub action: Option<String>,
}

/// `POST /runs/cancel`: the runs to cancel, by thread, by id or by
/// status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunCancelManyParams {
    /// Only this thread's runs (all of them when no ids are given).
    #[serde(default)]
    pub thread_id: Option<String>,
    /// These runs (of `thread_id` when given).
    #[serde(default)]
    pub run_ids: Option<Vec<String>>,
    /// Only runs in this status (default `all`: pending or running).
    #[serde(default)]
    pub status: Option<CancelStatus>,
    /// `interrupt` (default) or `rollback`, when the query names none.
    #[serde(default)]
    pub action: Option<String>,
}

/// The query of `POST /runs/cancel`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunCancelManyQuery {
    /// `interrupt` (default) or `rollback` (also drop the runs).
    #[serde(default)]
    pub action: Option<String>,
}

/// Which runs `POST /runs/cancel` cancels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CancelStatus {
    /// Runs that have not started.
    Pending,
    /// Runs that have started and not ended.
    Running,
    /// Both.
    #[default]
    All,
}

impl CancelStatus {
    /// Whether a run in `status` is one of these.
    pub fn takes(self, status: RunStatus) -> bool {
        match self {
            CancelStatus::Pending => status == RunStatus::Pending,
            CancelStatus::Running => status == RunStatus::Running,
            CancelStatus::All => matches!(status, RunStatus::Pending | RunStatus::Running),
        }
    }
}

/// `GET /threads/{id}/runs/{run_id}/stream`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunStreamQuery {
    /// One stream mode (default `values`).
    #[serde(default)]
    pub stream_mode: Option<String>,
    /// `true`/`1` adds the subagents' events.
    #[serde(default)]
    pub stream_subgraphs: Option<String>,
    /// `true`/`1`: the run is cancelled when this client goes away
    /// before it ends (a join stream only; default `false`).
    #[serde(default)]
    pub cancel_on_disconnect: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn strategies_parse_with_enqueue_default() {
        let parse = |v: Value| serde_json::from_value::<RunCreateParams>(v);
        let plain = parse(json!({"assistant_id": "a"})).unwrap();
        assert_eq!(
            plain.multitask_strategy.unwrap_or_default(),
            MultitaskStrategy::Enqueue
        );
        let rollback = parse(json!({"assistant_id": "a", "multitask_strategy": "rollback"}));
        assert_eq!(
            rollback
                .unwrap()
                .multitask_strategy
                .map(MultitaskStrategy::as_str),
            Some("rollback")
        );
        assert!(parse(json!({"assistant_id": "a", "multitask_strategy": "later"})).is_err());
    }

    #[test]
    fn unknown_fields_are_kept_for_kwargs_and_modes_take_both_shapes() {
        let body: RunCreateParams = serde_json::from_value(json!({
            "assistant_id": "a", "webhook": "w", "stream_mode": ["values", "updates"],
        }))
        .unwrap();
        assert_eq!(
            body.rest,
            json!({"webhook": "w"}).as_object().cloned().unwrap()
        );
        assert_eq!(
            body.stream_mode.as_ref().map(StreamMode::names),
            Some(vec!["values", "updates"])
        );
        assert_eq!(StreamMode::One("values".into()).names(), vec!["values"]);
        assert_eq!(
            serde_json::to_value(&body.stream_mode).unwrap(),
            json!(["values", "updates"])
        );
    }

    #[test]
    fn statuses_have_their_wire_names() {
        for status in RunStatus::ALL {
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                json!(status.as_str())
            );
        }
    }
}
