//! The Chat Completions client streaming (`stream: true`, `stream_options`) against a
//! local server sending recorded-shape chunks.

use crate::support;

use deepfleet_model::openai::ChatCompletions;
use deepfleet_model::retry::RetryPolicy;
use deepfleet_model::transport::{HttpClient, TransportConfig};
use deepfleet_model::{CallPurpose, Delta, ErrorKind, ModelClient, ModelRequest};
use deepfleet_proto::Message;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::{Canned, Collect, Server, config};

fn client(server: &Server, stream: bool) -> HttpClient<ChatCompletions> {
    HttpClient::new(
        ChatCompletions,
        config(format!("{}/v1", server.root), Some("sk-secret"), stream),
    )
    .unwrap()
}

fn request(purpose: CallPurpose) -> ModelRequest {
    ModelRequest {
        model: "gpt-4.1-mini".into(),
        system: "You are deepfleet.".into(),
        messages: vec![Message::user("Read both files.")],
        tools: vec![].into(),
        max_output_tokens: None,
        cache_key: Some("thread-7".into()),
        cache_breakpoints: vec![],
        purpose,
        sampling: Default::default(),
        rate: Default::default(),
    }
}

fn recorded() -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1750000000,
        "model": "gpt-4.1-mini-2025-04-14",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null,
            "message": {"role": "assistant", "content": "Reading.", "refusal": null,
                "tool_calls": [
                    {"id": "call_A", "type": "function",
                     "function": {"name": "read_file", "arguments": "{\"file_path\": \"/a\"}"}},
                    {"id": "call_B", "type": "function",
                     "function": {"name": "read_file", "arguments": "{\"file_path\": \"/b\"}"}}
                ]}}],
        "usage": {"prompt_tokens": 2006, "completion_tokens": 18, "total_tokens": 2024,
                  "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0}}
    })
}

/// `recorded`, streamed with `include_usage`: role, text, interleaved
/// tool-call pieces, the finish reason, the usage chunk, `[DONE]`.
fn recorded_stream() -> String {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1750000000,
               "model": "gpt-4.1-mini-2025-04-14", "system_fingerprint": "fp_1",
               "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
               "usage": null})
    };
    let call = |index: usize, head: Option<(&str, &str)>, arguments: &str| {
        let mut piece = json!({"index": index, "function": {"arguments": arguments}});
        if let Some((id, name)) = head {
            piece["id"] = json!(id);
            piece["type"] = json!("function");
            piece["function"]["name"] = json!(name);
        }
        json!({"tool_calls": [piece]})
    };
    let chunks = [
        chunk(
            json!({"role": "assistant", "content": "", "refusal": null}),
            Value::Null,
        ),
        chunk(json!({"content": "Read"}), Value::Null),
        chunk(json!({"content": "ing."}), Value::Null),
        chunk(call(0, Some(("call_A", "read_file")), ""), Value::Null),
        chunk(call(0, None, "{\"file_path\""), Value::Null),
        chunk(
            call(1, Some(("call_B", "read_file")), "{\"file_path\": \"/b\"}"),
            Value::Null,
        ),
        chunk(call(0, None, ": \"/a\"}"), Value::Null),
        chunk(json!({}), json!("tool_calls")),
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1750000000,
               "model": "gpt-4.1-mini-2025-04-14", "choices": [],
               "usage": {"prompt_tokens": 2006, "completion_tokens": 18, "total_tokens": 2024,
                         "prompt_tokens_details": {"cached_tokens": 1920}}}),
    ];
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

