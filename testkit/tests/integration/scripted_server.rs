//! The scripted server driven by the real Chat Completions client.

use std::sync::Arc;
use std::time::{Duration, Instant};

use deepfleet_model::openai::ChatCompletions;
use deepfleet_model::retry::RetryPolicy;
use deepfleet_model::transport::{HttpClient, TransportConfig};
use deepfleet_model::{CallPurpose, ErrorKind, FinishReason, ModelClient, ModelRequest};
use deepfleet_proto::{AssistantMessage, ContentBlock, Message, ToolCall, ToolStatus};
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::faults::{Fault, Faults};
use deepfleet_testkit::{ScriptedServer, serve};
use pretty_assertions::assert_eq;
use serde_json::json;

const SCRIPT: &str = r#"
rules:
  - when: {input: '^Write a note about (?P<topic>\w+)', turn: 0}
    reply:
      tool_calls:
        - name: write_file
          args: {file_path: '/notes/{{topic}}.md'}
  - when: {turn: 1}
    error: {status: 429, message: 'slow down', retry_after: 0, times: 1}
  - when: {turn: 1, last_tool: 'written'}
    reply: {text: 'Done: {{last_tool}}'}
  - when: {input: '^deny'}
    error: {status: 401, message: 'bad key'}
"#;

fn engine() -> Arc<ReplayEngine> {
    Arc::new(ReplayEngine::new(Script::from_yaml(SCRIPT).unwrap()))
}

fn client(url: String) -> HttpClient<ChatCompletions> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = TransportConfig {
        api_key: Some("sk-test".into()),
        retry: RetryPolicy {
            base_delay: Duration::from_millis(1),
            ..RetryPolicy::default()
        },
        ..TransportConfig::new(url)
    };
    HttpClient::new(ChatCompletions, config).unwrap()
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        model: "scripted".into(),
        system: "You are a note taker.".into(),
        messages,
        tools: vec![].into(),
        max_output_tokens: None,
        cache_key: None,
        cache_breakpoints: Vec::new(),
        purpose: CallPurpose::Agent,
        sampling: Default::default(),
        rate: Default::default(),
    }
}

#[tokio::test]
async fn answers_a_two_turn_run_and_records_requests() {
    let server = ScriptedServer::start(engine(), Duration::ZERO)
        .await
        .unwrap();
    assert!(server.url().starts_with("http://127.0.0.1:") && server.url().ends_with("/v1"));
    let client = client(server.url());

    let first = client
        .complete(&request(vec![Message::user("Write a note about otters")]))
        .await
        .unwrap();
    assert_eq!(first.finish, FinishReason::ToolCalls);
    let call = ToolCall {
        id: "call_0_0".into(),
        name: "write_file".into(),
        arguments: r#"{"file_path":"/notes/otters.md"}"#.into(),
    };
    assert_eq!(first.message.tool_calls, vec![call.clone()]);

    // Turn 1 is rate limited once; the client retries and gets the reply.
    let second = client
        .complete(&request(vec![
            Message::user("Write a note about otters"),
            Message::Assistant(AssistantMessage {
                tool_calls: vec![call],
                ..AssistantMessage::default()
            }),
            Message::tool("call_0_0", "write_file", "written", ToolStatus::Success),
        ]))
        .await
        .unwrap();
    assert_eq!(
        second.message.content,
        vec![ContentBlock::text("Done: written")]
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3, "two turns, one retry");
    assert_eq!(
        requests[0]["messages"],
        json!([
            {"role": "system", "content": "You are a note taker."},
            {"role": "user", "content": "Write a note about otters"}
        ])
    );
    assert_eq!(requests[1], requests[2]);
    assert_eq!(requests[2]["messages"][3]["role"], "tool");
}

#[tokio::test]
async fn scripted_errors_arrive_with_status_and_body() {
    let server = ScriptedServer::start(engine(), Duration::ZERO)
        .await
        .unwrap();
    let error = client(server.url())
        .complete(&request(vec![Message::user("deny me")]))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::Auth);
    assert_eq!(error.status, Some(401));
    assert_eq!(error.message, "bad key");
    assert_eq!(server.requests().len(), 1, "auth errors are not retried");
}

#[tokio::test]
async fn latency_delays_answers_and_drop_stops_the_server() {
    let server = ScriptedServer::start(engine(), Duration::from_millis(200))
        .await
        .unwrap();
    let url = server.url();
    let started = Instant::now();
    client(url.clone())
        .complete(&request(vec![Message::user("Write a note about owls")]))
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(200));
    drop(server);
    tokio::task::yield_now().await;
    let mut quick = TransportConfig::new(url);
    quick.retry = RetryPolicy::none();
    let error = HttpClient::new(ChatCompletions, quick)
        .unwrap()
        .complete(&request(vec![Message::user("Write a note about owls")]))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::Transport, "{error}");
}

#[tokio::test]
async fn serve_answers_on_a_given_listener_without_the_v1_prefix() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let task = tokio::spawn(serve(engine(), Duration::ZERO, None, listener));
    let response = client(format!("http://{address}"))
        .complete(&request(vec![Message::user("Write a note about seals")]))
        .await
        .unwrap();
    assert_eq!(response.message.tool_calls[0].name, "write_file");
    task.abort();
}

/// A fault plan served by `serve` (the `scripted-server --fault` path):
/// the first requests get the fault, then the script answers.
#[tokio::test]
async fn serve_injects_a_fault_then_steps_aside() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let fault: Fault = "status=503".parse().unwrap();
    let faults = Arc::new(Faults::times(fault, 2));
    let task = tokio::spawn(serve(
        engine(),
        Duration::ZERO,
        Some(faults.clone()),
        listener,
    ));
    let mut once = TransportConfig::new(format!("http://{address}"));
    once.retry = RetryPolicy::none();
    let once = HttpClient::new(ChatCompletions, once).unwrap();
    let error = once
        .complete(&request(vec![Message::user("Write a note about seals")]))
        .await
        .unwrap_err();
    assert_eq!(
        (error.kind, error.status),
        (ErrorKind::Overloaded, Some(503))
    );
    // The retrying client meets the second fault, then the answer.
    let response = client(format!("http://{address}"))
        .complete(&request(vec![Message::user("Write a note about seals")]))
        .await
        .unwrap();
    assert_eq!(response.message.tool_calls[0].name, "write_file");
    assert_eq!(faults.served(), 2);
    task.abort();
}
