//! JSON in and out of Redis values.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::StoreError;

/// Encodes a value for `key`.
///
/// Our types always serialize; a failure would mean a value this build
/// cannot store, which retrying does not fix, hence `Corrupt`.
pub(crate) fn encode<T: Serialize>(key: &str, value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt {
        key: key.to_owned(),
        reason: format!("cannot encode: {e}"),
    })
}

/// Decodes the value stored at `key`.
pub(crate) fn decode<T: DeserializeOwned>(key: &str, raw: &str) -> Result<T, StoreError> {
    serde_json::from_str(raw).map_err(|e| StoreError::Corrupt {
        key: key.to_owned(),
        reason: e.to_string(),
    })
}

/// Decodes an optional value stored at `key`.
pub(crate) fn decode_opt<T: DeserializeOwned>(
    key: &str,
    raw: Option<String>,
) -> Result<Option<T>, StoreError> {
    raw.map(|raw| decode(key, &raw)).transpose()
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

    #[test]
    fn globs_are_escaped() {
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }
}
