//! The Chat Completions client against a local server answering with
//! recorded-shape bodies, one canned answer per request.

use crate::support;

use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::post;
use deepfleet_model::openai::ChatCompletions;
use deepfleet_model::retry::RetryPolicy;
use deepfleet_model::transport::{HttpClient, TransportConfig};
use deepfleet_model::{CallPurpose, ErrorKind, FinishReason, ModelClient, ModelRequest, ToolSpec};
use deepfleet_proto::{AssistantMessage, Message, ToolCall, ToolStatus, Usage};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::{Canned, Received, Server, config, serve};

fn client(server: &Server, api_key: Option<&str>) -> HttpClient<ChatCompletions> {
    HttpClient::new(
        ChatCompletions,
        config(base_url(&server.root), api_key, false),
    )
    .unwrap()
}

/// A client making one attempt only, against `root`.
fn single_attempt(root: &str, timeout: Duration) -> HttpClient<ChatCompletions> {
    let config = TransportConfig {
        timeout,
        retry: RetryPolicy::none(),
        ..config(base_url(root), None, false)
    };
    HttpClient::new(ChatCompletions, config).unwrap()
}

fn base_url(root: &str) -> String {
    format!("{root}/v1")
}

fn authorization(request: &Received) -> Option<&str> {
    request
        .headers
        .get("authorization")
        .map(|v| v.to_str().unwrap())
}

fn request() -> ModelRequest {
    ModelRequest {
        model: "gpt-4.1-mini".into(),
        system: "You are deepfleet.".into(),
        messages: vec![
            Message::user("List the root."),
            Message::Assistant(AssistantMessage {
                tool_calls: vec![ToolCall {
                    id: "call_0_0".into(),
                    name: "ls".into(),
                    arguments: r#"{"path":"/"}"#.into(),
                }],
                ..AssistantMessage::default()
            }),
            Message::tool("call_0_0", "ls", "notes/\ntodo.md", ToolStatus::Success),
        ],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"file_path": {"type": "string"}},
                               "required": ["file_path"]})
            .into(),
        }]
        .into(),
        max_output_tokens: Some(1024),
        cache_key: Some("thread-42".into()),
        cache_breakpoints: Vec::new(),
        purpose: CallPurpose::Agent,
        sampling: Default::default(),
        rate: Default::default(),
    }
}

fn tool_call_completion() -> Value {
    json!({
        "id": "chatcmpl-BxYz", "object": "chat.completion", "created": 1750000000,
        "model": "gpt-4.1-mini-2025-04-14",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": null, "refusal": null, "annotations": [],
                "tool_calls": [{"id": "call_Qb7", "type": "function",
                    "function": {"name": "read_file", "arguments": "{\"file_path\":\"/todo.md\"}"}}]},
            "logprobs": null, "finish_reason": "tool_calls"
        }],
        "usage": {"prompt_tokens": 2006, "completion_tokens": 18, "total_tokens": 2024,
            "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0}},
        "service_tier": "default", "system_fingerprint": "fp_6f2eabb9a5"
    })
}

fn error_body(message: &str, kind: &str, code: Value) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

#[tokio::test]
async fn sends_the_conversation_and_decodes_tool_calls_with_cached_usage() {
    let server = Server::start(vec![Canned::json(200, tool_call_completion())]).await;
    let response = client(&server, Some("sk-test"))
        .complete(&request())
        .await
        .unwrap();

    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(
        response.message.tool_calls,
        vec![ToolCall {
            id: "call_Qb7".into(),
            name: "read_file".into(),
            arguments: r#"{"file_path":"/todo.md"}"#.into(),
        }]
    );
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 2006,
            output_tokens: 18,
            cached_input_tokens: 1920
        }
    );
    assert_eq!(response.message.usage, Some(response.usage));
    assert_eq!(
        response.message.model.as_deref(),
        Some("gpt-4.1-mini-2025-04-14")
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].uri, "/v1/chat/completions");
    assert_eq!(authorization(&requests[0]), Some("Bearer sk-test"));
    assert_eq!(
        &requests[0].body,
        &json!({
            "model": "gpt-4.1-mini",
            "messages": [
                {"role": "system", "content": "You are deepfleet."},
                {"role": "user", "content": "List the root."},
                {"role": "assistant", "tool_calls": [{"id": "call_0_0", "type": "function",
                    "function": {"name": "ls", "arguments": "{\"path\":\"/\"}"}}]},
                {"role": "tool", "tool_call_id": "call_0_0", "content": "notes/\ntodo.md"}
            ],
            "tools": [{"type": "function", "function": {"name": "read_file",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}},
                               "required": ["file_path"]}}}],
            "tool_choice": "auto",
            "max_completion_tokens": 1024,
            "prompt_cache_key": "thread-42"
        })
    );
}

