//! Messages as LangChain dicts, the shape Agent Server clients and UIs
//! read (`type` human/ai/tool/system, `content`, `tool_calls`
//! `[{id, name, args}]`, `tool_call_id`, `id`), and the `AIMessageChunk`
//! of token streaming.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{ContentBlock, ToolStatus};

/// One message of a thread's `values.messages` or of a stream event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum MessageDict {
    /// The system prompt.
    #[serde(rename = "system")]
    System {
        /// The text.
        content: MessageContent,
        /// Stable id.
        id: String,
    },
    /// A user turn (or a summary standing in for earlier turns).
    #[serde(rename = "human")]
    Human {
        /// The text or blocks.
        content: MessageContent,
        /// Stable id.
        id: String,
        /// `{"lc_source": ...}` when the harness wrote it (a summary).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        additional_kwargs: Option<HumanKwargs>,
    },
    /// A model turn.
    #[serde(rename = "ai")]
    Ai {
        /// The text or blocks.
        content: MessageContent,
        /// Stable id.
        id: String,
        /// The calls it asked for.
        tool_calls: Vec<ToolCallDict>,
        /// Always empty: broken arguments stay visible as a string instead.
        invalid_tool_calls: Vec<Value>,
        /// Token counts of the call, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage_metadata: Option<UsageMetadata>,
        /// The model that answered, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response_metadata: Option<ResponseMetadata>,
    },
    /// A tool result.
    #[serde(rename = "tool")]
    Tool {
        /// The result.
        content: MessageContent,
        /// Stable id.
        id: String,
        /// The call it answers.
        tool_call_id: String,
        /// The tool.
        name: String,
        /// Whether the tool did what was asked.
        status: ToolStatus,
    },
    /// One streamed piece of a model turn (`messages-tuple` mode).
    #[serde(rename = "AIMessageChunk")]
    AiChunk {
        /// The id of the message it becomes.
        id: String,
        /// The new text.
        content: String,
        /// The new pieces of tool calls.
        tool_call_chunks: Vec<ToolCallChunkDict>,
        /// Always empty: calls are whole only in the complete message.
        tool_calls: Vec<ToolCallDict>,
        /// Always empty.
        invalid_tool_calls: Vec<Value>,
    },
}

/// Text-only content is a plain string, as LangChain writes it; mixed
/// content is a list of blocks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MessageContent {
    /// The joined text.
    Text(String),
    /// Text and images.
    Blocks(Vec<ContentBlock>),
}

/// A human message's `additional_kwargs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HumanKwargs {
    /// What wrote it (`summarization`).
    pub lc_source: String,
}

/// One tool call of an AI message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename = "tool_call")]
pub struct ToolCallDict {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Parsed arguments; text that is not JSON stays a string.
    pub args: Value,
}

/// One streamed piece of a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename = "tool_call_chunk")]
pub struct ToolCallChunkDict {
    /// Which call of the message it extends.
    pub index: usize,
    /// The call's id, in its first piece.
    pub id: Option<String>,
    /// The tool, in its first piece.
    pub name: Option<String>,
    /// More argument text.
    pub args: String,
}

/// An AI message's `usage_metadata`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UsageMetadata {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Both.
    pub total_tokens: u64,
}

/// An AI message's `response_metadata`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResponseMetadata {
    /// The model that answered.
    pub model_name: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn dicts_are_tagged_by_type_and_skip_what_they_lack() {
        let ai = MessageDict::Ai {
            content: MessageContent::Text("hi".into()),
            id: "m1".into(),
            tool_calls: vec![ToolCallDict {
                id: "c1".into(),
                name: "ls".into(),
                args: json!({}),
            }],
            invalid_tool_calls: vec![],
            usage_metadata: None,
            response_metadata: Some(ResponseMetadata {
                model_name: "gpt".into(),
            }),
        };
        assert_eq!(
            serde_json::to_value(&ai).unwrap(),
            json!({"type": "ai", "content": "hi", "id": "m1", "invalid_tool_calls": [],
                "tool_calls": [{"type": "tool_call", "id": "c1", "name": "ls", "args": {}}],
                "response_metadata": {"model_name": "gpt"}})
        );
        let back: MessageDict = serde_json::from_value(serde_json::to_value(&ai).unwrap()).unwrap();
        assert_eq!(back, ai);
        let chunk = ToolCallChunkDict {
            index: 0,
            id: None,
            name: None,
            args: "{\"pa".into(),
        };
        assert_eq!(
            serde_json::to_value(&chunk).unwrap(),
            json!({"type": "tool_call_chunk", "index": 0, "id": null, "name": null, "args": "{\"pa"})
        );
    }
}
