//! The Messages client against a local server speaking the Messages
//! protocol: recorded-shape answers, streamed and not, and errors.

use crate::support;

use deepfleet_model::anthropic::Messages;
use deepfleet_model::transport::HttpClient;
use deepfleet_model::{
    CallPurpose, Delta, ErrorKind, FinishReason, ModelClient, ModelRequest, ToolSpec,
};
use deepfleet_proto::{AssistantMessage, ContentBlock, Message, ToolCall, ToolStatus, Usage};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::{Canned, Collect, Server, config};

fn client(server: &Server, stream: bool) -> HttpClient<Messages> {
    HttpClient::new(
        Messages,
        config(server.root.clone(), Some("sk-ant-secret"), stream),
    )
    .unwrap()
}

fn request(purpose: CallPurpose) -> ModelRequest {
    ModelRequest {
        model: "claude-sonnet-4-5".into(),
        system: "You are deepfleet.\n<memory>notes</memory>\nToday.".into(),
        messages: vec![
            Message::user("Read the todo list."),
            Message::Assistant(AssistantMessage {
                tool_calls: vec![ToolCall {
                    id: "toolu_0".into(),
                    name: "ls".into(),
                    arguments: r#"{"path":"/"}"#.into(),
                }],
                ..AssistantMessage::default()
            }),
            Message::tool("toolu_0", "ls", "todo.md", ToolStatus::Success),
        ],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"file_path": {"type": "string"}}})
                .into(),
        }]
        .into(),
        max_output_tokens: None,
        cache_key: Some("thread-1".into()),
        // After the memory section.
        cache_breakpoints: vec![41],
        purpose,
        sampling: Default::default(),
        rate: Default::default(),
    }
}

fn recorded() -> Value {
    json!({
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [
            {"type": "text", "text": "I'll read it."},
            {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "read_file",
             "input": {"file_path": "/todo.md", "limit": 20}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 12, "cache_creation_input_tokens": 100,
                  "cache_read_input_tokens": 2000, "output_tokens": 40}
    })
}

/// The same answer as `recorded`, streamed as the API streams it.
fn recorded_stream() -> Vec<(&'static str, Value)> {
    let delta = |index: usize, delta: Value| {
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    };
    vec![
        (
            "message_start",
            json!({"type": "message_start", "message": {
            "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": 12, "cache_creation_input_tokens": 100,
                "cache_read_input_tokens": 2000, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        ),
        ("ping", json!({"type": "ping"})),
        delta(0, json!({"type": "text_delta", "text": "I'll read"})),
        delta(0, json!({"type": "text_delta", "text": " it."})),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                              "name": "read_file", "input": {}}}),
        ),
        delta(1, json!({"type": "input_json_delta", "partial_json": ""})),
        delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "{\"file_path\": \"/to"}),
        ),
        delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "do.md\", \"limit\": 20}"}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": null},
            "usage": {"output_tokens": 40}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]
}

fn overloaded() -> Value {
    json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
}

#[tokio::test]
async fn sends_headers_cache_breakpoints_and_maps_the_answer() {
    let server = Server::start(vec![Canned::json(200, recorded())]).await;
    let response = client(&server, false)
        .complete(&request(CallPurpose::Agent))
        .await
        .unwrap();
    let usage = Usage {
        input_tokens: 2112,
        output_tokens: 40,
        cached_input_tokens: 2000,
    };
    assert_eq!(response.usage, usage);
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(
        response.message.content,
        vec![ContentBlock::text("I'll read it.")]
    );
    assert_eq!(
        response.message.tool_calls,
        vec![ToolCall {
            id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
            name: "read_file".into(),
            arguments: r#"{"file_path":"/todo.md","limit":20}"#.into(),
        }]
    );

    let requests = server.requests();
    let sent = &requests[0];
    assert_eq!(sent.uri, "/v1/messages");
    assert_eq!(sent.headers["x-api-key"], "sk-ant-secret");
    assert_eq!(sent.headers["anthropic-version"], "2023-06-01");
    assert!(sent.headers.get("authorization").is_none());
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 64000,
            "system": [
                {"type": "text", "text": "You are deepfleet.\n<memory>notes</memory>",
                 "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "\nToday."}
            ],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Read the todo list."}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_0", "name": "ls", "input": {"path": "/"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_0",
                     "content": [{"type": "text", "text": "todo.md"}],
                     "cache_control": {"type": "ephemeral"}}
                ]}
            ],
            "tools": [{"name": "read_file", "description": "Read a file",
                       "input_schema": {"type": "object", "properties":
                           {"file_path": {"type": "string"}}},
                       "cache_control": {"type": "ephemeral"}}]
        })
    );
}

