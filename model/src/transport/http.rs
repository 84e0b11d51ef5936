//! The reqwest plumbing under [`super::HttpClient`]: building the reqwest
//! client, marking secret headers, sending a request and turning a failed
//! answer into a classified [`ModelError`], and decoding a JSON body, each
//! body read within its [`BodyLimits`].

use std::time::SystemTime;

use reqwest::header::{HeaderValue, RETRY_AFTER};
use serde::de::DeserializeOwned;

use super::body::{BodyLimits, BoundedBody};
use crate::classify::{classify_status, classify_transport, parse_retry_after};
use crate::{ErrorKind, ModelError};

/// Most bytes of an error answer read for its message.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// How many bytes of answers one HTTP/2 connection may send before they
/// are read. Thousands of calls answered together on one connection with
/// hyper's 5 MiB get it back in slivers; the provider then sends frames of
/// a few bytes, which h2 takes for a small-frame flood and closes the
/// connection on (`too_many_data_frames`), failing every call on it. A
/// credit, not a buffer: each call's answer is read as it comes, within
/// `max_response_bytes`.
pub const HTTP2_CONNECTION_WINDOW: u32 = 256 * 1024 * 1024;

/// Builds a reqwest client, refusing instead of panicking when the process
/// installed no rustls crypto provider (reqwest is built without one).
///
/// With `http2_prior_knowledge` it speaks HTTP/2 from the first byte, also
/// without TLS (h2c): every call to a host then shares one connection, as
/// calls to an `https` provider that offers HTTP/2 do anyway. Over
/// HTTP/1.1 each call in flight holds a connection (a socket, a
/// descriptor and tens of KiB of connection state) for the whole wait.
pub(crate) fn http_client(http2_prior_knowledge: bool) -> Result<reqwest::Client, ModelError> {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        return Err(ModelError::new(
            ErrorKind::Unsupported,
            "no rustls crypto provider is installed; the process must call \
             rustls::crypto::ring::default_provider().install_default() at start",
        ));
    }
    let builder =
        reqwest::Client::builder().http2_initial_connection_window_size(HTTP2_CONNECTION_WINDOW);
    let builder = if http2_prior_knowledge {
        builder.http2_prior_knowledge()
    } else {
        builder
    };
    builder.build().map_err(|e| classify_transport(&e))
}

/// A header carrying a secret, marked sensitive so reqwest and `http` never
/// show it in Debug output.
pub(crate) fn secret_header(value: &str) -> Result<HeaderValue, ModelError> {
    let mut header = HeaderValue::from_str(value).map_err(|_| {
        ModelError::new(
            ErrorKind::Auth,
            "the API key contains characters not allowed in a header",
        )
    })?;
    header.set_sensitive(true);
    Ok(header)
}

/// Sends `request`; a non-2xx answer becomes an error classified from its
/// status, (the start of) its body and `Retry-After`.
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
    limits: BodyLimits,
) -> Result<reqwest::Response, ModelError> {
    checked(exchange(request).await?, limits).await
}

/// Sends `request`, whatever the answer's status.
pub(crate) async fn exchange(
    request: reqwest::RequestBuilder,
) -> Result<reqwest::Response, ModelError> {
    request.send().await.map_err(|e| classify_transport(&e))
}

/// `response` when it is a 2xx, else its error classified from its
/// status, (the start of) its body and `Retry-After`.
pub(crate) async fn checked(
    response: reqwest::Response,
    limits: BodyLimits,
) -> Result<reqwest::Response, ModelError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| parse_retry_after(value, SystemTime::now()));
    let limits = BodyLimits {
        max_bytes: u64::MAX,
        ..limits
    };
    let body = match BoundedBody::new(response, limits) {
        Ok(body) => body.prefix(MAX_ERROR_BODY_BYTES).await,
        Err(_) => Vec::new(),
    };
    let text = String::from_utf8_lossy(&body);
    Err(classify_status(status.as_u16(), &text, retry_after))
}

/// Reads and decodes a successful JSON answer.
pub(crate) async fn json<T: DeserializeOwned>(
    response: reqwest::Response,
    limits: BodyLimits,
) -> Result<T, ModelError> {
    let body = BoundedBody::new(response, limits)?.bytes().await?;
    serde_json::from_slice(&body).map_err(|e| {
        ModelError::new(
            ErrorKind::InvalidResponse,
            format!("cannot decode the completion: {e}"),
        )
    })
}
