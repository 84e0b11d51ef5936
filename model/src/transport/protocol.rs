//! [`WireProtocol`]: what differs between providers once the transport is
//! shared: where a call goes, how it authenticates, and how our neutral
//! request and response map to the provider's wire types and stream.

use std::sync::Arc;

use reqwest::header::HeaderName;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::stream::Assembler;
use crate::{ModelError, ModelRequest, ModelResponse};

/// One provider protocol (Chat Completions, Messages, `generateContent`).
///
/// Implementations are pure: no I/O, no retries, no key handling beyond
/// naming the header it goes in. [`super::HttpClient`] does the rest, the
/// same way for every protocol.
pub trait WireProtocol: std::fmt::Debug + Send + Sync + 'static {
    /// The request body.
    type Request: Serialize + Send + Sync;
    /// A non-streamed answer's body.
    type Response: DeserializeOwned;
    /// Folds a streamed answer's events.
    type Decoder: StreamDecoder;

    /// The URL of a call of `model`, streamed or not, below `base_url`
    /// (trimmed of a trailing slash).
    fn endpoint(&self, base_url: &str, model: &str, stream: bool) -> String;

    /// The URL listing the models below `base_url`: the cheap
    /// authenticated call that checks a key before a batch.
    fn models_endpoint(&self, base_url: &str) -> String;

    /// The header the API key goes in, and its value for `key`.
    fn auth_header(&self, key: &str) -> (HeaderName, String);

    /// Headers every request carries besides authentication (an API
    /// version), names in lowercase; none by default.
    fn fixed_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// The body of `request`, asking for a streamed answer when `stream`.
    ///
    /// `tools`, when given, is the body's `tools` value as this protocol
    /// wrote it for a request offering the same tools (the transport
    /// writes an agent's list once): it goes in place of the converted
    /// list, so that value must depend on the request's tools alone.
    fn request(
        &self,
        request: &ModelRequest,
        stream: bool,
        tools: Option<Arc<RawValue>>,
    ) -> Self::Request;

    /// Our response from a decoded answer to `request`.
    fn response(
        &self,
        body: Self::Response,
        request: &ModelRequest,
    ) -> Result<ModelResponse, ModelError>;

    /// A fresh decoder for one streamed answer to `request`.
    fn decoder(&self, request: &ModelRequest) -> Self::Decoder;
}

/// Turns one streamed answer's SSE `data:` payloads into [`Assembler`]
/// calls; the assembler delivers the deltas and builds the response.
pub trait StreamDecoder: Send {
    /// Applies one event's data.
    fn apply(&mut self, data: &str, out: &mut Assembler<'_>) -> Result<(), ModelError>;

    /// The response, once the stream ended; a stream cut before the
    /// protocol's end marker is a transport failure.
    fn finish(self, out: Assembler<'_>) -> Result<ModelResponse, ModelError>;
}
