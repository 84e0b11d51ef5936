//! Token-by-token `messages` streaming: a followed run's model calls
//! stream their tokens to the run's delta stream (see
//! `worker/src/step/deltas.rs`); this module turns them into the
//! reference's events (§1.6):
//!
//! - `messages` mode: `messages/metadata` once per message, then
//!   `messages/partial` with the message accumulated so far; the
//!   `messages/complete` follows from the commit, as for any message;
//! - `messages-tuple` mode: `messages` events of `[AIMessageChunk,
//!   metadata]`, whose contents add up to the final message (which is then
//!   not sent again whole, as LangGraph does for streamed messages).
//!
//! Chunks carry the id of the message they become. A summary's tokens
//! carry `lc_source: summarization` in their metadata, so a UI can keep
//! them out of the conversation.
//!
//! Ordering: a worker appends every delta of a step before the step's
//! commit event, so reading the delta stream *after* a batch of commit
//! events and emitting each commit's deltas (`step <= event.step`) first
//! shows every partial before its complete message.

use std::collections::{BTreeMap, HashSet, VecDeque};

use axum::response::sse::Event;
use chrono::Utc;
use deepfleet_proto::api::{
    EventMetadata, MessageContent, MessageDict, MessageMetadata, ToolCallChunkDict,
};
use deepfleet_proto::run_delta::Followed;
use deepfleet_proto::{DeltaSource, RunDelta};
use deepfleet_store::{Store, StoreError};
use serde::Serialize;
use serde_json::{Map, Value};

use deepfleet_scheduler::convert::{message_id, to_json, tool_call};
use deepfleet_scheduler::repo::follow_marks::follow_marks;
use deepfleet_scheduler::repo::runs::RunMeta;
use deepfleet_scheduler::runs::modes::Modes;

/// How long a follow mark holds without a renewal; followers renew it at
/// every heartbeat (5 s), so a follower that vanished stops streaming
/// within this.
pub const FOLLOW_MARK: chrono::Duration = chrono::Duration::seconds(30);

/// Deltas read per store round trip.
const DELTAS_PER_READ: usize = 512;

/// Marks the run as followed (or renews the mark): workers stream its
/// model calls while the mark holds.
pub async fn mark_followed(store: &dyn Store, run_id: &str) -> Result<(), StoreError> {
    let mark = Followed {
        until: Utc::now() + FOLLOW_MARK,
    };
    follow_marks(store).put(run_id, &mark).await
}

/// Every delta of `run_id` appended after `cursor` (from the start when
/// `None`), read a page at a time, with their ids; `cursor` moves past
/// them.
pub async fn new_deltas(
    store: &dyn Store,
    run_id: &str,
    cursor: &mut Option<String>,
) -> Result<Vec<(String, RunDelta)>, StoreError> {
    let mut out = Vec::new();
    loop {
        let batch = store
            .run_deltas(run_id, cursor.as_deref(), DELTAS_PER_READ)
            .await?;
        let full = batch.len() == DELTAS_PER_READ;
        if let Some((id, _)) = batch.last() {
            *cursor = Some(id.clone());
        }
        out.extend(batch);
        if !full {
            return Ok(out);
        }
    }
}

/// One message as its chunks accumulated.
#[derive(Default)]
struct Accumulated {
    text: String,
    /// Tool calls by index: id, name, argument text.
    calls: BTreeMap<usize, (String, String, String)>,
}

/// A follower's view of a run's delta stream.
pub struct Partials {
    modes: Modes,
    run_id: String,
    thread_id: String,
    /// The delta stream position read so far.
    cursor: Option<String>,
    /// Deltas of steps before this one are not news (their messages were
    /// committed before the follower came).
    min_step: u64,
    buffered: VecDeque<RunDelta>,
    messages: BTreeMap<String, Accumulated>,
    /// Ids of the messages that were streamed as chunks.
    streamed: HashSet<String>,
}

