//! Conversions between deepfleet's provider-neutral types and the
//! Messages wire types, prompt-cache breakpoints included.
//!
//! Cache breakpoints (the API allows four) go on the last tool, on the
//! system blocks that end at a [`ModelRequest::cache_breakpoints`] offset
//! (the whole system prompt when there is none), and on the last block of
//! the last message, so an agent loop reads its growing history from the
//! cache on the next step.

use std::sync::Arc;

use deepfleet_proto::message::joined_text;
use deepfleet_proto::{AssistantMessage, ContentBlock, Message, ToolCall, ToolStatus, Usage};
use serde_json::Value;
use serde_json::value::RawValue;

use super::wire::{
    Block, CacheControl, ImageSource, MessagesRequest, MessagesResponse, TextBlock, Tool,
    WireMessage, WireUsage,
};
use crate::{FinishReason, ModelRequest, ModelResponse, ToolList};

/// Breakpoints the system prompt may use: four in all, minus the tools'
/// and the last message's.
const SYSTEM_BREAKPOINTS: usize = 2;

/// Builds the wire request for `request`, asking for at most `max_tokens`
/// unless it sets its own cap, with `written` as its tools where the
/// transport wrote them already. A reasoning effort is not sent: extended
/// thinking wants its thinking blocks back on every tool-use turn, and
/// deepfleet's messages do not keep them.
pub fn to_wire(
    request: &ModelRequest,
    max_tokens: u64,
    written: Option<Arc<RawValue>>,
) -> MessagesRequest {
    let tools = ToolList::written_or(written, || tools(request));
    let mut messages = conversation(&request.messages);
    if let Some(block) = messages
        .last_mut()
        .and_then(|message| message.content.last_mut())
    {
        set_cache_control(block);
    }
    MessagesRequest {
        model: request.model.clone(),
        max_tokens: request.max_output_tokens.unwrap_or(max_tokens),
        system: system_blocks(&request.system, &request.cache_breakpoints),
        messages,
        tools,
        temperature: request.sampling.temperature,
        top_p: request.sampling.top_p,
        stream: None,
    }
}

/// The request's tools, the last one ending a cache breakpoint: a list
/// that depends on the tools alone, as a written one must.
fn tools(request: &ModelRequest) -> Vec<Tool> {
    let mut tools: Vec<Tool> = request
        .tools
        .iter()
        .map(|spec| Tool {
            name: spec.name.clone(),
            description: spec.description.clone(),
            input_schema: spec.parameters.clone(),
            cache_control: None,
        })
        .collect();
    if let Some(last) = tools.last_mut() {
        last.cache_control = Some(CacheControl::ephemeral());
    }
    tools
}

/// Splits the system prompt at the cache breakpoints. Offsets that are out
/// of range or not on a character boundary are skipped (caching is an
/// optimisation; a bad offset must not fail the call); blocks ending at a
/// breakpoint are cached, the last [`SYSTEM_BREAKPOINTS`] of them.
pub fn system_blocks(system: &str, breakpoints: &[usize]) -> Vec<TextBlock> {
    if system.is_empty() {
        return Vec::new();
    }
    let mut cuts: Vec<usize> = breakpoints
        .iter()
        .copied()
        .filter(|&at| at > 0 && at <= system.len() && system.is_char_boundary(at))
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    if cuts.is_empty() {
        cuts.push(system.len());
    }
    let cached_from = cuts.len().saturating_sub(SYSTEM_BREAKPOINTS);
    let mut blocks = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for (position, &end) in cuts.iter().enumerate() {
        blocks.push(TextBlock {
            kind: "text".to_owned(),
            text: system[start..end].to_owned(),
            cache_control: (position >= cached_from).then(CacheControl::ephemeral),
        });
        start = end;
    }
    if start < system.len() {
        blocks.push(TextBlock {
            kind: "text".to_owned(),
            text: system[start..].to_owned(),
            cache_control: None,
        });
    }
    blocks
}

fn set_cache_control(block: &mut Block) {
    match block {
        Block::Text { cache_control, .. }
        | Block::Image { cache_control, .. }
        | Block::ToolUse { cache_control, .. }
        | Block::ToolResult { cache_control, .. } => {
            *cache_control = Some(CacheControl::ephemeral());
        }
        Block::Other => {}
    }
}

