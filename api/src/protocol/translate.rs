//! A committed step told as protocol events: each new message on the
//! `messages` channel (a model turn as content blocks: started, its whole
//! text or arguments as one delta, finished), the `tools` it starts and
//! finishes, the `updates` of the node that wrote it; then the step's
//! `tasks`, its checkpoint and the thread's `values`. A step is committed
//! whole, so a model turn goes out complete, as the protocol's replayed
//! messages do.

use deepfleet_proto::{ContentBlock, Message, ToolStatus};
use deepfleet_store::{CheckpointSource, CheckpointState};
use serde_json::{Value, json};

use super::wire::ProtocolEvent;
use crate::runs::step_trace::tasks;
use crate::runs::stream::node_of;
use deepfleet_scheduler::convert::{message_dict, message_id, to_json};

/// Where a step's messages are: their thread (a subagent's has its own),
/// the agent's namespace, and the run.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    /// The thread the messages are on.
    pub thread_id: &'a str,
    /// The agent's place in the tree (empty for the root).
    pub namespace: &'a [String],
    /// The run the step belongs to.
    pub run_id: &'a str,
}

/// The events of `message`, the `index`-th of its thread.
pub fn message_events(origin: Origin<'_>, index: usize, message: &Message) -> Vec<ProtocolEvent> {
    let node = node_of(message);
    let at = |method: &'static str, data: Value| ProtocolEvent {
        method,
        namespace: origin.namespace.to_vec(),
        node: Some(node),
        data,
    };
    let mut out = Vec::new();
    match message {
        Message::Assistant(turn) => {
            let id = message_id(origin.thread_id, index);
            let mut metadata = json!({"run_id": origin.run_id, "thread_id": origin.thread_id});
            if let Some(model) = &turn.model {
                metadata["model"] = json!(model);
            }
            out.push(at(
                "messages",
                json!({"event": "message-start", "role": "ai", "id": id, "metadata": metadata}),
            ));
            let mut block = 0;
            for content in &turn.content {
                for data in content_block_events(block, content) {
                    out.push(at("messages", data));
                }
                block += 1;
            }
            for call in &turn.tool_calls {
                for data in tool_call_events(block, &call.id, &call.name, &call.arguments) {
                    out.push(at("messages", data));
                }
                block += 1;
            }
            let mut finish = json!({"event": "message-finish"});
            if let Some(usage) = turn.usage {
                finish["usage"] = json!({
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "total_tokens": usage.input_tokens + usage.output_tokens,
                    "input_token_details": {"cache_read": usage.cached_input_tokens},
                });
            }
            out.push(at("messages", finish));
            for call in &turn.tool_calls {
                out.push(ProtocolEvent {
                    node: Some("tools"),
                    ..at(
                        "tools",
                        json!({
                            "event": "tool-started",
                            "tool_call_id": call.id,
                            "tool_name": call.name,
                            "input": parsed_args(&call.arguments),
                        }),
                    )
                });
            }
        }
        Message::Tool(result) => {
            let data = match result.status {
                ToolStatus::Success => json!({
                    "event": "tool-finished",
                    "tool_call_id": result.tool_call_id,
                    "output": message.text(),
                }),
                ToolStatus::Error => json!({
                    "event": "tool-error",
                    "tool_call_id": result.tool_call_id,
                    "message": message.text(),
                }),
            };
            out.push(at("tools", data));
        }
        Message::User(_) | Message::System(_) => {}
    }
    let dict = to_json(&message_dict(origin.thread_id, index, message));
    out.push(at(
        "updates",
        json!({"node": node, "values": {"messages": [dict]}}),
    ));
    out
}

/// A content block of a model turn: started empty, its content as one
/// delta, finished.
fn content_block_events(index: usize, content: &ContentBlock) -> Vec<Value> {
    match content {
        ContentBlock::Text { text } => vec![
            json!({"event": "content-block-start", "index": index,
                   "content": {"type": "text", "text": ""}}),
            json!({"event": "content-block-delta", "index": index,
                   "delta": {"type": "text-delta", "text": text}}),
            json!({"event": "content-block-finish", "index": index,
                   "content": {"type": "text", "text": text}}),
        ],
        other => {
            let block = to_json(other);
            vec![
                json!({"event": "content-block-start", "index": index, "content": block}),
                json!({"event": "content-block-finish", "index": index, "content": block}),
            ]
        }
    }
}

/// A tool call of a model turn: a chunk with its name, its arguments as
/// one delta, finished as a parsed call (or an invalid one, with the
/// arguments as the model wrote them, when they are not a JSON object).
fn tool_call_events(index: usize, id: &str, name: &str, arguments: &str) -> Vec<Value> {
    let finished = finished_call(id, name, arguments);
    vec![
        json!({"event": "content-block-start", "index": index,
               "content": {"type": "tool_call_chunk", "id": id, "name": name, "args": ""}}),
        json!({"event": "content-block-delta", "index": index,
               "delta": {"type": "tool-call-delta", "args": arguments}}),
        json!({"event": "content-block-finish", "index": index, "content": finished}),
    ]
}

/// A finished tool call block: parsed, or invalid (with the arguments as
/// the model wrote them) when they are not a JSON object.
pub fn finished_call(id: &str, name: &str, arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(args @ Value::Object(_)) => {
            json!({"type": "tool_call", "id": id, "name": name, "args": args})
        }
        _ => json!({"type": "invalid_tool_call", "id": id, "name": name, "args": arguments,
                    "error": "the arguments are not a JSON object"}),
    }
}

