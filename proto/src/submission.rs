//! The submission queue's contract: a JSON message another service
//! publishes to start a run, and the answer it gets when the run ends, or
//! when the message is refused and no run starts.
//!
//! The AMQP properties carry the addressing: `reply_to` names the queue
//! the answer goes to and `correlation_id` is echoed on it (see
//! `docs/queue-intake.md`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::batch::ResultLine;

/// One message on the submission queue: a run to start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Submission {
    /// The caller's id for this job, echoed as the answer's `id` (the run
    /// id when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The assistant to run: an assistant id, or a graph id (an agent spec
    /// name) for its system assistant.
    #[serde(alias = "graph_id")]
    pub assistant_id: String,
    /// What the run starts with.
    pub input: SubmissionInput,
    /// Runtime context for the run (sealed before it is stored or queued),
    /// merged over the assistant's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Map<String, Value>>,
    /// Text files seeded into the thread's state backend, by absolute path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<BTreeMap<String, String>>,
    /// Run on this thread (created when missing) so a later submission
    /// continues the conversation; a fresh thread when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// Caller metadata, kept on the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// `interactive` serves the run ahead of batch runs (someone waits for
    /// it); `batch` by default.
    #[serde(default, skip_serializing_if = "crate::Priority::is_batch")]
    pub priority: crate::Priority,
    /// An `http`/`https` URL the run's Run resource is POSTed to, signed,
    /// when it ends (as the HTTP API's `webhook`; see `docs/webhooks.md`),
    /// beside the answer on the reply queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
}

/// A submission's input: a user message's text, or the HTTP API's input
/// object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SubmissionInput {
    /// One user message.
    Text(String),
    /// `{"messages": [...]}`, messages as the Agent Server API takes them
    /// (strings, or `{"role"|"type": "user"|"human", "content": ...}`).
    Messages {
        /// The messages appended to the thread.
        messages: Vec<Value>,
    },
}

/// The answer published when a submitted run ends (or parks on a human
/// decision): the batch result line plus where the run lives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubmissionResult {
    /// The run.
    pub run_id: String,
    /// Its thread: submit again with this `thread_id` to continue.
    pub thread_id: String,
    /// The result, `id` being the submission's `id` (or the run id).
    #[serde(flatten)]
    pub result: ResultLine,
}

/// The answer published when a submission is refused (and dead-lettered):
/// no run was started, and `error` says why, as the dead letter's
/// `x-deepfleet-reason` header does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmissionRefusal {
    /// The submission's `id`, when the message had one that could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Always `refused`: what tells this answer from a run's.
    pub status: RefusalStatus,
    /// A stable code: `invalid_submission` (not a valid submission),
    /// `reserved_reply_to` (`reply_to` names one of the fleet's own
    /// queues), or the HTTP API's error code (`not_found`,
    /// `invalid_request`, ...).
    pub code: String,
    /// Why: the same text as the dead letter's `x-deepfleet-reason`.
    pub error: String,
}

/// The status of a [`SubmissionRefusal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefusalStatus {
    /// The submission started no run.
    Refused,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_input_shapes_parse() {
        let text: Submission =
            serde_json::from_value(json!({"graph_id": "helper", "input": "hi"})).unwrap();
        assert_eq!(text.assistant_id, "helper");
        assert_eq!(text.input, SubmissionInput::Text("hi".into()));
        let messages: Submission = serde_json::from_value(json!({
            "assistant_id": "a", "input": {"messages": [{"role": "user", "content": "hi"}]}
        }))
        .unwrap();
        assert!(matches!(messages.input, SubmissionInput::Messages { .. }));
    }

    #[test]
    fn a_refusal_reads_as_refused_with_its_code() {
        let refusal = SubmissionRefusal {
            id: Some("job-1".into()),
            status: RefusalStatus::Refused,
            code: "not_found".into(),
            error: "not_found: Assistant 'x' not found.".into(),
        };
        let value = serde_json::to_value(&refusal).unwrap();
        assert_eq!(
            value,
            json!({"id": "job-1", "status": "refused", "code": "not_found",
                   "error": "not_found: Assistant 'x' not found."})
        );
        assert_eq!(
            serde_json::from_value::<SubmissionRefusal>(value).unwrap(),
            refusal
        );
    }

    #[test]
    fn unknown_fields_and_missing_input_are_refused() {
        let typo = serde_json::from_value::<Submission>(
            json!({"assistant_id": "a", "input": "x", "thread": "t"}),
        );
        assert!(typo.unwrap_err().to_string().contains("unknown field"));
        let missing = serde_json::from_value::<Submission>(json!({"assistant_id": "a"}));
        assert!(missing.unwrap_err().to_string().contains("input"));
    }
}
