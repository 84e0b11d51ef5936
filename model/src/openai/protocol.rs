//! [`ChatCompletions`]: the Chat Completions protocol on the shared
//! transport, for OpenAI and every OpenAI-compatible host.

use std::sync::Arc;

use reqwest::header::{AUTHORIZATION, HeaderName};
use serde_json::value::RawValue;

use super::convert::{from_wire, to_wire};
use super::stream::ChunkReader;
use super::wire::{ChatRequest, ChatResponse, StreamOptions};
use crate::transport::WireProtocol;
use crate::{ModelError, ModelRequest, ModelResponse};

/// `POST {base_url}/chat/completions` with `Authorization: Bearer`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChatCompletions;

impl WireProtocol for ChatCompletions {
    type Request = ChatRequest;
    type Response = ChatResponse;
    type Decoder = ChunkReader;

    fn endpoint(&self, base_url: &str, _model: &str, _stream: bool) -> String {
        format!("{base_url}/chat/completions")
    }

    fn models_endpoint(&self, base_url: &str) -> String {
        format!("{base_url}/models")
    }

    fn auth_header(&self, key: &str) -> (HeaderName, String) {
        (AUTHORIZATION, format!("Bearer {key}"))
    }

    /// Streamed calls ask for the usage chunk too
    /// (`stream_options.include_usage`).
    fn request(
        &self,
        request: &ModelRequest,
        stream: bool,
        tools: Option<Arc<RawValue>>,
    ) -> ChatRequest {
        let body = to_wire(request, tools);
        if !stream {
            return body;
        }
        ChatRequest {
            stream: Some(true),
            stream_options: Some(StreamOptions {
                include_usage: true,
            }),
            ..body
        }
    }

    fn response(
        &self,
        body: ChatResponse,
        _request: &ModelRequest,
    ) -> Result<ModelResponse, ModelError> {
        from_wire(body)
    }

    fn decoder(&self, _request: &ModelRequest) -> ChunkReader {
        ChunkReader::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_call_goes_to_chat_completions_below_the_root() {
        let url = ChatCompletions.endpoint("https://api.openai.com/v1", "gpt-4.1", true);
        assert_eq!(url, "https://api.openai.com/v1/chat/completions");
        assert_eq!(
            ChatCompletions.models_endpoint("https://api.openai.com/v1"),
            "https://api.openai.com/v1/models"
        );
        let (name, value) = ChatCompletions.auth_header("sk-1");
        assert_eq!(
            (name.as_str(), value.as_str()),
            ("authorization", "Bearer sk-1")
        );
    }
}
