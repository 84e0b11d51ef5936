//! [`HttpClient`]: the one HTTP model client, generic over the provider's
//! [`WireProtocol`].
//!
//! Retries, error classification (with `Retry-After`), key redaction and
//! the assembly of streamed answers happen here once, for every protocol.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::body::{BodyLimits, BoundedBody};
use super::config::TransportConfig;
use super::http::{http_client, json, secret_header, send};
use super::protocol::{StreamDecoder, WireProtocol};
use crate::retry::RetryPolicy;
use crate::sse::for_each_event;
use crate::stream::{Assembler, DeltaSink, Discard};
use crate::{ModelClient, ModelError, ModelRequest, ModelResponse};

/// A model client speaking `P` over reqwest.
pub struct HttpClient<P> {
    protocol: P,
    http: reqwest::Client,
    base_url: String,
    /// Authentication (marked sensitive) and the protocol's fixed headers.
    headers: HeaderMap,
    authorized: bool,
    timeout: Duration,
    body: BodyLimits,
    retry: RetryPolicy,
    stream: bool,
}

// Hand-written so the key never reaches a log line.
impl<P: fmt::Debug> fmt::Debug for HttpClient<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("protocol", &self.protocol)
            .field("base_url", &self.base_url)
            .field("authorized", &self.authorized)
            .field("timeout", &self.timeout)
            .field("body", &self.body)
            .field("retry", &self.retry)
            .field("stream", &self.stream)
            .finish()
    }
}

impl<P: WireProtocol> HttpClient<P> {
    /// A client with its own connection pool.
    pub fn new(protocol: P, config: TransportConfig) -> Result<Self, ModelError> {
        Self::with_http(http_client()?, protocol, config)
    }

    /// A client sharing `http`'s connection pool; fails when the key
    /// cannot be sent in a header.
    pub fn with_http(
        http: reqwest::Client,
        protocol: P,
        config: TransportConfig,
    ) -> Result<Self, ModelError> {
        let mut headers = HeaderMap::new();
        for (name, value) in protocol.fixed_headers() {
            headers.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        if let Some(key) = config.api_key.as_deref() {
            let (name, value) = protocol.auth_header(key);
            headers.insert(name, secret_header(&value)?);
        }
        Ok(HttpClient {
            protocol,
            http,
            base_url: config.base_url.trim_end_matches('/').to_owned(),
            headers,
            authorized: config.api_key.is_some(),
            timeout: config.timeout,
            body: BodyLimits {
                idle_timeout: config.idle_timeout,
                max_bytes: config.max_response_bytes,
            },
            retry: config.retry,
            stream: config.stream,
        })
    }

    /// The URL a non-streamed call of `model` goes to.
    pub fn endpoint(&self, model: &str) -> String {
        self.protocol.endpoint(&self.base_url, model, false)
    }

    /// Sends one HTTP attempt; a non-2xx answer comes back classified.
    ///
    /// Every attempt of every provider passes here, below the retry loop:
    /// this is where a fleet-wide rate limiter acquires its permit (per
    /// provider and model), so retries are counted and no protocol can
    /// bypass it.
    async fn attempt(
        &self,
        model: &str,
        stream: bool,
        body: &P::Request,
    ) -> Result<reqwest::Response, ModelError> {
        let url = self.protocol.endpoint(&self.base_url, model, stream);
        let request = self
            .http
            .post(url)
            .timeout(self.timeout)
            .headers(self.headers.clone())
            .json(body);
        send(request, self.body).await
    }

    async fn call(
        &self,
        body: &P::Request,
        request: &ModelRequest,
    ) -> Result<ModelResponse, ModelError> {
        let response = self.attempt(&request.model, false, body).await?;
        let decoded: P::Response = json(response, self.body).await?;
        self.protocol.response(decoded, request)
    }

    async fn call_streamed(
        &self,
        body: &P::Request,
        request: &ModelRequest,
        sink: &dyn DeltaSink,
        delivered: &AtomicBool,
    ) -> Result<ModelResponse, ModelError> {
        let response = self.attempt(&request.model, true, body).await?;
        let mut out = Assembler::new(sink, request.purpose, delivered);
        let mut decoder = self.protocol.decoder(request);
        let body = BoundedBody::new(response, self.body)?;
        for_each_event(body, |event| decoder.apply(&event.data, &mut out)).await?;
        decoder.finish(out)
    }
}

#[async_trait]
impl<P: WireProtocol> ModelClient for HttpClient<P> {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        if self.stream {
            // Nobody sees discarded deltas, so a stream cut after some of
            // them is retried whole, as a cut non-streamed answer is.
            let body = self.protocol.request(request, true);
            let unseen = AtomicBool::new(false);
            return self
                .retry
                .run(|| self.call_streamed(&body, request, &Discard, &unseen))
                .await;
        }
        let body = self.protocol.request(request, false);
        self.retry.run(|| self.call(&body, request)).await
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        sink: &dyn DeltaSink,
    ) -> Result<ModelResponse, ModelError> {
        let body = self.protocol.request(request, true);
        let delivered = AtomicBool::new(false);
        self.retry
            .run_while(
                || !delivered.load(Ordering::SeqCst),
                || self.call_streamed(&body, request, sink, &delivered),
            )
            .await
    }
}

/// An [`HttpClient`] of any protocol, as the registry holds it: one type
/// for diagnostics (where calls go, a key-free `Debug`).
pub trait HttpModel: ModelClient + fmt::Debug {
    /// The URL a non-streamed call of `model` goes to.
    fn endpoint(&self, model: &str) -> String;
}

impl<P: WireProtocol> HttpModel for HttpClient<P> {
    fn endpoint(&self, model: &str) -> String {
        HttpClient::endpoint(self, model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anthropic::{API_VERSION, Messages};
    use pretty_assertions::assert_eq;

    #[test]
    fn the_key_goes_in_a_sensitive_header_next_to_the_fixed_ones() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let config = TransportConfig {
            api_key: Some("sk-ant-secret".into()),
            ..TransportConfig::new("https://api.anthropic.com/")
        };
        let client = HttpClient::new(Messages, config).unwrap();
        assert_eq!(client.headers["anthropic-version"], API_VERSION);
        assert!(client.headers["x-api-key"].is_sensitive());
        assert_eq!(
            client.endpoint("claude-sonnet-4-5"),
            "https://api.anthropic.com/v1/messages"
        );
        let shown = format!("{client:?}");
        assert!(!shown.contains("sk-ant-secret"), "{shown}");
        assert!(shown.contains("authorized: true"), "{shown}");
    }

    #[test]
    fn a_key_unfit_for_a_header_is_refused() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let config = TransportConfig {
            api_key: Some("bad\nkey".into()),
            ..TransportConfig::new("https://api.anthropic.com")
        };
        let error = HttpClient::new(Messages, config).unwrap_err();
        assert_eq!(error.kind, crate::ErrorKind::Auth);
    }
}
