//! Turns provider failures into [`ModelError`]s.
//!
//! Every HTTP client (OpenAI, Anthropic, Gemini) and the replay client
//! classify through here, so a scripted 429 is handled exactly like a real
//! one. The three providers' error bodies all carry `error.message`, which
//! becomes the error's message.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ErrorKind, ModelError};

/// An error answer: `{"error": {...}}`, OpenAI's wire form of the shape
/// all three providers share (re-exported in [`crate::openai::wire`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// The error of an [`ErrorBody`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// What went wrong, in the provider's words.
    #[serde(default)]
    pub message: String,
    /// Error class, e.g. `invalid_request_error`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// A string code such as `context_length_exceeded`; some providers
    /// send numbers, so it stays JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<Value>,
}

/// Phrases providers use when the prompt does not fit the window; matched
/// case-insensitively against the whole body because some put it in
/// `code` and others only in `message`.
const CONTEXT_OVERFLOW_MARKERS: &[&str] = &[
    "context_length_exceeded",
    "maximum context length",
    "exceeds the context window",
    "context window exceeded",
    "prompt is too long",
    "input tokens exceed",
    // Anthropic, when the prompt plus `max_tokens` do not fit.
    "exceed context limit",
    // Gemini: "The input token count (N) exceeds the maximum number of
    // tokens allowed (M)."
    "exceeds the maximum number of tokens",
];

/// Non-JSON bodies (HTML error pages, proxies) are cut to this many
/// characters in the error message.
const MAX_RAW_BODY_CHARS: usize = 500;

/// Classifies an error answer from its status and body.
pub fn classify_status(status: u16, body: &str, retry_after: Option<Duration>) -> ModelError {
    let lower = body.to_lowercase();
    let overflow = CONTEXT_OVERFLOW_MARKERS
        .iter()
        .any(|marker| lower.contains(marker));
    let kind = match status {
        400 | 413 | 422 if overflow => ErrorKind::ContextOverflow,
        429 => ErrorKind::RateLimited,
        503 | 529 => ErrorKind::Overloaded,
        500..=599 => ErrorKind::Server,
        401 | 403 => ErrorKind::Auth,
        408 => ErrorKind::Timeout,
        _ => ErrorKind::BadRequest,
    };
    ModelError {
        kind,
        status: Some(status),
        retry_after,
        message: error_message(body),
    }
}

/// Classifies an error reported inside a stream that had started with 200
/// (Anthropic's `error` event, an OpenAI or Gemini error chunk), by the
/// provider's error type (`overloaded_error`, `RESOURCE_EXHAUSTED`, ...).
pub fn classify_stream_error(kind: &str, message: &str) -> ModelError {
    let lower = message.to_lowercase();
    let kind = match kind.to_ascii_lowercase().as_str() {
        _ if CONTEXT_OVERFLOW_MARKERS.iter().any(|m| lower.contains(m)) => {
            ErrorKind::ContextOverflow
        }
        "overloaded_error" | "unavailable" => ErrorKind::Overloaded,
        "rate_limit_error" | "resource_exhausted" | "rate_limit_exceeded" => ErrorKind::RateLimited,
        "authentication_error" | "permission_error" | "unauthenticated" | "permission_denied" => {
            ErrorKind::Auth
        }
        "invalid_request_error"
        | "invalid_argument"
        | "not_found_error"
        | "not_found"
        | "request_too_large"
        | "failed_precondition" => ErrorKind::BadRequest,
        "deadline_exceeded" | "timeout_error" => ErrorKind::Timeout,
        _ => ErrorKind::Server,
    };
    ModelError::new(kind, message)
}

/// The provider's own message when the body is an error body of the
/// `{"error": {"message": ...}}` shape the three protocols share, else the
/// start of the raw body.
fn error_message(body: &str) -> String {
    match serde_json::from_str::<ErrorBody>(body) {
        Ok(parsed) if !parsed.error.message.is_empty() => parsed.error.message,
        _ => {
            let trimmed = body.trim();
            if trimmed.is_empty() {
                "(empty body)".to_owned()
            } else {
                trimmed.chars().take(MAX_RAW_BODY_CHARS).collect()
            }
        }
    }
}

/// Classifies a failure of the HTTP exchange itself.
pub fn classify_transport(error: &reqwest::Error) -> ModelError {
    let kind = if error.is_timeout() {
        ErrorKind::Timeout
    } else if error.is_decode() {
        ErrorKind::InvalidResponse
    } else if error.is_builder() {
        ErrorKind::BadRequest
    } else {
        ErrorKind::Transport
    };
    // reqwest's Display names the URL but never headers, so the API key
    // cannot leak through it.
    ModelError::new(kind, error_chain(error))
}

