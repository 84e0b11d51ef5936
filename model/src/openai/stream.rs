//! Streamed Chat Completions: `stream: true` with
//! `stream_options.include_usage`, parsed chunk by chunk into an
//! [`Assembler`].

use super::convert::{finish_reason, usage_from_wire};
use super::wire::{ChatChunk, ErrorBody};
use crate::classify::classify_stream_error;
use crate::stream::Assembler;
use crate::transport::StreamDecoder;
use crate::{ErrorKind, FinishReason, ModelError, ModelResponse};

/// Folds the `data:` events of one streamed answer.
#[derive(Default)]
pub struct ChunkReader {
    finish_reason: Option<String>,
    done: bool,
    /// Whether any chunk carried a choice.
    chose: bool,
}

impl StreamDecoder for ChunkReader {
    /// Applies one event's data.
    fn apply(&mut self, data: &str, out: &mut Assembler<'_>) -> Result<(), ModelError> {
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        // Some compatible hosts report failures after the 200 as a chunk
        // holding only an error body.
        if let Ok(body) = serde_json::from_str::<ErrorBody>(data) {
            let kind = body.error.kind.as_deref().unwrap_or("server_error");
            return Err(classify_stream_error(kind, &body.error.message));
        }
        let chunk: ChatChunk = serde_json::from_str(data).map_err(|e| {
            ModelError::new(
                ErrorKind::InvalidResponse,
                format!("cannot decode a stream chunk: {e}"),
            )
        })?;
        if !chunk.model.is_empty() {
            out.model = chunk.model;
        }
        if let Some(usage) = chunk.usage {
            out.usage = usage_from_wire(usage);
        }
        // deepfleet asks for one candidate; others would interleave.
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            self.chose = true;
            if let Some(text) = &choice.delta.content {
                out.text(text);
            }
            for call in &choice.delta.tool_calls {
                let function = call.function.as_ref();
                out.tool_call(
                    call.index,
                    call.id.as_deref(),
                    function.and_then(|f| f.name.as_deref()),
                    function
                        .and_then(|f| f.arguments.as_deref())
                        .unwrap_or_default(),
                );
            }
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
        }
        Ok(())
    }

    /// The response, once the stream ended; a stream cut before its
    /// finish reason or `[DONE]` is a transport failure (retryable if no
    /// delta was delivered yet), and one without a choice is undecodable,
    /// as the same answer unstreamed is.
    fn finish(self, out: Assembler<'_>) -> Result<ModelResponse, ModelError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(ModelError::new(
                ErrorKind::Transport,
                "the stream ended before the completion finished",
            ));
        }
        if !self.chose {
            return Err(ModelError::new(
                ErrorKind::InvalidResponse,
                "the response has no choices",
            ));
        }
        let finish: FinishReason =
            finish_reason(self.finish_reason.as_deref(), out.tool_calls() > 0);
        Ok(out.finish(finish))
    }
}
