//! What a thread's checkpoint holds: the message log, files, custom state
//! and the tool calls a parked run is waiting on.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::message::{Message, ToolCall, ToolMessage};

/// A file in the state backend (deepagents' "v2" file format).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileData {
    /// The content: text, or base64 for binary files.
    pub content: String,
    /// How `content` is encoded.
    #[serde(default)]
    pub encoding: Encoding,
    /// When the file was first written.
    pub created_at: DateTime<Utc>,
    /// When the file last changed.
    pub modified_at: DateTime<Utc>,
}

/// Encoding of [`FileData::content`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Encoding {
    /// Text.
    #[default]
    #[serde(rename = "utf-8")]
    Utf8,
    /// Binary, base64-encoded.
    #[serde(rename = "base64")]
    Base64,
}

impl FileData {
    /// A new text file stamped `now`.
    pub fn text(content: impl Into<String>, now: DateTime<Utc>) -> Self {
        FileData {
            content: content.into(),
            encoding: Encoding::Utf8,
            created_at: now,
            modified_at: now,
        }
    }
}

/// One entry of a thread's append-only message log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoggedMessage {
    /// The message.
    #[serde(rename = "m")]
    pub message: Message,
    /// Its token count, computed once when it was appended.
    #[serde(rename = "t")]
    pub tokens: u32,
}

/// Tool calls of the last model turn that a parked run still waits on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PendingTools {
    /// Every call of the turn, in the model's order, with the results known
    /// so far.
    pub calls: Vec<PendingCall>,
    /// Subagent runs started by `task` calls of the turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ChildRun>,
}

/// One tool call of a parked turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PendingCall {
    /// The call.
    pub call: ToolCall,
    /// Its result, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ToolMessage>,
}

/// A subagent run started by a `task` call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChildRun {
    /// The child run.
    pub run_id: String,
    /// The child's fresh thread.
    pub thread_id: String,
    /// The `task` call it answers.
    pub tool_call_id: String,
    /// The subagent type.
    pub subagent: String,
    /// The task description: the child's only user message.
    pub description: String,
}
