//! [`GenerateContent`]: the Gemini API on the shared transport.

use std::sync::Arc;

use reqwest::header::HeaderName;
use serde_json::value::RawValue;

use super::convert::{from_wire, to_wire, turn_of};
use super::stream::ChunkReader;
use super::wire::{GenerateContentRequest, GenerateContentResponse};
use crate::transport::WireProtocol;
use crate::{ModelError, ModelRequest, ModelResponse};

/// The version used when the base URL names none.
const DEFAULT_VERSION: &str = "v1beta";

/// `POST {root}/models/{model}:generateContent` (or
/// `:streamGenerateContent?alt=sse`) with `x-goog-api-key`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GenerateContent;

impl WireProtocol for GenerateContent {
    type Request = GenerateContentRequest;
    type Response = GenerateContentResponse;
    type Decoder = ChunkReader;

    /// The root may name the version (`.../v1`, `.../v1beta`); `v1beta`
    /// is added when it does not. The model may carry a `models/` prefix.
    fn endpoint(&self, base_url: &str, model: &str, stream: bool) -> String {
        let version = version_of(base_url);
        let model = model.trim_start_matches("models/");
        let method = if stream {
            "streamGenerateContent?alt=sse"
        } else {
            "generateContent"
        };
        format!("{base_url}{version}/models/{model}:{method}")
    }

    fn models_endpoint(&self, base_url: &str) -> String {
        format!("{base_url}{}/models", version_of(base_url))
    }

    fn auth_header(&self, key: &str) -> (HeaderName, String) {
        (HeaderName::from_static("x-goog-api-key"), key.to_owned())
    }

    /// Streaming is chosen by the URL, not the body.
    fn request(
        &self,
        request: &ModelRequest,
        _stream: bool,
        tools: Option<Arc<RawValue>>,
    ) -> GenerateContentRequest {
        to_wire(request, tools)
    }

    fn response(
        &self,
        body: GenerateContentResponse,
        request: &ModelRequest,
    ) -> Result<ModelResponse, ModelError> {
        Ok(from_wire(body, turn_of(request)))
    }

    fn decoder(&self, request: &ModelRequest) -> ChunkReader {
        ChunkReader::new(turn_of(request))
    }
}

/// The API version to put after `base_url`: none when it ends in one.
fn version_of(base_url: &str) -> String {
    let versioned = base_url
        .rsplit('/')
        .next()
        .is_some_and(|last| last.starts_with("v1"));
    if versioned {
        String::new()
    } else {
        format!("/{DEFAULT_VERSION}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_missing_version_is_added_and_the_method_follows_streaming() {
        let root = "https://generativelanguage.googleapis.com";
        assert_eq!(
            GenerateContent.endpoint(root, "models/gemini-2.5-flash", false),
            format!("{root}/v1beta/models/gemini-2.5-flash:generateContent")
        );
        assert_eq!(
            GenerateContent.endpoint(&format!("{root}/v1"), "gemini-2.5-pro", true),
            format!("{root}/v1/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
        );
        assert_eq!(
            GenerateContent.models_endpoint(root),
            format!("{root}/v1beta/models")
        );
    }
}
