//! The `tasks`, `checkpoints`, `debug` and `events` stream modes: a
//! committed step told as LangGraph tells a superstep, as the tasks (graph
//! nodes) that ran and the checkpoint they made, and (`events`) as the
//! LangChain callback events of those nodes, their model answers and their
//! tool results.
//!
//! A step of this engine is one model call and the tools it asked for;
//! its new messages, grouped by the node each belongs to (`model`,
//! `tools`, the summarization middleware), are its tasks. Workers commit a
//! step at once, so a task's start and its result go out together, after
//! the commit. A task's `input` is left null: it is the thread's state
//! before the step, which the previous checkpoint holds, and sending it
//! again per task would make every event as large as the conversation.

use axum::response::sse::Event;
use chrono::{DateTime, Utc};
use deepfleet_proto::Message;
use deepfleet_store::CheckpointState;
use serde_json::{Value, json};

use crate::checkpoint_ref::{checkpoint_ref, metadata, parent_ref};
use crate::runs::stream::{event, node_of};
use deepfleet_scheduler::convert::{message_dict, thread_values, to_json};
use deepfleet_scheduler::repo::runs::RunMeta;
use deepfleet_scheduler::runs::modes::Modes;

/// One node's part of a step: its name and the messages it added,
/// starting at thread index `from`.
pub(crate) struct Task<'a> {
    node: &'static str,
    from: usize,
    messages: &'a [Message],
}

impl Task<'_> {
    /// A stable id: the same step read again names its tasks the same.
    fn id(&self, thread_id: &str, step: u64) -> String {
        uuid::Uuid::new_v5(
            &uuid::Uuid::NAMESPACE_OID,
            format!("{thread_id}/{step}/{}/{}", self.node, self.from).as_bytes(),
        )
        .to_string()
    }

    /// The `tasks` payload announcing it.
    pub(crate) fn start(&self, thread_id: &str, step: u64) -> Value {
        json!({
            "id": self.id(thread_id, step),
            "name": self.node,
            "input": Value::Null,
            "triggers": [format!("branch:to:{}", self.node)],
        })
    }

    /// The `tasks` payload of its result: the messages it wrote.
    pub(crate) fn result(&self, thread_id: &str, step: u64) -> Value {
        let written: Vec<Value> = self
            .messages
            .iter()
            .enumerate()
            .map(|(offset, m)| to_json(&message_dict(thread_id, self.from + offset, m)))
            .collect();
        json!({
            "id": self.id(thread_id, step),
            "name": self.node,
            "error": Value::Null,
            "result": [["messages", written]],
            "interrupts": [],
        })
    }
}

/// The `events` payloads of `task`: the node's start, one end per model
/// answer or tool result it wrote, the node's end with its output.
fn callback_events(task: &Task<'_>, meta: &RunMeta, step: u64) -> Vec<Value> {
    let task_id = task.id(&meta.thread_id, step);
    let metadata = json!({
        "thread_id": meta.thread_id,
        "run_id": meta.run_id,
        "langgraph_step": step,
        "langgraph_node": task.node,
    });
    let callback = |event: &str, name: &str, run_id: &str, data: Value| {
        json!({
            "event": event,
            "name": name,
            "run_id": run_id,
            "tags": [format!("graph:step:{step}")],
            "metadata": metadata,
            "data": data,
            "parent_ids": if run_id == task_id { vec![] } else { vec![task_id.clone()] },
        })
    };
    let mut out = vec![callback("on_chain_start", task.node, &task_id, json!({}))];
    let mut written = Vec::new();
    for (offset, message) in task.messages.iter().enumerate() {
        let dict = to_json(&message_dict(&meta.thread_id, task.from + offset, message));
        let id = dict["id"].as_str().unwrap_or_default().to_owned();
        match message {
            Message::Assistant(_) => out.push(callback(
                "on_chat_model_end",
                "model",
                &id,
                json!({ "output": dict }),
            )),
            Message::Tool(tool) => out.push(callback(
                "on_tool_end",
                &tool.name,
                &id,
                json!({ "output": dict }),
            )),
            Message::System(_) | Message::User(_) => {}
        }
        written.push(dict);
    }
    out.push(callback(
        "on_chain_end",
        task.node,
        &task_id,
        json!({ "output": { "messages": written } }),
    ));
    out
}

