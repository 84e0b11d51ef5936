//! [`OpenAiClient`]: Chat Completions over reqwest, for OpenAI and every
//! OpenAI-compatible provider.

use std::fmt;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, HeaderValue};

use super::convert::{from_wire, to_wire};
use super::stream::ChunkReader;
use super::wire::{ChatRequest, ChatResponse, StreamOptions};
use crate::http::{DEFAULT_TIMEOUT, http_client, json, secret_header, send};
use crate::retry::RetryPolicy;
use crate::sse::for_each_event;
use crate::stream::{Assembler, DeltaSink, Discard};
use crate::{ModelClient, ModelError, ModelRequest, ModelResponse};

/// Settings of one [`OpenAiClient`].
#[derive(Clone)]
pub struct OpenAiConfig {
    /// API root, e.g. `https://api.openai.com/v1` (no trailing
    /// `/chat/completions`).
    pub base_url: String,
    /// Sent as `Authorization: Bearer`, when set.
    pub api_key: Option<String>,
    /// Limit of one HTTP attempt.
    pub timeout: Duration,
    /// Retries of transient failures.
    pub retry: RetryPolicy,
    /// Whether `complete` streams too (long completions then never sit
    /// idle on a proxy's timeout).
    pub stream: bool,
}

impl OpenAiConfig {
    /// Defaults for `base_url`: no key, [`DEFAULT_TIMEOUT`], the default
    /// retry policy, no streaming.
    pub fn new(base_url: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
            retry: RetryPolicy::default(),
            stream: false,
        }
    }
}

// Hand-written so the key never reaches a log line.
impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("stream", &self.stream)
            .finish()
    }
}

/// A Chat Completions client.
pub struct OpenAiClient {
    http: reqwest::Client,
    endpoint: String,
    authorization: Option<HeaderValue>,
    timeout: Duration,
    retry: RetryPolicy,
    stream: bool,
}

impl fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("endpoint", &self.endpoint)
            .field("authorized", &self.authorization.is_some())
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("stream", &self.stream)
            .finish()
    }
}

impl OpenAiClient {
    /// A client with its own connection pool.
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        Self::with_http(http_client()?, config)
    }

    /// A client sharing `http`'s connection pool.
    pub fn with_http(http: reqwest::Client, config: OpenAiConfig) -> Result<Self, ModelError> {
        let authorization = config
            .api_key
            .as_deref()
            .map(|key| secret_header(&format!("Bearer {key}")))
            .transpose()?;
        Ok(OpenAiClient {
            http,
            endpoint: format!("{}/chat/completions", config.base_url.trim_end_matches('/')),
            authorization,
            timeout: config.timeout,
            retry: config.retry,
            stream: config.stream,
        })
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn post(&self, body: &ChatRequest) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(&self.endpoint)
            .timeout(self.timeout)
            .json(body);
        if let Some(authorization) = &self.authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        request
    }

    async fn send(&self, body: &ChatRequest) -> Result<ModelResponse, ModelError> {
        let response = send(self.post(body)).await?;
        from_wire(json::<ChatResponse>(response).await?)
    }

    async fn send_streamed(
        &self,
        body: &ChatRequest,
        request: &ModelRequest,
        sink: &dyn DeltaSink,
        delivered: &AtomicBool,
    ) -> Result<ModelResponse, ModelError> {
        let response = send(self.post(body)).await?;
        let mut out = Assembler::new(sink, request.purpose, delivered);
        let mut reader = ChunkReader::default();
        for_each_event(response, |event| reader.apply(&event.data, &mut out)).await?;
        reader.finish(out)
    }
}

#[async_trait]
impl ModelClient for OpenAiClient {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        if self.stream {
            return self.stream(request, &Discard).await;
        }
        let body = to_wire(request);
        self.retry.run(|| self.send(&body)).await
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        sink: &dyn DeltaSink,
    ) -> Result<ModelResponse, ModelError> {
        let body = ChatRequest {
            stream: Some(true),
            stream_options: Some(StreamOptions {
                include_usage: true,
            }),
            ..to_wire(request)
        };
        let delivered = AtomicBool::new(false);
        self.retry
            .run_while(
                || !delivered.load(std::sync::atomic::Ordering::SeqCst),
                || self.send_streamed(&body, request, sink, &delivered),
            )
            .await
    }
}
