//! The Gemini endpoints: a `generateContent` request becomes the engine's
//! input, and the engine's answer a `GenerateContentResponse`, or a
//! sequence of them as SSE for `streamGenerateContent`.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use deepfleet_model::gemini::wire::{
    Candidate, Content, FunctionCall, GenerateContentRequest, GenerateContentResponse, Part,
    UsageMetadata,
};
use deepfleet_model::{CallPurpose, FinishReason, ModelRequest, ModelResponse, ToolSpec};
use deepfleet_proto::message::joined_text;
use deepfleet_proto::{
    AssistantMessage, ContentBlock, ImageSource, Message, ToolCall, ToolMessage, ToolStatus,
    UserMessage,
};
use deepfleet_replay::ScriptedError;
use serde_json::{Value, json};

use crate::faults::{self, Fault, Wire};
use crate::{AppState, arguments_object, error_response, pieces, sse_response};

/// `call` is the path's last segment: `{model}:{method}`.
pub(crate) async fn generate(
    State(state): State<AppState>,
    Path(call): Path<String>,
    body: Bytes,
) -> Response {
    // Read as JSON first: a bad method is refused before the body's shape.
    let value: Value = match state.receive(&body, "JSON value").await {
        Ok(value) => value,
        Err(message) => return error(400, message, None),
    };
    let (model, stream) = match call.rsplit_once(':') {
        Some((model, "generateContent")) => (model.to_owned(), false),
        Some((model, "streamGenerateContent")) => (model.to_owned(), true),
        _ => return error(404, format!("no method in {call:?}"), None),
    };
    let request: GenerateContentRequest = match serde_json::from_value(value) {
        Ok(request) => request,
        Err(e) => return error(400, format!("not a generateContent request: {e}"), None),
    };
    let request = to_neutral(model, request);
    let fault = state.fault();
    faults::respond(fault, &Gemini, stream, |oversized| {
        match state.answer(&request) {
            Ok(mut answer) => {
                if let Some(bytes) = oversized {
                    answer.message.content = vec![ContentBlock::text(faults::filler(bytes))];
                }
                if stream {
                    sse_response(chunks(&answer))
                } else {
                    axum::Json(to_wire(&answer)).into_response()
                }
            }
            Err(scripted) => scripted_error(scripted),
        }
    })
    .await
}

/// Faults as `generateContent` answers.
struct Gemini;

impl Wire for Gemini {
    fn error(&self, status: u16, message: String, retry_after: Option<Duration>) -> Response {
        error(status, message, retry_after)
    }

    fn broken(&self, fault: &Fault, stream: bool) -> Response {
        let call = match fault {
            Fault::MissingToolName => json!({"args": {}}),
            _ => json!({"name": "ls", "args": "{\"path\": "}),
        };
        let body = if *fault == Fault::Empty {
            json!({"candidates": [], "modelVersion": "scripted"})
        } else {
            json!({"candidates": [{"content": {"role": "model",
                "parts": [{"functionCall": call}]}, "finishReason": "STOP"}],
                "modelVersion": "scripted"})
        };
        if stream {
            sse_response(vec![("", body.to_string())])
        } else {
            axum::Json(body).into_response()
        }
    }
}

fn scripted_error(error: ScriptedError) -> Response {
    self::error(error.status, error.body.error.message, error.retry_after)
}

fn error(status: u16, message: String, retry_after: Option<std::time::Duration>) -> Response {
    let code = match status {
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 | 529 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        500..=599 => "INTERNAL",
        _ => "INVALID_ARGUMENT",
    };
    let body = json!({"error": {"code": status, "message": message, "status": code}});
    error_response(status, body, retry_after)
}

/// The request as deepfleet's client would have built it: function
/// responses become tool messages (inline data right after one belongs to
/// it), the rest of a user turn a user message.
fn to_neutral(model: String, request: GenerateContentRequest) -> ModelRequest {
    let system = request
        .system_instruction
        .map(|content| part_texts(&content.parts))
        .unwrap_or_default();
    let mut messages = Vec::new();
    let mut model_turns = 0;
    for content in request.contents {
        if content.role.as_deref() == Some("model") {
            messages.push(assistant(content.parts, model_turns));
            model_turns += 1;
        } else {
            user_turn(content.parts, &mut messages);
        }
    }
    ModelRequest {
        model,
        system: system.into(),
        messages,
        // Read from JSON, so a list: never a written one.
        tools: request
            .tools
            .into_vec()
            .unwrap_or_default()
            .into_iter()
            .flat_map(|tool| tool.function_declarations)
            .map(|function| ToolSpec {
                name: function.name,
                description: function.description,
                parameters: function.parameters_json_schema,
            })
            .collect(),
        max_output_tokens: request.generation_config.and_then(|c| c.max_output_tokens),
        cache_key: None,
        cache_breakpoints: Vec::new(),
        purpose: CallPurpose::Agent,
        sampling: Default::default(),
        rate: Default::default(),
    }
}

fn part_texts(parts: &[Part]) -> String {
    parts.iter().filter_map(|p| p.text.as_deref()).collect()
}

