//! JSON in and out of Redis values, sealed under the store's keyring when
//! it has one (see [`crate::at_rest`]).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::at_rest::{self, Keyring, OpenError};
use crate::error::StoreError;

/// How the store's values are written and read: JSON, sealed when a
/// keyring is configured. Reading accepts clear JSON either way, so
/// values written before encryption was turned on still read.
#[derive(Clone, Default)]
pub(crate) struct Codec {
    keyring: Option<Arc<Keyring>>,
}

impl Codec {
    pub(crate) fn new(keyring: Option<Arc<Keyring>>) -> Self {
        Codec { keyring }
    }

    pub(crate) fn keyring(&self) -> Option<&Keyring> {
        self.keyring.as_deref()
    }

    /// Encodes a value for `key`.
    ///
    /// Our types always serialize; a failure would mean a value this
    /// build cannot store, which retrying does not fix, hence `Corrupt`.
    pub(crate) fn encode<T: Serialize>(&self, key: &str, value: &T) -> Result<String, StoreError> {
        let json = serde_json::to_string(value).map_err(|e| StoreError::Corrupt {
            key: key.to_owned(),
            reason: format!("cannot encode: {e}"),
        })?;
        self.seal(key, json)
    }

    /// `json` as stored: sealed when there is a keyring, else unchanged.
    pub(crate) fn seal(&self, key: &str, json: String) -> Result<String, StoreError> {
        match &self.keyring {
            Some(keyring) => keyring
                .seal(json.as_bytes())
                .map_err(|reason| StoreError::Sealed {
                    key: key.to_owned(),
                    reason,
                }),
            None => Ok(json),
        }
    }

    /// The JSON text of a stored value: opened when sealed.
    pub(crate) fn open(&self, key: impl fmt::Display, raw: &str) -> Result<String, StoreError> {
        Ok(self.open_borrowed(key, raw)?.into_owned())
    }

    /// [`Codec::open`], borrowing a clear value instead of copying it.
    fn open_borrowed<'r>(
        &self,
        key: impl fmt::Display,
        raw: &'r str,
    ) -> Result<Cow<'r, str>, StoreError> {
        if !at_rest::is_sealed(raw) {
            return Ok(Cow::Borrowed(raw));
        }
        let sealed = |reason| StoreError::Sealed {
            key: key.to_string(),
            reason,
        };
        let Some(keyring) = self.keyring.as_ref() else {
            let id = at_rest::key_id(raw).unwrap_or("?").to_owned();
            return Err(sealed(OpenError::NoKeyring(id)));
        };
        let plain = keyring.open(raw).map_err(sealed)?;
        String::from_utf8(plain)
            .map(Cow::Owned)
            .map_err(|e| StoreError::Corrupt {
                key: key.to_string(),
                reason: e.to_string(),
            })
    }

    /// Decodes the value stored at `key` (written out only in an error, so
    /// a caller decoding many values can name each without allocating).
    pub(crate) fn decode<T: DeserializeOwned>(
        &self,
        key: impl fmt::Display,
        raw: &str,
    ) -> Result<T, StoreError> {
        let json = self.open_borrowed(&key, raw)?;
        serde_json::from_str(&json).map_err(|e| StoreError::Corrupt {
            key: key.to_string(),
            reason: e.to_string(),
        })
    }

    /// Decodes an optional value stored at `key`.
    pub(crate) fn decode_opt<T: DeserializeOwned>(
        &self,
        key: impl fmt::Display,
        raw: Option<String>,
    ) -> Result<Option<T>, StoreError> {
        raw.map(|raw| self.decode(key, &raw)).transpose()
    }
}

/// Escapes glob characters so a prefix matches only itself in `SCAN MATCH`.
pub(crate) fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    #[test]
    fn globs_are_escaped() {
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }

    #[test]
    fn sealed_values_open_and_clear_values_still_read() {
        let codec = Codec::new(Some(Arc::new(Keyring::generate("k1").unwrap())));
        let raw = codec.encode("k", &json!({"text": "hush"})).unwrap();
        assert!(at_rest::is_sealed(&raw) && !raw.contains("hush"), "{raw}");
        assert_eq!(
            codec.decode::<Value>("k", &raw).unwrap(),
            json!({"text": "hush"})
        );
        // Written before encryption was on.
        assert_eq!(
            codec.decode::<Value>("k", "{\"a\":1}").unwrap(),
            json!({"a": 1})
        );
        // Without a keyring, clear values are written, and sealed ones are a
        // clear error naming the key id.
        let clear = Codec::default();
        assert_eq!(clear.encode("k", &json!(1)).unwrap(), "1");
        match clear.decode::<Value>("k", &raw) {
            Err(StoreError::Sealed { key, reason }) => {
                assert_eq!(
                    (key.as_str(), reason),
                    ("k", OpenError::NoKeyring("k1".into()))
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
