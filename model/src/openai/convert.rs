//! Conversions between deepfleet's provider-neutral types and the Chat
//! Completions wire types.
//!
//! The replay client runs its requests through these functions too, so the
//! scripted tests exercise the same mapping as production.

use std::sync::Arc;

use deepfleet_proto::message::joined_text;
use deepfleet_proto::{
    AssistantMessage, ContentBlock, ImageSource, Message, ToolCall, ToolMessage, Usage,
};
use serde_json::Value;
use serde_json::value::RawValue;

use super::wire::{
    ChatMessage, ChatRequest, ChatResponse, ChatTool, ContentPart, FunctionCall, FunctionDef,
    ImageUrl, MessageContent, WireToolCall, WireUsage,
};
use crate::{ErrorKind, FinishReason, ModelError, ModelRequest, ModelResponse, ToolList};

/// Builds the wire request for `request`, with `written` as its tools
/// where the transport wrote them already.
pub fn to_wire(request: &ModelRequest, written: Option<Arc<RawValue>>) -> ChatRequest {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(ChatMessage::System {
            content: MessageContent::Text(request.system.to_string()),
        });
    }
    // Chat Completions cannot carry images in tool messages: they are
    // collected over a run of consecutive tool messages and sent in one user
    // message right after it, so the tool batch stays contiguous (the API
    // rejects anything between an assistant turn's tool results).
    let mut pending_images: Vec<ContentPart> = Vec::new();
    for message in &request.messages {
        if !matches!(message, Message::Tool(_)) {
            flush_images(&mut messages, &mut pending_images);
        }
        match message {
            Message::System(m) => messages.push(ChatMessage::System {
                content: MessageContent::Text(joined_text(&m.content)),
            }),
            Message::User(m) => messages.push(ChatMessage::User {
                content: user_content(&m.content),
            }),
            Message::Assistant(m) => messages.push(assistant_message(m)),
            Message::Tool(m) => messages.push(tool_message(m, &mut pending_images)),
        }
    }
    flush_images(&mut messages, &mut pending_images);

    let tools = ToolList::written_or(written, || request.tools.iter().map(tool).collect());
    ChatRequest {
        model: request.model.clone(),
        messages,
        tool_choice: (!tools.is_empty()).then(|| Value::String("auto".to_owned())),
        tools,
        max_completion_tokens: request.max_output_tokens,
        temperature: request.sampling.temperature,
        top_p: request.sampling.top_p,
        reasoning_effort: request.sampling.reasoning_effort,
        prompt_cache_key: request.cache_key.clone(),
        stream: None,
        stream_options: None,
    }
}

fn flush_images(messages: &mut Vec<ChatMessage>, pending: &mut Vec<ContentPart>) {
    if !pending.is_empty() {
        messages.push(ChatMessage::User {
            content: MessageContent::Parts(std::mem::take(pending)),
        });
    }
}

/// A single text block travels as a plain string (the common, most
/// compatible form); anything else as parts.
fn user_content(blocks: &[ContentBlock]) -> MessageContent {
    match blocks {
        [ContentBlock::Text { text }] => MessageContent::Text(text.clone()),
        _ => MessageContent::Parts(blocks.iter().map(content_part).collect()),
    }
}

fn content_part(block: &ContentBlock) -> ContentPart {
    match block {
        ContentBlock::Text { text } => ContentPart::Text { text: text.clone() },
        ContentBlock::Image { mime_type, source } => ContentPart::ImageUrl {
            image_url: ImageUrl {
                url: image_url(mime_type, source),
            },
        },
    }
}

fn image_url(mime_type: &str, source: &ImageSource) -> String {
    match source {
        ImageSource::Base64(data) => format!("data:{mime_type};base64,{data}"),
        ImageSource::Url(url) => url.clone(),
    }
}

fn assistant_message(m: &AssistantMessage) -> ChatMessage {
    let text = joined_text(&m.content);
    ChatMessage::Assistant {
        content: (!text.is_empty()).then_some(MessageContent::Text(text)),
        tool_calls: m
            .tool_calls
            .iter()
            .map(|call| WireToolCall {
                id: call.id.clone(),
                kind: "function".to_owned(),
                function: FunctionCall {
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                },
            })
            .collect(),
    }
}

fn tool_message(m: &ToolMessage, pending_images: &mut Vec<ContentPart>) -> ChatMessage {
    let mut text = joined_text(&m.content);
    let images: Vec<ContentPart> = m
        .content
        .iter()
        .filter(|block| matches!(block, ContentBlock::Image { .. }))
        .map(content_part)
        .collect();
    if !images.is_empty() {
        // Tell the model where the tool's images went, and label them in
        // the user message so several tools' images stay apart.
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!(
            "[{} image(s) attached in the next user message]",
            images.len()
        ));
        pending_images.push(ContentPart::Text {
            text: format!(
                "Images returned by tool call {} ({}):",
                m.tool_call_id, m.name
            ),
        });
        pending_images.extend(images);
    }
    ChatMessage::Tool {
        tool_call_id: m.tool_call_id.clone(),
        content: MessageContent::Text(text),
    }
}

fn tool(spec: &crate::ToolSpec) -> ChatTool {
    ChatTool {
        kind: "function".to_owned(),
        function: FunctionDef {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters: spec.parameters.clone(),
        },
    }
}

/// Turns a wire response into the assistant turn; a response without a
/// choice is [`ErrorKind::InvalidResponse`].
pub fn from_wire(response: ChatResponse) -> Result<ModelResponse, ModelError> {
    let Some(choice) = response.choices.into_iter().next() else {
        return Err(ModelError::new(
            ErrorKind::InvalidResponse,
            "the response has no choices",
        ));
    };
    let usage = response.usage.map(usage_from_wire).unwrap_or_default();
    let tool_calls: Vec<ToolCall> = choice
        .message
        .tool_calls
        .into_iter()
        .map(|call| ToolCall {
            id: call.id,
            name: call.function.name,
            arguments: call.function.arguments,
        })
        .collect();
    let finish = finish_reason(choice.finish_reason.as_deref(), !tool_calls.is_empty());
    Ok(ModelResponse::assemble(
        choice.message.content.unwrap_or_default(),
        tool_calls,
        usage,
        Some(response.model),
        finish,
    ))
}

/// Maps wire usage; cached tokens stay included in `input_tokens`, as the
/// API counts them.
pub fn usage_from_wire(usage: WireUsage) -> Usage {
    Usage {
        input_tokens: usage.prompt_tokens,
        output_tokens: usage.completion_tokens,
        cached_input_tokens: usage
            .prompt_tokens_details
            .map(|details| details.cached_tokens)
            .unwrap_or_default(),
    }
}

/// Maps `finish_reason`; providers that omit it or send their own words
/// get `ToolCalls` when the turn calls tools and `Stop` otherwise, which is
/// what the agent loop acts on.
pub(crate) fn finish_reason(reason: Option<&str>, has_tool_calls: bool) -> FinishReason {
    match reason {
        Some("length") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        _ if has_tool_calls => FinishReason::ToolCalls,
        _ => FinishReason::Stop,
    }
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
