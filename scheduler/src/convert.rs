//! Conversions between deepfleet's messages and the LangChain-style
//! message dicts that Agent Server clients and UIs read (`type`
//! human/ai/tool/system, `content`, `tool_calls` `[{id, name, args}]`,
//! `tool_call_id`, `id`), and the thread `values` deepagents has:
//! `messages`, `files`, `todos` and any custom state.

use deepfleet_proto::api::message::{HumanKwargs, ResponseMetadata, UsageMetadata};
use deepfleet_proto::api::{
    MessageContent, MessageDict, PendingInterrupt, ThreadState, ToolCallDict,
};
use deepfleet_proto::message::joined_text;
use deepfleet_proto::{ContentBlock, Message};
use deepfleet_store::Checkpoint;
use serde_json::{Map, Value, json};

pub use crate::message_ids::message_id;

/// The LangChain dict of `message`, the `index`-th of `thread_id`'s log.
/// Its id is derived from both, so it is stable across reads.
pub fn message_dict(thread_id: &str, index: usize, message: &Message) -> MessageDict {
    let id = message_id(thread_id, index);
    let content = content_value(message.content());
    match message {
        Message::System(_) => MessageDict::System { content, id },
        Message::User(m) => MessageDict::Human {
            content,
            id,
            additional_kwargs: m.source.as_ref().map(|source| HumanKwargs {
                lc_source: source.clone(),
            }),
        },
        Message::Assistant(m) => MessageDict::Ai {
            content,
            id,
            tool_calls: m
                .tool_calls
                .iter()
                .map(|c| tool_call(&c.id, &c.name, &c.arguments, Value::String))
                .collect(),
            invalid_tool_calls: Vec::new(),
            usage_metadata: m.usage.map(|usage| UsageMetadata {
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                total_tokens: usage.input_tokens + usage.output_tokens,
            }),
            response_metadata: m.model.as_ref().map(|model| ResponseMetadata {
                model_name: model.clone(),
            }),
        },
        Message::Tool(m) => MessageDict::Tool {
            content,
            id,
            tool_call_id: m.tool_call_id.clone(),
            name: m.name.clone(),
            status: m.status,
        },
    }
}

/// A tool call with its argument text parsed; text that is not JSON
/// becomes `broken(text)`.
pub fn tool_call(
    id: &str,
    name: &str,
    arguments: &str,
    broken: impl FnOnce(String) -> Value,
) -> ToolCallDict {
    ToolCallDict {
        id: id.to_owned(),
        name: name.to_owned(),
        args: serde_json::from_str::<Value>(arguments)
            .unwrap_or_else(|_| broken(arguments.to_owned())),
    }
}

/// Text-only content is a plain string, as LangChain writes it; mixed
/// content is a list of blocks.
fn content_value(content: &[ContentBlock]) -> MessageContent {
    if content
        .iter()
        .all(|b| matches!(b, ContentBlock::Text { .. }))
    {
        MessageContent::Text(joined_text(content))
    } else {
        MessageContent::Blocks(content.to_vec())
    }
}

/// Any wire type as JSON; the API's types always serialize.
pub fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A thread's values, or `None` while it has no state yet (no message and
/// no file), as a new thread's resource shows it.
pub fn values_if_any(thread_id: &str, checkpoint: &Checkpoint) -> Option<Value> {
    (!checkpoint.messages.is_empty() || !checkpoint.files.is_empty())
        .then(|| thread_values(thread_id, checkpoint))
}

/// The thread's `values` as deepagents shapes them.
pub fn thread_values(thread_id: &str, checkpoint: &Checkpoint) -> Value {
    let mut values: Map<String, Value> = checkpoint.state.clone();
    let messages: Vec<MessageDict> = checkpoint
        .messages
        .iter()
        .enumerate()
        .map(|(i, logged)| message_dict(thread_id, i, &logged.message))
        .collect();
    values.insert("messages".into(), to_json(&messages));
    values.insert(
        "files".into(),
        serde_json::to_value(&checkpoint.files).unwrap_or_else(|_| Value::Object(Map::new())),
    );
    values
        .entry("todos")
        .or_insert_with(|| Value::Array(Vec::new()));
    Value::Object(values)
}

/// The `__interrupt__` list of a thread whose run waits for a human.
pub fn interrupts(checkpoint: &Checkpoint, run_id: &str) -> Option<Vec<PendingInterrupt>> {
    let interrupt = checkpoint.pending.as_ref()?.interrupt.as_ref()?;
    if interrupt.decisions.is_some() {
        return None;
    }
    Some(vec![PendingInterrupt {
        value: interrupt.clone(),
        id: run_id.to_owned(),
    }])
}

/// A thread's run waiting for a human at the checkpoint it stopped at.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    /// The run.
    pub run_id: String,
    /// The checkpoint (the thread's step) the run stopped at.
    pub step: u64,
    /// What it waits on.
    pub interrupts: Vec<PendingInterrupt>,
}

