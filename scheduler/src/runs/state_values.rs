//! A thread `values` update, as `update_state` and `command.update` send
//! it, read into a [`StateEdit`]: `messages` (LangChain dicts, reduced as
//! LangGraph's message reducer does: an id that names a message replaces
//! it, a `remove` dict removes it, anything else is added), `files` (path
//! to text or file object; null deletes it), and any other key set on
//! the custom state.

use chrono::Utc;
use deepfleet_proto::api::CheckpointPointer;
use deepfleet_proto::{
    AssistantMessage, ContentBlock, InputLimits, Message, ToolCall, ToolMessage, ToolStatus,
};
use serde_json::Value;

use super::RunsError;
use crate::convert::{content_text, input_file, input_message};
use crate::state_edit::{EditedMessage, StateEdit};

/// Reads `values` (`field` names it in errors), checked against `limits`.
pub fn state_edit(
    field: &str,
    values: &Value,
    limits: &InputLimits,
) -> Result<StateEdit, RunsError> {
    let invalid = |reason: String| RunsError::invalid(format!("{field}: {reason}"));
    let values = match values {
        Value::Null => return Ok(StateEdit::default()),
        Value::Object(values) => values,
        other => {
            return Err(invalid(format!(
                "must be an object of state keys, not {other}"
            )));
        }
    };
    let mut edit = StateEdit::default();
    for (key, value) in values {
        match key.as_str() {
            "messages" => {
                let items = match value {
                    Value::Array(items) => items.iter().collect(),
                    Value::Null => Vec::new(),
                    single => vec![single],
                };
                for (i, item) in items.into_iter().enumerate() {
                    let edited =
                        edited_message(item).map_err(|e| invalid(format!("messages[{i}]: {e}")))?;
                    if let Some(message) = &edited.message {
                        let bytes =
                            serde_json::to_vec(message.content()).map_or(usize::MAX, |m| m.len());
                        limits.check_message(format!("{field}.messages[{i}]"), bytes)?;
                    }
                    edit.messages.push(edited);
                }
            }
            "files" => {
                let Some(files) = value.as_object() else {
                    return Err(invalid("files must be an object of path -> file".into()));
                };
                limits.check_file_count(files.len())?;
                for (path, file) in files {
                    let (path, file) = if file.is_null() {
                        let path = deepfleet_proto::path::validate(path)
                            .map_err(|e| invalid(format!("files: {e}")))?;
                        (path, None)
                    } else {
                        let (path, file) =
                            input_file(&format!("{field}.files"), path, file, Utc::now())
                                .map_err(|e| RunsError::invalid(e.0))?;
                        limits.check_file(&path, file.content.len())?;
                        (path, Some(file))
                    };
                    edit.files.insert(path, file);
                }
            }
            _ => {
                edit.set.insert(key.clone(), value.clone());
            }
        }
    }
    Ok(edit)
}

/// One message change: a LangChain dict (human, ai, tool or remove) or
/// plain text, with the id it names.
fn edited_message(item: &Value) -> Result<EditedMessage, String> {
    let id = item.get("id").and_then(Value::as_str).map(str::to_owned);
    let kind = item
        .get("type")
        .or_else(|| item.get("role"))
        .and_then(Value::as_str)
        .unwrap_or("human");
    let message = match kind {
        "remove" => {
            if id.is_none() {
                return Err("a remove names the message's `id`".into());
            }
            None
        }
        "ai" | "assistant" => Some(Message::Assistant(AssistantMessage {
            content: text_blocks(item)?,
            tool_calls: tool_calls(item)?,
            ..AssistantMessage::default()
        })),
        "tool" => {
            let field = |name: &str| {
                item.get(name)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| format!("a tool message needs `{name}`"))
            };
            let status = match item.get("status").and_then(Value::as_str) {
                Some("error") => ToolStatus::Error,
                _ => ToolStatus::Success,
            };
            Some(Message::Tool(ToolMessage {
                tool_call_id: field("tool_call_id")?,
                name: field("name")?,
                content: text_blocks(item)?,
                status,
            }))
        }
        "system" | "developer" => {
            return Err("the system prompt is the assistant's: it cannot be set here".into());
        }
        _ => Some(input_message(item)?),
    };
    Ok(EditedMessage { id, message })
}