#[tokio::test]
async fn a_stream_assembles_the_same_response_and_asks_for_usage() {
    let server = Server::start(vec![
        Canned::json(200, recorded()),
        Canned::sse_text(recorded_stream()),
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
    assert_eq!(streamed.usage.cached_input_tokens, 1920);
    let events = sink.events();
    assert!(
        events
            .iter()
            .all(|e| e.purpose == CallPurpose::Summarization)
    );
    assert_eq!(
        events[0].delta,
        Delta::Text {
            text: "Read".into()
        }
    );
    assert_eq!(events.len(), 6);
    let requests = server.requests();
    assert_eq!(requests[1].uri, "/v1/chat/completions");
    assert_eq!(requests[1].headers["authorization"], "Bearer sk-secret");
    let sent = &requests[1].body;
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"], json!({"include_usage": true}));
    assert_eq!(sent["prompt_cache_key"], "thread-7");
    assert_eq!(server.requests()[0].body.get("stream"), None);
}

#[tokio::test]
async fn the_stream_option_makes_complete_stream() {
    let server = Server::start(vec![Canned::sse_text(recorded_stream())]).await;
    let response = client(&server, true)
        .complete(&request(CallPurpose::Agent))
        .await
        .unwrap();
    assert_eq!(response.message.tool_calls.len(), 2);
    assert_eq!(server.requests()[0].body["stream"], true);
}

/// Issue #14: `complete` on a streaming client discards the deltas, so a
/// stream cut after some of them is retried whole like any cut answer.
#[tokio::test]
async fn complete_retries_a_stream_cut_after_deltas_nobody_saw() {
    // Role and text deltas, then the connection closes.
    let cut: String = recorded_stream().split_inclusive("\n\n").take(3).collect();
    let server = Server::start(vec![
        Canned::sse_text(cut),
        Canned::sse_text(recorded_stream()),
    ])
    .await;
    let response = client(&server, true)
        .complete(&request(CallPurpose::Agent))
        .await
        .unwrap();
    assert_eq!(response.message.tool_calls.len(), 2);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_stream_cut_before_any_delta_is_retried() {
    let cut = || {
        Canned::sse(&[(
            "",
            json!({"id": "x", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
        )])
    };
    let server = Server::start(vec![
        cut(),
        Canned::json(
            429,
            json!({"error": {"message": "slow down", "type": "requests"}}),
        )
        .retry_after("0"),
        Canned::sse_text(recorded_stream()),
    ])
    .await;
    let response = client(&server, false)
        .stream(&request(CallPurpose::Agent), &Collect::default())
        .await
        .unwrap();
    assert_eq!(response.message.tool_calls.len(), 2);
    assert_eq!(server.requests().len(), 3);

    let server = Server::start(vec![cut()]).await;
    let error = HttpClient::new(
        ChatCompletions,
        TransportConfig {
            retry: RetryPolicy::none(),
            ..TransportConfig::new(format!("{}/v1", server.root))
        },
    )
    .unwrap()
    .stream(&request(CallPurpose::Agent), &Collect::default())
    .await
    .unwrap_err();
    assert_eq!(error.kind, ErrorKind::Transport);
}

/// Issue #14: an answer without choices is undecodable whether streamed
/// or not; streamed, it used to pass as an empty turn.
#[tokio::test]
async fn a_stream_without_choices_is_an_invalid_response_as_unstreamed() {
    let empty = json!({"id": "x", "object": "chat.completion.chunk", "created": 1,
        "model": "m", "choices": []});
    let server = Server::start(vec![
        Canned::json(
            200,
            json!({"id": "x", "object": "chat.completion", "created": 1,
            "model": "m", "choices": []}),
        ),
        Canned::sse_text(format!("data: {empty}\n\ndata: [DONE]\n\n")),
    ])
    .await;
    let client = HttpClient::new(
        ChatCompletions,
        TransportConfig {
            retry: RetryPolicy::none(),
            ..TransportConfig::new(format!("{}/v1", server.root))
        },
    )
    .unwrap();
    let plain = client
        .complete(&request(CallPurpose::Agent))
        .await
        .unwrap_err();
    let streamed = client
        .stream(&request(CallPurpose::Agent), &Collect::default())
        .await
        .unwrap_err();
    assert_eq!(plain.kind, ErrorKind::InvalidResponse);
    assert_eq!(
        (streamed.kind, streamed.message),
        (plain.kind, plain.message)
    );
}
