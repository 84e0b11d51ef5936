use std::time::Duration;

/// What kind of failure a provider call had; decides retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// 429: too many requests or tokens.
    RateLimited,
    /// 529/503: the provider is overloaded.
    Overloaded,
    /// Other 5xx.
    Server,
    /// No answer in time.
    Timeout,
    /// The connection failed.
    Transport,
    /// 401/403: bad or missing credentials.
    Auth,
    /// 400-class: the request itself is wrong.
    BadRequest,
    /// The prompt does not fit the model's window.
    ContextOverflow,
    /// The provider answered something we cannot decode.
    InvalidResponse,
    /// The answer grew past the transport's `max_response_bytes`: a
    /// runaway generation or a broken proxy, which another attempt would
    /// only pay for again.
    ResponseTooLarge,
    /// A provider or model this build does not know.
    Unsupported,
    /// The fleet's rate limiter has no capacity for the call within what
    /// its caller may wait in place; `retry_after` says when its slot
    /// comes. Not retried by the transport: the step is deferred.
    AwaitingCapacity,
}

/// A failed model call, with the provider's own words kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind:?}{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
pub struct ModelError {
    /// The class of failure.
    pub kind: ErrorKind,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
    /// How long the provider asked us to wait.
    pub retry_after: Option<Duration>,
    /// The provider's message.
    pub message: String,
}

impl ModelError {
    /// An error of `kind` with a message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ModelError {
            kind,
            status: None,
            retry_after: None,
            message: message.into(),
        }
    }

    /// Whether another attempt can succeed.
    pub fn is_retryable(&self) -> bool {
        match self.kind {
            ErrorKind::RateLimited
            | ErrorKind::Overloaded
            | ErrorKind::Server
            | ErrorKind::Timeout
            | ErrorKind::Transport
            | ErrorKind::AwaitingCapacity => true,
            ErrorKind::Auth
            | ErrorKind::BadRequest
            | ErrorKind::ContextOverflow
            | ErrorKind::InvalidResponse
            | ErrorKind::ResponseTooLarge
            | ErrorKind::Unsupported => false,
        }
    }
}
