//! Serde types of the OpenAI Chat Completions API, as far as deepfleet
//! uses it.
//!
//! Both sides speak these types: [`super::ChatCompletions`] sends a
//! [`ChatRequest`] and decodes a [`ChatResponse`], and the replay engine
//! (and the test kit's scripted server) receives the request and answers
//! with the response. Fields other providers add are ignored on decode;
//! optional fields are left out on encode so strict OpenAI-compatible
//! servers accept the body.

use serde::{Deserialize, Serialize};
use serde_json::Value;

// The error body is the shape all three protocols share; it lives with
// the classification that reads it, so that classifying needs no protocol.
pub use crate::classify::{ErrorBody, ErrorDetail};

use crate::{ReasoningEffort, ToolList};

/// `POST /chat/completions` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Model name.
    pub model: String,
    /// The conversation, system prompt first.
    pub messages: Vec<ChatMessage>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "ToolList::is_empty")]
    pub tools: ToolList<ChatTool>,
    /// `"auto"`, `"none"`, `"required"` or a named-function object; kept as
    /// JSON because its shape varies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    /// Completion token cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u64>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// `low`, `medium` or `high`, for reasoning models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Routes requests sharing a prefix to the same prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
    /// Asks for the answer as server-sent [`ChatChunk`]s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Options of a streamed answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
}

/// `stream_options` of a streamed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamOptions {
    /// Adds a last chunk with the call's usage (and no choices); without
    /// it a streamed call reports no tokens.
    #[serde(default)]
    pub include_usage: bool,
}

/// One `data:` event of a streamed answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatChunk {
    /// Completion id, the same on every chunk.
    #[serde(default)]
    pub id: String,
    /// Always `chat.completion.chunk`.
    #[serde(default)]
    pub object: String,
    /// Unix seconds.
    #[serde(default)]
    pub created: u64,
    /// The model that answers.
    #[serde(default)]
    pub model: String,
    /// Deltas of the candidates; empty on the usage chunk.
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    /// Tokens of the call, on the last chunk only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<WireUsage>,
}

/// A candidate's delta within a [`ChatChunk`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkChoice {
    /// Which candidate.
    #[serde(default)]
    pub index: u32,
    /// What the candidate adds.
    #[serde(default)]
    pub delta: ChunkDelta,
    /// Set on the candidate's last chunk.
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// Text and tool-call pieces of one chunk.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkDelta {
    /// `assistant`, on the first chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Text to append.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Tool-call pieces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ChunkToolCall>,
}

/// A piece of one tool call: id and name come first, arguments in pieces.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkToolCall {
    /// Which call of the turn.
    #[serde(default)]
    pub index: usize,
    /// The call id, on its first piece.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `function`, on its first piece.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name and argument text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<ChunkFunction>,
}

/// The function part of a [`ChunkToolCall`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkFunction {
    /// Tool name, on the first piece.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Argument text to append.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}

/// One message of a request, tagged by its role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    /// Instructions.
    System {
        /// The instructions.
        content: MessageContent,
    },
    /// User input.
    User {
        /// Text or parts (text and images).
        content: MessageContent,
    },
    /// A model turn.
    Assistant {
        /// Text; absent when the turn only calls tools.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<MessageContent>,
        /// Tool calls of the turn.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall>,
    },
    /// The result of a tool call.
    Tool {
        /// The call this answers.
        tool_call_id: String,
        /// The result as text.
        content: MessageContent,
    },
}

/// Message content: a plain string or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    /// Plain text.
    Text(String),
    /// Text and image parts.
    Parts(Vec<ContentPart>),
}

impl MessageContent {
    /// The text parts joined by newlines (images skipped).
    pub fn text(&self) -> String {
        match self {
            MessageContent::Text(text) => text.clone(),
            MessageContent::Parts(parts) => {
                let texts: Vec<&str> = parts
                    .iter()
                    .filter_map(|part| match part {
                        ContentPart::Text { text } => Some(text.as_str()),
                        ContentPart::ImageUrl { .. } => None,
                    })
                    .collect();
                texts.join("\n")
            }
        }
    }
}

/// One part of a multi-part message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, by URL or as a `data:` URL.
    ImageUrl {
        /// Where the image is.
        image_url: ImageUrl,
    },
}

/// The image of an [`ContentPart::ImageUrl`] part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageUrl {
    /// An `https:` or `data:` URL.
    pub url: String,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatTool {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function.
    pub function: FunctionDef,
}

/// A function tool's definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDef {
    /// Name the model calls.
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// JSON Schema of its arguments (the [`crate::ToolSpec`]'s own).
    #[serde(default)]
    pub parameters: crate::Schema,
}

/// A tool call of an assistant turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireToolCall {
    /// Call id, echoed by the tool message; empty when the model sent
    /// none (the harness names such calls).
    #[serde(default)]
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    /// The call.
    pub function: FunctionCall,
}

fn function_kind() -> String {
    "function".to_owned()
}

/// The function part of a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// Tool name; empty when the model sent none (the harness answers
    /// such a call with an error the model reads).
    #[serde(default)]
    pub name: String,
    /// Arguments as the model wrote them: JSON text, possibly broken.
    #[serde(default)]
    pub arguments: String,
}

/// A successful `/chat/completions` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// Completion id.
    #[serde(default)]
    pub id: String,
    /// Always `chat.completion`; kept so SDK clients of the scripted
    /// server accept the body.
    #[serde(default = "completion_object")]
    pub object: String,
    /// Unix seconds.
    #[serde(default)]
    pub created: u64,
    /// The model that answered.
    #[serde(default)]
    pub model: String,
    /// Candidates; deepfleet asks for one.
    pub choices: Vec<Choice>,
    /// Tokens of the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<WireUsage>,
}

fn completion_object() -> String {
    "chat.completion".to_owned()
}

/// One candidate answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// Position among the candidates.
    #[serde(default)]
    pub index: u32,
    /// The assistant turn.
    pub message: ResponseMessage,
    /// `stop`, `tool_calls`, `length`, `content_filter`, or absent.
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// The assistant turn of a [`Choice`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseMessage {
    /// Always `assistant`.
    #[serde(default = "assistant_role")]
    pub role: String,
    /// Text, or null when the turn only calls tools.
    #[serde(default)]
    pub content: Option<String>,
    /// Requested tool calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<WireToolCall>,
}

fn assistant_role() -> String {
    "assistant".to_owned()
}

/// Token counts of a call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireUsage {
    /// Prompt tokens, cached ones included.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Their sum.
    #[serde(default)]
    pub total_tokens: u64,
    /// Cache details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

/// Details of the prompt tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptTokensDetails {
    /// Prompt tokens served from the cache.
    #[serde(default)]
    pub cached_tokens: u64,
}
