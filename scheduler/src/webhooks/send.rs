//! One attempt: a signed POST of the body, within the configured timeout,
//! reading at most a little of the answer. No redirect is followed (a
//! receiver moved is a failed attempt, not a delivery somewhere else).

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use reqwest::header::{CONTENT_TYPE, USER_AGENT};
use url::Url;

use super::destination::{PublicOnly, check_literal};
use super::error::WebhookError;
use super::sign::{ID_HEADER, SIGNATURE_HEADER, Secret, TIMESTAMP_HEADER, signature};

/// Most bytes of a failed answer kept as the attempt's error.
const MAX_ANSWER_BYTES: usize = 512;
/// How long connecting may take, within the attempt's timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What the receiver made of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// It answered 2xx: delivered.
    Accepted(u16),
    /// It answered something else; the start of its body.
    Refused(u16, String),
    /// It could not be reached, or did not answer in time.
    Unreachable(String),
}

/// Sends deliveries.
#[derive(Clone)]
pub struct Sender {
    client: reqwest::Client,
    allow_private: bool,
}

impl Sender {
    /// A sender whose attempts take at most `timeout`, to public
    /// addresses only unless `allow_private` ([`super::destination`]).
    pub fn new(timeout: Duration, allow_private: bool) -> Result<Sender, WebhookError> {
        // reqwest is built without a TLS provider of its own; the binary
        // installs one at start. Refuse rather than panic without it.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            return Err(WebhookError::Client(
                "no rustls crypto provider is installed".into(),
            ));
        }
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(CONNECT_TIMEOUT.min(timeout))
            .redirect(reqwest::redirect::Policy::none());
        if !allow_private {
            builder = builder.dns_resolver(Arc::new(PublicOnly));
        }
        let client = builder
            .build()
            .map_err(|e| WebhookError::Client(e.to_string()))?;
        Ok(Sender {
            client,
            allow_private,
        })
    }

    /// POSTs `body` to `url` as delivery `id`, signed with `secret` now.
    pub async fn send(&self, url: &str, id: &str, secret: &Secret, body: &str) -> Answer {
        // Checked when the run was created, and again here: the setting
        // may have changed since, and a literal address is never resolved.
        if !self.allow_private
            && let Err(refused) = Url::parse(url)
                .map_err(|e| WebhookError::Url(e.to_string()))
                .and_then(|url| check_literal(&url))
        {
            return Answer::Unreachable(refused.to_string());
        }
        let timestamp = Utc::now().timestamp();
        let request = self
            .client
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .header(USER_AGENT, concat!("deepfleet/", env!("CARGO_PKG_VERSION")))
            .header(ID_HEADER, id)
            .header(TIMESTAMP_HEADER, timestamp.to_string())
            .header(
                SIGNATURE_HEADER,
                signature(secret, id, timestamp, body.as_bytes()),
            )
            .body(body.to_owned());
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(e) => return Answer::Unreachable(transport_error(&e)),
        };
        let status = response.status().as_u16();
        if response.status().is_success() {
            return Answer::Accepted(status);
        }
        // The start of the answer says why; the rest is not read.
        let mut text = Vec::new();
        while text.len() < MAX_ANSWER_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => text.extend_from_slice(&chunk),
                Ok(None) | Err(_) => break,
            }
        }
        text.truncate(MAX_ANSWER_BYTES);
        Answer::Refused(status, String::from_utf8_lossy(&text).into_owned())
    }
}

/// A transport failure in a line: the error and its causes.
fn transport_error(e: &reqwest::Error) -> String {
    let mut text = if e.is_timeout() {
        "timed out".to_owned()
    } else {
        e.to_string()
    };
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
