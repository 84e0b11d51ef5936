//! The Messages endpoint: a Messages request becomes the engine's input,
//! and the engine's answer a Messages response or event stream.

use std::collections::HashMap;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use deepfleet_model::anthropic::wire::{
    Block, BlockDelta, ErrorDetail, ErrorResponse, ImageSource, MessageDelta, MessagesRequest,
    MessagesResponse, StreamEvent, WireUsage,
};
use deepfleet_model::{CallPurpose, FinishReason, ModelRequest, ModelResponse, ToolSpec};
use deepfleet_proto::message::joined_text;
use deepfleet_proto::{
    AssistantMessage, ContentBlock, Message, ToolCall, ToolMessage, ToolStatus, UserMessage,
};
use deepfleet_replay::ScriptedError;
use serde_json::{Value, json};

use crate::faults::{self, Fault, Wire};
use crate::{AppState, arguments_object, error_response, pieces, sse_response};

pub(crate) async fn messages(State(state): State<AppState>, body: Bytes) -> Response {
    let request: MessagesRequest = match state.receive(&body, "messages request").await {
        Ok(request) => request,
        Err(message) => return error(400, message, None),
    };
    let stream = request.stream == Some(true);
    let request = to_neutral(request);
    let fault = state.fault();
    faults::respond(fault, &Anthropic, stream, |oversized| {
        match state.answer(&request) {
            Ok(mut answer) => {
                if let Some(bytes) = oversized {
                    answer.message.content = vec![ContentBlock::text(faults::filler(bytes))];
                }
                if stream {
                    sse_response(events(answer))
                } else {
                    axum::Json(to_wire(answer)).into_response()
                }
            }
            Err(scripted) => scripted_error(scripted),
        }
    })
    .await
}

/// Faults as Messages answers.
struct Anthropic;

impl Wire for Anthropic {
    fn error(&self, status: u16, message: String, retry_after: Option<Duration>) -> Response {
        error(status, message, retry_after)
    }

    fn broken(&self, fault: &Fault, stream: bool) -> Response {
        let usage = json!({"input_tokens": 1, "output_tokens": 1});
        let mut message = json!({"id": "msg_fault", "type": "message", "role": "assistant",
            "model": "scripted", "content": [], "stop_reason": "tool_use",
            "stop_sequence": null, "usage": usage});
        let mut block = json!({"type": "tool_use", "id": "toolu_fault", "name": "ls",
            "input": "{\"path\": "});
        match fault {
            Fault::MissingToolName => {
                if let Some(fields) = block.as_object_mut() {
                    fields.remove("name");
                }
                block["input"] = json!({});
            }
            Fault::Empty => message["stop_reason"] = json!("end_turn"),
            _ => {}
        }
        let blocks = if *fault == Fault::Empty {
            Vec::new()
        } else {
            vec![block]
        };
        if !stream {
            message["content"] = json!(blocks);
            return axum::Json(message).into_response();
        }
        let stop_reason = message["stop_reason"].clone();
        message["stop_reason"] = Value::Null;
        let mut out = vec![(
            "message_start",
            json!({"type": "message_start", "message": message}),
        )];
        for (index, mut block) in blocks.into_iter().enumerate() {
            // The start carries an empty input; the arguments follow.
            let arguments = match &block["input"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            block["input"] = json!({});
            out.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": block}),
            ));
            out.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": arguments}}),
            ));
            out.push((
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
        }
        out.push((
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop_reason,
                "stop_sequence": null}, "usage": {"output_tokens": 1}}),
        ));
        out.push(("message_stop", json!({"type": "message_stop"})));
        sse_response(
            out.into_iter()
                .map(|(name, data)| (name, data.to_string()))
                .collect(),
        )
    }
}

fn scripted_error(error: ScriptedError) -> Response {
    self::error(error.status, error.body.error.message, error.retry_after)
}

