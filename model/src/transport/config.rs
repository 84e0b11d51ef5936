//! [`TransportConfig`]: how one provider is reached, whatever protocol it
//! speaks.

use std::fmt;
use std::time::Duration;

use crate::ratelimit::RateGate;
use crate::retry::RetryPolicy;

/// Request timeout when none is configured: long completions of large
/// models take minutes.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Longest wait for the next bytes of an answer whose headers came: a
/// stalled stream or body fails this long after its last byte instead of
/// at the request timeout. Long enough for a reasoning model that thinks
/// before its first token.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Largest answer body read: far above any real completion (a 128k-token
/// answer is under 1 MiB of JSON), far below what hurts a worker.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;

/// Settings of one [`super::HttpClient`].
#[derive(Clone)]
pub struct TransportConfig {
    /// API root, e.g. `https://api.openai.com/v1`; the protocol appends
    /// its own path (and adds a missing version segment where it has one).
    pub base_url: String,
    /// Sent in the protocol's authentication header, when set.
    pub api_key: Option<String>,
    /// Limit of one HTTP attempt, from connecting to the body's last
    /// byte, streamed or not.
    pub timeout: Duration,
    /// Longest gap between two chunks of an answer's body.
    pub idle_timeout: Duration,
    /// Most bytes of one answer's body (the `ResponseTooLarge` cap).
    pub max_response_bytes: u64,
    /// Retries of transient failures.
    pub retry: RetryPolicy,
    /// Whether `complete` streams too (long completions then never sit
    /// idle on a proxy's timeout).
    pub stream: bool,
    /// The provider's name in the configuration: the rate limiter's
    /// limits and keys are per provider.
    pub provider: String,
    /// The fleet's rate limiter, when calls pass one.
    pub rate_gate: Option<RateGate>,
}

impl TransportConfig {
    /// Defaults for `base_url`: no key, [`DEFAULT_TIMEOUT`],
    /// [`DEFAULT_IDLE_TIMEOUT`], [`DEFAULT_MAX_RESPONSE_BYTES`], the
    /// default retry policy, no streaming.
    pub fn new(base_url: impl Into<String>) -> Self {
        TransportConfig {
            base_url: base_url.into(),
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            retry: RetryPolicy::default(),
            stream: false,
            provider: String::new(),
            rate_gate: None,
        }
    }
}

// Hand-written so the key never reaches a log line.
impl fmt::Debug for TransportConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransportConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("retry", &self.retry)
            .field("stream", &self.stream)
            .field("provider", &self.provider)
            .field("rate_gate", &self.rate_gate)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_the_key() {
        let config = TransportConfig {
            api_key: Some("sk-secret".into()),
            ..TransportConfig::new("http://host.invalid/v1")
        };
        let shown = format!("{config:?}");
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}
