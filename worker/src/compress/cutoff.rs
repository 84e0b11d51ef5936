//! Where a summary cuts the conversation.
//!
//! The cut is an index into the view the model sees: everything before it
//! is summarized, everything from it on is kept verbatim. It never lands
//! between an assistant turn and the results of its tool calls: providers
//! reject a tool result whose call is missing.

use std::collections::HashSet;

use deepfleet_proto::{LoggedMessage, Message};

use crate::compress::budget::Keep;

/// The first index to keep so that the kept suffix satisfies `keep`,
/// before any pair adjustment. 0 means nothing to summarize.
///
/// Token keeps walk back from the newest message (cost proportional to
/// what is kept, not to the conversation) and stop before the message
/// that would overflow; the newest message is always kept.
pub fn keep_start(messages: &[LoggedMessage], keep: Keep) -> usize {
    let len = messages.len();
    if len <= 1 {
        return 0;
    }
    match keep {
        Keep::Messages(n) => len.saturating_sub(n),
        Keep::Tokens(budget) => {
            let mut kept = 0_u64;
            let mut start = len;
            while start > 0 {
                let next = kept + u64::from(messages[start - 1].tokens);
                if next > budget {
                    break;
                }
                kept = next;
                start -= 1;
            }
            start.min(len - 1)
        }
    }
}

/// Moves `cutoff` so it does not separate tool results from their call:
/// a cut on a tool result moves back to the assistant turn that made the
/// call (keeping the pair), or, when that turn is not found, forward past
/// the results.
pub fn pair_safe(messages: &[LoggedMessage], cutoff: usize) -> usize {
    if cutoff == 0 || cutoff >= messages.len() {
        return cutoff;
    }
    let mut ids = HashSet::new();
    let mut end = cutoff;
    while let Some(Message::Tool(result)) = messages.get(end).map(|m| &m.message) {
        ids.insert(result.tool_call_id.as_str());
        end += 1;
    }
    if ids.is_empty() {
        return cutoff;
    }
    let turn = messages[..cutoff].iter().rposition(|m| {
        m.message
            .tool_calls()
            .iter()
            .any(|c| ids.contains(c.id.as_str()))
    });
    turn.unwrap_or(end)
}

/// Where to cut: the keep window, made pair-safe.
pub fn cut_point(messages: &[LoggedMessage], keep: Keep) -> usize {
    pair_safe(messages, keep_start(messages, keep))
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::{AssistantMessage, ToolCall, ToolStatus};
    use pretty_assertions::assert_eq;

    fn user(tokens: u32) -> LoggedMessage {
        LoggedMessage {
            message: Message::user("u"),
            tokens,
        }
    }

    fn call(ids: &[&str]) -> LoggedMessage {
        LoggedMessage {
            message: Message::Assistant(AssistantMessage {
                tool_calls: ids
                    .iter()
                    .map(|id| ToolCall {
                        id: (*id).into(),
                        name: "ls".into(),
                        arguments: "{}".into(),
                    })
                    .collect(),
                ..AssistantMessage::default()
            }),
            tokens: 10,
        }
    }

    fn result(id: &str) -> LoggedMessage {
        LoggedMessage {
            message: Message::tool(id, "ls", "r", ToolStatus::Success),
            tokens: 10,
        }
    }

    #[test]
    fn message_keeps_cut_from_the_end() {
        let log: Vec<_> = (0..8).map(|_| user(5)).collect();
        assert_eq!(keep_start(&log, Keep::Messages(2)), 6);
        assert_eq!(keep_start(&log[..2], Keep::Messages(6)), 0);
        assert_eq!(keep_start(&log[..1], Keep::Messages(0)), 0);
    }

    #[test]
    fn token_keeps_fit_the_budget() {
        let log = vec![user(50), user(40), user(30), user(20)];
        // 20 + 30 fit in 55; 40 more would not.
        assert_eq!(keep_start(&log, Keep::Tokens(55)), 2);
        // Everything fits: nothing to summarize.
        assert_eq!(keep_start(&log, Keep::Tokens(1_000)), 0);
        // Not even the newest fits: it is kept anyway.
        assert_eq!(keep_start(&log, Keep::Tokens(5)), 3);
    }

    // deepagents conformance §13.2 item 15.
    #[test]
    fn a_cut_on_a_tool_result_moves_back_to_its_call() {
        let log = vec![
            user(5),
            call(&["a", "b"]),
            result("a"),
            result("b"),
            user(5),
        ];
        assert_eq!(pair_safe(&log, 2), 1);
        assert_eq!(pair_safe(&log, 3), 1);
        assert_eq!(pair_safe(&log, 4), 4);
        assert_eq!(cut_point(&log, Keep::Messages(3)), 1);
    }

    #[test]
    fn an_orphan_result_is_skipped_forward() {
        let log = vec![user(5), result("x"), result("y"), user(5)];
        assert_eq!(pair_safe(&log, 1), 3);
    }
}
