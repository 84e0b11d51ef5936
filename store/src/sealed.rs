//! Sealing runtime context under the fleet's key (AES-256-GCM).
//!
//! The context may hold keys; workers are stateless and need it on every
//! step, so it lives in the run record, but only as a
//! [`SealedContext`]. Every worker and the scheduler share one
//! [`ContextKey`]; a fresh random nonce per seal keeps equal contexts
//! from looking equal at rest, and the GCM tag makes any tampering an
//! error rather than a silently different context.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use deepfleet_proto::SealedContext;
use serde_json::{Map, Value};

use crate::cipher::{Cipher, OpenFailure};

/// What replaces a secret value in anything that may be logged.
pub const REDACTED: &str = "[redacted]";

/// Why a context could not be sealed or opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// The configured key is not base64 of 32 bytes.
    #[error("context key must be base64 of 32 bytes: {0}")]
    BadKey(String),
    /// The sealed value is not well-formed base64 or has a wrong nonce size.
    #[error("sealed context is malformed: {0}")]
    Malformed(String),
    /// Authentication failed: a different key, or the value was altered.
    #[error("sealed context does not open with this key (wrong key or tampered value)")]
    Tampered,
}

/// The fleet's key for runtime context.
#[derive(Clone)]
pub struct ContextKey {
    cipher: Cipher,
}

/// Never prints key material.
impl fmt::Debug for ContextKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ContextKey(..)")
    }
}

impl ContextKey {
    /// A key from its configured form: base64 of 32 bytes.
    pub fn from_base64(text: &str) -> Result<Self, SealError> {
        let cipher = Cipher::from_base64(text).map_err(SealError::BadKey)?;
        Ok(ContextKey { cipher })
    }

    /// A random key, for a process that keeps its runs to itself (embedded
    /// mode without a configured key).
    pub fn generate() -> Self {
        ContextKey {
            cipher: Cipher::generate(),
        }
    }

    /// A random key in its configured form, for `deepfleet` to print when
    /// asked for one.
    pub fn generate_base64() -> String {
        Cipher::generate_base64()
    }

    /// Seals `context` with a fresh nonce.
    pub fn seal(&self, context: &Value) -> Result<SealedContext, SealError> {
        let plain = serde_json::to_vec(context).map_err(|e| SealError::Malformed(e.to_string()))?;
        let (nonce, ciphertext) = self
            .cipher
            .seal(&plain, b"")
            .map_err(|_| SealError::Malformed("encryption failed".to_owned()))?;
        Ok(SealedContext {
            nonce: STANDARD.encode(nonce),
            ciphertext: STANDARD.encode(ciphertext),
        })
    }

    /// Opens a sealed context; fails on a wrong key or any alteration.
    pub fn open(&self, sealed: &SealedContext) -> Result<Value, SealError> {
        let nonce = STANDARD
            .decode(&sealed.nonce)
            .map_err(|e| SealError::Malformed(format!("nonce: {e}")))?;
        let ciphertext = STANDARD
            .decode(&sealed.ciphertext)
            .map_err(|e| SealError::Malformed(format!("ciphertext: {e}")))?;
        let plain = self
            .cipher
            .open(&nonce, &ciphertext, b"")
            .map_err(|e| match e {
                OpenFailure::BadNonce(n) => SealError::Malformed(format!("nonce of {n} bytes")),
                OpenFailure::Tampered => SealError::Tampered,
            })?;
        serde_json::from_slice(&plain).map_err(|e| SealError::Malformed(e.to_string()))
    }
}

/// `context` with the value of every key named in `secrets` replaced by
/// [`REDACTED`], wherever it is: at the top, in nested objects, in objects
/// inside lists, and whatever its casing (`api_key` also hides `API_KEY`
/// and `Api_Key`), so a secret cannot slip past by where or how it was
/// written. The form to use wherever a context must be shown; the fleet
/// itself logs none of it.
pub fn redact(context: &Value, secrets: &[String]) -> Value {
    let secrets: Vec<String> = secrets.iter().map(|s| s.to_lowercase()).collect();
    redact_lowered(context, &secrets)
}

