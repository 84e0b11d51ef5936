//! Serde types of the Anthropic Messages API (`POST /v1/messages`), as far
//! as deepfleet uses it.
//!
//! The client sends a [`MessagesRequest`] and decodes a
//! [`MessagesResponse`] or [`StreamEvent`]s; the test kit's scripted server
//! speaks the same types from the other side. Unknown block and event
//! types decode as `Other` and are skipped, so new provider features do
//! not break old clients.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ToolList;

/// `POST /v1/messages` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessagesRequest {
    /// Model name.
    pub model: String,
    /// Completion token cap (required by the API).
    pub max_tokens: u64,
    /// The system prompt as blocks, so each can end a cache breakpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub system: Vec<TextBlock>,
    /// The conversation; roles alternate, starting with `user`.
    pub messages: Vec<WireMessage>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "ToolList::is_empty")]
    pub tools: ToolList<Tool>,
    /// Sampling temperature (0 to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Asks for the answer as server-sent [`StreamEvent`]s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
}

/// Marks the end of a cached prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheControl {
    /// Always `ephemeral`.
    #[serde(rename = "type")]
    pub kind: String,
}

impl CacheControl {
    /// The one kind the API has: a five-minute cache entry.
    pub fn ephemeral() -> Self {
        CacheControl {
            kind: "ephemeral".to_owned(),
        }
    }
}

/// A text block of the system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextBlock {
    /// Always `text`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The text.
    pub text: String,
    /// Set on a block that ends a cached prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// Its blocks.
    pub content: Vec<Block>,
}

/// A content block of a message or a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Set on a block that ends a cached prefix.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// An image.
    Image {
        /// Where its bytes are.
        source: ImageSource,
        /// Set on a block that ends a cached prefix.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A tool call of an assistant turn.
    ToolUse {
        /// Call id, echoed by the result; empty when the model sent none
        /// (the harness names such calls).
        #[serde(default)]
        id: String,
        /// Tool name; empty when the model sent none (the harness
        /// answers such a call with an error the model reads).
        #[serde(default)]
        name: String,
        /// Arguments, a JSON object.
        input: Value,
        /// Set on a block that ends a cached prefix.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// The result of a tool call, in a user turn.
    ToolResult {
        /// The call this answers.
        tool_use_id: String,
        /// Text and image blocks.
        #[serde(default)]
        content: Vec<Block>,
        /// Whether the tool failed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// Set on a block that ends a cached prefix.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A block type deepfleet does not use (thinking, server tools).
    #[serde(other)]
    Other,
}

/// The bytes of an [`Block::Image`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ImageSource {
    /// Inline bytes.
    Base64 {
        /// MIME type, e.g. `image/png`.
        media_type: String,
        /// Base64 data.
        data: String,
    },
    /// A URL the API fetches.
    Url {
        /// The URL.
        url: String,
    },
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// Name the model calls.
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// JSON Schema of its arguments (the [`crate::ToolSpec`]'s own).
    pub input_schema: crate::Schema,
    /// Set on the last tool: the tool list is the start of the prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// A successful non-streamed answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessagesResponse {
    /// Message id.
    #[serde(default)]
    pub id: String,
    /// Always `message`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Always `assistant`.
    #[serde(default)]
    pub role: String,
    /// The model that answered.
    #[serde(default)]
    pub model: String,
    /// Text and tool-use blocks.
    #[serde(default)]
    pub content: Vec<Block>,
    /// `end_turn`, `tool_use`, `max_tokens`, `stop_sequence`, `refusal`...
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// The stop sequence hit, if any.
    #[serde(default)]
    pub stop_sequence: Option<String>,
    /// Tokens of the call.
    #[serde(default)]
    pub usage: WireUsage,
}

/// Token counts; `input_tokens` excludes the cached and cache-written
/// tokens, which the API counts apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireUsage {
    /// Uncached prompt tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt tokens written to the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
    /// Prompt tokens read from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
}

/// One event of a streamed answer (the SSE `data:`, tagged by `type`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// The message with empty content and the prompt's usage.
    MessageStart {
        /// The message so far.
        message: MessagesResponse,
    },
    /// A block begins (a text block empty, a tool_use with `input: {}`).
    ContentBlockStart {
        /// Block position.
        index: usize,
        /// The block's start.
        content_block: Block,
    },
    /// More of a block.
    ContentBlockDelta {
        /// Block position.
        index: usize,
        /// What it adds.
        delta: BlockDelta,
    },
    /// A block is complete.
    ContentBlockStop {
        /// Block position.
        index: usize,
    },
    /// The stop reason and the final output usage.
    MessageDelta {
        /// Stop reason and sequence.
        delta: MessageDelta,
        /// Cumulative usage.
        #[serde(default)]
        usage: WireUsage,
    },
    /// The end of the stream.
    MessageStop,
    /// A keep-alive.
    Ping,
    /// A failure after the stream began (e.g. `overloaded_error`).
    Error {
        /// What went wrong.
        error: ErrorDetail,
    },
    /// An event type deepfleet does not use.
    #[serde(other)]
    Other,
}

/// What a [`StreamEvent::ContentBlockDelta`] adds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockDelta {
    /// Text to append.
    TextDelta {
        /// The text.
        text: String,
    },
    /// Tool-use argument JSON to append.
    InputJsonDelta {
        /// A fragment of the arguments.
        partial_json: String,
    },
    /// A delta type deepfleet does not use (thinking, signatures).
    #[serde(other)]
    Other,
}

/// The message-level part of a [`StreamEvent::MessageDelta`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageDelta {
    /// Why the model stopped.
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// The stop sequence hit, if any.
    #[serde(default)]
    pub stop_sequence: Option<String>,
}

/// An error answer: `{"type": "error", "error": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorResponse {
    /// Always `error`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The error.
    pub error: ErrorDetail,
}

/// An error's type and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// E.g. `overloaded_error`, `rate_limit_error`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// The provider's message.
    #[serde(default)]
    pub message: String,
}