/// A dict's content as one text block (none when empty).
fn text_blocks(item: &Value) -> Result<Vec<ContentBlock>, String> {
    let text = content_text(item)?;
    Ok(if text.is_empty() {
        Vec::new()
    } else {
        vec![ContentBlock::text(text)]
    })
}

/// An ai dict's `tool_calls` (`[{id, name, args}]`).
fn tool_calls(item: &Value) -> Result<Vec<ToolCall>, String> {
    let Some(calls) = item.get("tool_calls").filter(|c| !c.is_null()) else {
        return Ok(Vec::new());
    };
    let Some(calls) = calls.as_array() else {
        return Err("`tool_calls` must be a list".into());
    };
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let text = |name: &str| {
                call.get(name)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| format!("tool_calls[{i}] needs `{name}`"))
            };
            let arguments = match call.get("args") {
                None | Some(Value::Null) => "{}".to_owned(),
                Some(Value::String(raw)) => raw.clone(),
                Some(args) => args.to_string(),
            };
            Ok(ToolCall {
                id: text("id")?,
                name: text("name")?,
                arguments,
            })
        })
        .collect()
}

/// The checkpoint a request names by `checkpoint_id` or `checkpoint`, if
/// any; a malformed id is a 422.
pub fn checkpoint_of(
    id: Option<&str>,
    pointer: Option<&CheckpointPointer>,
) -> Result<Option<u64>, RunsError> {
    id.or_else(|| pointer.and_then(CheckpointPointer::id))
        .filter(|raw| !raw.is_empty())
        .map(|raw| {
            raw.parse().map_err(|_| {
                RunsError::invalid(format!("checkpoint_id: '{raw}' is not a checkpoint id"))
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn edit(values: Value) -> Result<StateEdit, RunsError> {
        state_edit("values", &values, &InputLimits::default())
    }

    #[test]
    fn messages_files_and_fields_are_read_apart() {
        let Ok(edit) = edit(json!({
            "messages": [
                "hello",
                {"type": "ai", "content": "ok", "id": "m1",
                 "tool_calls": [{"id": "c1", "name": "ls", "args": {"path": "/"}}]},
                {"type": "tool", "content": "a.md", "tool_call_id": "c1", "name": "ls"},
                {"type": "remove", "id": "m0"},
            ],
            "files": {"/a.md": "text", "/gone.md": null},
            "todos": [{"content": "x", "status": "pending"}],
        })) else {
            panic!("a valid update");
        };
        assert_eq!(edit.messages.len(), 4);
        assert_eq!(edit.messages[0].message, Some(Message::user("hello")));
        let Some(Message::Assistant(ai)) = &edit.messages[1].message else {
            panic!("an ai message");
        };
        assert_eq!(ai.tool_calls[0].arguments, r#"{"path":"/"}"#);
        assert_eq!(edit.messages[1].id.as_deref(), Some("m1"));
        assert!(matches!(edit.messages[2].message, Some(Message::Tool(_))));
        assert_eq!(
            (edit.messages[3].id.as_deref(), &edit.messages[3].message),
            (Some("m0"), &None)
        );
        assert!(edit.files["/a.md"].is_some() && edit.files["/gone.md"].is_none());
        assert_eq!(edit.set["todos"][0]["content"], "x");
        assert_eq!(
            super::state_edit("values", &Value::Null, &InputLimits::default()).ok(),
            Some(StateEdit::default())
        );
    }

    #[test]
    fn bad_values_are_a_422_that_names_the_field() {
        for (values, says) in [
            (json!([1]), "must be an object"),
            (
                json!({"messages": [{"type": "system", "content": "x"}]}),
                "system prompt",
            ),
            (json!({"messages": [{"type": "remove"}]}), "`id`"),
            (
                json!({"messages": [{"type": "tool", "content": "x"}]}),
                "tool_call_id",
            ),
            (json!({"files": {"../x": "t"}}), "files"),
            (json!({"files": ["x"]}), "path -> file"),
        ] {
            let Err(e) = edit(values.clone()) else {
                panic!("{values} is refused");
            };
            assert!(matches!(e, RunsError::Invalid(_)), "{values}: {e:?}");
            assert!(e.to_string().contains(says), "{values}: {e}");
        }
    }
}
