//! The engine and the client together: matching, templating, counters and
//! error classification, through the real wire conversions.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::{AssistantMessage, ContentBlock, Message, ToolCall, ToolStatus, Usage};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use deepfleet_model::openai::convert::to_wire;
use deepfleet_model::retry::RetryPolicy;
use deepfleet_model::{CallPurpose, ErrorKind, FinishReason, ModelClient, ModelRequest};

const SCRIPT: &str = r#"
rules:
  - when: {input: '^Write a note about (?P<topic>\w+)', turn: 0}
    reply:
      text: 'Saving {{topic}}.'
      tool_calls:
        - name: write_file
          args: {file_path: '/notes/{{topic}}.md', content: '# {{topic}}', lines: 1}
        - name: ls
          raw_args: '{"path": '
  - when: {turn: 1, last_tool: '^(?P<result>ok.*)'}
    reply: {text: 'Tool said {{result}} at turn {{turn}}.', usage: {input_tokens: 10, output_tokens: 5, cached_input_tokens: 4}}
  - when: {input: '^flaky'}
    error: {status: 429, message: 'slow down', retry_after: 0, times: 2}
  - when: {input: '^flaky'}
    reply: {text: recovered}
  - when: {input: '^huge'}
    error: {status: 400, message: "This model's maximum context length is 8 tokens"}
  - when: {input: '^optional (?P<opt>x)?'}
    reply: {text: '{{opt}}'}
  - when: {input: '^Same ids'}
    reply:
      tool_calls:
        - {name: ls, id: dup}
        - {name: ls, id: dup}
        - {name: ls, id: ''}
"#;

fn engine() -> Arc<ReplayEngine> {
    Arc::new(ReplayEngine::new(Script::from_yaml(SCRIPT).unwrap()))
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        model: "scripted".into(),
        system: "You are a test agent.".into(),
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

fn quick() -> RetryPolicy {
    RetryPolicy {
        base_delay: Duration::from_millis(1),
        ..RetryPolicy::default()
    }
}

#[tokio::test]
async fn scripted_call_ids_are_sent_as_written() {
    let response = ReplayClient::new(engine())
        .complete(&request(vec![Message::user("Same ids")]))
        .await
        .unwrap();
    let ids: Vec<&str> = response
        .message
        .tool_calls
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(ids, ["dup", "dup", ""]);
}

#[tokio::test]
async fn replies_with_templated_text_and_tool_calls() {
    let client = ReplayClient::new(engine());
    let response = client
        .complete(&request(vec![Message::user("Write a note about cats")]))
        .await
        .unwrap();
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(
        response.message.content,
        vec![ContentBlock::text("Saving cats.")]
    );
    assert_eq!(
        response.message.tool_calls,
        vec![
            ToolCall {
                id: "call_0_0".into(),
                name: "write_file".into(),
                arguments: r##"{"content":"# cats","file_path":"/notes/cats.md","lines":1}"##
                    .into(),
            },
            ToolCall {
                id: "call_0_1".into(),
                name: "ls".into(),
                arguments: r#"{"path": "#.into(),
            },
        ]
    );
    assert_eq!(response.message.model.as_deref(), Some("scripted"));
    // The default usage is a deterministic estimate.
    assert!(response.usage.input_tokens > 0 && response.usage.output_tokens > 0);
    let again = client
        .complete(&request(vec![Message::user("Write a note about cats")]))
        .await
        .unwrap();
    assert_eq!(again.usage, response.usage);
}

#[tokio::test]
async fn matches_turn_and_last_tool_with_scripted_usage() {
    let messages = vec![
        Message::user("Write a note about cats"),
        Message::Assistant(AssistantMessage::default()),
        Message::tool("call_0_0", "write_file", "ok: written", ToolStatus::Success),
    ];
    let response = ReplayClient::new(engine())
        .complete(&request(messages))
        .await
        .unwrap();
    assert_eq!(response.finish, FinishReason::Stop);
    assert_eq!(
        response.message.content,
        vec![ContentBlock::text("Tool said ok: written at turn 1.")]
    );
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 10,
            output_tokens: 5,
            cached_input_tokens: 4
        }
    );
}