/// Arguments as a value: parsed when they are JSON, else the text.
fn parsed_args(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

/// The `tasks` events of step `step`, which added `messages` at thread
/// index `from`: each node's start, then each one's result.
pub fn task_events(
    origin: Origin<'_>,
    step: u64,
    messages: &[Message],
    from: usize,
) -> Vec<ProtocolEvent> {
    let tasks = tasks(messages, from);
    let starts = tasks.iter().map(|t| t.start(origin.thread_id, step));
    let results = tasks.iter().map(|t| t.result(origin.thread_id, step));
    starts
        .chain(results)
        .map(|data| ProtocolEvent {
            namespace: origin.namespace.to_vec(),
            ..ProtocolEvent::root("tasks", data)
        })
        .collect()
}

/// The `checkpoints` envelope of a kept checkpoint.
pub fn checkpoint_event(found: &CheckpointState) -> ProtocolEvent {
    let source = match found.source {
        CheckpointSource::Loop => "loop",
        CheckpointSource::Update => "update",
        // A rollback is a copy of the checkpoint before the run.
        CheckpointSource::Fork | CheckpointSource::Rollback => "fork",
    };
    let mut data = json!({"id": found.id.to_string(), "step": found.id, "source": source});
    if let Some(parent) = found.parent {
        data["parent_id"] = json!(parent.to_string());
    }
    ProtocolEvent::root("checkpoints", data)
}

/// A `lifecycle` event: `event` is `started`, `completed`, `failed` or
/// `interrupted`.
pub fn lifecycle(namespace: &[String], event: &str, extra: Value) -> ProtocolEvent {
    let mut data = json!({"event": event});
    if let (Value::Object(data), Value::Object(extra)) = (&mut data, extra) {
        data.extend(extra);
    }
    ProtocolEvent {
        namespace: namespace.to_vec(),
        ..ProtocolEvent::root("lifecycle", data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::{AssistantMessage, ToolCall, Usage};

    fn origin() -> Origin<'static> {
        Origin {
            thread_id: "t",
            namespace: &[],
            run_id: "r",
        }
    }

    fn data_of<'a>(events: &'a [ProtocolEvent], method: &str) -> Vec<&'a Value> {
        events
            .iter()
            .filter(|e| e.method == method)
            .map(|e| &e.data)
            .collect()
    }

    #[test]
    fn a_model_turn_is_a_message_of_blocks_and_the_tools_it_starts() {
        let turn = Message::Assistant(AssistantMessage {
            content: vec![ContentBlock::text("looking")],
            tool_calls: vec![
                ToolCall {
                    id: "c1".into(),
                    name: "ls".into(),
                    arguments: r#"{"path":"/"}"#.into(),
                },
                ToolCall {
                    id: "c2".into(),
                    name: "ls".into(),
                    arguments: "{oops".into(),
                },
            ],
            usage: Some(Usage {
                input_tokens: 10,
                output_tokens: 2,
                cached_input_tokens: 0,
            }),
            model: Some("m".into()),
        });
        let events = message_events(origin(), 3, &turn);
        let messages = data_of(&events, "messages");
        let kinds: Vec<&str> = messages
            .iter()
            .map(|d| d["event"].as_str().unwrap())
            .collect();
        assert_eq!(kinds.first(), Some(&"message-start"));
        assert_eq!(kinds.last(), Some(&"message-finish"));
        assert_eq!(
            kinds
                .iter()
                .filter(|k| **k == "content-block-start")
                .count(),
            3
        );
        assert_eq!(messages[0]["id"], json!(message_id("t", 3)));
        assert_eq!(messages[3]["content"]["text"], "looking");
        assert_eq!(messages[6]["content"]["args"], json!({"path": "/"}));
        assert_eq!(messages[9]["content"]["type"], "invalid_tool_call");
        assert_eq!(messages[10]["usage"]["total_tokens"], 12);
        let tools = data_of(&events, "tools");
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[0]["input"], json!({"path": "/"}));
        assert_eq!(tools[1]["input"], "{oops");
        let updates = data_of(&events, "updates");
        assert_eq!(updates[0]["node"], "model");
    }

    #[test]
    fn tool_results_finish_or_fail_their_calls() {
        let ok = Message::tool("c1", "ls", "a.txt", ToolStatus::Success);
        let events = message_events(origin(), 4, &ok);
        assert_eq!(data_of(&events, "tools")[0]["event"], "tool-finished");
        assert_eq!(data_of(&events, "tools")[0]["output"], "a.txt");
        assert!(data_of(&events, "messages").is_empty());
        let failed = Message::tool("c1", "ls", "no such dir", ToolStatus::Error);
        let events = message_events(origin(), 4, &failed);
        assert_eq!(data_of(&events, "tools")[0]["event"], "tool-error");
        assert_eq!(events.last().unwrap().data["node"], "tools");
    }

    #[test]
    fn a_subagents_events_carry_its_namespace() {
        let namespace = vec!["task:c1".to_owned()];
        let origin = Origin {
            thread_id: "t-child",
            namespace: &namespace,
            run_id: "child",
        };
        let events = message_events(origin, 0, &Message::assistant("done"));
        assert!(events.iter().all(|e| e.namespace == namespace));
        let started = lifecycle(&namespace, "started", json!({"graph_name": "task"}));
        assert_eq!(
            started.data,
            json!({"event": "started", "graph_name": "task"})
        );
    }
}
