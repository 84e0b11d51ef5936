//! Patching dangling tool calls.
//!
//! A model turn whose tool calls never got results (a cancelled run, a
//! seeded history) would make providers reject the conversation. The log is
//! append-only and stays the raw record; the patch is applied to what the
//! model sees: an error result right after the turn, for each missing call.

use std::collections::HashSet;

use async_trait::async_trait;
use deepfleet_model::{ModelRequest, ModelResponse};
use deepfleet_proto::{Message, ToolStatus};

use crate::context::StepContext;
use crate::error::StepError;
use crate::middleware::{Middleware, ModelNext};

/// Inserts error results for tool calls that have none.
pub struct PatchToolCalls;

#[async_trait]
impl Middleware for PatchToolCalls {
    fn name(&self) -> &'static str {
        "patch_tool_calls"
    }

    async fn wrap_model(
        &self,
        mut request: ModelRequest,
        cx: &StepContext,
        next: ModelNext<'_>,
    ) -> Result<ModelResponse, StepError> {
        request.messages = patch(request.messages);
        next.run(request, cx).await
    }
}

/// Returns `messages` with an error tool result inserted after each
/// assistant turn for every call of it that no later message answers.
pub fn patch(messages: Vec<Message>) -> Vec<Message> {
    let answered: HashSet<String> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(t) => Some(t.tool_call_id.clone()),
            _ => None,
        })
        .collect();
    let dangling = messages
        .iter()
        .flat_map(|m| m.tool_calls())
        .any(|c| !answered.contains(&c.id));
    if !dangling {
        return messages;
    }
    let mut out = Vec::with_capacity(messages.len() + 1);
    for message in messages {
        let missing: Vec<Message> = message
            .tool_calls()
            .iter()
            .filter(|c| !answered.contains(&c.id))
            .map(|c| {
                let name = if c.name.is_empty() { "unknown" } else { &c.name };
                Message::tool(
                    &c.id,
                    name,
                    format!(
                        "Tool call {name} with id {} did not complete - no result was recorded. It may have been cancelled or interrupted.",
                        c.id
                    ),
                    ToolStatus::Error,
                )
            })
            .collect();
        out.push(message);
        out.extend(missing);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::{AssistantMessage, ToolCall};
    use pretty_assertions::assert_eq;

    fn turn(ids: &[&str]) -> Message {
        Message::Assistant(AssistantMessage {
            tool_calls: ids
                .iter()
                .map(|id| ToolCall {
                    id: (*id).into(),
                    name: "write_file".into(),
                    arguments: "{}".into(),
                })
                .collect(),
            ..AssistantMessage::default()
        })
    }

    // deepagents conformance §13.2 item 19.
    #[test]
    fn dangling_call_gets_an_error_result_after_its_turn() {
        let history = vec![Message::user("hi"), turn(&["c1"]), Message::user("next")];
        let patched = patch(history.clone());
        assert_eq!(patched.len(), 4);
        assert_eq!(patched[1], history[1]);
        assert_eq!(
            patched[2],
            Message::tool(
                "c1",
                "write_file",
                "Tool call write_file with id c1 did not complete - no result was recorded. It may have been cancelled or interrupted.",
                ToolStatus::Error
            )
        );
        assert_eq!(patched[3], history[2]);
    }

    #[test]
    fn answered_calls_are_left_alone() {
        let history = vec![
            Message::user("hi"),
            turn(&["c1"]),
            Message::tool("c1", "write_file", "ok", ToolStatus::Success),
        ];
        assert_eq!(patch(history.clone()), history);
    }
}
