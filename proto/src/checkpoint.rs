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
    /// Set when the turn waits for a reviewer (`interrupt_on`): no call of
    /// the turn has run yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupt: Option<crate::hitl::Interrupt>,
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
    /// W3C trace context of the `task` call's span: the child run's parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// Started by `start_async_task`: the parent does not wait for it and
    /// its end reports to no one; its record answers `check_async_task`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub detached: bool,
    /// Runs the child may start below it: its share of the parent's run
    /// budget.
    #[serde(default)]
    pub run_budget: u32,
}

/// What context compression has done to a thread's log, without rewriting
/// it: the model sees `[summary, log[cutoff..]]`, with evicted messages
/// shown as their stubs. Stored in the thread meta and written only when a
/// step changes it, so a step's writes stay proportional to what it added.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContextCursor {
    /// The latest summary; each one covers everything before its cutoff,
    /// earlier summaries included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<SummaryEvent>,
    /// Oversized user messages shown to the model as a file reference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evicted: Vec<EvictedMessage>,
}

/// One summarization of a thread's older messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SummaryEvent {
    /// Log index of the first message kept verbatim; everything before it
    /// is represented by `message`.
    pub cutoff: u64,
    /// The summary as the model sees it (a user message with
    /// `source: summarization`), with its token count.
    pub message: LoggedMessage,
    /// The file the summarized messages were appended to, when writing it
    /// succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_path: Option<String>,
    /// The thread's history session (`session_<hex>`), reused by later
    /// summaries so they append to one file.
    pub session: String,
    /// How long the log was when the summary was made: usage reported for
    /// model turns from this index on was measured with the summary in
    /// place.
    pub created_at_index: u64,
    /// Tokens of the log before `cutoff`, so the size of what the model
    /// sees is a subtraction instead of a sum over the log.
    pub summarized_tokens: u64,
    /// When it was made.
    pub created_at: DateTime<Utc>,
}

/// An oversized user message replaced by a file reference in what the
/// model sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EvictedMessage {
    /// Its log index.
    pub index: u64,
    /// Where its full text was written.
    pub path: String,
    /// What the model sees instead, with its token count.
    pub stub: LoggedMessage,
}
