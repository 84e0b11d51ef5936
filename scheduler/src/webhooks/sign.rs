//! Signing a delivery as Standard Webhooks does: the HMAC-SHA256 of
//! `"{id}.{timestamp}.{body}"` under the tenant's secret, sent base64 in
//! `webhook-signature: v1,<signature>` beside `webhook-id` and
//! `webhook-timestamp` (seconds since the epoch). A receiver recomputes
//! it, compares in constant time and refuses an old timestamp, so a
//! captured delivery cannot be replayed later; the id lets it drop a
//! delivery it already has.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::error::WebhookError;

/// The header naming the delivery (the same on every attempt).
pub const ID_HEADER: &str = "webhook-id";
/// The header carrying when this attempt was signed.
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// The header carrying the signature.
pub const SIGNATURE_HEADER: &str = "webhook-signature";

/// What Standard Webhooks puts before a base64 secret.
const SECRET_PREFIX: &str = "whsec_";

/// A tenant's signing key. Its `Debug` shows nothing of it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// A secret as configured: `whsec_` and base64 (the key is the
    /// decoded bytes, as Standard Webhooks libraries read it), or any
    /// other non-empty text, whose bytes are the key.
    pub fn parse(text: &str) -> Result<Secret, WebhookError> {
        let text = text.trim();
        let key = match text.strip_prefix(SECRET_PREFIX) {
            Some(encoded) => STANDARD
                .decode(encoded)
                .map_err(|e| WebhookError::Secret(format!("`{SECRET_PREFIX}` and then: {e}")))?,
            None => text.as_bytes().to_vec(),
        };
        if key.is_empty() {
            return Err(WebhookError::Secret("the secret is empty".into()));
        }
        Ok(Secret(key))
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// The `webhook-signature` value of `body` sent as delivery `id` at
/// `timestamp`.
pub fn signature(secret: &Secret, id: &str, timestamp: i64, body: &[u8]) -> String {
    // Any key length is valid for HMAC, so `new_from_slice` cannot fail;
    // the fallback only keeps this free of a panic path.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&secret.0) else {
        return String::new();
    };
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn signs_as_the_standard_webhooks_reference_does() {
        // The example of the Standard Webhooks specification
        // (github.com/standard-webhooks/standard-webhooks, spec and
        // libraries' tests).
        let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            signature(&secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn plain_secrets_are_their_bytes_and_bad_ones_are_refused() {
        let plain = Secret::parse("s3cret").unwrap();
        assert_eq!(plain, Secret(b"s3cret".to_vec()));
        let sig = signature(&plain, "run-1", 1, b"{}");
        assert!(sig.starts_with("v1,"), "{sig}");
        assert_ne!(sig, signature(&plain, "run-1", 2, b"{}"));
        assert!(Secret::parse("whsec_not base64!").is_err());
        assert!(Secret::parse("  ").is_err());
        assert_eq!(format!("{plain:?}"), "Secret(..)");
    }
}
