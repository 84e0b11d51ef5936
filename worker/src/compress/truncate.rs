//! Shortening old `write_file` / `edit_file` arguments in what is sent.
//!
//! A file's full content, written long ago, is rarely worth its tokens on
//! every later call: the file itself holds it. Past the trigger, string
//! arguments of those calls before the keep window are cut to a short
//! head and a marker. Only the request changes; the log keeps every byte.

use deepfleet_fleet::tokens::count_message;
use deepfleet_proto::{LoggedMessage, Message};
use serde_json::Value;

use crate::tools::{Tool, edit_file::EditFile, write_file::WriteFile};

/// Arguments longer than this many characters are truncated.
pub const MAX_ARGUMENT_CHARS: usize = 2_000;
/// Characters kept at the start of a truncated argument.
const KEPT_CHARS: usize = 20;
/// What follows the kept head.
pub const TRUNCATION_MARKER: &str = "...(argument truncated)";

/// Truncates long string arguments of `write_file`/`edit_file` calls in
/// `messages[..end]`, recounting the messages it changed. Returns the
/// tokens saved.
pub fn truncate_old_arguments(messages: &mut [LoggedMessage], end: usize) -> u64 {
    let end = end.min(messages.len());
    let mut saved = 0_u64;
    for entry in &mut messages[..end] {
        let Message::Assistant(turn) = &mut entry.message else {
            continue;
        };
        let mut changed = false;
        for call in &mut turn.tool_calls {
            if call.name != WriteFile::NAME && call.name != EditFile::NAME {
                continue;
            }
            if let Some(shorter) = truncated_arguments(&call.arguments) {
                call.arguments = shorter;
                changed = true;
            }
        }
        if changed {
            let tokens = count_message(&entry.message);
            saved += u64::from(entry.tokens.saturating_sub(tokens));
            entry.tokens = tokens;
        }
    }
    saved
}

/// The arguments with every long string value cut, or `None` when nothing
/// needed cutting (or they are not a JSON object: left as the model wrote
/// them).
fn truncated_arguments(raw: &str) -> Option<String> {
    if raw.len() <= MAX_ARGUMENT_CHARS {
        return None;
    }
    let Ok(Value::Object(mut args)) = serde_json::from_str::<Value>(raw) else {
        return None;
    };
    let mut changed = false;
    for value in args.values_mut() {
        if let Value::String(text) = value
            && text.chars().count() > MAX_ARGUMENT_CHARS
        {
            let head: String = text.chars().take(KEPT_CHARS).collect();
            *text = format!("{head}{TRUNCATION_MARKER}");
            changed = true;
        }
    }
    changed.then(|| Value::Object(args).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_fleet::tokens::logged;
    use deepfleet_proto::{AssistantMessage, ToolCall};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn turn(name: &str, args: Value) -> LoggedMessage {
        logged(Message::Assistant(AssistantMessage {
            tool_calls: vec![ToolCall {
                id: "c".into(),
                name: name.into(),
                arguments: args.to_string(),
            }],
            ..AssistantMessage::default()
        }))
    }

    fn args(entry: &LoggedMessage) -> Value {
        serde_json::from_str(&entry.message.tool_calls()[0].arguments).unwrap()
    }

    // deepagents conformance §13.2 item 12, with the default 2,000-char
    // limit.
    #[test]
    fn old_write_arguments_are_cut_recent_ones_kept() {
        let long = "x".repeat(2_500);
        let mut view = vec![
            turn("write_file", json!({"file_path": "/a.md", "content": long})),
            turn("ls", json!({"path": long})),
            turn(
                "edit_file",
                json!({"file_path": "/a.md", "old_string": "x", "new_string": long}),
            ),
            turn("write_file", json!({"file_path": "/b.md", "content": long})),
        ];
        let before: Vec<u32> = view.iter().map(|m| m.tokens).collect();
        let saved = truncate_old_arguments(&mut view, 3);
        let cut = format!("{}{TRUNCATION_MARKER}", "x".repeat(20));
        assert_eq!(
            args(&view[0]),
            json!({"file_path": "/a.md", "content": cut})
        );
        assert_eq!(args(&view[1]), json!({"path": long}));
        assert_eq!(
            args(&view[2]),
            json!({"file_path": "/a.md", "old_string": "x", "new_string": cut})
        );
        assert_eq!(
            args(&view[3]),
            json!({"file_path": "/b.md", "content": long})
        );
        assert!(view[0].tokens < before[0]);
        assert_eq!(view[1].tokens, before[1]);
        assert_eq!(
            saved,
            u64::from(before[0] - view[0].tokens) + u64::from(before[2] - view[2].tokens)
        );
    }

    #[test]
    fn short_and_broken_arguments_are_left_alone() {
        assert_eq!(truncated_arguments(r#"{"content": "short"}"#), None);
        let broken = format!("{{\"content\": \"{}", "y".repeat(3_000));
        assert_eq!(truncated_arguments(&broken), None);
    }
}