#[tokio::test]
async fn a_stream_assembles_the_same_response_and_tags_its_deltas() {
    let server = Server::start(vec![
        Canned::json(200, recorded()),
        Canned::sse(&recorded_stream()),
    ])
    .await;
    let client = client(&server, false);
    let plain = client.complete(&request(CallPurpose::Agent)).await.unwrap();
    let sink = Collect::default();
    let streamed = client
        .stream(&request(CallPurpose::Summarization), &sink)
        .await
        .unwrap();
    assert_eq!(streamed, plain);

    let events = sink.events();
    assert!(
        events
            .iter()
            .all(|e| e.purpose == CallPurpose::Summarization)
    );
    let deltas: Vec<Delta> = events.into_iter().map(|e| e.delta).collect();
    let call = |id: Option<&str>, name: Option<&str>, arguments: &str| Delta::ToolCall {
        index: 0,
        id: id.map(str::to_owned),
        name: name.map(str::to_owned),
        arguments: arguments.to_owned(),
    };
    assert_eq!(
        deltas,
        vec![
            Delta::Text {
                text: "I'll read".into()
            },
            Delta::Text {
                text: " it.".into()
            },
            call(
                Some("toolu_01T1x1fJ34qAmk2tNTrN7Up6"),
                Some("read_file"),
                ""
            ),
            call(None, None, "{\"file_path\": \"/to"),
            call(None, None, "do.md\", \"limit\": 20}"),
        ]
    );
    let requests = server.requests();
    assert_eq!(requests[1].body["stream"], true);
    assert_eq!(requests[0].body.get("stream"), None);
}

#[tokio::test]
async fn the_stream_option_makes_complete_stream() {
    let server = Server::start(vec![Canned::sse(&recorded_stream())]).await;
    let response = client(&server, true)
        .complete(&request(CallPurpose::Agent))
        .await
        .unwrap();
    assert_eq!(response.usage.cached_input_tokens, 2000);
    assert_eq!(server.requests()[0].body["stream"], true);
}

#[tokio::test]
async fn overload_is_retried_while_auth_failures_are_not_and_hide_the_key() {
    let server = Server::start(vec![
        Canned::json(529, overloaded()).retry_after("0"),
        Canned::json(200, recorded()),
        Canned::json(
            401,
            json!({"type": "error", "error": {"type": "authentication_error",
                                              "message": "invalid x-api-key"}}),
        ),
    ])
    .await;
    let client = client(&server, false);
    client.complete(&request(CallPurpose::Agent)).await.unwrap();
    assert_eq!(server.requests().len(), 2);
    let error = client
        .complete(&request(CallPurpose::Agent))
        .await
        .unwrap_err();
    assert_eq!(
        (error.kind, error.status, error.message.as_str()),
        (ErrorKind::Auth, Some(401), "invalid x-api-key")
    );
    assert_eq!(server.requests().len(), 3);
    let shown = format!("{error} {error:?} {client:?}");
    assert!(!shown.contains("sk-ant-secret"), "{shown}");
}

#[tokio::test]
async fn context_overflow_fails_at_once() {
    let server = Server::start(vec![Canned::json(
        400,
        json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
    )])
    .await;
    let error = client(&server, false)
        .complete(&request(CallPurpose::Agent))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::ContextOverflow);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn stream_errors_are_retried_only_before_the_first_delta() {
    let start = recorded_stream()[0].clone();
    let text = recorded_stream()[3].clone();
    let error = ("error", overloaded());
    let server = Server::start(vec![
        // Fails before any delta: retried.
        Canned::sse(&[start.clone(), error.clone()]),
        // Fails after a delta: the sink saw text, so no retry.
        Canned::sse(&[start, text, error]),
        Canned::json(200, recorded()),
    ])
    .await;
    let sink = Collect::default();
    let failure = client(&server, false)
        .stream(&request(CallPurpose::Agent), &sink)
        .await
        .unwrap_err();
    assert_eq!(
        (failure.kind, failure.message.as_str()),
        (ErrorKind::Overloaded, "Overloaded")
    );
    assert_eq!(server.requests().len(), 2);
    assert_eq!(sink.events().len(), 1);
}

#[tokio::test]
async fn a_cut_stream_is_a_transport_error() {
    let mut events = recorded_stream();
    events.truncate(5);
    let server = Server::start(vec![Canned::sse(&events)]).await;
    let error = client(&server, false)
        .stream(&request(CallPurpose::Agent), &Collect::default())
        .await
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::Transport);
}
