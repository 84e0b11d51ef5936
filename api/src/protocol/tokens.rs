//! Token streaming on the `messages` channel. While a stream that wants
//! messages follows a run, the run is marked followed, so workers append
//! each model call's tokens to the run's delta stream (see
//! [`crate::runs::partials`]). Each delta becomes protocol deltas of the
//! message it will be (the same id as when committed): `message-start`
//! on its first, a block started whenever the kind of content changes
//! (text, or another tool call: blocks never interleave), a
//! `text-delta` or `tool-call-delta` per chunk, the previous block
//! finished as the next begins. The commit of the message finishes its
//! last block and the message, and sends the rest of its events (tools,
//! updates) as for any message.
//!
//! Deltas of a step are read after its commit event and sent before it
//! (a worker appends them all first), so every delta precedes its
//! message's end.

use std::collections::{BTreeMap, VecDeque};

use deepfleet_proto::{DeltaSource, RunDelta};
use deepfleet_store::{Store, StoreError};
use serde_json::{Value, json};

use super::translate::{Origin, finished_call};
use super::wire::ProtocolEvent;
use crate::runs::partials::new_deltas;
use deepfleet_scheduler::convert::message_id;

/// The block a streaming message has open.
#[derive(Debug, Clone, PartialEq)]
enum Block {
    Text {
        index: usize,
        text: String,
    },
    Call {
        index: usize,
        chunk: usize,
        id: String,
        name: String,
        args: String,
    },
}

impl Block {
    fn finish(&self) -> Value {
        match self {
            Block::Text { index, text } => json!({
                "event": "content-block-finish", "index": index,
                "content": {"type": "text", "text": text},
            }),
            Block::Call {
                index,
                id,
                name,
                args,
                ..
            } => json!({
                "event": "content-block-finish", "index": index,
                "content": finished_call(id, name, args),
            }),
        }
    }
}

/// One message being streamed.
#[derive(Debug, Default)]
struct Streaming {
    next_block: usize,
    block: Option<Block>,
}

/// A stream's view of one run's delta stream.
#[derive(Debug)]
pub struct Tokens {
    run_id: String,
    cursor: Option<String>,
    buffered: VecDeque<(String, RunDelta)>,
    /// Messages streamed so far, by their index in the thread's log.
    messages: BTreeMap<u64, Streaming>,
}

impl Tokens {
    /// A view of `run_id`'s deltas from the start.
    pub fn new(run_id: &str) -> Self {
        Tokens {
            run_id: run_id.to_owned(),
            cursor: None,
            buffered: VecDeque::new(),
            messages: BTreeMap::new(),
        }
    }

    /// Buffers the deltas appended since the last read.
    pub async fn read(&mut self, store: &dyn Store) -> Result<(), StoreError> {
        let new = new_deltas(store, &self.run_id, &mut self.cursor).await?;
        self.buffered.extend(new);
        Ok(())
    }

    /// The events of the buffered deltas up to step `step` (all for
    /// `None`), each with its id.
    pub fn until(&mut self, origin: Origin<'_>, step: Option<u64>) -> Vec<(String, ProtocolEvent)> {
        let mut out = Vec::new();
        while let Some((_, delta)) = self.buffered.front() {
            if step.is_some_and(|step| delta.step > step) {
                break;
            }
            let Some((id, delta)) = self.buffered.pop_front() else {
                break;
            };
            // A summary's tokens are not a message of the conversation.
            if delta.source != DeltaSource::Agent {
                continue;
            }
            let events = self.delta_events(origin, &delta);
            let prefix = format!("{}/delta/{id}", self.run_id);
            out.extend(
                events
                    .into_iter()
                    .enumerate()
                    .map(|(n, event)| (format!("{prefix}/{n}"), event)),
            );
        }
        out
    }

    /// Whether the message at thread index `index` was streamed.
    pub fn streamed(&self, index: u64) -> bool {
        self.messages.contains_key(&index)
    }

    /// The finish of a streamed message's open block, sent before its
    /// `message-finish`.
    pub fn finish(&mut self, origin: Origin<'_>, index: u64) -> Option<ProtocolEvent> {
        let block = self.messages.remove(&index)?.block?;
        Some(messages_event(origin, block.finish()))
    }

