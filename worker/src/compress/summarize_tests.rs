use super::*;
use crate::backend::StateBackend;
use crate::compress::history::View;
use async_trait::async_trait;
use deepfleet_model::ModelResponse;
use deepfleet_proto::{AssistantMessage, ContextCursor, ToolCall};
use pretty_assertions::assert_eq;
use std::sync::Mutex;

/// Answers every call with a fixed summary and keeps the requests.
struct Fixed {
    requests: Mutex<Vec<ModelRequest>>,
}

#[async_trait]
impl ModelClient for Fixed {
    async fn complete(
        &self,
        request: &ModelRequest,
    ) -> Result<deepfleet_model::ModelResponse, ModelError> {
        self.requests.lock().unwrap().push(request.clone());
        Ok(ModelResponse {
            message: AssistantMessage {
                content: vec![ContentBlock::text("## SESSION INTENT\nnotes\n")],
                ..AssistantMessage::default()
            },
            usage: Usage {
                input_tokens: 100,
                output_tokens: 10,
                cached_input_tokens: 0,
            },
            finish: Default::default(),
        })
    }
}

fn log(n: usize) -> Vec<LoggedMessage> {
    (0..n)
        .map(|i| logged(Message::user(format!("S{i}"))))
        .collect()
}

#[test]
fn renders_calls_and_results_as_tagged_text() {
    let messages = vec![
        logged(Message::user("hi")),
        logged(Message::Assistant(AssistantMessage {
            content: vec![ContentBlock::text("looking")],
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "ls".into(),
                arguments: "{\"path\":\"/\"}".into(),
            }],
            ..AssistantMessage::default()
        })),
        logged(Message::tool("c1", "ls", "/a.md", ToolStatus::Success)),
        logged(summary_message("old", None)),
    ];
    assert!(render(&messages, true).ends_with(
        "<message role=\"user\">Here is a summary of the conversation to date:\n\nold</message>\n"
    ));
    assert_eq!(
        render(&messages, false),
        "<message role=\"user\">hi</message>\n\
         <message role=\"assistant\">looking\n<tool_call id=\"c1\" name=\"ls\">{\"path\":\"/\"}</tool_call></message>\n\
         <message role=\"tool\" name=\"ls\" tool_call_id=\"c1\" status=\"success\">/a.md</message>\n"
    );
}

// deepagents conformance §13.2 item 14.
#[test]
fn summary_message_points_at_the_file() {
    let Message::User(m) = summary_message("S", Some("/conversation_history/session_1.md")) else {
        panic!("not a user message");
    };
    assert_eq!(m.source.as_deref(), Some("summarization"));
    let text = deepfleet_proto::message::joined_text(&m.content);
    assert!(text.starts_with("You are in the middle of a conversation that has been summarized."));
    assert!(text.contains("saved to /conversation_history/session_1.md should you need"));
    assert!(text.ends_with("<summary>\nS\n</summary>"));
}

