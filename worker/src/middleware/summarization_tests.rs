//! The middleware against a fake model: deepagents conformance §13.2
//! items 11-13 and 17, with this project's thresholds.

use super::*;
use crate::backend::{Backend, StateBackend};
use crate::compress::budget::{Keep, Policy, Trigger};
use crate::compress::testing::{FakeModel, compressor, cx};
use deepfleet_fleet::tokens::logged;
use deepfleet_model::CallPurpose;
use deepfleet_proto::{AssistantMessage, ErrorCode, LoggedMessage, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::json;

fn request(cx: &StepContext) -> ModelRequest {
    let start = cx.compaction.view_start();
    ModelRequest {
        model: "fake".into(),
        system: "sys".into(),
        messages: cx
            .history
            .iter()
            .skip(start)
            .chain(&cx.added)
            .map(|m| m.message.clone())
            .collect(),
        tools: Vec::new().into(),
        max_output_tokens: None,
        cache_key: None,
        cache_breakpoints: Vec::new(),
        purpose: CallPurpose::Agent,
        sampling: Default::default(),
        rate: Default::default(),
    }
}

async fn step(
    layer: &Summarization,
    model: &FakeModel,
    cx: &StepContext,
) -> Result<ModelResponse, StepError> {
    let stack: Vec<Arc<dyn Middleware>> =
        vec![Arc::new(Summarization::new(Arc::clone(&layer.compressor)))];
    ModelNext::new(&stack, model).run(request(cx), cx).await
}

fn users(n: usize) -> Vec<LoggedMessage> {
    (0..n)
        .map(|i| logged(Message::user(format!("S{i}"))))
        .collect()
}

fn texts(request: &ModelRequest) -> Vec<String> {
    request.messages.iter().map(Message::text).collect()
}

fn kinds(sink: &crate::events::RecordingSink) -> Vec<CompactionKind> {
    sink.events()
        .into_iter()
        .filter_map(|(_, e)| match e {
            Event::Compaction { kind, .. } => Some(kind),
            _ => None,
        })
        .collect()
}

const BY_COUNT: Policy = Policy {
    trigger: Trigger::Messages(5),
    keep: Keep::Messages(2),
    input_budget: None,
};

#[tokio::test]
async fn below_the_trigger_the_request_is_untouched() {
    let model = Arc::new(FakeModel::default());
    let layer = Summarization::new(compressor(model.clone(), Policy::for_profile(None)));
    let (cx, sink) = cx(users(3), ContextCursor::default());
    step(&layer, &model, &cx).await.unwrap();
    assert_eq!(texts(&model.agent_requests()[0]), ["S0", "S1", "S2"]);
    assert_eq!(cx.compaction.take().0, None);
    assert_eq!(kinds(&sink), []);
}

// §13.2 item 13: trigger 5 messages, keep 2; 8 -> 14 -> 20 messages give
// cutoffs 6, 12, 18, the model sees [summary, S(n-2), S(n-1)] and the
// history file holds everything summarized.
#[tokio::test]
async fn summaries_chain_their_cutoffs() {
    let model = Arc::new(FakeModel::default());
    let layer = Summarization::new(compressor(model.clone(), BY_COUNT));
    let backend = Arc::new(StateBackend::default());
    let mut cursor = ContextCursor::default();
    for (len, cutoff) in [(8, 6), (14, 12), (20, 18)] {
        let (mut cx, sink) = cx(users(len), cursor.clone());
        cx.backend = backend.clone();
        step(&layer, &model, &cx).await.unwrap();
        let sent = model.agent_requests().pop().unwrap();
        let seen = texts(&sent);
        assert!(seen[0].starts_with("You are in the middle of a conversation"));
        assert_eq!(
            seen[1..],
            [format!("S{}", len - 2), format!("S{}", len - 1)]
        );
        cursor = cx.compaction.take().0.unwrap();
        let summary = cursor.summary.clone().unwrap();
        assert_eq!(summary.cutoff, cutoff);
        assert_eq!(summary.created_at_index, len as u64);
        assert_eq!(kinds(&sink), [CompactionKind::Summarization]);
    }
    let path = cursor.summary.unwrap().file_path.unwrap();
    let file = backend.read(&path).await.unwrap().content;
    for i in 0..18 {
        assert_eq!(file.matches(&format!(">S{i}<")).count(), 1, "S{i}");
    }
    assert!(!file.contains(">S18<"));
}

fn write_call(id: &str, content: &str) -> LoggedMessage {
    logged(Message::Assistant(AssistantMessage {
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: "write_file".into(),
            arguments: json!({"file_path": "/a.md", "content": content}).to_string(),
        }],
        ..AssistantMessage::default()
    }))
}