/// Shows `waiting` in `state` when it is the state of the checkpoint the
/// run stopped at, as LangGraph shows an interrupted node: `tools` (whose
/// calls wait) runs next, as a task holding the interrupts. Clients read
/// them there: the JavaScript SDK's `useStream` (the Agent Chat UI's) takes
/// the interrupt from the newest state's last task.
pub fn show_waiting(state: &mut ThreadState, waiting: Option<&Waiting>) {
    let Some(waiting) = waiting else {
        return;
    };
    if state.checkpoint.checkpoint_id != waiting.step.to_string() {
        return;
    }
    let task_id = uuid::Uuid::new_v5(
        &uuid::Uuid::NAMESPACE_OID,
        format!(
            "{}/{}/tools/waiting",
            state.checkpoint.thread_id, waiting.step
        )
        .as_bytes(),
    );
    let interrupts = to_json(&waiting.interrupts);
    state.next = vec!["tools".to_owned()];
    state.tasks = vec![json!({
        "id": task_id.to_string(),
        "name": "tools",
        "path": ["__pregel_pull", "tools"],
        "error": null,
        "interrupts": interrupts,
        "checkpoint": null,
        "state": null,
        "result": null,
    })];
    state.interrupts = waiting.interrupts.iter().map(to_json).collect();
}

/// Why an input could not become messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError(pub String);

/// The messages of a run's `input` (`{"messages": [...]}`), each a
/// LangChain dict (`type` or `role`; `content` a string or text blocks)
/// or a bare string. Only user messages are accepted: the model's turns
/// and tool results come from the harness.
pub fn input_messages(input: &Value) -> Result<Vec<Message>, InputError> {
    let Some(list) = input.get("messages") else {
        return Err(InputError("input must have a `messages` list".into()));
    };
    let items: Vec<&Value> = match list {
        Value::Array(items) => items.iter().collect(),
        single => vec![single],
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| input_message(item).map_err(|e| InputError(format!("messages[{i}]: {e}"))))
        .collect()
}

/// One user message of an input: text, or a human/user dict.
pub fn input_message(item: &Value) -> Result<Message, String> {
    let text = match item {
        Value::String(text) => text.clone(),
        dict => dict_text(dict)?,
    };
    // Providers refuse an empty user turn; say so here, not on every
    // model call of the run.
    if text.trim().is_empty() {
        return Err("`content` must not be empty".into());
    }
    Ok(Message::user(text))
}

/// The text of a LangChain message dict, which must be a user's.
fn dict_text(item: &Value) -> Result<String, String> {
    let kind = item
        .get("type")
        .or_else(|| item.get("role"))
        .and_then(Value::as_str)
        .unwrap_or("human");
    if !matches!(kind, "human" | "user") {
        return Err(format!(
            "only human/user messages can be sent, not `{kind}`"
        ));
    }
    content_text(item)
}

/// The text of a LangChain message dict's `content`: a string, or the
/// text of its blocks.
pub fn content_text(item: &Value) -> Result<String, String> {
    let text = match item.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.as_str().or_else(|| b.get("text").and_then(Value::as_str)))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return Err("`content` must be a string or a list of text blocks".into()),
    };
    Ok(text)
}

