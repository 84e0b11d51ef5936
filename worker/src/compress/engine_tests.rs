use super::*;
use crate::compress::budget::{Keep, Trigger};
use crate::compress::compact_conversation::{CompactConversation, NOTHING_TO_COMPACT};
use crate::compress::testing::{FakeModel, compressor, cx};
use crate::tools::{Tool, ToolOutput};
use deepfleet_proto::{AssistantMessage, LoggedMessage, SummaryEvent, Usage};
use pretty_assertions::assert_eq;
use std::sync::Arc;

fn users(n: usize) -> Vec<LoggedMessage> {
    (0..n)
        .map(|i| logged(Message::user(format!("S{i}"))))
        .collect()
}

fn turn(input: u64) -> LoggedMessage {
    logged(Message::Assistant(AssistantMessage {
        content: vec![ContentBlock::text("ok")],
        usage: Some(Usage {
            input_tokens: input,
            output_tokens: 10,
            cached_input_tokens: 0,
        }),
        ..AssistantMessage::default()
    }))
}

#[test]
fn reported_usage_counts_only_under_the_current_summary() {
    let model = Arc::new(FakeModel::default());
    let engine = compressor(model, Policy::for_profile(None));
    let mut history = users(3);
    history.push(turn(1_000));
    history.push(logged(Message::tool("c", "ls", "x", Default::default())));
    let (cx, _) = cx(history, ContextCursor::default());
    let thread = cx.thread();
    let plain = ContextCursor::default();
    assert_eq!(engine.size(&thread, &plain).reported, Some(1_010));
    let summarized = ContextCursor {
        summary: Some(SummaryEvent {
            cutoff: 2,
            message: logged(Message::user("summary")),
            file_path: None,
            session: "session_x".into(),
            created_at_index: 4,
            summarized_tokens: 0,
            created_at: chrono::Utc::now(),
        }),
        evicted: Vec::new(),
    };
    // The turn at index 3 predates the summary made at index 4.
    assert_eq!(engine.size(&thread, &summarized).reported, None);
    assert_eq!(engine.size(&thread, &summarized).messages, 4);
}

#[test]
fn fixed_tokens_recount_only_a_changed_prompt() {
    let engine = compressor(Arc::new(FakeModel::default()), Policy::for_profile(None));
    let first = engine.fixed_tokens("a system prompt", &[]);
    assert!(first > 0);
    assert_eq!(engine.fixed_tokens("a system prompt", &[]), first);
    assert!(engine.fixed_tokens("a longer system prompt than before", &[]) > first);
}

async fn compact(history: Vec<LoggedMessage>) -> (String, Option<ContextCursor>) {
    let policy = Policy {
        trigger: Trigger::Messages(10),
        keep: Keep::Messages(2),
        input_budget: None,
    };
    let engine = compressor(Arc::new(FakeModel::default()), policy);
    let (cx, _) = cx(history, ContextCursor::default());
    let tool = CompactConversation::new(engine);
    let Ok(ToolOutput::Text(text)) = tool
        .call(&cx.tool("c"), serde_json::from_str("{}").unwrap())
        .await
    else {
        panic!("not a text answer");
    };
    (text, cx.compaction.take().0)
}

// §13.2 item 18: below half the trigger nothing happens; above it the
// tool summarizes and says how many messages.
#[tokio::test]
async fn compact_conversation_works_from_half_the_trigger() {
    let (text, cursor) = compact(users(4)).await;
    assert_eq!(text, NOTHING_TO_COMPACT);
    assert_eq!(cursor, None);
    let (text, cursor) = compact(users(8)).await;
    assert_eq!(
        text,
        "Conversation compacted. Summarized 6 messages into a concise summary."
    );
    assert_eq!(cursor.unwrap().summary.unwrap().cutoff, 6);
}