// §13.2 item 12: past the trigger, an old write_file call reaches the
// model truncated; the log keeps it whole; recent calls are untouched.
#[tokio::test]
async fn old_arguments_are_truncated_in_the_request_only() {
    let content: String = (0..3_000).map(|i| format!("line {i}\n")).collect();
    let history = vec![
        logged(Message::user("write twice")),
        write_call("c1", &content),
        logged(Message::tool(
            "c1",
            "write_file",
            "Updated file /a.md",
            Default::default(),
        )),
        write_call("c2", &content),
        logged(Message::tool(
            "c2",
            "write_file",
            "Updated file /a.md",
            Default::default(),
        )),
    ];
    let total: u64 = history.iter().map(|m| u64::from(m.tokens)).sum();
    let model = Arc::new(FakeModel::default());
    let policy = Policy {
        trigger: Trigger::Tokens(total),
        keep: Keep::Messages(2),
        input_budget: None,
    };
    let layer = Summarization::new(compressor(model.clone(), policy));
    let (cx, sink) = cx(history.clone(), ContextCursor::default());
    step(&layer, &model, &cx).await.unwrap();
    let sent = &model.agent_requests()[0];
    let args = |i: usize| -> serde_json::Value {
        serde_json::from_str(&sent.messages[i].tool_calls()[0].arguments).unwrap()
    };
    assert_eq!(
        args(1)["content"],
        "line 0\nline 1\nline 2...(argument truncated)"
    );
    assert_eq!(args(3)["content"], content.as_str());
    assert_eq!(*cx.history, history);
    assert_eq!(kinds(&sink), [CompactionKind::ArgumentTruncation]);
    assert_eq!(cx.compaction.take().0, None);
}

// §13.2 item 17: an overflow below the trigger summarizes and retries
// exactly once.
#[tokio::test]
async fn an_overflow_summarizes_and_retries_once() {
    let model = FakeModel::overflowing(1);
    let layer = Summarization::new(compressor(model.clone(), Policy::for_profile(None)));
    let (cx, sink) = cx(users(10), ContextCursor::default());
    step(&layer, &model, &cx).await.unwrap();
    let agent = model.agent_requests();
    assert_eq!(agent.len(), 2);
    assert_eq!(agent[0].messages.len(), 10);
    // Summary + the 6 messages kept without a profile.
    assert_eq!(agent[1].messages.len(), 7);
    assert_eq!(kinds(&sink), [CompactionKind::OverflowRetry]);
    assert_eq!(cx.compaction.take().0.unwrap().summary.unwrap().cutoff, 4);
}

#[tokio::test]
async fn a_second_overflow_fails_the_run() {
    let model = FakeModel::overflowing(2);
    let layer = Summarization::new(compressor(model.clone(), Policy::for_profile(None)));
    let (cx, _) = cx(users(10), ContextCursor::default());
    let error = step(&layer, &model, &cx).await.unwrap_err();
    assert_eq!(error.code(), ErrorCode::ContextOverflow);
    assert!(!error.is_retryable());
    assert!(error.to_string().contains("still does not fit"), "{error}");
    assert_eq!(model.agent_requests().len(), 2);
}

#[tokio::test]
async fn an_overflow_with_nothing_to_summarize_fails() {
    let model = FakeModel::overflowing(1);
    let layer = Summarization::new(compressor(model.clone(), Policy::for_profile(None)));
    let (cx, _) = cx(users(3), ContextCursor::default());
    let error = step(&layer, &model, &cx).await.unwrap_err();
    assert_eq!(error.code(), ErrorCode::ContextOverflow);
    assert!(error.to_string().contains("nothing older"), "{error}");
    assert_eq!(model.agent_requests().len(), 1);
}

// §13.2 item 11, at this project's 50,000-token limit: the oversized last
// user message goes to a file once and is shown as a stub from then on.
#[tokio::test]
async fn an_oversized_user_message_is_evicted_once() {
    let big = "word ".repeat(60_000);
    let model = Arc::new(FakeModel::default());
    let layer = Summarization::new(compressor(model.clone(), Policy::for_profile(None)));
    let backend = Arc::new(StateBackend::default());
    let (mut first, sink) = cx(
        vec![logged(Message::user(big.clone()))],
        ContextCursor::default(),
    );
    first.backend = backend.clone();
    step(&layer, &model, &first).await.unwrap();
    let cursor = first.compaction.take().0.unwrap();
    assert_eq!(cursor.evicted.len(), 1);
    let path = cursor.evicted[0].path.clone();
    assert!(path.starts_with("/conversation_history/") && path.ends_with(".md"));
    assert_eq!(backend.read(&path).await.unwrap().content, big);
    let seen = texts(&model.agent_requests()[0]);
    assert!(seen[0].starts_with(&format!(
        "Message content too large and was saved to the filesystem at: {path}"
    )));
    assert_eq!(kinds(&sink), [CompactionKind::UserMessageEviction]);

    let history = vec![
        logged(Message::user(big)),
        logged(Message::assistant("ok")),
        logged(Message::user("more")),
    ];
    let (mut second, sink) = cx(history, cursor.clone());
    second.backend = backend.clone();
    step(&layer, &model, &second).await.unwrap();
    let seen = texts(&model.agent_requests()[1]);
    assert_eq!(seen.len(), 3);
    assert!(seen[0].starts_with("Message content too large"));
    assert_eq!(second.compaction.take().0, None);
    assert_eq!(kinds(&sink), []);
}