impl Partials {
    /// A view for a follower of `meta` who came while the thread was at
    /// `min_step`; `None` unless `modes` asks for messages.
    pub fn new(modes: Modes, meta: &RunMeta, min_step: u64) -> Option<Self> {
        modes.wants_tokens().then(|| Partials {
            modes,
            run_id: meta.run_id.clone(),
            thread_id: meta.thread_id.clone(),
            cursor: None,
            min_step,
            buffered: VecDeque::new(),
            messages: BTreeMap::new(),
            streamed: HashSet::new(),
        })
    }

    /// Buffers the deltas appended since the last read.
    pub async fn read(&mut self, store: &dyn Store) -> Result<(), StoreError> {
        let new = new_deltas(store, &self.run_id, &mut self.cursor).await?;
        self.buffered.extend(
            new.into_iter()
                .map(|(_, delta)| delta)
                .filter(|delta| delta.step >= self.min_step),
        );
        Ok(())
    }

    /// Ids of the messages streamed as chunks (their whole `messages`
    /// tuple is not sent again).
    pub fn streamed(&self) -> &HashSet<String> {
        &self.streamed
    }

    /// The events of the buffered deltas up to thread step `step` (all of
    /// them for `None`).
    pub fn until(&mut self, step: Option<u64>) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(delta) = self.buffered.front() {
            if step.is_some_and(|step| delta.step > step) {
                break;
            }
            if let Some(delta) = self.buffered.pop_front() {
                self.events(&delta, &mut out);
            }
        }
        out
    }

    fn events(&mut self, delta: &RunDelta, out: &mut Vec<Event>) {
        let index = usize::try_from(delta.index).unwrap_or(usize::MAX);
        let base = message_id(&self.thread_id, index);
        let (id, node) = match delta.source {
            DeltaSource::Agent => (base, "model"),
            DeltaSource::Summarization => (
                format!("summary-{base}"),
                "SummarizationMiddleware.before_model",
            ),
        };
        let metadata = EventMetadata {
            run_id: self.run_id.clone(),
            thread_id: self.thread_id.clone(),
            langgraph_node: node.to_owned(),
            lc_source: (delta.source == DeltaSource::Summarization)
                .then(|| "summarization".to_owned()),
            langgraph_checkpoint_ns: None,
        };
        let first = !self.streamed.contains(&id);
        self.streamed.insert(id.clone());
        let message = self.messages.entry(id.clone()).or_default();
        message.text.push_str(&delta.text);
        for chunk in &delta.tool_calls {
            let call = message.calls.entry(chunk.index).or_default();
            if let Some(call_id) = &chunk.id {
                call.0.clone_from(call_id);
            }
            if let Some(name) = &chunk.name {
                call.1.clone_from(name);
            }
            call.2.push_str(&chunk.arguments);
        }
        if self.modes.messages {
            if first {
                let by_id = BTreeMap::from([(
                    id.clone(),
                    MessageMetadata {
                        metadata: metadata.clone(),
                    },
                )]);
                out.push(event("messages/metadata", &by_id));
            }
            out.push(event("messages/partial", &[accumulated(&id, message)]));
        }
        if self.modes.messages_tuple {
            out.push(event("messages", &(chunk(&id, delta), metadata)));
        }
    }
}

/// The message so far, shaped as the complete message will be; argument
/// JSON that is not whole yet shows as `{}` (LangChain parses partial
/// JSON; the complete message has the real arguments).
fn accumulated(id: &str, message: &Accumulated) -> MessageDict {
    MessageDict::Ai {
        content: MessageContent::Text(message.text.clone()),
        id: id.to_owned(),
        tool_calls: message
            .calls
            .values()
            .map(|(call_id, name, arguments)| {
                tool_call(call_id, name, arguments, |_| Value::Object(Map::new()))
            })
            .collect(),
        invalid_tool_calls: Vec::new(),
        usage_metadata: None,
        response_metadata: None,
    }
}

/// One delta as a LangChain `AIMessageChunk` dict.
fn chunk(id: &str, delta: &RunDelta) -> MessageDict {
    MessageDict::AiChunk {
        id: id.to_owned(),
        content: delta.text.clone(),
        tool_call_chunks: delta
            .tool_calls
            .iter()
            .map(|c| ToolCallChunkDict {
                index: c.index,
                id: c.id.clone(),
                name: c.name.clone(),
                args: c.arguments.clone(),
            })
            .collect(),
        tool_calls: Vec::new(),
        invalid_tool_calls: Vec::new(),
    }
}

