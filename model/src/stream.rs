//! Streamed completions: the deltas a client hands out while a response
//! arrives, and their assembly into the [`ModelResponse`] a non-streamed
//! call returns.
//!
//! Each provider's stream parser only translates its events into
//! [`Assembler`] calls; the assembler delivers the deltas and builds the
//! response, so the three protocols cannot disagree on what a streamed
//! answer becomes.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use deepfleet_proto::{ToolCall, Usage};
use serde::Serialize;

use crate::{CallPurpose, FinishReason, ModelResponse};

/// A piece of a response as it streams.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Delta {
    /// More assistant text.
    Text {
        /// The new text.
        text: String,
    },
    /// More of a tool call: the first delta of a call carries its id and
    /// name, later ones more argument text.
    ToolCall {
        /// Position of the call in the turn, from 0.
        index: usize,
        /// The call id, on the call's first delta.
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The tool name, on the call's first delta.
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Argument text to append (JSON, possibly partial).
        arguments: String,
    },
}

/// A delta with the reason of the call it belongs to, so a client can
/// filter out summarization tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeltaEvent {
    /// Why the call was made (`agent` or `summarization`).
    #[serde(rename = "source")]
    pub purpose: CallPurpose,
    /// The delta.
    #[serde(flatten)]
    pub delta: Delta,
}

/// Where streamed deltas go (the fleet publishes them as events).
///
/// Called on the client's task between network reads: implementations
/// must not block.
pub trait DeltaSink: Send + Sync {
    /// Receives one delta.
    fn deliver(&self, event: DeltaEvent);
}

impl<F: Fn(DeltaEvent) + Send + Sync> DeltaSink for F {
    fn deliver(&self, event: DeltaEvent) {
        self(event)
    }
}

/// A sink that drops every delta: `complete` on a streaming client.
#[derive(Debug, Clone, Copy, Default)]
pub struct Discard;

impl DeltaSink for Discard {
    fn deliver(&self, _event: DeltaEvent) {}
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Collects one attempt's deltas, delivering each to the sink.
///
/// The transport creates one per attempt; a protocol's
/// [`crate::transport::StreamDecoder`] feeds it.
pub struct Assembler<'a> {
    sink: &'a dyn DeltaSink,
    purpose: CallPurpose,
    /// Set on the first delivered delta; shared across attempts so the
    /// retry loop knows a retry is no longer possible.
    delivered: &'a AtomicBool,
    text: String,
    calls: BTreeMap<usize, PartialCall>,
    /// Tokens of the call, as the provider last reported them.
    pub usage: Usage,
    /// The model that answered.
    pub model: String,
}

impl<'a> Assembler<'a> {
    pub(crate) fn new(
        sink: &'a dyn DeltaSink,
        purpose: CallPurpose,
        delivered: &'a AtomicBool,
    ) -> Self {
        Assembler {
            sink,
            purpose,
            delivered,
            text: String::new(),
            calls: BTreeMap::new(),
            usage: Usage::default(),
            model: String::new(),
        }
    }

    fn deliver(&self, delta: Delta) {
        self.delivered.store(true, Ordering::SeqCst);
        self.sink.deliver(DeltaEvent {
            purpose: self.purpose,
            delta,
        });
    }

    /// Appends assistant text.
    pub fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.text.push_str(text);
        self.deliver(Delta::Text {
            text: text.to_owned(),
        });
    }

    /// Starts or extends tool call `index`.
    pub fn tool_call(
        &mut self,
        index: usize,
        id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) {
        let call = self.calls.entry(index).or_default();
        let id = id.filter(|id| !id.is_empty());
        let name = name.filter(|name| !name.is_empty());
        if let Some(id) = id {
            call.id = id.to_owned();
        }
        if let Some(name) = name {
            call.name = name.to_owned();
        }
        call.arguments.push_str(arguments);
        if id.is_none() && name.is_none() && arguments.is_empty() {
            return;
        }
        self.deliver(Delta::ToolCall {
            index,
            id: id.map(str::to_owned),
            name: name.map(str::to_owned),
            arguments: arguments.to_owned(),
        });
    }

    /// Number of tool calls seen so far.
    pub fn tool_calls(&self) -> usize {
        self.calls.len()
    }

    /// The assembled response, shaped exactly as the non-streamed
    /// conversions shape theirs: one text block when there is text, calls
    /// in index order, the usage on the message too.
    pub fn finish(self, finish: FinishReason) -> ModelResponse {
        let tool_calls = self
            .calls
            .into_values()
            .map(|call| ToolCall {
                id: call.id,
                name: call.name,
                arguments: call.arguments,
            })
            .collect();
        ModelResponse::assemble(self.text, tool_calls, self.usage, Some(self.model), finish)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::ContentBlock;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use std::sync::Mutex;

    #[test]
    fn deltas_are_tagged_delivered_and_assembled() {
        let seen = Mutex::new(Vec::new());
        let sink = |event: DeltaEvent| seen.lock().unwrap().push(event);
        let delivered = AtomicBool::new(false);
        let mut assembler = Assembler::new(&sink, CallPurpose::Summarization, &delivered);
        assembler.text("");
        assert!(!delivered.load(Ordering::SeqCst));
        assembler.text("Hel");
        assembler.text("lo");
        assembler.tool_call(1, Some("b"), Some("ls"), "");
        assembler.tool_call(0, Some("a"), Some("read_file"), "{\"file");
        assembler.tool_call(0, None, None, "_path\":\"/x\"}");
        assembler.tool_call(1, None, None, "");
        assembler.usage.input_tokens = 3;
        let response = assembler.finish(FinishReason::ToolCalls);
        assert!(delivered.load(Ordering::SeqCst));
        assert_eq!(response.message.content, vec![ContentBlock::text("Hello")]);
        assert_eq!(
            response.message.tool_calls,
            vec![
                ToolCall {
                    id: "a".into(),
                    name: "read_file".into(),
                    arguments: "{\"file_path\":\"/x\"}".into()
                },
                ToolCall {
                    id: "b".into(),
                    name: "ls".into(),
                    arguments: String::new()
                },
            ]
        );
        assert_eq!(response.message.model, None);
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 5);
        assert!(seen.iter().all(|e| e.purpose == CallPurpose::Summarization));
        assert_eq!(
            serde_json::to_value(&seen[0]).unwrap(),
            json!({"source": "summarization", "type": "text", "text": "Hel"})
        );
        assert_eq!(
            serde_json::to_value(&seen[2]).unwrap(),
            json!({"source": "summarization", "type": "tool_call", "index": 1, "id": "b",
                   "name": "ls", "arguments": ""})
        );
    }
}