fn error(status: u16, message: String, retry_after: Option<std::time::Duration>) -> Response {
    let kind = match status {
        429 => "rate_limit_error",
        529 | 503 => "overloaded_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    };
    let body = ErrorResponse {
        kind: "error".to_owned(),
        error: ErrorDetail {
            kind: kind.to_owned(),
            message,
        },
    };
    error_response(
        status,
        serde_json::to_value(body).unwrap_or_default(),
        retry_after,
    )
}

/// The request as deepfleet's client would have built it: tool results
/// become tool messages (named after their `tool_use`), the rest of a user
/// turn a user message.
fn to_neutral(request: MessagesRequest) -> ModelRequest {
    let mut system = String::new();
    let mut cache_breakpoints = Vec::new();
    for block in &request.system {
        system.push_str(&block.text);
        if block.cache_control.is_some() {
            cache_breakpoints.push(system.len());
        }
    }
    let mut names: HashMap<String, String> = HashMap::new();
    let mut messages = Vec::new();
    for turn in request.messages {
        if turn.role == "assistant" {
            messages.push(assistant(turn.content, &mut names));
            continue;
        }
        let mut user: Vec<ContentBlock> = Vec::new();
        for block in turn.content {
            if let Block::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } = block
            {
                flush_user(&mut messages, &mut user);
                messages.push(Message::Tool(ToolMessage {
                    name: names.get(&tool_use_id).cloned().unwrap_or_default(),
                    tool_call_id: tool_use_id,
                    content: content.into_iter().filter_map(content_block).collect(),
                    status: if is_error {
                        ToolStatus::Error
                    } else {
                        ToolStatus::Success
                    },
                }));
            } else {
                user.extend(content_block(block));
            }
        }
        flush_user(&mut messages, &mut user);
    }
    ModelRequest {
        model: request.model,
        system: system.into(),
        messages,
        // Read from JSON, so a list: never a written one.
        tools: request
            .tools
            .into_vec()
            .unwrap_or_default()
            .into_iter()
            .map(|tool| ToolSpec {
                name: tool.name,
                description: tool.description,
                parameters: tool.input_schema,
            })
            .collect(),
        max_output_tokens: Some(request.max_tokens),
        cache_key: None,
        cache_breakpoints,
        purpose: CallPurpose::Agent,
        sampling: Default::default(),
        rate: Default::default(),
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

fn assistant(blocks: Vec<Block>, names: &mut HashMap<String, String>) -> Message {
    let mut message = AssistantMessage::default();
    let mut text = Vec::new();
    for block in blocks {
        match block {
            Block::Text { text: piece, .. } => text.push(ContentBlock::text(piece)),
            Block::ToolUse {
                id, name, input, ..
            } => {
                names.insert(id.clone(), name.clone());
                message.tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments: input.to_string(),
                });
            }
            Block::Image { .. } | Block::ToolResult { .. } | Block::Other => {}
        }
    }
    let text = joined_text(&text);
    if !text.is_empty() {
        message.content = vec![ContentBlock::text(text)];
    }
    Message::Assistant(message)
}

fn content_block(block: Block) -> Option<ContentBlock> {
    match block {
        Block::Text { text, .. } => Some(ContentBlock::text(text)),
        Block::Image { source, .. } => Some(match source {
            ImageSource::Base64 { media_type, data } => ContentBlock::Image {
                mime_type: media_type,
                source: deepfleet_proto::ImageSource::Base64(data),
            },
            ImageSource::Url { url } => ContentBlock::Image {
                mime_type: String::new(),
                source: deepfleet_proto::ImageSource::Url(url),
            },
        }),
        Block::ToolUse { .. } | Block::ToolResult { .. } | Block::Other => None,
    }
}

fn stop_reason(finish: FinishReason) -> &'static str {
    match finish {
        FinishReason::Stop => "end_turn",
        FinishReason::ToolCalls => "tool_use",
        FinishReason::Length => "max_tokens",
        FinishReason::ContentFilter => "refusal",
    }
}

