//! JSON in and out of Redis values, and the checkpoint read back from the
//! `load_thread` script.

use std::collections::BTreeMap;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::{Checkpoint, StoreError};

/// The raw reply of `load_thread.lua`: meta fields, log entries, files.
pub(super) type RawThread = (
    BTreeMap<String, String>,
    Vec<String>,
    BTreeMap<String, String>,
);

/// Encodes a value for `key`.
///
/// Our types always serialize; a failure would mean a value this build
/// cannot store, which retrying does not fix, hence `Corrupt`.
pub(super) fn encode<T: Serialize>(key: &str, value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Corrupt {
        key: key.to_owned(),
        reason: format!("cannot encode: {e}"),
    })
}

/// Decodes the value stored at `key`.
pub(super) fn decode<T: DeserializeOwned>(key: &str, raw: &str) -> Result<T, StoreError> {
    serde_json::from_str(raw).map_err(|e| StoreError::Corrupt {
        key: key.to_owned(),
        reason: e.to_string(),
    })
}

/// Decodes an optional value stored at `key`.
pub(super) fn decode_opt<T: DeserializeOwned>(
    key: &str,
    raw: Option<String>,
) -> Result<Option<T>, StoreError> {
    raw.map(|raw| decode(key, &raw)).transpose()
}

/// Key names of the thread's three structures, for error reports.
pub(super) struct ThreadKeys<'a> {
    pub(super) meta: &'a str,
    pub(super) log: &'a str,
    pub(super) files: &'a str,
}

/// Builds a checkpoint from what `load_thread.lua` returned. Absent
/// structures read as an empty thread.
pub(super) fn checkpoint(keys: &ThreadKeys<'_>, raw: RawThread) -> Result<Checkpoint, StoreError> {
    let (mut meta, log, files) = raw;
    let counter = |field: &str, raw: Option<String>| -> Result<u64, StoreError> {
        raw.map_or(Ok(0), |raw| {
            raw.parse().map_err(|e| StoreError::Corrupt {
                key: format!("{} {field}", keys.meta),
                reason: format!("{raw:?}: {e}"),
            })
        })
    };
    let step = counter("step", meta.remove("step"))?;
    let published = counter("published", meta.remove("published"))?;
    let state: Map<String, Value> =
        decode_opt(&format!("{} state", keys.meta), meta.remove("state"))?.unwrap_or_default();
    let pending = decode_opt(&format!("{} pending", keys.meta), meta.remove("pending"))?;
    let tokens = counter("tokens", meta.remove("tokens"))?;
    let context =
        decode_opt(&format!("{} context", keys.meta), meta.remove("context"))?.unwrap_or_default();
    let messages = log
        .iter()
        .enumerate()
        .map(|(i, raw)| decode(&format!("{}[{i}]", keys.log), raw))
        .collect::<Result<_, _>>()?;
    let files = files
        .into_iter()
        .map(|(path, raw)| {
            let file = decode(&format!("{} {path}", keys.files), &raw)?;
            Ok((path, file))
        })
        .collect::<Result<_, StoreError>>()?;
    Ok(Checkpoint {
        step,
        published,
        messages,
        files,
        state,
        pending,
        tokens,
        context,
    })
}

/// Escapes glob characters so a prefix matches only itself in `SCAN MATCH`.
pub(super) fn glob_escape(text: &str) -> String {
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

    const KEYS: ThreadKeys<'static> = ThreadKeys {
        meta: "m",
        log: "l",
        files: "f",
    };

    #[test]
    fn empty_thread_is_default() {
        let raw = (BTreeMap::new(), Vec::new(), BTreeMap::new());
        assert_eq!(checkpoint(&KEYS, raw).unwrap(), Checkpoint::default());
    }

    #[test]
    fn bad_log_entry_names_its_index() {
        let raw = (BTreeMap::new(), vec!["nope".to_owned()], BTreeMap::new());
        match checkpoint(&KEYS, raw) {
            Err(StoreError::Corrupt { key, .. }) => assert_eq!(key, "l[0]"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_step_is_corrupt() {
        let meta = BTreeMap::from([("step".to_owned(), "x".to_owned())]);
        let raw = (meta, Vec::new(), BTreeMap::new());
        assert!(matches!(
            checkpoint(&KEYS, raw),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn globs_are_escaped() {
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }
}
