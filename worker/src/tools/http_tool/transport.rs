//! Sending an HTTP tool's request: one shared client (connections are
//! reused across calls and runs), no redirects (a redirect could lead to
//! another host), a time limit per attempt, retries with backoff for
//! idempotent methods, and an answer read only up to its byte cap.

use std::sync::LazyLock;
use std::time::Duration;

use deepfleet_proto::http_tool::HttpToolSpec;
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::request::Request;

/// The first backoff after a failed attempt; it doubles each time.
const BACKOFF: Duration = Duration::from_millis(250);
/// The longest backoff.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The worker's client for HTTP tools; `None` when TLS could not start
/// (every call then says so).
static CLIENT: LazyLock<Result<reqwest::Client, String>> = LazyLock::new(|| {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())
});

/// An answer, read whole (within the cap).
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// Sends `request` for `tool` with `headers`; the error is for the model.
pub async fn send(
    tool: &HttpToolSpec,
    request: &Request,
    headers: &[(String, String)],
) -> Result<Answer, String> {
    let client = CLIENT
        .as_ref()
        .map_err(|e| format!("no HTTP client: {e}"))?;
    let headers = header_map(headers)?;
    let method =
        reqwest::Method::from_bytes(tool.method.as_str().as_bytes()).map_err(|e| e.to_string())?;
    let attempts = if tool.method.is_idempotent() {
        tool.retries + 1
    } else {
        1
    };
    let mut backoff = BACKOFF;
    let mut last = String::new();
    for attempt in 1..=attempts {
        let mut builder = client
            .request(method.clone(), request.url.clone())
            .headers(headers.clone())
            .timeout(Duration::from_secs(tool.timeout_secs));
        if let Some(body) = &request.body {
            builder = builder.json(body);
        }
        let outcome = match builder.send().await {
            Ok(response) => read_capped(response, tool.max_response_bytes).await,
            Err(e) if e.is_timeout() => Err(format!("no answer within {} s", tool.timeout_secs)),
            Err(e) => Err(format!("the request failed: {}", root_cause(&e))),
        };
        match outcome {
            Ok(answer) if !retryable(answer.status) || attempt == attempts => return Ok(answer),
            Ok(answer) => last = format!("HTTP {}", answer.status),
            Err(e) if e.starts_with("the answer is larger") => return Err(e),
            Err(e) => last = e,
        }
        if attempt < attempts {
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
    Err(if attempts > 1 {
        format!("{last} (after {attempts} attempts)")
    } else {
        last
    })
}

/// Whether an answer with `status` is worth another attempt.
fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

fn header_map(headers: &[(String, String)]) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("header name `{name}` is not valid"))?;
        // The value may be a secret: never echo it.
        let value = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header `{name}` is not a valid header value"))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// Reads `response` up to `cap` bytes; a longer body is an error, and so
/// is a connection that breaks mid-answer.
async fn read_capped(mut response: reqwest::Response, cap: u64) -> Result<Answer, String> {
    let too_large = || format!("the answer is larger than the tool's max_response_bytes ({cap})");
    if response.content_length().is_some_and(|n| n > cap) {
        return Err(too_large());
    }
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("the answer broke off: {}", root_cause(&e)))?
    {
        if (body.len() + chunk.len()) as u64 > cap {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Answer {
        status,
        content_type,
        body,
    })
}

/// The innermost cause of `e`, which says what went wrong (refused,
/// reset, DNS) where reqwest's own text only names the URL.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}
