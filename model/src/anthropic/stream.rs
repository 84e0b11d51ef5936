//! Streamed Messages: `message_start`, content blocks with `text_delta`
//! and `input_json_delta`, `message_delta` with the stop reason and the
//! final usage, `message_stop`.

use std::collections::HashMap;

use serde_json::Value;

use super::convert::{finish_reason, usage_from_wire};
use super::wire::{Block, BlockDelta, StreamEvent, WireUsage};
use crate::classify::classify_stream_error;
use crate::stream::Assembler;
use crate::transport::StreamDecoder;
use crate::{ErrorKind, ModelError, ModelResponse};

/// Folds the events of one streamed answer.
#[derive(Default)]
pub struct EventReader {
    /// Content-block index to tool-call position.
    tools: HashMap<usize, usize>,
    usage: WireUsage,
    stop_reason: Option<String>,
    stopped: bool,
}

impl StreamDecoder for EventReader {
    /// Applies one event's data.
    fn apply(&mut self, data: &str, out: &mut Assembler<'_>) -> Result<(), ModelError> {
        let event: StreamEvent = serde_json::from_str(data).map_err(|e| {
            ModelError::new(
                ErrorKind::InvalidResponse,
                format!("cannot decode a stream event: {e}"),
            )
        })?;
        match event {
            StreamEvent::MessageStart { message } => {
                out.model = message.model;
                self.usage = message.usage;
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                Block::Text { text, .. } => out.text(&text),
                Block::ToolUse { id, name, .. } => {
                    // The start carries `input: {}`; the arguments follow
                    // as `input_json_delta` fragments.
                    let position = self.tools.len();
                    self.tools.insert(index, position);
                    out.tool_call(position, Some(&id), Some(&name), "");
                }
                Block::Image { .. } | Block::ToolResult { .. } | Block::Other => {}
            },
            StreamEvent::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => out.text(&text),
                BlockDelta::InputJsonDelta { partial_json } => {
                    if let Some(&position) = self.tools.get(&index) {
                        out.tool_call(position, None, None, &partial_json);
                    }
                }
                BlockDelta::Other => {}
            },
            StreamEvent::MessageDelta { delta, usage } => {
                self.stop_reason = delta.stop_reason;
                // Counts in `message_delta` are cumulative; fields it
                // leaves out keep their `message_start` values.
                self.usage.output_tokens = usage.output_tokens;
                if usage.input_tokens > 0 {
                    self.usage.input_tokens = usage.input_tokens;
                }
                if usage.cache_read_input_tokens.is_some() {
                    self.usage.cache_read_input_tokens = usage.cache_read_input_tokens;
                }
                if usage.cache_creation_input_tokens.is_some() {
                    self.usage.cache_creation_input_tokens = usage.cache_creation_input_tokens;
                }
            }
            StreamEvent::MessageStop => self.stopped = true,
            StreamEvent::Error { error } => {
                return Err(classify_stream_error(&error.kind, &error.message));
            }
            StreamEvent::ContentBlockStop { .. } | StreamEvent::Ping | StreamEvent::Other => {}
        }
        Ok(())
    }

    /// The response, once the stream ended. Tool arguments are normalised
    /// to compact JSON, as the non-streamed conversion writes them; a
    /// stream cut before `message_stop` is a transport failure.
    fn finish(self, mut out: Assembler<'_>) -> Result<ModelResponse, ModelError> {
        if !self.stopped {
            return Err(ModelError::new(
                ErrorKind::Transport,
                "the stream ended before message_stop",
            ));
        }
        out.usage = usage_from_wire(self.usage);
        let finish = finish_reason(self.stop_reason.as_deref(), out.tool_calls() > 0);
        let mut response = out.finish(finish);
        for call in &mut response.message.tool_calls {
            if call.arguments.trim().is_empty() {
                call.arguments = "{}".to_owned();
            } else if let Ok(value) = serde_json::from_str::<Value>(&call.arguments) {
                call.arguments = value.to_string();
            }
        }
        Ok(response)
    }
}
