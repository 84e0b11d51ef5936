//! The server-sent events of a run's committed steps, per stream mode;
//! the API's follower reads the run's event stream and sends these.
//!
//! Event ids are `"{stream id}/{messages seen}:{kind}"`: a client that
//! reconnects with `Last-Event-ID` gets only what came after, then the
//! current `values`.

use std::collections::{BTreeMap, HashSet};

use axum::response::sse::Event;
use deepfleet_proto::api::{EventMetadata, MessageDict, MessageMetadata, NodeUpdate};
use deepfleet_proto::{Message, RunEvent};
use serde::Serialize;
use serde_json::Value;

use deepfleet_scheduler::convert::{message_dict, message_id, to_json};
use deepfleet_scheduler::repo::runs::RunMeta;
use deepfleet_scheduler::runs::modes::Modes;

/// The node a message belongs to in deepagents' graph.
pub(crate) fn node_of(message: &Message) -> &'static str {
    match message {
        Message::Tool(_) => "tools",
        Message::User(m) if m.source.as_deref() == Some("summarization") => {
            "SummarizationMiddleware.before_model"
        }
        _ => "model",
    }
}

/// The events for messages `from..` of a thread's log; ids carry
/// `cursor`, the stream position a reconnect resumes after. Messages in
/// `streamed` went out as `messages-tuple` chunks already.
pub fn step_events(
    modes: Modes,
    meta: &RunMeta,
    cursor: &str,
    messages: &[Message],
    from: usize,
    values: Option<&Value>,
    streamed: &HashSet<String>,
) -> Vec<Event> {
    let seen = from + messages.len();
    let mut out = Vec::new();
    for (offset, message) in messages.iter().enumerate() {
        let index = from + offset;
        let dict = message_dict(&meta.thread_id, index, message);
        let node = node_of(message);
        let metadata = EventMetadata {
            run_id: meta.run_id.clone(),
            thread_id: meta.thread_id.clone(),
            langgraph_node: node.to_owned(),
            lc_source: match message {
                Message::User(m) => m.source.clone(),
                _ => None,
            },
            langgraph_checkpoint_ns: None,
        };
        let id = |suffix: &str| format!("{cursor}/{}:{suffix}", index + 1);
        if modes.updates {
            out.push(event("updates", &update(node, &dict), id("u")));
        }
        let message_id = message_id(&meta.thread_id, index);
        if modes.messages {
            let by_id = BTreeMap::from([(
                message_id.clone(),
                MessageMetadata {
                    metadata: metadata.clone(),
                },
            )]);
            out.push(event("messages/metadata", &by_id, id("mm")));
            out.push(event("messages/complete", &[&dict], id("mc")));
        }
        if modes.messages_tuple && !streamed.contains(&message_id) {
            out.push(event("messages", &(&dict, &metadata), id("mt")));
        }
    }
    if modes.values
        && let Some(values) = values
    {
        out.push(event("values", values, format!("{cursor}/{seen}:v")));
    }
    out
}

/// The `updates|task:<id>` (and `messages|...`) events of a subagent's
/// step, for a follower that asked for `stream_subgraphs`.
pub fn subgraph_events(
    modes: Modes,
    run_event: &RunEvent,
    id: &str,
    messages: &[Message],
) -> Vec<Event> {
    let ns = run_event.namespace.join("|");
    let mut out = Vec::new();
    for (offset, message) in messages.iter().enumerate() {
        let index = usize::try_from(run_event.from).unwrap_or(usize::MAX) + offset;
        let dict = message_dict(&run_event.thread_id, index, message);
        let node = node_of(message);
        if modes.updates {
            out.push(event(
                &format!("updates|{ns}"),
                &update(node, &dict),
                format!("{id}:u{offset}"),
            ));
        }
        if modes.messages_tuple {
            let metadata = EventMetadata {
                run_id: run_event.run_id.clone(),
                thread_id: run_event.thread_id.clone(),
                langgraph_node: node.to_owned(),
                lc_source: None,
                langgraph_checkpoint_ns: Some(ns.clone()),
            };
            out.push(event(
                &format!("messages|{ns}"),
                &(&dict, &metadata),
                format!("{id}:t{offset}"),
            ));
        }
    }
    out
}

/// An `updates` payload: the node's new message.
fn update(node: &str, dict: &MessageDict) -> BTreeMap<String, NodeUpdate> {
    BTreeMap::from([(
        node.to_owned(),
        NodeUpdate {
            messages: vec![dict.clone()],
        },
    )])
}

pub(crate) fn event(name: &str, data: &impl Serialize, id: String) -> Event {
    Event::default()
        .event(name)
        .data(to_json(data).to_string())
        .id(id)
}

/// The stream position before any event.
pub const START: &str = "0-0";

/// Where a reconnecting client resumes, from its `Last-Event-ID`
/// (`"{stream id}/{messages seen}:{kind}"`, or the older `"{seen}:{kind}"`):
/// the stream id to read after and how many of the thread's messages it
/// had. `None` (also for `-1`, "replay everything") starts over.
pub fn resume_point(last_event_id: Option<&str>) -> Option<(String, usize)> {
    let id = last_event_id?;
    let (cursor, rest) = id.split_once('/').unwrap_or((START, id));
    let seen = rest.split(':').next()?.parse().ok()?;
    Some((cursor.to_owned(), seen))
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::RunStatus;
    use serde_json::json;

    use crate::test_support::sample_meta as meta;

    #[test]
    fn events_per_mode_with_resumable_ids() {
        let modes = Modes {
            values: true,
            updates: true,
            messages_tuple: true,
            ..Modes::default()
        };
        let messages = vec![Message::assistant("hi")];
        let events = step_events(
            modes,
            &meta(),
            "5-0",
            &messages,
            2,
            Some(&json!({"messages": []})),
            &HashSet::new(),
        );
        // updates + messages tuple for the message, then values.
        assert_eq!(events.len(), 3);
        assert_eq!(resume_point(Some("5-0/3:v")), Some(("5-0".into(), 3)));
        assert_eq!(resume_point(Some("3:v")), Some((START.into(), 3)));
        assert_eq!(resume_point(Some("-1")), None);
    }

    #[test]
    fn summaries_are_tagged() {
        let summary = Message::User(deepfleet_proto::UserMessage {
            content: vec![deepfleet_proto::ContentBlock::text("summary")],
            source: Some("summarization".into()),
        });
        assert_eq!(node_of(&summary), "SummarizationMiddleware.before_model");
    }

    #[test]
    fn subagent_events_are_namespaced_by_task_call() {
        let modes = Modes {
            updates: true,
            messages_tuple: true,
            subgraphs: true,
            ..Modes::default()
        };
        let run_event = RunEvent {
            run_id: "child".into(),
            thread_id: "t-child".into(),
            step: 0,
            status: RunStatus::Running,
            from: 1,
            to: 2,
            namespace: RunEvent::task_namespace("call-1"),
        };
        let events = subgraph_events(modes, &run_event, "7-0/4", &[Message::assistant("checked")]);
        let rendered: Vec<String> = events.iter().map(|e| format!("{e:?}")).collect();
        assert_eq!(rendered.len(), 2);
        assert!(rendered[0].contains("updates|task:call-1"), "{rendered:?}");
        assert!(rendered[1].contains("messages|task:call-1"), "{rendered:?}");
    }
}
