//! The Chat Completions endpoint: the engine speaks this protocol, so
//! requests go to it as they are; `stream: true` answers as SSE chunks.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use deepfleet_model::openai::wire::{
    ChatChunk, ChatRequest, ChatResponse, ChunkChoice, ChunkDelta, ChunkFunction, ChunkToolCall,
    ErrorBody, ErrorDetail,
};
use deepfleet_replay::ScriptedError;
use serde_json::{Value, json};

use crate::faults::{self, Fault, Wire};
use crate::{AppState, error_response, pieces, sse_response};

pub(crate) async fn complete(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request: ChatRequest = match state.receive(&body, "chat completions request").await {
        Ok(request) => request,
        Err(message) => return invalid_request(message),
    };
    let stream = request.stream == Some(true);
    let fault = state.fault();
    faults::respond(fault, &Chat, stream, |oversized| {
        match state.engine.answer(&request) {
            Ok(mut response) => {
                if let (Some(bytes), Some(choice)) = (oversized, response.choices.first_mut()) {
                    choice.message.content = Some(faults::filler(bytes));
                }
                let verdict = state.limits.as_ref().map(|limits| {
                    let key = headers
                        .get(header::AUTHORIZATION)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default();
                    let tokens = response.usage.as_ref().map_or(0, |u| u.total_tokens);
                    limits.admit(key, &request.model, tokens)
                });
                let mut answer = match &verdict {
                    Some(verdict) if verdict.refused => Chat.error(
                        429,
                        "Rate limit reached for requests or tokens per minute".to_owned(),
                        None,
                    ),
                    _ if stream => {
                        let usage = request.stream_options.is_some_and(|o| o.include_usage);
                        sse_response(chunks(response, usage))
                    }
                    _ => axum::Json(response).into_response(),
                };
                if let Some(verdict) = verdict {
                    answer.headers_mut().extend(verdict.headers);
                }
                answer
            }
            Err(error) => scripted_error(error),
        }
    })
    .await
}

/// Faults as Chat Completions answers.
struct Chat;

impl Wire for Chat {
    fn error(&self, status: u16, message: String, retry_after: Option<Duration>) -> Response {
        let kind = match status {
            429 => "rate_limit_error",
            500..=599 => "server_error",
            _ => "invalid_request_error",
        };
        let body = ErrorBody {
            error: ErrorDetail {
                message,
                kind: Some(kind.to_owned()),
                code: None,
            },
        };
        scripted_error(ScriptedError {
            status,
            body,
            retry_after,
        })
    }

    fn broken(&self, fault: &Fault, stream: bool) -> Response {
        let call = match fault {
            Fault::MissingToolName => json!({"id": "call_fault", "type": "function",
                "function": {"arguments": "{}"}}),
            _ => json!({"id": "call_fault", "type": "function",
                "function": {"name": "ls", "arguments": "{\"path\": "}}),
        };
        let calls = if *fault == Fault::Empty {
            Vec::new()
        } else {
            vec![call]
        };
        let head = json!({"id": "chatcmpl-fault", "created": 0, "model": "scripted"});
        if !stream {
            let choices = if calls.is_empty() {
                json!([])
            } else {
                json!([{"index": 0, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": null, "tool_calls": calls}}])
            };
            let mut body = head;
            body["object"] = json!("chat.completion");
            body["choices"] = choices;
            return axum::Json(body).into_response();
        }
        let chunk = |choices: Value| {
            let mut chunk = head.clone();
            chunk["object"] = json!("chat.completion.chunk");
            chunk["choices"] = choices;
            ("", chunk.to_string())
        };
        let mut events = Vec::new();
        if let Some(call) = calls.first() {
            let mut piece = call.clone();
            piece["index"] = json!(0);
            events.push(chunk(json!([{"index": 0, "delta": {
                "role": "assistant", "tool_calls": [piece]}}])));
            events.push(chunk(json!([{"index": 0, "delta": {},
                "finish_reason": "tool_calls"}])));
        } else {
            events.push(chunk(json!([])));
        }
        events.push(("", "[DONE]".to_owned()));
        sse_response(events)
    }
}

fn scripted_error(error: ScriptedError) -> Response {
    let body = serde_json::to_value(&error.body).unwrap_or(Value::Null);
    error_response(error.status, body, error.retry_after)
}

fn invalid_request(message: String) -> Response {
    let body = ErrorBody {
        error: ErrorDetail {
            message,
            kind: Some("invalid_request_error".to_owned()),
            code: None,
        },
    };
    scripted_error(ScriptedError {
        status: 400,
        body,
        retry_after: None,
    })
}

/// `response` as the API streams it: a role chunk, text pieces, each
/// call's head then its argument pieces, the finish reason, the usage
/// chunk when asked for, `[DONE]`.
fn chunks(response: ChatResponse, include_usage: bool) -> Vec<(&'static str, String)> {
    let chunk = |delta: ChunkDelta, finish_reason: Option<String>| ChatChunk {
        id: response.id.clone(),
        object: "chat.completion.chunk".to_owned(),
        created: response.created,
        model: response.model.clone(),
        choices: vec![ChunkChoice {
            index: 0,
            delta,
            finish_reason,
        }],
        usage: None,
    };
    let mut out = vec![chunk(
        ChunkDelta {
            role: Some("assistant".to_owned()),
            ..ChunkDelta::default()
        },
        None,
    )];
    let Some(choice) = response.choices.first() else {
        return Vec::new();
    };
    for piece in pieces(choice.message.content.as_deref().unwrap_or_default()) {
        out.push(chunk(
            ChunkDelta {
                content: Some(piece),
                ..ChunkDelta::default()
            },
            None,
        ));
    }
    for (index, call) in choice.message.tool_calls.iter().enumerate() {
        let piece = |id: Option<String>, name: Option<String>, arguments: String| ChunkDelta {
            tool_calls: vec![ChunkToolCall {
                index,
                kind: id.as_ref().map(|_| "function".to_owned()),
                id,
                function: Some(ChunkFunction {
                    name,
                    arguments: Some(arguments),
                }),
            }],
            ..ChunkDelta::default()
        };
        out.push(chunk(
            piece(
                Some(call.id.clone()),
                Some(call.function.name.clone()),
                String::new(),
            ),
            None,
        ));
        for arguments in pieces(&call.function.arguments) {
            out.push(chunk(piece(None, None, arguments), None));
        }
    }
    out.push(chunk(ChunkDelta::default(), choice.finish_reason.clone()));
    if include_usage {
        out.push(ChatChunk {
            choices: Vec::new(),
            usage: response.usage,
            ..chunk(ChunkDelta::default(), None)
        });
    }
    let mut events: Vec<(&'static str, String)> = out
        .iter()
        .map(|c| ("", serde_json::to_string(c).unwrap_or_default()))
        .collect();
    events.push(("", "[DONE]".to_owned()));
    events
}
