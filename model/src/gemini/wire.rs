//! Serde types of the Gemini API's `generateContent` and
//! `streamGenerateContent` (`v1beta`), as far as deepfleet uses them.
//!
//! The JSON is camelCase. A streamed answer is a sequence of
//! [`GenerateContentResponse`]s, each holding the parts that are new.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ToolList;

/// `POST /models/{model}:generateContent` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerateContentRequest {
    /// The conversation; roles `user` and `model`.
    pub contents: Vec<Content>,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_instruction: Option<Content>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "ToolList::is_empty")]
    pub tools: ToolList<Tool>,
    /// Sampling and length settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_config: Option<GenerationConfig>,
}

/// One turn, or the system instruction (no role).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Content {
    /// `user` or `model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Its parts.
    #[serde(default)]
    pub parts: Vec<Part>,
}

/// One part of a turn: exactly one of its data fields is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Inline bytes (an image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline_data: Option<Blob>,
    /// Bytes by URI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_data: Option<FileData>,
    /// A tool call of a model turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_call: Option<FunctionCall>,
    /// A tool result, in a user turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_response: Option<FunctionResponse>,
    /// Set on the model's reasoning summaries, which are not answer text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<bool>,
    /// Opaque reasoning state the API wants back on function-call parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

/// Inline bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Blob {
    /// MIME type.
    pub mime_type: String,
    /// Base64 data.
    pub data: String,
}

/// Bytes by URI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileData {
    /// MIME type.
    #[serde(default)]
    pub mime_type: String,
    /// Where the bytes are.
    pub file_uri: String,
}

/// A tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// Call id, when the API assigns one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool name; empty when the model sent none (the harness answers
    /// such a call with an error the model reads).
    #[serde(default)]
    pub name: String,
    /// Arguments, a JSON object.
    #[serde(default)]
    pub args: Value,
}

/// A tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionResponse {
    /// The call's id, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool name (Gemini pairs results with calls by name).
    pub name: String,
    /// The result, a JSON object (`{"result": ...}` or `{"error": ...}`).
    pub response: Value,
}

/// A group of function declarations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The functions.
    pub function_declarations: Vec<FunctionDeclaration>,
}

/// One function the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionDeclaration {
    /// Name the model calls.
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// JSON Schema of the arguments, taken as is (unlike `parameters`,
    /// which accepts only an OpenAPI subset).
    #[serde(default)]
    pub parameters_json_schema: crate::Schema,
}

/// Sampling and length settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerationConfig {
    /// Completion token cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// How much the model thinks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_config: Option<ThinkingConfig>,
}

/// Reasoning settings: a token budget (Gemini 2.5) or a level (Gemini 3).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingConfig {
    /// Tokens the model may think for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u64>,
    /// `low` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<String>,
}

/// An answer, or one chunk of a streamed answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerateContentResponse {
    /// Candidates; deepfleet asks for one.
    #[serde(default)]
    pub candidates: Vec<Candidate>,
    /// Tokens of the call (cumulative in a stream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_metadata: Option<UsageMetadata>,
    /// The model that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_version: Option<String>,
    /// Response id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
}

/// One candidate answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// The model turn (absent when blocked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// `STOP`, `MAX_TOKENS`, `SAFETY`, ...; on the last chunk only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Position among the candidates.
    #[serde(default)]
    pub index: u32,
}

/// Token counts; the prompt count includes the cached tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageMetadata {
    /// Prompt tokens, cached ones included.
    #[serde(default)]
    pub prompt_token_count: u64,
    /// Answer tokens.
    #[serde(default)]
    pub candidates_token_count: u64,
    /// Reasoning tokens (billed as output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thoughts_token_count: Option<u64>,
    /// Prompt tokens served from a cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_content_token_count: Option<u64>,
    /// All of them.
    #[serde(default)]
    pub total_token_count: u64,
}