/// The files of a run's `input` (`{"files": {path: text | FileData}}`,
/// as deepagents' state takes them), seeded into the thread's state
/// backend; paths are checked and normalised. No `files` is no files.
pub fn input_files(
    input: &Value,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<std::collections::BTreeMap<String, deepfleet_proto::FileData>, InputError> {
    let Some(files) = input.get("files") else {
        return Ok(Default::default());
    };
    let Some(files) = files.as_object() else {
        return Err(InputError(
            "input.files must be an object of path -> file".into(),
        ));
    };
    files
        .iter()
        .map(|(path, file)| input_file("input.files", path, file, now))
        .collect()
}

/// One file of `field` (text, or a file object), its path checked and
/// normalised.
pub fn input_file(
    field: &str,
    path: &str,
    file: &Value,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(String, deepfleet_proto::FileData), InputError> {
    let normal =
        deepfleet_proto::path::validate(path).map_err(|e| InputError(format!("{field}: {e}")))?;
    let data = match file {
        Value::String(text) => deepfleet_proto::FileData::text(text.clone(), now),
        Value::Object(_) => serde_json::from_value(file.clone())
            .map_err(|e| InputError(format!("{field}[{path}]: {e}")))?,
        _ => {
            return Err(InputError(format!(
                "{field}[{path}] must be text or a file object"
            )));
        }
    };
    Ok((normal, data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::{AssistantMessage, LoggedMessage, ToolCall, ToolStatus};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn input_files_take_text_or_file_objects_and_check_paths() {
        let now = chrono::Utc::now();
        let input = json!({"files": {"notes//a.md": "hi", "/b.md": {"content": "b", "created_at": now, "modified_at": now}}});
        let files = input_files(&input, now).unwrap();
        assert_eq!(
            files
                .iter()
                .map(|(p, f)| (p.as_str(), f.content.as_str()))
                .collect::<Vec<_>>(),
            vec![("/b.md", "b"), ("/notes/a.md", "hi")]
        );
        assert!(input_files(&json!({}), now).unwrap().is_empty());
        assert!(input_files(&json!({"files": {"/../x": "no"}}), now).is_err());
        assert!(input_files(&json!({"files": [1]}), now).is_err());
        assert!(input_files(&json!({"files": {"/a": 3}}), now).is_err());
    }

    #[test]
    fn ai_messages_carry_parsed_tool_calls() {
        let m = Message::Assistant(AssistantMessage {
            content: vec![ContentBlock::text("let me look")],
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "ls".into(),
                arguments: r#"{"path": "/"}"#.into(),
            }],
            ..AssistantMessage::default()
        });
        let dict = to_json(&message_dict("t", 1, &m));
        assert_eq!(dict["type"], "ai");
        assert_eq!(dict["content"], "let me look");
        assert_eq!(
            dict["tool_calls"],
            json!([{"id": "c1", "name": "ls", "args": {"path": "/"}, "type": "tool_call"}])
        );
        assert_eq!(dict["id"], message_id("t", 1));
    }

    #[test]
    fn ai_usage_and_model_and_summary_sources_are_kept() {
        let m = Message::Assistant(AssistantMessage {
            content: vec![ContentBlock::text("ok")],
            usage: Some(deepfleet_proto::Usage {
                input_tokens: 3,
                output_tokens: 2,
                cached_input_tokens: 0,
            }),
            model: Some("gpt-x".into()),
            ..AssistantMessage::default()
        });
        assert_eq!(
            to_json(&message_dict("t", 0, &m)),
            json!({"type": "ai", "content": "ok", "id": message_id("t", 0), "tool_calls": [],
                "invalid_tool_calls": [],
                "usage_metadata": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
                "response_metadata": {"model_name": "gpt-x"}})
        );
        let summary = Message::User(deepfleet_proto::UserMessage {
            content: vec![ContentBlock::text("summary")],
            source: Some("summarization".into()),
        });
        assert_eq!(
            to_json(&message_dict("t", 1, &summary)),
            json!({"type": "human", "content": "summary", "id": message_id("t", 1),
                "additional_kwargs": {"lc_source": "summarization"}})
        );
        let broken = Message::Assistant(AssistantMessage {
            tool_calls: vec![ToolCall {
                id: "c".into(),
                name: "ls".into(),
                arguments: "{nope".into(),
            }],
            ..AssistantMessage::default()
        });
        assert_eq!(
            to_json(&message_dict("t", 2, &broken))["tool_calls"][0]["args"],
            "{nope"
        );
    }

    #[test]
    fn tool_and_human_messages() {
        let tool = to_json(&message_dict(
            "t",
            2,
            &Message::tool("c1", "ls", "[]", ToolStatus::Error),
        ));
        assert_eq!(
            (
                tool["type"].clone(),
                tool["tool_call_id"].clone(),
                tool["status"].clone()
            ),
            (json!("tool"), json!("c1"), json!("error"))
        );
        assert_eq!(
            to_json(&message_dict("t", 0, &Message::user("hi")))["type"],
            "human"
        );
    }

    #[test]
    fn values_have_messages_files_and_todos() {
        let checkpoint = Checkpoint {
            messages: vec![LoggedMessage {
                message: Message::user("hi"),
                tokens: 1,
            }],
            ..Checkpoint::default()
        };
        let values = thread_values("t", &checkpoint);
        assert_eq!(values["messages"][0]["content"], "hi");
        assert_eq!(values["files"], json!({}));
        assert_eq!(values["todos"], json!([]));
    }

    #[test]
    fn inputs_take_dicts_roles_and_blocks() {
        let input = json!({"messages": [
            {"role": "user", "content": "a"},
            {"type": "human", "content": [{"type": "text", "text": "b"}]},
            "c",
        ]});
        let texts: Vec<String> = input_messages(&input)
            .unwrap()
            .iter()
            .map(Message::text)
            .collect();
        assert_eq!(texts, vec!["a", "b", "c"]);
        let err =
            input_messages(&json!({"messages": [{"type": "ai", "content": "x"}]})).unwrap_err();
        assert!(err.0.contains("messages[0]"), "{err:?}");
        assert!(input_messages(&json!({"foo": 1})).is_err());
    }

    #[test]
    fn an_empty_message_is_refused_in_every_form() {
        for empty in [
            json!(""),
            json!("  \n"),
            json!({"role": "user", "content": ""}),
            json!({"type": "human", "content": [{"type": "text", "text": " "}]}),
        ] {
            let err = input_messages(&json!({"messages": ["ok", empty]})).unwrap_err();
            assert!(err.0.contains("messages[1]"), "{err:?}");
            assert!(err.0.contains("must not be empty"), "{err:?}");
        }
    }
}