/// `messages` (thread indices from `from`) split into consecutive runs of
/// one node each.
pub(crate) fn tasks(messages: &[Message], from: usize) -> Vec<Task<'_>> {
    let mut out: Vec<Task<'_>> = Vec::new();
    let mut start = 0;
    for end in 1..=messages.len() {
        let boundary =
            end == messages.len() || node_of(&messages[end]) != node_of(&messages[start]);
        if boundary {
            out.push(Task {
                node: node_of(&messages[start]),
                from: from + start,
                messages: &messages[start..end],
            });
            start = end;
        }
    }
    out
}

/// The `checkpoints` payload of `found`: its config and its parent's,
/// the state, the metadata; no node is pending after a commit.
pub fn checkpoint_payload(thread_id: &str, found: &CheckpointState) -> Value {
    let config = |r: deepfleet_proto::api::CheckpointRef| json!({ "configurable": r });
    json!({
        "config": config(checkpoint_ref(thread_id, found.id)),
        "parent_config": parent_ref(thread_id, found).map(config),
        "values": thread_values(thread_id, &found.checkpoint),
        "metadata": metadata(found),
        "next": [],
        "tasks": [],
    })
}

/// The events of committed step `step`, which added `messages` at thread
/// index `from` and made checkpoint `checkpoint` (when it is still kept),
/// for the modes among `tasks`, `checkpoints`, `debug` and `events` that
/// were asked for. Ids resume after `cursor` with `seen` messages had, as
/// [`crate::runs::stream`]'s do.
#[allow(clippy::too_many_arguments)]
pub fn trace_events(
    modes: Modes,
    meta: &RunMeta,
    cursor: &str,
    step: u64,
    messages: &[Message],
    from: usize,
    checkpoint: Option<&CheckpointState>,
    now: DateTime<Utc>,
) -> Vec<Event> {
    let thread_id = &meta.thread_id;
    let seen = from + messages.len();
    let id = |kind: &str, n: usize| format!("{cursor}/{seen}:{kind}{n}");
    let debug = |kind: &str, payload: &Value| {
        json!({
            "type": kind,
            "timestamp": now.to_rfc3339(),
            "step": step,
            "payload": payload,
        })
    };
    let mut out = Vec::new();
    let tasks = tasks(messages, from);
    for (n, task) in tasks.iter().enumerate() {
        let start = task.start(thread_id, step);
        if modes.tasks {
            out.push(event("tasks", &start, id("ts", n)));
        }
        if modes.debug {
            out.push(event("debug", &debug("task", &start), id("ds", n)));
        }
    }
    if modes.events {
        let callbacks = tasks.iter().flat_map(|t| callback_events(t, meta, step));
        for (n, payload) in callbacks.enumerate() {
            out.push(event("events", &payload, id("ev", n)));
        }
    }
    for (n, task) in tasks.iter().enumerate() {
        let result = task.result(thread_id, step);
        if modes.tasks {
            out.push(event("tasks", &result, id("tr", n)));
        }
        if modes.debug {
            out.push(event("debug", &debug("task_result", &result), id("dr", n)));
        }
    }
    if let Some(found) = checkpoint {
        let payload = checkpoint_payload(thread_id, found);
        if modes.checkpoints {
            out.push(event("checkpoints", &payload, id("ck", 0)));
        }
        if modes.debug {
            out.push(event("debug", &debug("checkpoint", &payload), id("dc", 0)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::{AssistantMessage, ToolCall, ToolStatus};
    use deepfleet_store::{Checkpoint, CheckpointSource};
    use pretty_assertions::assert_eq;

    use crate::test_support::sample_meta as meta;

    fn rendered(events: &[Event]) -> Vec<String> {
        events.iter().map(|e| format!("{e:?}")).collect()
    }

    fn step_messages() -> Vec<Message> {
        vec![
            Message::Assistant(AssistantMessage {
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "ls".into(),
                    arguments: "{}".into(),
                }],
                ..AssistantMessage::default()
            }),
            Message::tool("c1", "ls", "a.txt", ToolStatus::Success),
        ]
    }

    #[test]
    fn a_step_is_its_nodes_tasks_started_then_finished() {
        let messages = step_messages();
        let split = tasks(&messages, 4);
        let names: Vec<(&str, usize, usize)> = split
            .iter()
            .map(|t| (t.node, t.from, t.messages.len()))
            .collect();
        assert_eq!(names, [("model", 4, 1), ("tools", 5, 1)]);
        let modes = Modes {
            tasks: true,
            ..Modes::default()
        };
        let events = trace_events(modes, &meta(), "3-0", 2, &messages, 4, None, Utc::now());
        let text = rendered(&events);
        assert_eq!(text.len(), 4, "{text:?}");
        assert!(text[0].contains("branch:to:model"), "{text:?}");
        assert!(text[2].contains("\\\"result\\\""), "{text:?}");
        // The same step read again names its tasks the same.
        let again = trace_events(modes, &meta(), "3-0", 2, &messages, 4, None, Utc::now());
        assert_eq!(rendered(&again), text);
    }

    #[test]
    fn checkpoints_carry_their_parent_and_debug_wraps_everything() {
        let found = CheckpointState {
            id: 3,
            run_id: "r1".into(),
            parent: Some(2),
            source: CheckpointSource::Loop,
            created_at: Utc::now(),
            checkpoint: Checkpoint::default(),
        };
        let payload = checkpoint_payload("t1", &found);
        assert_eq!(payload["config"]["configurable"]["checkpoint_id"], "3");
        assert_eq!(
            payload["parent_config"]["configurable"]["checkpoint_id"],
            "2"
        );
        assert_eq!(payload["metadata"]["step"], 3);
        let first = CheckpointState {
            id: 1,
            parent: None,
            ..found.clone()
        };
        assert!(checkpoint_payload("t1", &first)["parent_config"].is_null());

        let modes = Modes {
            debug: true,
            checkpoints: true,
            ..Modes::default()
        };
        let messages = step_messages();
        let events = trace_events(
            modes,
            &meta(),
            "3-0",
            2,
            &messages,
            4,
            Some(&found),
            Utc::now(),
        );
        let text = rendered(&events);
        // Two task starts, two results, one checkpoint as debug events,
        // and the checkpoint once more on its own.
        assert_eq!(text.len(), 6, "{text:?}");
        assert_eq!(
            text.iter()
                .filter(|e| e.contains("event: checkpoints"))
                .count(),
            1,
            "{text:?}"
        );
        assert!(text.iter().any(|e| e.contains("task_result")), "{text:?}");
    }

    #[test]
    fn events_are_each_nodes_callbacks_around_its_answers_and_tool_results() {
        let modes = Modes {
            events: true,
            ..Modes::default()
        };
        let events = trace_events(
            modes,
            &meta(),
            "3-0",
            2,
            &step_messages(),
            4,
            None,
            Utc::now(),
        );
        let kinds: Vec<String> = rendered(&events)
            .iter()
            .filter_map(|e| {
                let at = e.find("on_")?;
                let rest = &e[at..];
                Some(rest[..rest.find('\\').unwrap_or(rest.len())].to_owned())
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "on_chain_start",
                "on_chat_model_end",
                "on_chain_end",
                "on_chain_start",
                "on_tool_end",
                "on_chain_end"
            ]
        );
    }
}
