//! The scripted server in each wire protocol, driven by the real clients:
//! one script, the same answers through OpenAI, Anthropic and Gemini,
//! streamed or not.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use deepfleet_model::anthropic::Messages;
use deepfleet_model::gemini::GenerateContent;
use deepfleet_model::openai::ChatCompletions;
use deepfleet_model::retry::RetryPolicy;
use deepfleet_model::transport::{HttpClient, TransportConfig};
use deepfleet_model::{
    CallPurpose, DeltaEvent, ErrorKind, FinishReason, ModelClient, ModelRequest, ModelResponse,
    ToolSpec,
};
use deepfleet_proto::{AssistantMessage, ContentBlock, Message, ToolStatus, Usage};
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::ScriptedServer;
use pretty_assertions::assert_eq;
use serde_json::json;

const SCRIPT: &str = r#"
rules:
  - when: {input: '^Summarize (?P<topic>\w+)', turn: 0}
    reply:
      text: 'Looking into {{topic}}, which takes a few words to say.'
      tool_calls:
        - name: read_file
          args: {file_path: '/notes/{{topic}}.md', limit: 20}
        - name: ls
          args: {path: '/notes'}
      usage: {input_tokens: 1200, output_tokens: 30, cached_input_tokens: 1024}
  - when: {turn: 1, last_tool: '^(?P<listing>.+)$'}
    reply: {text: 'Summary: {{listing}}'}
  - when: {input: '^busy'}
    error: {status: 429, message: 'slow down', retry_after: 0, times: 1}
  - when: {input: '^busy'}
    reply: {text: 'done'}
  - when: {input: '^huge'}
    error: {status: 400, message: 'prompt is too long: 300000 tokens > 200000 maximum'}
"#;

fn retry() -> RetryPolicy {
    RetryPolicy {
        base_delay: Duration::from_millis(1),
        ..RetryPolicy::default()
    }
}

/// One client per protocol, all on `server`.
fn clients(server: &ScriptedServer) -> Vec<(&'static str, Arc<dyn ModelClient>)> {
    let config = |base_url: String, api_key: Option<&str>| TransportConfig {
        api_key: api_key.map(str::to_owned),
        retry: retry(),
        ..TransportConfig::new(base_url)
    };
    vec![
        (
            "openai",
            Arc::new(HttpClient::new(ChatCompletions, config(server.url(), None)).unwrap()),
        ),
        (
            "anthropic",
            Arc::new(HttpClient::new(Messages, config(server.root_url(), Some("k"))).unwrap()),
        ),
        (
            "gemini",
            Arc::new(
                HttpClient::new(GenerateContent, config(server.root_url(), Some("k"))).unwrap(),
            ),
        ),
    ]
}

async fn server() -> ScriptedServer {
    // What `main` does for the binary: HTTP clients need a TLS provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let engine = ReplayEngine::new(Script::from_yaml(SCRIPT).unwrap());
    ScriptedServer::start(Arc::new(engine), Duration::ZERO)
        .await
        .unwrap()
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        model: "scripted".into(),
        system: "You summarize notes.".into(),
        messages,
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object"}).into(),
        }]
        .into(),
        max_output_tokens: None,
        cache_key: Some("thread-1".into()),
        cache_breakpoints: vec![],
        purpose: CallPurpose::Agent,
        sampling: Default::default(),
        rate: Default::default(),
    }
}

/// Both turns of a run, streamed or not, deltas collected.
async fn run(
    client: &dyn ModelClient,
    streamed: bool,
) -> (ModelResponse, ModelResponse, Vec<DeltaEvent>) {
    let deltas = Mutex::new(Vec::new());
    let sink = |event: DeltaEvent| deltas.lock().unwrap().push(event);
    let sink = &sink;
    let call = |request: ModelRequest| async move {
        if streamed {
            client.stream(&request, sink).await.unwrap()
        } else {
            client.complete(&request).await.unwrap()
        }
    };
    let first = call(request(vec![Message::user("Summarize otters")])).await;
    let mut history = vec![
        Message::user("Summarize otters"),
        Message::Assistant(first.message.clone()),
    ];
    for (call, result) in first
        .message
        .tool_calls
        .iter()
        .zip(["# Otters", "otters.md"])
    {
        history.push(Message::tool(
            &call.id,
            &call.name,
            result,
            ToolStatus::Success,
        ));
    }
    let second = call(request(history)).await;
    (first, second, deltas.into_inner().unwrap())
}