#[tokio::test]
async fn times_limits_failures_per_engine_and_the_client_retries() {
    let shared = engine();
    let wire = to_wire(&request(vec![Message::user("flaky")]), None);
    let first = shared.answer(&wire).unwrap_err();
    assert_eq!(first.status, 429);
    assert_eq!(first.retry_after, Some(Duration::ZERO));
    assert_eq!(first.body.error.message, "slow down");
    assert!(shared.answer(&wire).is_err());
    assert!(shared.answer(&wire).is_ok(), "the third request passes");

    // A fresh engine has fresh counters; the client retries through them.
    let response = ReplayClient::new(engine())
        .with_retry(quick())
        .complete(&request(vec![Message::user("flaky")]))
        .await
        .unwrap();
    assert_eq!(
        response.message.content,
        vec![ContentBlock::text("recovered")]
    );

    let error = ReplayClient::new(engine())
        .with_retry(RetryPolicy::none())
        .complete(&request(vec![Message::user("flaky")]))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::RateLimited);
    assert_eq!(error.status, Some(429));
    assert_eq!(error.retry_after, Some(Duration::ZERO));
}

#[tokio::test]
async fn scripted_errors_are_classified_like_http_ones() {
    let error = ReplayClient::new(engine())
        .complete(&request(vec![Message::user("huge prompt")]))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::ContextOverflow);
    assert_eq!(error.status, Some(400));
}

#[tokio::test]
async fn no_matching_rule_is_a_permanent_error_naming_turn_and_input() {
    let error = ReplayClient::new(engine())
        .complete(&request(vec![
            Message::user("Something else entirely"),
            Message::assistant("a"),
            Message::assistant("b"),
        ]))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::BadRequest);
    assert!(!error.is_retryable());
    assert!(error.message.contains("turn 2"), "{}", error.message);
    assert!(
        error.message.contains("Something else"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn a_variable_without_a_value_is_a_clear_error_reply() {
    let error = ReplayClient::new(engine())
        .complete(&request(vec![Message::user("optional y")]))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ErrorKind::BadRequest);
    assert!(error.message.contains("rules[5]"), "{}", error.message);
    assert!(error.message.contains("`opt`"), "{}", error.message);
}

#[test]
fn scripted_error_body_is_openai_shaped() {
    let error = engine()
        .answer(&to_wire(&request(vec![Message::user("flaky")]), None))
        .unwrap_err();
    assert_eq!(
        serde_json::to_value(&error.body).unwrap(),
        json!({"error": {"message": "slow down", "type": "rate_limit_error"}})
    );
}

#[test]
fn engine_is_shared_across_threads() {
    let engine = engine();
    let wire = to_wire(&request(vec![Message::user("flaky")]), None);
    let failures: usize = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| usize::from(engine.answer(&wire).is_err())))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(
        failures, 2,
        "exactly `times` requests fail, whatever the interleaving"
    );
}

#[tokio::test]
async fn an_answer_takes_the_scripts_latency() {
    let script = "latency_ms: 30\nrules:\n  - reply: {text: 'later'}\n";
    let engine = Arc::new(ReplayEngine::new(Script::from_yaml(script).unwrap()));
    assert_eq!(engine.latency(), Duration::from_millis(30));
    let client = ReplayClient::new(engine);
    let started = std::time::Instant::now();
    let answer = client
        .complete(&request(vec![Message::user("hi")]))
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(30));
    assert_eq!(answer.message.content, vec![ContentBlock::text("later")]);
    let instant = ReplayEngine::new(Script::from_yaml(SCRIPT).unwrap());
    assert_eq!(
        instant.latency(),
        Duration::ZERO,
        "no latency unless the script says"
    );
}
