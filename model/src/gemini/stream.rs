//! Streamed `streamGenerateContent?alt=sse`: every event is a
//! [`GenerateContentResponse`] with the new text and whole function calls;
//! the last one carries the finish reason and the final usage.

use serde_json::Value;

use super::convert::{call_id, finish_reason, usage_from_wire};
use super::wire::GenerateContentResponse;
use crate::classify::classify_stream_error;
use crate::stream::Assembler;
use crate::transport::StreamDecoder;
use crate::{ErrorKind, FinishReason, ModelError, ModelResponse};

/// Folds the events of one streamed answer.
pub struct ChunkReader {
    turn: usize,
    finish_reason: Option<String>,
    /// Events read, and whether any carried a candidate.
    events: usize,
    candidates: bool,
}

impl ChunkReader {
    /// A reader naming id-less calls after `turn`.
    pub(crate) fn new(turn: usize) -> Self {
        ChunkReader {
            turn,
            finish_reason: None,
            events: 0,
            candidates: false,
        }
    }
}

impl StreamDecoder for ChunkReader {
    /// Applies one event's data.
    fn apply(&mut self, data: &str, out: &mut Assembler<'_>) -> Result<(), ModelError> {
        let value: Value = serde_json::from_str(data).map_err(|e| {
            ModelError::new(
                ErrorKind::InvalidResponse,
                format!("cannot decode a stream chunk: {e}"),
            )
        })?;
        // A failure after the 200 arrives as an error body in the stream.
        if let Some(error) = value.get("error") {
            let text = |key: &str| error.get(key).and_then(Value::as_str).unwrap_or_default();
            return Err(classify_stream_error(text("status"), text("message")));
        }
        let chunk: GenerateContentResponse = serde_json::from_value(value).map_err(|e| {
            ModelError::new(
                ErrorKind::InvalidResponse,
                format!("cannot decode a stream chunk: {e}"),
            )
        })?;
        if let Some(model) = chunk.model_version.filter(|m| !m.is_empty()) {
            out.model = model;
        }
        if let Some(usage) = chunk.usage_metadata {
            out.usage = usage_from_wire(usage);
        }
        self.events += 1;
        let Some(candidate) = chunk.candidates.into_iter().next() else {
            return Ok(());
        };
        self.candidates = true;
        for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
            if part.thought == Some(true) {
                continue;
            }
            if let Some(text) = &part.text {
                out.text(text);
            }
            if let Some(call) = part.function_call {
                let index = out.tool_calls();
                let id = call_id(call.id.as_deref(), self.turn, index);
                out.tool_call(index, Some(&id), Some(&call.name), &call.args.to_string());
            }
        }
        if candidate.finish_reason.is_some() {
            self.finish_reason = candidate.finish_reason;
        }
        Ok(())
    }

    /// The response, once the stream ended; a stream cut before the finish
    /// reason is a transport failure. Events without any candidate are a
    /// blocked prompt: the filtered, empty turn the same answer unstreamed
    /// is.
    fn finish(self, out: Assembler<'_>) -> Result<ModelResponse, ModelError> {
        if self.events > 0 && !self.candidates {
            return Ok(out.finish(FinishReason::ContentFilter));
        }
        let Some(reason) = self.finish_reason else {
            return Err(ModelError::new(
                ErrorKind::Transport,
                "the stream ended before a finish reason",
            ));
        };
        let finish = finish_reason(Some(&reason), out.tool_calls() > 0);
        Ok(out.finish(finish))
    }
}
