//! [`Messages`]: the Anthropic Messages protocol on the shared transport.

use std::sync::Arc;

use reqwest::header::HeaderName;
use serde_json::value::RawValue;

use super::convert::{from_wire, to_wire};
use super::stream::EventReader;
use super::wire::{MessagesRequest, MessagesResponse};
use crate::profiles;
use crate::transport::WireProtocol;
use crate::{ModelError, ModelRequest, ModelResponse};

/// The API version the wire types follow (`anthropic-version`).
pub const API_VERSION: &str = "2023-06-01";

/// `max_tokens` when neither the request nor the model's profile gives
/// one (the API requires a value).
const FALLBACK_MAX_TOKENS: u64 = 8_192;

/// `POST {root}/v1/messages` with `x-api-key` and `anthropic-version`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Messages;

impl WireProtocol for Messages {
    type Request = MessagesRequest;
    type Response = MessagesResponse;
    type Decoder = EventReader;

    /// The SDKs' base URL has no `/v1`; OpenAI-style ones do. Both work.
    fn endpoint(&self, base_url: &str, _model: &str, _stream: bool) -> String {
        if base_url.ends_with("/v1") {
            format!("{base_url}/messages")
        } else {
            format!("{base_url}/v1/messages")
        }
    }

    fn models_endpoint(&self, base_url: &str) -> String {
        if base_url.ends_with("/v1") {
            format!("{base_url}/models")
        } else {
            format!("{base_url}/v1/models")
        }
    }

    fn auth_header(&self, key: &str) -> (HeaderName, String) {
        (HeaderName::from_static("x-api-key"), key.to_owned())
    }

    fn fixed_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[("anthropic-version", API_VERSION)]
    }

    /// `max_tokens` defaults to the model profile's output limit.
    fn request(
        &self,
        request: &ModelRequest,
        stream: bool,
        tools: Option<Arc<RawValue>>,
    ) -> MessagesRequest {
        let max_tokens = profiles::builtin(&request.model)
            .map_or(FALLBACK_MAX_TOKENS, |profile| profile.max_output_tokens);
        MessagesRequest {
            stream: stream.then_some(true),
            ..to_wire(request, max_tokens, tools)
        }
    }

    fn response(
        &self,
        body: MessagesResponse,
        _request: &ModelRequest,
    ) -> Result<ModelResponse, ModelError> {
        Ok(from_wire(body))
    }

    fn decoder(&self, _request: &ModelRequest) -> EventReader {
        EventReader::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_root_may_carry_the_version_or_not() {
        for root in ["https://api.anthropic.com", "https://api.anthropic.com/v1"] {
            assert_eq!(
                Messages.endpoint(root, "claude-sonnet-4-5", false),
                "https://api.anthropic.com/v1/messages"
            );
            assert_eq!(
                Messages.models_endpoint(root),
                "https://api.anthropic.com/v1/models"
            );
        }
    }
}
