//! [`TransportConfig`]: how one provider is reached, whatever protocol it
//! speaks.

use std::fmt;
use std::time::Duration;

use crate::retry::RetryPolicy;

/// Request timeout when none is configured: long completions of large
/// models take minutes.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Settings of one [`super::HttpClient`].
#[derive(Clone)]
pub struct TransportConfig {
    /// API root, e.g. `https://api.openai.com/v1`; the protocol appends
    /// its own path (and adds a missing version segment where it has one).
    pub base_url: String,
    /// Sent in the protocol's authentication header, when set.
    pub api_key: Option<String>,
    /// Limit of one HTTP attempt.
    pub timeout: Duration,
    /// Retries of transient failures.
    pub retry: RetryPolicy,
    /// Whether `complete` streams too (long completions then never sit
    /// idle on a proxy's timeout).
    pub stream: bool,
}

impl TransportConfig {
    /// Defaults for `base_url`: no key, [`DEFAULT_TIMEOUT`], the default
    /// retry policy, no streaming.
    pub fn new(base_url: impl Into<String>) -> Self {
        TransportConfig {
            base_url: base_url.into(),
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
            retry: RetryPolicy::default(),
            stream: false,
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
            .field("retry", &self.retry)
            .field("stream", &self.stream)
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
