//! Conversions between deepfleet's provider-neutral types and the Gemini
//! wire types.
//!
//! Gemini gives function calls no id unless it wants to; deepfleet needs
//! one to pair each result with its call, so a call without one is named
//! `call_{turn}_{index}` (turn = model turns already in the request), the
//! replay model's scheme, unique within a thread. Results travel as
//! `functionResponse` parts carrying that id and the tool name.

use std::sync::Arc;

use deepfleet_proto::message::joined_text;
use deepfleet_proto::{
    AssistantMessage, ContentBlock, ImageSource, Message, ToolCall, ToolMessage, ToolStatus, Usage,
};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::wire::{
    Blob, Content, FileData, FunctionCall, FunctionDeclaration, FunctionResponse,
    GenerateContentRequest, GenerateContentResponse, GenerationConfig, Part, ThinkingConfig, Tool,
    UsageMetadata,
};
use crate::{FinishReason, ModelRequest, ModelResponse, ReasoningEffort, ToolList};

/// The value the API documents for function calls whose thought signature
/// is unknown. Gemini 3 models reject a model turn with function calls and
/// no signature; deepfleet's messages do not keep signatures, so resent
/// calls carry this instead.
const UNKNOWN_SIGNATURE: &str = "skip_thought_signature_validator";

/// Builds the wire request for `request`, with `written` as its tools
/// where the transport wrote them already.
pub fn to_wire(request: &ModelRequest, written: Option<Arc<RawValue>>) -> GenerateContentRequest {
    let needs_signature = request
        .model
        .trim_start_matches("models/")
        .starts_with("gemini-3");
    let mut contents: Vec<Content> = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        let (role, parts) = match message {
            Message::System(m) => ("user", text_part(joined_text(&m.content))),
            Message::User(m) => ("user", m.content.iter().filter_map(content_part).collect()),
            Message::Assistant(m) => ("model", model_parts(m, needs_signature)),
            Message::Tool(m) => ("user", tool_parts(m)),
        };
        if parts.is_empty() {
            continue;
        }
        // Consecutive turns of one role merge: every result of a model
        // turn's calls must come in the one user turn that follows it.
        match contents.last_mut() {
            Some(last) if last.role.as_deref() == Some(role) => last.parts.extend(parts),
            _ => contents.push(Content {
                role: Some(role.to_owned()),
                parts,
            }),
        }
    }
    GenerateContentRequest {
        contents,
        system_instruction: (!request.system.is_empty()).then(|| Content {
            role: None,
            parts: text_part(request.system.to_string()),
        }),
        tools: ToolList::written_or(written, || tools(request)),
        generation_config: generation_config(request, needs_signature),
    }
}

/// The request's tools, declared in one [`Tool`]; none without tools.
fn tools(request: &ModelRequest) -> Vec<Tool> {
    if request.tools.is_empty() {
        return Vec::new();
    }
    let declarations = request
        .tools
        .iter()
        .map(|spec| FunctionDeclaration {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters_json_schema: spec.parameters.clone(),
        })
        .collect();
    vec![Tool {
        function_declarations: declarations,
    }]
}

fn text_part(text: String) -> Vec<Part> {
    if text.is_empty() {
        return Vec::new();
    }
    vec![Part {
        text: Some(text),
        ..Part::default()
    }]
}

fn content_part(block: &ContentBlock) -> Option<Part> {
    match block {
        ContentBlock::Text { text } if text.is_empty() => None,
        ContentBlock::Text { text } => Some(Part {
            text: Some(text.clone()),
            ..Part::default()
        }),
        ContentBlock::Image { mime_type, source } => Some(match source {
            ImageSource::Base64(data) => Part {
                inline_data: Some(Blob {
                    mime_type: mime_type.clone(),
                    data: data.clone(),
                }),
                ..Part::default()
            },
            ImageSource::Url(url) => Part {
                file_data: Some(FileData {
                    mime_type: mime_type.clone(),
                    file_uri: url.clone(),
                }),
                ..Part::default()
            },
        }),
    }
}

/// Text, then one `functionCall` per call; arguments that are not a JSON
/// object go as `{}` (the API accepts only objects).
fn model_parts(m: &AssistantMessage, needs_signature: bool) -> Vec<Part> {
    let mut parts = text_part(joined_text(&m.content));
    parts.extend(m.tool_calls.iter().enumerate().map(|(index, call)| Part {
        function_call: Some(FunctionCall {
            id: Some(call.id.clone()),
            name: call.name.clone(),
            args: match serde_json::from_str::<Value>(&call.arguments) {
                Ok(object @ Value::Object(_)) => object,
                _ => Value::Object(Default::default()),
            },
        }),
        // Only a turn's first call carries a signature.
        thought_signature: (needs_signature && index == 0).then(|| UNKNOWN_SIGNATURE.to_owned()),
        ..Part::default()
    }));
    parts
}