/// The API counts cached prompt tokens apart from `input_tokens`.
fn usage(answer: &ModelResponse) -> WireUsage {
    let cached = answer.usage.cached_input_tokens;
    WireUsage {
        input_tokens: answer.usage.input_tokens.saturating_sub(cached),
        output_tokens: answer.usage.output_tokens,
        cache_creation_input_tokens: Some(0),
        cache_read_input_tokens: Some(cached),
    }
}

fn to_wire(answer: ModelResponse) -> MessagesResponse {
    let mut content = Vec::new();
    let text = joined_text(&answer.message.content);
    if !text.is_empty() {
        content.push(Block::Text {
            text,
            cache_control: None,
        });
    }
    for call in &answer.message.tool_calls {
        content.push(Block::ToolUse {
            id: call.id.clone(),
            name: call.name.clone(),
            input: arguments_object(&call.arguments),
            cache_control: None,
        });
    }
    MessagesResponse {
        id: "msg_scripted".to_owned(),
        kind: "message".to_owned(),
        role: "assistant".to_owned(),
        model: answer.message.model.clone().unwrap_or_default(),
        content,
        stop_reason: Some(stop_reason(answer.finish).to_owned()),
        stop_sequence: None,
        usage: usage(&answer),
    }
}

/// `answer` as the API streams it.
fn events(answer: ModelResponse) -> Vec<(&'static str, String)> {
    let mut start = to_wire(answer.clone());
    start.content.clear();
    start.stop_reason = None;
    start.usage.output_tokens = 1;
    let mut events = vec![StreamEvent::MessageStart { message: start }];
    let mut index = 0;
    let text = joined_text(&answer.message.content);
    if !text.is_empty() {
        events.push(StreamEvent::ContentBlockStart {
            index,
            content_block: Block::Text {
                text: String::new(),
                cache_control: None,
            },
        });
        events.push(StreamEvent::Ping);
        for piece in pieces(&text) {
            events.push(StreamEvent::ContentBlockDelta {
                index,
                delta: BlockDelta::TextDelta { text: piece },
            });
        }
        events.push(StreamEvent::ContentBlockStop { index });
        index += 1;
    }
    for call in &answer.message.tool_calls {
        events.push(StreamEvent::ContentBlockStart {
            index,
            content_block: Block::ToolUse {
                id: call.id.clone(),
                name: call.name.clone(),
                input: serde_json::json!({}),
                cache_control: None,
            },
        });
        for piece in pieces(&arguments_object(&call.arguments).to_string()) {
            events.push(StreamEvent::ContentBlockDelta {
                index,
                delta: BlockDelta::InputJsonDelta {
                    partial_json: piece,
                },
            });
        }
        events.push(StreamEvent::ContentBlockStop { index });
        index += 1;
    }
    events.push(StreamEvent::MessageDelta {
        delta: MessageDelta {
            stop_reason: Some(stop_reason(answer.finish).to_owned()),
            stop_sequence: None,
        },
        usage: WireUsage {
            output_tokens: answer.usage.output_tokens,
            ..WireUsage::default()
        },
    });
    events.push(StreamEvent::MessageStop);
    events
        .into_iter()
        .map(|event| {
            (
                name(&event),
                serde_json::to_string(&event).unwrap_or_default(),
            )
        })
        .collect()
}

fn name(event: &StreamEvent) -> &'static str {
    match event {
        StreamEvent::MessageStart { .. } => "message_start",
        StreamEvent::ContentBlockStart { .. } => "content_block_start",
        StreamEvent::ContentBlockDelta { .. } => "content_block_delta",
        StreamEvent::ContentBlockStop { .. } => "content_block_stop",
        StreamEvent::MessageDelta { .. } => "message_delta",
        StreamEvent::MessageStop => "message_stop",
        StreamEvent::Ping => "ping",
        StreamEvent::Error { .. } => "error",
        StreamEvent::Other => "unknown",
    }
}