/// [`redact`] with the secret keys already lowercased.
fn redact_lowered(context: &Value, secrets: &[String]) -> Value {
    match context {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| {
                    let v = if secrets.contains(&k.to_lowercase()) {
                        Value::String(REDACTED.to_owned())
                    } else {
                        redact_lowered(v, secrets)
                    };
                    (k.clone(), v)
                })
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| redact_lowered(v, secrets)).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn seal_round_trips_and_hides_the_value() {
        let key = ContextKey::generate();
        let context = json!({"user_id": "u1", "api_key": "sk-very-secret"});
        let sealed = key.seal(&context).unwrap();
        let at_rest = serde_json::to_string(&sealed).unwrap();
        assert!(!at_rest.contains("sk-very-secret"), "{at_rest}");
        assert!(!format!("{sealed:?}").contains(&sealed.ciphertext));
        assert_eq!(key.open(&sealed).unwrap(), context);
        // A fresh nonce each time: equal contexts differ at rest.
        assert_ne!(key.seal(&context).unwrap(), sealed);
    }

    #[test]
    fn tampering_and_wrong_keys_are_detected() {
        let key = ContextKey::generate();
        let mut sealed = key.seal(&json!({"a": 1})).unwrap();
        assert_eq!(
            ContextKey::generate().open(&sealed),
            Err(SealError::Tampered)
        );
        let mut bytes = STANDARD.decode(&sealed.ciphertext).unwrap();
        bytes[0] ^= 1;
        sealed.ciphertext = STANDARD.encode(bytes);
        assert_eq!(key.open(&sealed), Err(SealError::Tampered));
        sealed.nonce = "AAAA".into();
        assert!(matches!(key.open(&sealed), Err(SealError::Malformed(_))));
    }

    #[test]
    fn configured_keys_must_be_32_bytes_of_base64() {
        let text = ContextKey::generate_base64();
        let key = ContextKey::from_base64(&text).unwrap();
        let sealed = key.seal(&json!("x")).unwrap();
        assert_eq!(
            ContextKey::from_base64(&text)
                .unwrap()
                .open(&sealed)
                .unwrap(),
            json!("x")
        );
        assert!(matches!(
            ContextKey::from_base64("c2hvcnQ="),
            Err(SealError::BadKey(_))
        ));
        assert!(matches!(
            ContextKey::from_base64("not base64!"),
            Err(SealError::BadKey(_))
        ));
    }

    #[test]
    fn redaction_replaces_only_secret_fields() {
        let context = json!({"user_id": "u1", "api_key": "sk-1"});
        assert_eq!(
            redact(&context, &["api_key".to_owned()]),
            json!({"user_id": "u1", "api_key": "[redacted]"})
        );
    }

    #[test]
    fn redaction_reaches_nested_objects_arrays_and_any_casing() {
        let context = json!({
            "user": {"name": "Ada", "Api_Key": "sk-nested", "deeper": {"API_KEY": "sk-deep"}},
            "accounts": [{"api_key": "sk-in-list"}, [{"token": "t-1"}], "plain"],
            "TOKEN": {"whole": "subtree"},
        });
        let secrets = ["api_key".to_owned(), "Token".to_owned()];
        assert_eq!(
            redact(&context, &secrets),
            json!({
                "user": {"name": "Ada", "Api_Key": REDACTED, "deeper": {"API_KEY": REDACTED}},
                "accounts": [{"api_key": REDACTED}, [{"token": REDACTED}], "plain"],
                "TOKEN": REDACTED,
            })
        );
        let top = json!([{"api_key": "sk-top-list"}]);
        assert_eq!(redact(&top, &secrets), json!([{"api_key": REDACTED}]));
    }
}
