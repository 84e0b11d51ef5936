//! Server-sent events: the framing all three providers stream in.
//!
//! [`SseDecoder`] is sans-IO (bytes in, events out) so chunk boundaries
//! falling anywhere, even inside a UTF-8 character, are tested without a
//! server; [`for_each_event`] drives it from a bounded reqwest body.

use super::body::BoundedBody;
use crate::{ErrorKind, ModelError};

/// One event: its `event:` name (empty when absent) and its `data:` lines
/// joined by newlines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub(crate) event: String,
    pub(crate) data: String,
}

/// Splits a byte stream into events.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    pending: Vec<u8>,
    event: String,
    data: Vec<String>,
}

impl SseDecoder {
    /// Feeds `chunk`; returns the events it completed.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, ModelError> {
        self.pending.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let mut line: Vec<u8> = self.pending.drain(..=end).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8(line).map_err(|_| {
                ModelError::new(ErrorKind::InvalidResponse, "the stream is not UTF-8")
            })?;
            if let Some(event) = self.line(&line) {
                events.push(event);
            }
        }
        Ok(events)
    }

    /// Ends the stream: an event not closed by a blank line still counts.
    pub(crate) fn finish(&mut self) -> Result<Option<SseEvent>, ModelError> {
        let mut events = self.push(b"\n")?;
        Ok(events.pop().or_else(|| self.line("")))
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            if self.data.is_empty() {
                self.event.clear();
                return None;
            }
            return Some(SseEvent {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data).join("\n"),
            });
        }
        // Lines starting with a colon are comments (keep-alives).
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.event = value.to_owned(),
            "data" => self.data.push(value.to_owned()),
            _ => {}
        }
        None
    }
}

/// Reads `body` as SSE, calling `handle` for each event in order; stops
/// at the first error `handle` returns or the body's bounds raise.
pub(crate) async fn for_each_event(
    mut body: BoundedBody,
    mut handle: impl FnMut(SseEvent) -> Result<(), ModelError>,
) -> Result<(), ModelError> {
    let mut decoder = SseDecoder::default();
    while let Some(chunk) = body.chunk().await? {
        for event in decoder.push(&chunk)? {
            handle(event)?;
        }
    }
    if let Some(event) = decoder.finish()? {
        handle(event)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn event(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    const STREAM: &str = "event: message_start\r\ndata: {\"a\":\"é\"}\r\n\r\n: ping\n\ndata: one\ndata:two\n\nevent: x\ndata: [DONE]";

    #[test]
    fn events_survive_any_chunking() {
        let expected = vec![
            event("message_start", "{\"a\":\"é\"}"),
            event("", "one\ntwo"),
            event("x", "[DONE]"),
        ];
        let bytes = STREAM.as_bytes();
        for size in [1, 2, 3, 7, bytes.len()] {
            let mut decoder = SseDecoder::default();
            let mut events = Vec::new();
            for chunk in bytes.chunks(size) {
                events.extend(decoder.push(chunk).unwrap());
            }
            events.extend(decoder.finish().unwrap());
            assert_eq!(events, expected, "chunks of {size}");
        }
    }

    #[test]
    fn invalid_utf8_is_an_invalid_response() {
        let mut decoder = SseDecoder::default();
        let error = decoder.push(b"data: \xff\n").unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidResponse);
    }
}