fn assistant(parts: Vec<Part>, turn: usize) -> Message {
    let mut message = AssistantMessage::default();
    let text = part_texts(&parts);
    if !text.is_empty() {
        message.content = vec![ContentBlock::text(text)];
    }
    for call in parts.into_iter().filter_map(|p| p.function_call) {
        let index = message.tool_calls.len();
        message.tool_calls.push(ToolCall {
            id: call.id.unwrap_or_else(|| format!("call_{turn}_{index}")),
            name: call.name,
            arguments: call.args.to_string(),
        });
    }
    Message::Assistant(message)
}

fn user_turn(parts: Vec<Part>, messages: &mut Vec<Message>) {
    let mut user: Vec<ContentBlock> = Vec::new();
    // Whether the previous part was a function response, which images
    // right after it belong to.
    let mut in_tool = false;
    for part in parts {
        if let Some(response) = part.function_response {
            flush_user(messages, &mut user);
            let (status, text) = match (
                response.response.get("error"),
                response.response.get("result"),
            ) {
                (Some(error), _) => (ToolStatus::Error, value_text(error)),
                (None, Some(result)) => (ToolStatus::Success, value_text(result)),
                (None, None) => (ToolStatus::Success, response.response.to_string()),
            };
            messages.push(Message::Tool(ToolMessage {
                tool_call_id: response.id.unwrap_or_default(),
                name: response.name,
                content: if text.is_empty() {
                    Vec::new()
                } else {
                    vec![ContentBlock::text(text)]
                },
                status,
            }));
            in_tool = true;
            continue;
        }
        let block = if let Some(text) = part.text {
            in_tool = false;
            ContentBlock::text(text)
        } else if let Some(blob) = part.inline_data {
            ContentBlock::Image {
                mime_type: blob.mime_type,
                source: ImageSource::Base64(blob.data),
            }
        } else if let Some(file) = part.file_data {
            ContentBlock::Image {
                mime_type: file.mime_type,
                source: ImageSource::Url(file.file_uri),
            }
        } else {
            continue;
        };
        match messages.last_mut() {
            Some(Message::Tool(tool)) if in_tool => tool.content.push(block),
            _ => user.push(block),
        }
    }
    flush_user(messages, &mut user);
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn flush_user(messages: &mut Vec<Message>, user: &mut Vec<ContentBlock>) {
    if !user.is_empty() {
        messages.push(Message::User(UserMessage {
            content: std::mem::take(user),
            source: None,
        }));
    }
}

fn finish_reason(finish: FinishReason) -> &'static str {
    match finish {
        FinishReason::Stop | FinishReason::ToolCalls => "STOP",
        FinishReason::Length => "MAX_TOKENS",
        FinishReason::ContentFilter => "SAFETY",
    }
}

fn usage(answer: &ModelResponse) -> UsageMetadata {
    let usage = answer.usage;
    UsageMetadata {
        prompt_token_count: usage.input_tokens,
        candidates_token_count: usage.output_tokens,
        thoughts_token_count: None,
        cached_content_token_count: (usage.cached_input_tokens > 0)
            .then_some(usage.cached_input_tokens),
        total_token_count: usage.input_tokens + usage.output_tokens,
    }
}

fn call_parts(answer: &ModelResponse) -> Vec<Part> {
    answer
        .message
        .tool_calls
        .iter()
        .map(|call| Part {
            function_call: Some(FunctionCall {
                id: Some(call.id.clone()),
                name: call.name.clone(),
                args: arguments_object(&call.arguments),
            }),
            ..Part::default()
        })
        .collect()
}

fn response(
    answer: &ModelResponse,
    parts: Vec<Part>,
    finish: Option<&str>,
    usage: UsageMetadata,
) -> GenerateContentResponse {
    GenerateContentResponse {
        candidates: vec![Candidate {
            content: Some(Content {
                role: Some("model".to_owned()),
                parts,
            }),
            finish_reason: finish.map(str::to_owned),
            index: 0,
        }],
        usage_metadata: Some(usage),
        model_version: answer.message.model.clone(),
        response_id: Some("scripted".to_owned()),
    }
}

fn to_wire(answer: &ModelResponse) -> GenerateContentResponse {
    let text = joined_text(&answer.message.content);
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(Part {
            text: Some(text),
            ..Part::default()
        });
    }
    parts.extend(call_parts(answer));
    response(
        answer,
        parts,
        Some(finish_reason(answer.finish)),
        usage(answer),
    )
}

/// `answer` as the API streams it: text pieces with the prompt's usage so
/// far, then the calls with the finish reason and the final usage.
fn chunks(answer: &ModelResponse) -> Vec<(&'static str, String)> {
    let partial = UsageMetadata {
        prompt_token_count: answer.usage.input_tokens,
        total_token_count: answer.usage.input_tokens,
        ..UsageMetadata::default()
    };
    let mut out: Vec<GenerateContentResponse> = pieces(&joined_text(&answer.message.content))
        .into_iter()
        .map(|piece| {
            let part = Part {
                text: Some(piece),
                ..Part::default()
            };
            response(answer, vec![part], None, partial)
        })
        .collect();
    out.push(response(
        answer,
        call_parts(answer),
        Some(finish_reason(answer.finish)),
        usage(answer),
    ));
    out.iter()
        .map(|chunk| ("", serde_json::to_string(chunk).unwrap_or_default()))
        .collect()
}