/// Partial events carry no id: a reconnect resumes after the last
/// commit, and the complete messages follow from there.
fn event(name: &str, data: &impl Serialize) -> Event {
    Event::default().event(name).data(to_json(data).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::ToolCallChunk;
    use deepfleet_store::embedded::EmbeddedStore;
    use deepfleet_store::prelude::*;
    use pretty_assertions::assert_eq;

    use crate::test_support::sample_meta as meta;

    fn delta(step: u64, source: DeltaSource, text: &str) -> RunDelta {
        RunDelta {
            step,
            index: 3,
            source,
            text: text.into(),
            tool_calls: vec![],
        }
    }

    /// An event's name and data, from its wire form.
    fn parts(event: &Event) -> (String, Value) {
        let text = format!("{event:?}");
        let name = text
            .split("event: ")
            .nth(1)
            .and_then(|rest| rest.split("\\n").next())
            .unwrap_or_default()
            .to_owned();
        let data = text
            .split("data: ")
            .nth(1)
            .and_then(|rest| rest.split("\\n").next())
            .unwrap_or_default()
            .replace("\\\"", "\"");
        (name, serde_json::from_str(&data).unwrap_or(Value::Null))
    }

    #[tokio::test]
    async fn deltas_become_partials_in_step_order_with_summaries_tagged() {
        let store = EmbeddedStore::new();
        for d in [
            delta(1, DeltaSource::Agent, "old"),
            delta(2, DeltaSource::Summarization, "Sum."),
            delta(2, DeltaSource::Agent, "Hel"),
            RunDelta {
                tool_calls: vec![ToolCallChunk {
                    index: 0,
                    id: Some("c".into()),
                    name: Some("ls".into()),
                    arguments: "{}".into(),
                }],
                ..delta(2, DeltaSource::Agent, "lo")
            },
            delta(3, DeltaSource::Agent, "next"),
        ] {
            store.append_run_delta("r", &d).await.unwrap();
        }
        let modes = Modes {
            messages: true,
            messages_tuple: true,
            ..Modes::default()
        };
        let mut partials = Partials::new(modes, &meta(), 2).unwrap();
        partials.read(&store).await.unwrap();
        let events: Vec<(String, Value)> = partials.until(Some(2)).iter().map(parts).collect();
        let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "messages/metadata",
                "messages/partial",
                "messages",
                "messages/metadata",
                "messages/partial",
                "messages",
                "messages/partial",
                "messages",
            ]
        );
        let id = message_id("t", 3);
        let summary_meta = &events[0].1[format!("summary-{id}")]["metadata"];
        assert_eq!(summary_meta["lc_source"], "summarization");
        assert_eq!(events[5].1[1].get("lc_source"), None);
        assert_eq!(events[6].1[0]["id"], id.as_str());
        assert_eq!(events[6].1[0]["content"], "Hello");
        assert_eq!(events[6].1[0]["tool_calls"][0]["name"], "ls");
        assert_eq!(events[7].1[0]["type"], "AIMessageChunk");
        assert_eq!(events[7].1[0]["content"], "lo");
        assert!(partials.streamed().contains(&id));
        // Step 3's delta waits for its commit, or for `until(None)`.
        assert_eq!(partials.until(None).len(), 2);
        assert!(Partials::new(Modes::default(), &meta(), 0).is_none());
    }

    #[tokio::test]
    async fn the_follow_mark_holds_for_a_while() {
        let store = EmbeddedStore::new();
        mark_followed(&store, "r").await.unwrap();
        let mark: Followed = serde_json::from_value(
            store
                .get_record(deepfleet_proto::run_delta::FOLLOWED, "r")
                .await
                .unwrap()
                .unwrap(),
        )
        .unwrap();
        assert!(mark.holds(Utc::now()));
        assert!(!mark.holds(Utc::now() + FOLLOW_MARK));
    }
}
