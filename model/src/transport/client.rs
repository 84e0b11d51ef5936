//! [`HttpClient`]: the one HTTP model client, generic over the provider's
//! [`WireProtocol`].
//!
//! Retries, error classification (with `Retry-After`), key redaction and
//! the assembly of streamed answers happen here once, for every protocol.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;

use super::body::{BodyLimits, BoundedBody};
use super::config::TransportConfig;
use super::http::{checked, exchange, http_client, json, secret_header, send};
use super::protocol::{StreamDecoder, WireProtocol};
use super::shared_parts::{Kept, RequestBody, SharedParts};
use super::sse::for_each_event;
use crate::ratelimit::{Cost, LimitKey, RateGate, account_of};
use crate::retry::RetryPolicy;
use crate::stream::{Assembler, DeltaSink, Discard};
use crate::{ErrorKind, ModelClient, ModelError, ModelRequest, ModelResponse};

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
    /// The rate limiter and this client's account in it.
    rate: Option<Rate>,
    /// The system prompts and tool lists its requests share.
    parts: SharedParts,
}

/// A client's place in the rate limiter.
struct Rate {
    gate: RateGate,
    provider: String,
    account: String,
}

/// What an admitted attempt took from the limiter, to settle once its
/// usage is known.
type Admitted = Option<(LimitKey, Cost)>;

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
            .field("rate_limited", &self.rate.is_some())
            .finish()
    }
}

impl<P: WireProtocol> HttpClient<P> {
    /// A client with its own connection pool.
    pub fn new(protocol: P, config: TransportConfig) -> Result<Self, ModelError> {
        Self::with_http(http_client(false)?, protocol, config)
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
        let rate = config.rate_gate.map(|gate| Rate {
            gate,
            provider: config.provider.clone(),
            account: account_of(config.api_key.as_deref(), &config.base_url),
        });
        Ok(HttpClient {
            rate,
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
            parts: SharedParts::default(),
        })
    }

    /// The URL a non-streamed call of `model` goes to.
    pub fn endpoint(&self, model: &str) -> String {
        self.protocol.endpoint(&self.base_url, model, false)
    }

    /// Sends one HTTP attempt; a non-2xx answer comes back classified.
    ///
    /// Every attempt of every provider passes here, below the retry loop:
    /// the fleet-wide rate limiter admits it first (per provider account
    /// and model), so retries are counted and no protocol can bypass it,
    /// and every answer's rate-limit headers (a 429's above all) correct
    /// the limiter's view for the whole fleet.
    async fn attempt(
        &self,
        request: &ModelRequest,
        stream: bool,
        body: &RequestBody,
    ) -> Result<(reqwest::Response, Admitted), ModelError> {
        let admitted = match &self.rate {
            Some(rate) => {
                let key = LimitKey {
                    provider: rate.provider.clone(),
                    account: rate.account.clone(),
                    model: request.model.clone(),
                };
                let cost = rate.gate.admit(&key, request).await?;
                Some((key, cost))
            }
            None => None,
        };
        let url = self
            .protocol
            .endpoint(&self.base_url, &request.model, stream);
        let sent = self
            .http
            .post(url)
            .timeout(self.timeout)
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_reqwest());
        let answered = match exchange(sent).await {
            Ok(response) => {
                if let (Some(rate), Some((key, _))) = (&self.rate, &admitted) {
                    rate.gate
                        .observe(key, response.status().as_u16(), response.headers())
                        .await;
                }
                checked(response, self.body).await
            }
            Err(error) => Err(error),
        };
        match answered {
            Ok(response) => Ok((response, admitted)),
            Err(error) => {
                self.settle(admitted, None);
                Err(error)
            }
        }
    }

    /// A request's body, written once for all its attempts: the wire form
    /// (a second copy of the conversation) is dropped as soon as it is
    /// written, its tools were written for the agent's first call, and the
    /// parts the agent's other requests repeat are theirs.
    fn encoded(&self, request: &ModelRequest, stream: bool) -> Result<RequestBody, ModelError> {
        let tools = self.parts.tools(request, |probe| {
            written(&self.protocol.request(probe, stream, None))
        });
        let wire = self
            .protocol
            .request(request, stream, tools.as_deref().map(Kept::raw));
        Ok(self.parts.split(written(&wire)?, request, tools.as_deref()))
    }

    /// Corrects the limiter's estimate of an admitted attempt with its
    /// reported usage (`None`: it failed), on a task of its own: the
    /// answer does not wait for the limiter's bookkeeping (a round trip to
    /// Redis in a fleet), which lands a moment later.
    fn settle(&self, admitted: Admitted, usage: Option<deepfleet_proto::Usage>) {
        if let (Some(rate), Some((key, cost))) = (&self.rate, admitted) {
            rate.gate.learn(&key, usage.as_ref());
            // A call that took nothing (nothing meters its account) has
            // nothing to correct.
            if !cost.is_none() {
                let gate = rate.gate.clone();
                tokio::spawn(async move { gate.settle(&key, cost, usage.as_ref()).await });
            }
        }
    }

    async fn call(
        &self,
        body: &RequestBody,
        request: &ModelRequest,
    ) -> Result<ModelResponse, ModelError> {
        let (response, admitted) = self.attempt(request, false, body).await?;
        let answered = match json::<P::Response>(response, self.body).await {
            Ok(decoded) => self.protocol.response(decoded, request),
            Err(error) => Err(error),
        };
        self.settle(admitted, answered.as_ref().ok().map(|r| r.usage));
        answered
    }

    async fn call_streamed(
        &self,
        body: &RequestBody,
        request: &ModelRequest,
        sink: &dyn DeltaSink,
        delivered: &AtomicBool,
    ) -> Result<ModelResponse, ModelError> {
        let (response, admitted) = self.attempt(request, true, body).await?;
        let answered = self.assemble(response, request, sink, delivered).await;
        self.settle(admitted, answered.as_ref().ok().map(|r| r.usage));
        answered
    }

    async fn assemble(
        &self,
        response: reqwest::Response,
        request: &ModelRequest,
        sink: &dyn DeltaSink,
        delivered: &AtomicBool,
    ) -> Result<ModelResponse, ModelError> {
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
            let body = self.encoded(request, true)?;
            let unseen = AtomicBool::new(false);
            return self
                .retry
                .run(|| self.call_streamed(&body, request, &Discard, &unseen))
                .await;
        }
        let body = self.encoded(request, false)?;
        self.retry.run(|| self.call(&body, request)).await
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        sink: &dyn DeltaSink,
    ) -> Result<ModelResponse, ModelError> {
        let body = self.encoded(request, true)?;
        let delivered = AtomicBool::new(false);
        self.retry
            .run_while(
                || !delivered.load(Ordering::SeqCst),
                || self.call_streamed(&body, request, sink, &delivered),
            )
            .await
    }

    async fn check_access(&self) -> Result<(), ModelError> {
        let request = self
            .http
            .get(self.protocol.models_endpoint(&self.base_url))
            .timeout(self.timeout)
            .headers(self.headers.clone());
        send(request, self.body).await.map(drop)
    }
}

/// A request's JSON body.
fn written(wire: &impl Serialize) -> Result<Vec<u8>, ModelError> {
    serde_json::to_vec(wire).map_err(|e| {
        ModelError::new(
            ErrorKind::BadRequest,
            format!("cannot encode the request: {e}"),
        )
    })
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