/// A `functionResponse` with the text as `result` (or `error`), then the
/// tool's images as inline parts of the same turn.
fn tool_parts(m: &ToolMessage) -> Vec<Part> {
    let key = match m.status {
        ToolStatus::Success => "result",
        ToolStatus::Error => "error",
    };
    let mut parts = vec![Part {
        function_response: Some(FunctionResponse {
            id: Some(m.tool_call_id.clone()),
            name: m.name.clone(),
            response: json!({ key: joined_text(&m.content) }),
        }),
        ..Part::default()
    }];
    parts.extend(
        m.content
            .iter()
            .filter(|block| matches!(block, ContentBlock::Image { .. }))
            .filter_map(content_part),
    );
    parts
}

/// Thinking budgets (Gemini 2.5) by reasoning effort: the API's own
/// low-end, a middle, and near the 2.5 Flash ceiling (24,576).
const THINKING_BUDGETS: [u64; 3] = [1_024, 8_192, 24_576];

/// The sampling and length settings, `None` when the request sets none.
/// Gemini 3 (`gemini3`) takes a thinking level, `low` or `high` (medium
/// asks for `high`); earlier models a token budget.
fn generation_config(request: &ModelRequest, gemini3: bool) -> Option<GenerationConfig> {
    let thinking_config = request.sampling.reasoning_effort.map(|effort| {
        if gemini3 {
            let level = match effort {
                ReasoningEffort::Low => "low",
                ReasoningEffort::Medium | ReasoningEffort::High => "high",
            };
            ThinkingConfig {
                thinking_level: Some(level.to_owned()),
                ..ThinkingConfig::default()
            }
        } else {
            let [low, medium, high] = THINKING_BUDGETS;
            let budget = match effort {
                ReasoningEffort::Low => low,
                ReasoningEffort::Medium => medium,
                ReasoningEffort::High => high,
            };
            ThinkingConfig {
                thinking_budget: Some(budget),
                ..ThinkingConfig::default()
            }
        }
    });
    let config = GenerationConfig {
        max_output_tokens: request.max_output_tokens,
        temperature: request.sampling.temperature,
        top_p: request.sampling.top_p,
        thinking_config,
    };
    (config != GenerationConfig::default()).then_some(config)
}

/// Model turns already in `request`: the `turn` of synthesized call ids.
pub fn turn_of(request: &ModelRequest) -> usize {
    request
        .messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant(_)))
        .count()
}

/// The id of the `index`th call of a turn that came without one.
pub(crate) fn call_id(id: Option<&str>, turn: usize, index: usize) -> String {
    match id {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => format!("call_{turn}_{index}"),
    }
}

/// Turns a wire response into the assistant turn; `turn` names calls that
/// came without an id. A response without candidates (a blocked prompt)
/// is an empty, filtered turn.
pub fn from_wire(response: GenerateContentResponse, turn: usize) -> ModelResponse {
    let candidate = response.candidates.into_iter().next().unwrap_or_default();
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
        if part.thought == Some(true) {
            continue;
        }
        if let Some(piece) = &part.text {
            text.push_str(piece);
        }
        if let Some(call) = part.function_call {
            let index = tool_calls.len();
            tool_calls.push(ToolCall {
                id: call_id(call.id.as_deref(), turn, index),
                name: call.name,
                arguments: call.args.to_string(),
            });
        }
    }
    let usage = response
        .usage_metadata
        .map(usage_from_wire)
        .unwrap_or_default();
    let finish = match candidate.finish_reason.as_deref() {
        None if tool_calls.is_empty() && text.is_empty() => FinishReason::ContentFilter,
        reason => finish_reason(reason, !tool_calls.is_empty()),
    };
    ModelResponse::assemble(text, tool_calls, usage, response.model_version, finish)
}

/// Maps usage metadata: reasoning tokens count as output, as they are
/// billed.
pub fn usage_from_wire(usage: UsageMetadata) -> Usage {
    Usage {
        input_tokens: usage.prompt_token_count,
        output_tokens: usage.candidates_token_count
            + usage.thoughts_token_count.unwrap_or_default(),
        cached_input_tokens: usage.cached_content_token_count.unwrap_or_default(),
    }
}

/// Maps `finishReason`. Gemini says `STOP` on turns with function calls;
/// those are `ToolCalls`, which the agent loop acts on.
pub(crate) fn finish_reason(reason: Option<&str>, has_tool_calls: bool) -> FinishReason {
    match reason {
        Some("MAX_TOKENS") => FinishReason::Length,
        Some(
            "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY",
        ) => FinishReason::ContentFilter,
        _ if has_tool_calls => FinishReason::ToolCalls,
        _ => FinishReason::Stop,
    }
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