#[tokio::test]
async fn rate_limits_are_retried_after_the_asked_delay() {
    let limited = error_body(
        "Rate limit reached for gpt-4.1-mini on tokens per min (TPM).",
        "tokens",
        json!("rate_limit_exceeded"),
    );
    let server = Server::start(vec![
        Canned::json(429, limited.clone()).retry_after("0"),
        Canned::json(429, limited).retry_after("0"),
        Canned::json(200, tool_call_completion()),
    ])
    .await;
    let response = client(&server, None).complete(&request()).await.unwrap();
    assert_eq!(response.finish, FinishReason::ToolCalls);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        authorization(&requests[0]),
        None,
        "no key, no Authorization header"
    );
    assert_eq!(
        requests[0].body, requests[2].body,
        "retries resend the same body"
    );
}

#[tokio::test]
async fn rate_limit_errors_keep_status_and_retry_after_when_attempts_run_out() {
    let limited = error_body("slow down", "requests", json!("rate_limit_exceeded"));
    let server = Server::start(vec![Canned::json(429, limited).retry_after("7")]).await;
    let client = single_attempt(&server.root, Duration::from_secs(5));
    let error = client.complete(&request()).await.unwrap_err();
    assert_eq!(error.kind, ErrorKind::RateLimited);
    assert_eq!(error.status, Some(429));
    assert_eq!(error.retry_after, Some(Duration::from_secs(7)));
    assert_eq!(error.message, "slow down");
}

#[tokio::test]
async fn auth_failures_are_not_retried_and_never_show_the_key() {
    let server = Server::start(vec![Canned::json(
        401,
        error_body(
            "Incorrect API key provided.",
            "invalid_request_error",
            json!("invalid_api_key"),
        ),
    )])
    .await;
    let client = client(&server, Some("sk-very-secret"));
    let error = client.complete(&request()).await.unwrap_err();
    assert_eq!(error.kind, ErrorKind::Auth);
    assert_eq!(server.requests().len(), 1);
    let shown = format!("{error} {error:?} {client:?}");
    assert!(!shown.contains("sk-very-secret"), "{shown}");
}

#[tokio::test]
async fn context_overflow_is_classified_and_not_retried() {
    let server = Server::start(vec![Canned::json(
        400,
        error_body(
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens.",
            "invalid_request_error",
            json!("context_length_exceeded"),
        ),
    )])
    .await;
    let error = client(&server, None)
        .complete(&request())
        .await
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::ContextOverflow);
    assert_eq!(error.status, Some(400));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_and_undecodable_bodies_are_invalid() {
    let server = Server::start(vec![
        Canned::json(502, json!("bad gateway")),
        Canned::json(200, json!({"unexpected": true})),
    ])
    .await;
    let error = client(&server, None)
        .complete(&request())
        .await
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::InvalidResponse);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn connection_failures_are_transport_errors() {
    // Bind then drop a listener so the port is (almost certainly) closed.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let client = single_attempt(&format!("http://{address}"), Duration::from_secs(5));
    let error = client.complete(&request()).await.unwrap_err();
    assert_eq!(error.kind, ErrorKind::Transport, "{error}");
}

#[tokio::test]
async fn slow_answers_time_out() {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            StatusCode::OK
        }),
    );
    let client = single_attempt(&serve(app).await, Duration::from_millis(100));
    let error = client.complete(&request()).await.unwrap_err();
    assert_eq!(error.kind, ErrorKind::Timeout, "{error}");
}
