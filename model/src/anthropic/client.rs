//! [`AnthropicClient`]: the Messages API over reqwest.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::HeaderValue;

use super::convert::{from_wire, to_wire};
use super::stream::EventReader;
use super::wire::{MessagesRequest, MessagesResponse};
use crate::http::{DEFAULT_TIMEOUT, http_client, json, secret_header, send};
use crate::profiles;
use crate::retry::RetryPolicy;
use crate::sse::for_each_event;
use crate::stream::{Assembler, DeltaSink, Discard};
use crate::{ModelClient, ModelError, ModelRequest, ModelResponse};

/// The API version the wire types follow (`anthropic-version`).
pub const API_VERSION: &str = "2023-06-01";

/// `max_tokens` when neither the request nor the model's profile gives
/// one (the API requires a value).
const FALLBACK_MAX_TOKENS: u64 = 8_192;

/// Settings of one [`AnthropicClient`].
#[derive(Clone)]
pub struct AnthropicConfig {
    /// API root: `https://api.anthropic.com` or `.../v1` (both work).
    pub base_url: String,
    /// Sent as `x-api-key`, when set.
    pub api_key: Option<String>,
    /// Limit of one HTTP attempt.
    pub timeout: Duration,
    /// Retries of transient failures.
    pub retry: RetryPolicy,
    /// Whether `complete` streams too.
    pub stream: bool,
}

impl AnthropicConfig {
    /// Defaults for `base_url`: no key, [`DEFAULT_TIMEOUT`], the default
    /// retry policy, no streaming.
    pub fn new(base_url: impl Into<String>) -> Self {
        AnthropicConfig {
            base_url: base_url.into(),
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
            retry: RetryPolicy::default(),
            stream: false,
        }
    }
}

// Hand-written so the key never reaches a log line.
impl fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("stream", &self.stream)
            .finish()
    }
}

/// A Messages API client.
pub struct AnthropicClient {
    http: reqwest::Client,
    endpoint: String,
    api_key: Option<HeaderValue>,
    timeout: Duration,
    retry: RetryPolicy,
    stream: bool,
}

impl fmt::Debug for AnthropicClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicClient")
            .field("endpoint", &self.endpoint)
            .field("authorized", &self.api_key.is_some())
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("stream", &self.stream)
            .finish()
    }
}

impl AnthropicClient {
    /// A client with its own connection pool.
    pub fn new(config: AnthropicConfig) -> Result<Self, ModelError> {
        Self::with_http(http_client()?, config)
    }

    /// A client sharing `http`'s connection pool.
    pub fn with_http(http: reqwest::Client, config: AnthropicConfig) -> Result<Self, ModelError> {
        let root = config.base_url.trim_end_matches('/');
        // The SDKs' base URL has no `/v1`; OpenAI-style ones do. Take both.
        let endpoint = if root.ends_with("/v1") {
            format!("{root}/messages")
        } else {
            format!("{root}/v1/messages")
        };
        Ok(AnthropicClient {
            http,
            endpoint,
            api_key: config.api_key.as_deref().map(secret_header).transpose()?,
            timeout: config.timeout,
            retry: config.retry,
            stream: config.stream,
        })
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn body(request: &ModelRequest) -> MessagesRequest {
        let max_tokens = profiles::builtin(&request.model)
            .map_or(FALLBACK_MAX_TOKENS, |profile| profile.max_output_tokens);
        to_wire(request, max_tokens)
    }

    fn post(&self, body: &MessagesRequest) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(&self.endpoint)
            .timeout(self.timeout)
            .header("anthropic-version", API_VERSION)
            .json(body);
        if let Some(key) = &self.api_key {
            request = request.header("x-api-key", key.clone());
        }
        request
    }

    async fn send(&self, body: &MessagesRequest) -> Result<ModelResponse, ModelError> {
        let response = send(self.post(body)).await?;
        Ok(from_wire(json::<MessagesResponse>(response).await?))
    }

    async fn send_streamed(
        &self,
        body: &MessagesRequest,
        request: &ModelRequest,
        sink: &dyn DeltaSink,
        delivered: &AtomicBool,
    ) -> Result<ModelResponse, ModelError> {
        let response = send(self.post(body)).await?;
        let mut out = Assembler::new(sink, request.purpose, delivered);
        let mut reader = EventReader::default();
        for_each_event(response, |event| reader.apply(&event.data, &mut out)).await?;
        reader.finish(out)
    }
}

#[async_trait]
impl ModelClient for AnthropicClient {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        if self.stream {
            return self.stream(request, &Discard).await;
        }
        let body = Self::body(request);
        self.retry.run(|| self.send(&body)).await
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        sink: &dyn DeltaSink,
    ) -> Result<ModelResponse, ModelError> {
        let body = MessagesRequest {
            stream: Some(true),
            ..Self::body(request)
        };
        let delivered = AtomicBool::new(false);
        self.retry
            .run_while(
                || !delivered.load(Ordering::SeqCst),
                || self.send_streamed(&body, request, sink, &delivered),
            )
            .await
    }
}