#[tokio::test]
async fn every_protocol_gives_the_same_answers_streamed_or_not() {
    let server = server().await;
    let usage = Usage {
        input_tokens: 1200,
        output_tokens: 30,
        cached_input_tokens: 1024,
    };
    for (name, client) in clients(&server) {
        let (first, second, deltas) = run(client.as_ref(), false).await;
        assert!(deltas.is_empty(), "{name}");
        assert_eq!(first.usage, usage, "{name}");
        assert_eq!(first.finish, FinishReason::ToolCalls, "{name}");
        assert_eq!(
            first.message.content,
            vec![ContentBlock::text(
                "Looking into otters, which takes a few words to say."
            )],
            "{name}"
        );
        let calls: Vec<(&str, &str, &str)> = first
            .message
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            vec![
                (
                    "call_0_0",
                    "read_file",
                    r#"{"file_path":"/notes/otters.md","limit":20}"#
                ),
                ("call_0_1", "ls", r#"{"path":"/notes"}"#),
            ],
            "{name}"
        );
        assert_eq!(
            second.message.content,
            vec![ContentBlock::text("Summary: otters.md")],
            "{name}"
        );

        let (first_streamed, second_streamed, deltas) = run(client.as_ref(), true).await;
        assert_eq!(first_streamed, first, "{name}");
        assert_eq!(second_streamed, second, "{name}");
        // Text and arguments arrive in several pieces.
        assert!(deltas.len() > 10, "{name}: {}", deltas.len());
    }
    // 3 protocols x 2 modes x 2 turns, raw bodies recorded.
    let requests = server.requests();
    assert_eq!(requests.len(), 12);
    assert_eq!(requests[0]["messages"][1]["content"], "Summarize otters");
    assert_eq!(
        requests[4]["system"][0]["cache_control"]["type"],
        "ephemeral"
    );
    assert_eq!(
        requests[8]["systemInstruction"]["parts"][0]["text"],
        "You summarize notes."
    );
}

#[tokio::test]
async fn scripted_errors_arrive_in_each_protocols_shape() {
    let server = server().await;
    for (name, client) in clients(&server) {
        // The `times: 1` rate limit is served to the first protocol only;
        // each retries past it or never meets it.
        let answer = client
            .complete(&request(vec![Message::user("busy")]))
            .await
            .unwrap();
        assert_eq!(answer.message.content, vec![ContentBlock::text("done")]);
        for streamed in [false, true] {
            let huge = request(vec![Message::user("huge")]);
            let error = if streamed {
                client.stream(&huge, &|_: DeltaEvent| {}).await
            } else {
                client.complete(&huge).await
            }
            .unwrap_err();
            assert_eq!(
                (error.kind, error.status, error.message.as_str()),
                (
                    ErrorKind::ContextOverflow,
                    Some(400),
                    "prompt is too long: 300000 tokens > 200000 maximum"
                ),
                "{name}"
            );
        }
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 2 + 2 + 3 + 3, "one retry, one call each");
}

#[tokio::test]
async fn openai_stream_option_streams_complete_with_usage() {
    let server = server().await;
    let config = TransportConfig {
        stream: true,
        ..TransportConfig::new(server.url())
    };
    let client = HttpClient::new(ChatCompletions, config).unwrap();
    let answer = client
        .complete(&request(vec![Message::user("Summarize seals")]))
        .await
        .unwrap();
    assert_eq!(answer.usage.cached_input_tokens, 1024);
    assert_eq!(answer.message.tool_calls.len(), 2);
    assert_eq!(server.requests()[0]["stream"], true);
    assert!(matches!(
        answer.message,
        AssistantMessage { model: Some(_), .. }
    ));
}
