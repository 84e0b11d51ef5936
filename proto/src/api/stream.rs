//! The payloads of a run's server-sent events (reference §1.6) beside the
//! messages themselves.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::message::MessageDict;

/// The data of the first event of every stream (`metadata`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StreamMetadata {
    /// The followed run.
    pub run_id: String,
    /// Always 1: runs are not retried as new attempts.
    pub attempt: u32,
}

/// What a streamed message came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EventMetadata {
    /// The run that wrote it.
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
    /// The deepagents graph node (`model`, `tools`,
    /// `SummarizationMiddleware.before_model`).
    pub langgraph_node: String,
    /// `summarization` for a summary, so a UI can keep it apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lc_source: Option<String>,
    /// A subagent's namespace (`task:<tool_call_id>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub langgraph_checkpoint_ns: Option<String>,
}

/// The value of a `messages/metadata` event, keyed by message id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MessageMetadata {
    /// Where the message came from.
    pub metadata: EventMetadata,
}

/// The value of an `updates` event, keyed by node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NodeUpdate {
    /// The node's new messages.
    pub messages: Vec<MessageDict>,
}