    fn delta_events(&mut self, origin: Origin<'_>, delta: &RunDelta) -> Vec<ProtocolEvent> {
        let mut out = Vec::new();
        let streaming = self.messages.entry(delta.index).or_insert_with(|| {
            let id = message_id(
                origin.thread_id,
                usize::try_from(delta.index).unwrap_or(usize::MAX),
            );
            out.push(messages_event(
                origin,
                json!({"event": "message-start", "role": "ai", "id": id,
                       "metadata": {"run_id": origin.run_id, "thread_id": origin.thread_id}}),
            ));
            Streaming::default()
        });
        if !delta.text.is_empty() {
            if !matches!(streaming.block, Some(Block::Text { .. })) {
                let index = open(streaming, &mut out, origin, |index| Block::Text {
                    index,
                    text: String::new(),
                });
                out.push(messages_event(
                    origin,
                    json!({"event": "content-block-start", "index": index,
                           "content": {"type": "text", "text": ""}}),
                ));
            }
            if let Some(Block::Text { index, text }) = &mut streaming.block {
                text.push_str(&delta.text);
                out.push(messages_event(
                    origin,
                    json!({"event": "content-block-delta", "index": index,
                           "delta": {"type": "text-delta", "text": delta.text}}),
                ));
            }
        }
        for chunk in &delta.tool_calls {
            let same =
                matches!(&streaming.block, Some(Block::Call { chunk: c, .. }) if *c == chunk.index);
            if !same {
                let id = chunk.id.clone().unwrap_or_default();
                let name = chunk.name.clone().unwrap_or_default();
                let index = open(streaming, &mut out, origin, |index| Block::Call {
                    index,
                    chunk: chunk.index,
                    id: id.clone(),
                    name: name.clone(),
                    args: String::new(),
                });
                out.push(messages_event(
                    origin,
                    json!({"event": "content-block-start", "index": index,
                           "content": {"type": "tool_call_chunk", "id": id, "name": name, "args": ""}}),
                ));
            }
            if let Some(Block::Call {
                index,
                id,
                name,
                args,
                ..
            }) = &mut streaming.block
            {
                if let Some(call_id) = &chunk.id {
                    id.clone_from(call_id);
                }
                if let Some(tool) = &chunk.name {
                    name.clone_from(tool);
                }
                args.push_str(&chunk.arguments);
                out.push(messages_event(
                    origin,
                    json!({"event": "content-block-delta", "index": index,
                           "delta": {"type": "tool-call-delta", "args": chunk.arguments}}),
                ));
            }
        }
        out
    }
}

/// Finishes `streaming`'s open block, if any, and opens the one `make`
/// builds at the next index; returns that index.
fn open(
    streaming: &mut Streaming,
    out: &mut Vec<ProtocolEvent>,
    origin: Origin<'_>,
    make: impl FnOnce(usize) -> Block,
) -> usize {
    if let Some(done) = streaming.block.take() {
        out.push(messages_event(origin, done.finish()));
    }
    let index = streaming.next_block;
    streaming.next_block += 1;
    streaming.block = Some(make(index));
    index
}

fn messages_event(origin: Origin<'_>, data: Value) -> ProtocolEvent {
    ProtocolEvent {
        method: "messages",
        namespace: origin.namespace.to_vec(),
        node: Some("model"),
        data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::ToolCallChunk;

    fn origin() -> Origin<'static> {
        Origin {
            thread_id: "t",
            namespace: &[],
            run_id: "r",
        }
    }

    fn delta(text: &str, calls: Vec<ToolCallChunk>) -> RunDelta {
        RunDelta {
            step: 0,
            index: 1,
            source: DeltaSource::Agent,
            text: text.into(),
            tool_calls: calls,
        }
    }

    fn chunk(index: usize, id: Option<&str>, args: &str) -> ToolCallChunk {
        ToolCallChunk {
            index,
            id: id.map(str::to_owned),
            name: id.map(|_| "ls".to_owned()),
            arguments: args.into(),
        }
    }

    #[test]
    fn text_then_calls_stream_as_blocks_that_never_interleave() {
        let mut tokens = Tokens::new("r");
        tokens.buffered.extend([
            ("1-0".to_owned(), delta("Hel", vec![])),
            (
                "2-0".to_owned(),
                delta("lo", vec![chunk(0, Some("c1"), "{\"pa")]),
            ),
            (
                "3-0".to_owned(),
                delta(
                    "",
                    vec![chunk(0, None, "th\":\"/\"}"), chunk(1, Some("c2"), "{}")],
                ),
            ),
        ]);
        let events = tokens.until(origin(), None);
        let kinds: Vec<String> = events
            .iter()
            .map(|(_, e)| {
                let d = &e.data;
                format!(
                    "{}{}",
                    d["event"].as_str().unwrap(),
                    d.get("index").map_or(String::new(), |i| format!("@{i}"))
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "message-start",
                "content-block-start@0",
                "content-block-delta@0",
                "content-block-delta@0",
                "content-block-finish@0",
                "content-block-start@1",
                "content-block-delta@1",
                "content-block-delta@1",
                "content-block-finish@1",
                "content-block-start@2",
                "content-block-delta@2",
            ]
        );
        assert_eq!(events[4].1.data["content"]["text"], "Hello");
        assert_eq!(events[8].1.data["content"]["args"], json!({"path": "/"}));
        assert_eq!(events[0].1.data["id"], json!(message_id("t", 1)));
        assert!(tokens.streamed(1));
        let last = tokens.finish(origin(), 1).unwrap();
        assert_eq!(last.data["content"]["id"], "c2");
        assert!(!tokens.streamed(1));
        let ids: std::collections::HashSet<&String> = events.iter().map(|(id, _)| id).collect();
        assert_eq!(ids.len(), events.len());
    }

    #[test]
    fn deltas_wait_for_their_step_and_summaries_are_not_messages() {
        let mut tokens = Tokens::new("r");
        let mut later = delta("x", vec![]);
        later.step = 2;
        let mut summary = delta("sum", vec![]);
        summary.source = DeltaSource::Summarization;
        tokens
            .buffered
            .extend([("1-0".to_owned(), summary), ("2-0".to_owned(), later)]);
        assert!(tokens.until(origin(), Some(1)).is_empty());
        assert_eq!(tokens.until(origin(), Some(2)).len(), 3);
    }
}