// deepagents conformance §13.2 items 13-14: a summary covers the messages
// before the cut, writes them to the session's history file and chains.
#[tokio::test]
async fn summaries_append_history_and_chain() {
    let model = Arc::new(Fixed {
        requests: Mutex::new(Vec::new()),
    });
    let summarizer = Summarizer::new(model.clone(), "m".into(), Some(500));
    let backend = StateBackend::new(Default::default());
    let history = log(8);
    let view = View::build(&ContextCursor::default(), &history, &[]);
    let first = summarizer
        .summarize(
            SummaryInput {
                view: &view,
                cutoff: 6,
                new_tokens: 60,
                previous: None,
                log_len: 8,
            },
            &backend,
            &|_| {},
            None,
        )
        .await
        .unwrap();
    assert_eq!(first.event.cutoff, 6);
    assert_eq!(first.summarized, 6);
    assert_eq!(first.event.summarized_tokens, 60);
    assert!(first.event.session.starts_with("session_") && first.event.session.len() == 40);
    let path = first.event.file_path.clone().unwrap();
    assert_eq!(
        path,
        format!("/conversation_history/{}.md", first.event.session)
    );
    let request = model.requests.lock().unwrap()[0].clone();
    assert_eq!(request.purpose, CallPurpose::Summarization);
    assert_eq!(request.max_output_tokens, Some(500));
    assert!(request.tools.is_empty() && request.system.is_empty());
    let prompt = request.messages[0].text();
    for section in [
        "## SESSION INTENT",
        "## SUMMARY",
        "## ARTIFACTS",
        "## NEXT STEPS",
    ] {
        assert!(prompt.contains(section), "{section}");
    }
    assert!(prompt.contains("<message role=\"user\">S5</message>"));
    assert!(!prompt.contains("S6"));

    let history = log(14);
    let cursor = ContextCursor {
        summary: Some(first.event.clone()),
        evicted: Vec::new(),
    };
    let view = View::build(&cursor, &history, &[]);
    let second = summarizer
        .summarize(
            SummaryInput {
                view: &view,
                cutoff: 7,
                new_tokens: 60,
                previous: Some(&first.event),
                log_len: 14,
            },
            &backend,
            &|_| {},
            None,
        )
        .await
        .unwrap();
    assert_eq!(second.event.cutoff, 12);
    assert_eq!(second.event.session, first.event.session);
    assert_eq!(second.event.summarized_tokens, 120);
    let file = backend.read(&path).await.unwrap().content;
    assert_eq!(file.matches("## Summarized at ").count(), 2);
    for i in 0..12 {
        assert!(file.contains(&format!(">S{i}<")), "S{i} missing");
    }
    assert!(!file.contains("S12"));
    // The first summary's text reached the second prompt, not the file.
    let second_prompt = model.requests.lock().unwrap()[1].messages[0].text();
    assert!(second_prompt.contains("You are in the middle of a conversation"));
    assert!(!file.contains("You are in the middle"));
}

#[test]
fn stored_tokens_span_log_and_added() {
    let history = vec![
        LoggedMessage {
            message: Message::user("a"),
            tokens: 5
        };
        3
    ];
    let added = vec![LoggedMessage {
        message: Message::user("b"),
        tokens: 7,
    }];
    assert_eq!(stored_tokens(&history, &added, 1, 4), 5 + 5 + 7);
}

/// [`Fixed`], streaming its answer as one delta of the request's purpose.
struct Streaming(Fixed);

#[async_trait]
impl ModelClient for Streaming {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.0.complete(request).await
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        sink: &dyn deepfleet_model::DeltaSink,
    ) -> Result<ModelResponse, ModelError> {
        let response = self.0.complete(request).await?;
        sink.deliver(deepfleet_model::DeltaEvent {
            purpose: request.purpose,
            delta: deepfleet_model::Delta::Text {
                text: deepfleet_proto::message::joined_text(&response.message.content),
            },
        });
        Ok(response)
    }
}

// Issue 7: a followed run's summary streams, tagged as a summary.
#[tokio::test]
async fn a_followed_runs_summary_streams_its_tokens_tagged() {
    let model = Arc::new(Streaming(Fixed {
        requests: Mutex::new(Vec::new()),
    }));
    let summarizer = Summarizer::new(model, "m".into(), None);
    let backend = StateBackend::new(Default::default());
    let history = log(8);
    let view = View::build(&ContextCursor::default(), &history, &[]);
    let seen = Mutex::new(Vec::new());
    let sink = |event: deepfleet_model::DeltaEvent| seen.lock().unwrap().push(event);
    summarizer
        .summarize(
            SummaryInput {
                view: &view,
                cutoff: 6,
                new_tokens: 60,
                previous: None,
                log_len: 8,
            },
            &backend,
            &|_| {},
            Some(&sink),
        )
        .await
        .unwrap();
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].purpose, CallPurpose::Summarization);
}
