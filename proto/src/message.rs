//! Conversation messages, provider-neutral.
//!
//! Every provider client converts to and from these types; the checkpoint
//! log stores them as they are. Tool-call arguments stay the raw string the
//! model produced, so a call with broken JSON survives until the tool layer
//! can answer it with an error the model reads.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One message of a conversation, tagged by its role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions from the harness (rarely stored: the system prompt is
    /// rebuilt on every step).
    System(SystemMessage),
    /// Input from the user, or a harness-made message in the user's role
    /// (a summary, a pinned skill).
    User(UserMessage),
    /// A model turn: text and tool calls.
    Assistant(AssistantMessage),
    /// The result of one tool call.
    Tool(ToolMessage),
}

/// A system message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SystemMessage {
    /// Content blocks.
    pub content: Vec<ContentBlock>,
}

/// A user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UserMessage {
    /// Content blocks.
    pub content: Vec<ContentBlock>,
    /// Who made it when not the user (e.g. `summarization`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// A model turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantMessage {
    /// Content blocks (text only in practice).
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Tool calls the model asked for, in its order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Provider-reported usage of the call that produced this turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The model that answered, as the provider named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolMessage {
    /// The id of the call this answers.
    pub tool_call_id: String,
    /// The tool's name (`unknown` when the model named no tool).
    pub name: String,
    /// Content blocks.
    pub content: Vec<ContentBlock>,
    /// Whether the tool succeeded.
    #[serde(default)]
    pub status: ToolStatus,
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    /// Provider-assigned call id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments exactly as the model produced them (a JSON object, or
    /// not: parsing happens in the tool layer).
    pub arguments: String,
}

/// Outcome of a tool call as the model sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The tool did what was asked.
    #[default]
    Success,
    /// The tool failed; the content says why.
    Error,
}

/// One block of message content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, inline (base64) or by URL.
    Image {
        /// MIME type, e.g. `image/png`.
        mime_type: String,
        /// The image itself.
        #[serde(flatten)]
        source: ImageSource,
    },
}

/// Where an image's bytes are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImageSource {
    /// Base64-encoded bytes.
    Base64(String),
    /// A URL the provider fetches.
    Url(String),
}

/// Token usage of one or more model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Adds another usage to this one.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
    }
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }
}

/// Joins the text blocks of `content` with newlines, skipping media.
pub fn joined_text(content: &[ContentBlock]) -> String {
    let mut out = String::new();
    for block in content {
        if let ContentBlock::Text { text } = block {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(text);
        }
    }
    out
}

impl Message {
    /// A user message with one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Message::User(UserMessage {
            content: vec![ContentBlock::text(text)],
            source: None,
        })
    }

    /// An assistant message with text only.
    pub fn assistant(text: impl Into<String>) -> Self {
        Message::Assistant(AssistantMessage {
            content: vec![ContentBlock::text(text)],
            ..AssistantMessage::default()
        })
    }

    /// A tool result with one text block.
    pub fn tool(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        text: impl Into<String>,
        status: ToolStatus,
    ) -> Self {
        Message::Tool(ToolMessage {
            tool_call_id: tool_call_id.into(),
            name: name.into(),
            content: vec![ContentBlock::text(text)],
            status,
        })
    }

    /// The message's content blocks.
    pub fn content(&self) -> &[ContentBlock] {
        match self {
            Message::System(m) => &m.content,
            Message::User(m) => &m.content,
            Message::Assistant(m) => &m.content,
            Message::Tool(m) => &m.content,
        }
    }

    /// The text of the message, blocks joined by newlines.
    pub fn text(&self) -> String {
        joined_text(self.content())
    }

    /// The tool calls of an assistant message; empty for other roles.
    pub fn tool_calls(&self) -> &[ToolCall] {
        match self {
            Message::Assistant(m) => &m.tool_calls,
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn messages_are_tagged_by_role() {
        let json = serde_json::to_value(Message::tool("c1", "ls", "x", ToolStatus::Error)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "role": "tool", "tool_call_id": "c1", "name": "ls",
                "content": [{"type": "text", "text": "x"}], "status": "error"
            })
        );
    }

    #[test]
    fn images_flatten_their_source() {
        let block = ContentBlock::Image {
            mime_type: "image/png".into(),
            source: ImageSource::Base64("AAAA".into()),
        };
        let json = serde_json::to_value(&block).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"type": "image", "mime_type": "image/png", "base64": "AAAA"})
        );
        assert_eq!(serde_json::from_value::<ContentBlock>(json).unwrap(), block);
    }

    #[test]
    fn joined_text_skips_media() {
        let content = vec![
            ContentBlock::text("a"),
            ContentBlock::Image {
                mime_type: "image/png".into(),
                source: ImageSource::Url("u".into()),
            },
            ContentBlock::text("b"),
        ];
        assert_eq!(joined_text(&content), "a\nb");
    }
}
