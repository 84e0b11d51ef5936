//! [`GeminiClient`]: Gemini `generateContent` over reqwest.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::HeaderValue;

use super::convert::{from_wire, to_wire, turn_of};
use super::stream::ChunkReader;
use super::wire::{GenerateContentRequest, GenerateContentResponse};
use crate::http::{DEFAULT_TIMEOUT, http_client, json, secret_header, send};
use crate::retry::RetryPolicy;
use crate::sse::for_each_event;
use crate::stream::{Assembler, DeltaSink, Discard};
use crate::{ModelClient, ModelError, ModelRequest, ModelResponse};

/// Settings of one [`GeminiClient`].
#[derive(Clone)]
pub struct GeminiConfig {
    /// API root: `https://generativelanguage.googleapis.com`, with or
    /// without the version (`/v1beta` is added when none is given).
    pub base_url: String,
    /// Sent as `x-goog-api-key`, when set.
    pub api_key: Option<String>,
    /// Limit of one HTTP attempt.
    pub timeout: Duration,
    /// Retries of transient failures.
    pub retry: RetryPolicy,
    /// Whether `complete` streams too.
    pub stream: bool,
}

impl GeminiConfig {
    /// Defaults for `base_url`: no key, [`DEFAULT_TIMEOUT`], the default
    /// retry policy, no streaming.
    pub fn new(base_url: impl Into<String>) -> Self {
        GeminiConfig {
            base_url: base_url.into(),
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
            retry: RetryPolicy::default(),
            stream: false,
        }
    }
}

// Hand-written so the key never reaches a log line.
impl fmt::Debug for GeminiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeminiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("stream", &self.stream)
            .finish()
    }
}

/// A Gemini API client.
pub struct GeminiClient {
    http: reqwest::Client,
    root: String,
    api_key: Option<HeaderValue>,
    timeout: Duration,
    retry: RetryPolicy,
    stream: bool,
}

impl fmt::Debug for GeminiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeminiClient")
            .field("root", &self.root)
            .field("authorized", &self.api_key.is_some())
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("stream", &self.stream)
            .finish()
    }
}

impl GeminiClient {
    /// A client with its own connection pool.
    pub fn new(config: GeminiConfig) -> Result<Self, ModelError> {
        Self::with_http(http_client()?, config)
    }

    /// A client sharing `http`'s connection pool.
    pub fn with_http(http: reqwest::Client, config: GeminiConfig) -> Result<Self, ModelError> {
        let root = config.base_url.trim_end_matches('/');
        let versioned = root
            .rsplit('/')
            .next()
            .is_some_and(|last| last.starts_with("v1"));
        Ok(GeminiClient {
            http,
            root: if versioned {
                root.to_owned()
            } else {
                format!("{root}/v1beta")
            },
            api_key: config.api_key.as_deref().map(secret_header).transpose()?,
            timeout: config.timeout,
            retry: config.retry,
            stream: config.stream,
        })
    }

    /// The URL a call of `method` (`generateContent`,
    /// `streamGenerateContent?alt=sse`) on `model` goes to.
    pub fn endpoint(&self, model: &str, method: &str) -> String {
        let model = model.trim_start_matches("models/");
        format!("{}/models/{model}:{method}", self.root)
    }

    fn post(&self, url: String, body: &GenerateContentRequest) -> reqwest::RequestBuilder {
        let mut request = self.http.post(url).timeout(self.timeout).json(body);
        if let Some(key) = &self.api_key {
            request = request.header("x-goog-api-key", key.clone());
        }
        request
    }

    async fn send(
        &self,
        body: &GenerateContentRequest,
        request: &ModelRequest,
    ) -> Result<ModelResponse, ModelError> {
        let url = self.endpoint(&request.model, "generateContent");
        let response = send(self.post(url, body)).await?;
        let decoded = json::<GenerateContentResponse>(response).await?;
        Ok(from_wire(decoded, turn_of(request)))
    }

    async fn send_streamed(
        &self,
        body: &GenerateContentRequest,
        request: &ModelRequest,
        sink: &dyn DeltaSink,
        delivered: &AtomicBool,
    ) -> Result<ModelResponse, ModelError> {
        let url = self.endpoint(&request.model, "streamGenerateContent?alt=sse");
        let response = send(self.post(url, body)).await?;
        let mut out = Assembler::new(sink, request.purpose, delivered);
        let mut reader = ChunkReader::new(turn_of(request));
        for_each_event(response, |event| reader.apply(&event.data, &mut out)).await?;
        reader.finish(out)
    }
}

#[async_trait]
impl ModelClient for GeminiClient {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        if self.stream {
            return self.stream(request, &Discard).await;
        }
        let body = to_wire(request);
        self.retry.run(|| self.send(&body, request)).await
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        sink: &dyn DeltaSink,
    ) -> Result<ModelResponse, ModelError> {
        let body = to_wire(request);
        let delivered = AtomicBool::new(false);
        self.retry
            .run_while(
                || !delivered.load(Ordering::SeqCst),
                || self.send_streamed(&body, request, sink, &delivered),
            )
            .await
    }
}
