//! [`OpenAiClient`]: Chat Completions over reqwest, for OpenAI and every
//! OpenAI-compatible provider.

use std::fmt;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, HeaderValue, RETRY_AFTER};

use super::classify::{classify_status, classify_transport, parse_retry_after};
use super::convert::{from_wire, to_wire};
use super::wire::{ChatRequest, ChatResponse};
use crate::retry::RetryPolicy;
use crate::{ErrorKind, ModelClient, ModelError, ModelRequest, ModelResponse};

/// Request timeout when none is configured: long completions of large
/// models take minutes.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

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
}

impl OpenAiConfig {
    /// Defaults for `base_url`: no key, [`DEFAULT_TIMEOUT`], the default
    /// retry policy.
    pub fn new(base_url: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
            retry: RetryPolicy::default(),
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
}

impl fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("endpoint", &self.endpoint)
            .field("authorized", &self.authorization.is_some())
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
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
        let authorization = match &config.api_key {
            Some(key) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                    ModelError::new(
                        ErrorKind::Auth,
                        "the API key contains characters not allowed in a header",
                    )
                })?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        Ok(OpenAiClient {
            http,
            endpoint: format!("{}/chat/completions", config.base_url.trim_end_matches('/')),
            authorization,
            timeout: config.timeout,
            retry: config.retry,
        })
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    async fn send(&self, body: &ChatRequest) -> Result<ModelResponse, ModelError> {
        let mut request = self
            .http
            .post(&self.endpoint)
            .timeout(self.timeout)
            .json(body);
        if let Some(authorization) = &self.authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        let response = request.send().await.map_err(|e| classify_transport(&e))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| parse_retry_after(value, SystemTime::now()));
        let text = response.text().await.map_err(|e| classify_transport(&e))?;
        if !status.is_success() {
            return Err(classify_status(status.as_u16(), &text, retry_after));
        }
        let decoded: ChatResponse = serde_json::from_str(&text).map_err(|e| {
            ModelError::new(
                ErrorKind::InvalidResponse,
                format!("cannot decode the completion: {e}"),
            )
        })?;
        from_wire(decoded)
    }
}

/// Builds a reqwest client, refusing instead of panicking when the process
/// installed no rustls crypto provider (reqwest is built without one).
pub(crate) fn http_client() -> Result<reqwest::Client, ModelError> {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        return Err(ModelError::new(
            ErrorKind::Unsupported,
            "no rustls crypto provider is installed; the process must call \
             rustls::crypto::ring::default_provider().install_default() at start",
        ));
    }
    reqwest::Client::builder()
        .build()
        .map_err(|e| classify_transport(&e))
}

#[async_trait]
impl ModelClient for OpenAiClient {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let body = to_wire(request);
        self.retry.run(|| self.send(&body)).await
    }
}