/// Classifies a failure while reading an answer's body. reqwest reports
/// every body failure as a decode error, but reading chunks decodes
/// nothing: the connection broke or the stream was reset mid-answer
/// (over HTTP/2, a `GOAWAY` from a proxy cuts every answer on the
/// connection), which another attempt can get past.
pub fn classify_body_read(error: &reqwest::Error) -> ModelError {
    let kind = if error.is_timeout() {
        ErrorKind::Timeout
    } else {
        ErrorKind::Transport
    };
    ModelError::new(kind, error_chain(error))
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// Parses a `Retry-After` value: delay seconds, or an HTTP date (a date in
/// the past means "now").
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let at = SystemTime::from(date);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn statuses_map_to_kinds() {
        let cases = [
            (429, ErrorKind::RateLimited),
            (503, ErrorKind::Overloaded),
            (529, ErrorKind::Overloaded),
            (500, ErrorKind::Server),
            (502, ErrorKind::Server),
            (401, ErrorKind::Auth),
            (403, ErrorKind::Auth),
            (400, ErrorKind::BadRequest),
            (404, ErrorKind::BadRequest),
            (413, ErrorKind::BadRequest),
            (422, ErrorKind::BadRequest),
        ];
        for (status, kind) in cases {
            assert_eq!(classify_status(status, "{}", None).kind, kind, "{status}");
        }
    }

    #[test]
    fn context_overflow_is_recognised_in_any_wording() {
        let bodies = [
            r#"{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens."}}"#,
            "Your input exceeds the context window of this model",
            "Context window exceeded",
            r#"{"error":{"message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            "Input tokens exceed the configured limit",
        ];
        for status in [400, 413, 422] {
            for body in bodies {
                let error = classify_status(status, body, None);
                assert_eq!(error.kind, ErrorKind::ContextOverflow, "{status} {body}");
                assert!(!error.is_retryable());
            }
        }
        // The same words on a 5xx are the server's problem, not the prompt's.
        assert_eq!(
            classify_status(500, "maximum context length", None).kind,
            ErrorKind::Server
        );
    }

    #[test]
    fn message_comes_from_the_error_body_or_the_raw_text() {
        let error = classify_status(
            429,
            r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#,
            Some(Duration::from_secs(3)),
        );
        assert_eq!(
            error,
            ModelError {
                kind: ErrorKind::RateLimited,
                status: Some(429),
                retry_after: Some(Duration::from_secs(3)),
                message: "slow down".into(),
            }
        );
        assert_eq!(
            classify_status(502, "<html>bad gateway</html>", None).message,
            "<html>bad gateway</html>"
        );
        assert_eq!(classify_status(502, "", None).message, "(empty body)");
        let long = "x".repeat(2000);
        assert_eq!(
            classify_status(502, &long, None).message.len(),
            MAX_RAW_BODY_CHARS
        );
    }

    #[test]
    fn provider_specific_bodies_keep_their_message() {
        let anthropic =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let error = classify_status(529, anthropic, None);
        assert_eq!(
            (error.kind, error.message.as_str()),
            (ErrorKind::Overloaded, "Overloaded")
        );
        let gemini = r#"{"error":{"code":400,"message":"The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#;
        assert_eq!(
            classify_status(400, gemini, None).kind,
            ErrorKind::ContextOverflow
        );
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 197000 + 64000 > 200000"}}"#;
        assert_eq!(
            classify_status(400, anthropic, None).kind,
            ErrorKind::ContextOverflow
        );
    }

    #[test]
    fn stream_errors_classify_by_type() {
        let cases = [
            ("overloaded_error", "Overloaded", ErrorKind::Overloaded),
            ("UNAVAILABLE", "try later", ErrorKind::Overloaded),
            ("rate_limit_error", "slow", ErrorKind::RateLimited),
            ("RESOURCE_EXHAUSTED", "quota", ErrorKind::RateLimited),
            ("authentication_error", "bad key", ErrorKind::Auth),
            ("invalid_request_error", "bad", ErrorKind::BadRequest),
            (
                "invalid_request_error",
                "prompt is too long",
                ErrorKind::ContextOverflow,
            ),
            ("api_error", "internal", ErrorKind::Server),
        ];
        for (kind, message, expected) in cases {
            let error = classify_stream_error(kind, message);
            assert_eq!(
                (error.kind, error.message.as_str()),
                (expected, message),
                "{kind}"
            );
        }
    }

    #[test]
    fn retry_after_accepts_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_470); // 07:27:50 GMT
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after(" 1.5 ", now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }
}