/// The messages as alternating user and assistant turns: tool results
/// become `tool_result` blocks of a user turn, and consecutive messages of
/// one role merge into one turn (the API wants every tool result of a turn
/// in the one user message that follows it). System messages inside the
/// conversation have no place in the API and travel as user text.
fn conversation(messages: &[Message]) -> Vec<WireMessage> {
    let mut turns: Vec<WireMessage> = Vec::with_capacity(messages.len());
    for message in messages {
        let (role, blocks) = match message {
            Message::System(m) => ("user", text_block(joined_text(&m.content))),
            Message::User(m) => ("user", m.content.iter().filter_map(content_block).collect()),
            Message::Assistant(m) => ("assistant", assistant_blocks(m)),
            Message::Tool(m) => (
                "user",
                vec![Block::ToolResult {
                    tool_use_id: m.tool_call_id.clone(),
                    content: m.content.iter().filter_map(content_block).collect(),
                    is_error: m.status == ToolStatus::Error,
                    cache_control: None,
                }],
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => turns.push(WireMessage {
                role: role.to_owned(),
                content: blocks,
            }),
        }
    }
    turns
}

fn text_block(text: String) -> Vec<Block> {
    if text.is_empty() {
        return Vec::new();
    }
    vec![Block::Text {
        text,
        cache_control: None,
    }]
}

/// A content block on the wire; empty text is dropped (the API rejects
/// empty text blocks).
fn content_block(block: &ContentBlock) -> Option<Block> {
    match block {
        ContentBlock::Text { text } if text.is_empty() => None,
        ContentBlock::Text { text } => Some(Block::Text {
            text: text.clone(),
            cache_control: None,
        }),
        ContentBlock::Image { mime_type, source } => Some(Block::Image {
            source: match source {
                deepfleet_proto::ImageSource::Base64(data) => ImageSource::Base64 {
                    media_type: mime_type.clone(),
                    data: data.clone(),
                },
                deepfleet_proto::ImageSource::Url(url) => ImageSource::Url { url: url.clone() },
            },
            cache_control: None,
        }),
    }
}

/// Text, then one `tool_use` per call. Arguments that are not a JSON
/// object (the model wrote broken JSON, and the tool layer answered with
/// an error) go as `{}`: the API accepts only objects.
fn assistant_blocks(m: &AssistantMessage) -> Vec<Block> {
    let mut blocks = text_block(joined_text(&m.content));
    blocks.extend(m.tool_calls.iter().map(|call| Block::ToolUse {
        id: call.id.clone(),
        name: call.name.clone(),
        input: match serde_json::from_str::<Value>(&call.arguments) {
            Ok(object @ Value::Object(_)) => object,
            _ => Value::Object(Default::default()),
        },
        cache_control: None,
    }));
    blocks
}

/// Turns a wire response into the assistant turn: text blocks joined into
/// one, tool uses in order with their input as compact JSON.
pub fn from_wire(response: MessagesResponse) -> ModelResponse {
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in response.content {
        match block {
            Block::Text { text: piece, .. } => text.push_str(&piece),
            Block::ToolUse {
                id, name, input, ..
            } => tool_calls.push(ToolCall {
                id,
                name,
                arguments: input.to_string(),
            }),
            Block::Image { .. } | Block::ToolResult { .. } | Block::Other => {}
        }
    }
    let usage = usage_from_wire(response.usage);
    let finish = finish_reason(response.stop_reason.as_deref(), !tool_calls.is_empty());
    ModelResponse::assemble(text, tool_calls, usage, Some(response.model), finish)
}

/// Maps wire usage: the API counts cached and cache-written prompt tokens
/// apart from `input_tokens`; deepfleet's `input_tokens` includes them, as
/// OpenAI's do, so budgets compare across providers.
pub fn usage_from_wire(usage: WireUsage) -> Usage {
    let read = usage.cache_read_input_tokens.unwrap_or_default();
    let written = usage.cache_creation_input_tokens.unwrap_or_default();
    Usage {
        input_tokens: usage.input_tokens + read + written,
        output_tokens: usage.output_tokens,
        cached_input_tokens: read,
    }
}

/// Maps `stop_reason` as the OpenAI mapping does: a cut-off or refused
/// turn says so, and any other turn with tool calls is `ToolCalls`, which
/// the agent loop acts on.
pub(crate) fn finish_reason(reason: Option<&str>, has_tool_calls: bool) -> FinishReason {
    match reason {
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("refusal") => FinishReason::ContentFilter,
        Some("tool_use") => FinishReason::ToolCalls,
        _ if has_tool_calls => FinishReason::ToolCalls,
        _ => FinishReason::Stop,
    }
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
