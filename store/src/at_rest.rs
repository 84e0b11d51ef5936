//! Encryption at rest: the values the store keeps (messages, files,
//! custom state, store items, run and API records, specs, child results,
//! stream entries, the embedded state file) sealed with AES-256-GCM under
//! a [`Keyring`].
//!
//! A sealed value is one line of text, the envelope
//! `dfenc1:<key id>:<base64url of nonce ‖ ciphertext ‖ tag>`:
//!
//! - it names its key, so after a rotation values sealed under the old key
//!   still open (the old key stays in the ring, no longer current) and
//!   `deepfleet rotate-keys` can tell which values to re-seal without
//!   decrypting anything;
//! - the header (`dfenc1:<key id>`) is authenticated with the value, so
//!   a key id swapped in the envelope is detected like any other change;
//! - a clear value is JSON, which never starts with `d`, so a store that
//!   turns encryption on still reads what it wrote in clear (and the
//!   rotation seals it): that is the migration path.
//!
//! What stays in clear is what names or counts rather than holds content:
//! key names (thread and run ids, file paths, item namespaces and keys,
//! spec names), step and token counters, cancel flags, the run index and
//! batch bookkeeping, which the Lua scripts must read and compare. Keep
//! secrets out of names.
//!
//! Values are not bound to where they are stored: someone who can write
//! to Redis can move a sealed value to another key, as they can delete
//! it. What the seal protects against is reading: a dump, a backup, a
//! replica, a snapshot file.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::cipher::{Cipher, NONCE_LEN, OpenFailure};

/// What every sealed value starts with: the envelope's name and version.
pub const ENVELOPE: &str = "dfenc1";

/// The longest key id.
const MAX_KEY_ID: usize = 32;

/// Why a keyring could not be built from its configured form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyringError {
    /// A key id with characters other than `A-Z a-z 0-9 . _ -`, empty,
    /// or too long.
    #[error("key id {0:?} must be 1 to 32 of A-Z a-z 0-9 . _ -")]
    BadKeyId(String),
    /// A key that is not base64 of 32 bytes.
    #[error("key {kid} must be base64 of 32 bytes: {reason}")]
    BadKey {
        /// The key's id.
        kid: String,
        /// What was wrong with it.
        reason: String,
    },
    /// An entry that is not `kid:base64`.
    #[error("keyring entry {0:?} is not `kid:base64`")]
    Entry(String),
    /// One key id given twice.
    #[error("key id {0} is given twice")]
    Duplicate(String),
    /// No keys at all.
    #[error("the keyring holds no keys")]
    Empty,
    /// Several keys and no current one named.
    #[error("several keys are given; name the one that seals (`current`)")]
    NoCurrent,
    /// The current key id names no key of the ring.
    #[error("the current key id {0} is not in the keyring")]
    UnknownCurrent(String),
}

/// Why a sealed value did not open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// The value is sealed, and this process has no keyring.
    #[error("the value is sealed (key id {0}) but no encryption keys are configured")]
    NoKeyring(String),
    /// The value names a key the ring does not hold (retired too early, or
    /// a key not yet rolled out to this process).
    #[error("the value is sealed under key id {0}, which the keyring does not hold")]
    UnknownKey(String),
    /// Not a well-formed envelope.
    #[error("the sealed value is malformed: {0}")]
    Malformed(String),
    /// Authentication failed: the value was altered, or the key under its
    /// id is not the one that sealed it.
    #[error("the sealed value does not open under key id {0} (altered, or another key)")]
    Tampered(String),
}

/// The keys of a deployment by id, and the current one, which seals.
/// Every process of a fleet shares it; values open under whichever key
/// their envelope names.
#[derive(Clone)]
pub struct Keyring {
    keys: BTreeMap<String, Cipher>,
    current: String,
}

/// Shows the key ids, never key material.
impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring")
            .field("ids", &self.keys.keys().collect::<Vec<_>>())
            .field("current", &self.current)
            .finish()
    }
}

impl Keyring {
    /// A keyring from its configured form: `kid:base64` entries separated
    /// by commas, whitespace or newlines (a file may hold one per line),
    /// and the id of the key that seals; `current` may be left out when
    /// there is one key.
    pub fn parse(entries: &str, current: Option<&str>) -> Result<Self, KeyringError> {
        let mut keys = BTreeMap::new();
        for entry in entries
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|e| !e.is_empty())
        {
            let (kid, key) = entry
                .split_once(':')
                .ok_or_else(|| KeyringError::Entry(redact_entry(entry)))?;
            check_key_id(kid)?;
            let cipher = Cipher::from_base64(key).map_err(|reason| KeyringError::BadKey {
                kid: kid.to_owned(),
                reason,
            })?;
            if keys.insert(kid.to_owned(), cipher).is_some() {
                return Err(KeyringError::Duplicate(kid.to_owned()));
            }
        }
        let current = match current.map(str::trim).filter(|c| !c.is_empty()) {
            Some(current) => current.to_owned(),
            None => match keys.len() {
                0 => return Err(KeyringError::Empty),
                1 => keys.keys().next().cloned().unwrap_or_default(),
                _ => return Err(KeyringError::NoCurrent),
            },
        };
        if keys.is_empty() {
            return Err(KeyringError::Empty);
        }
        if !keys.contains_key(&current) {
            return Err(KeyringError::UnknownCurrent(current));
        }
        Ok(Keyring { keys, current })
    }

    /// A keyring of one random key under `kid`, for tests and for
    /// `deepfleet keygen`'s example; fails only on a bad `kid`.
    pub fn generate(kid: &str) -> Result<Self, KeyringError> {
        check_key_id(kid)?;
        Ok(Keyring {
            keys: BTreeMap::from([(kid.to_owned(), Cipher::generate())]),
            current: kid.to_owned(),
        })
    }

    /// The id of the key that seals.
    pub fn current(&self) -> &str {
        &self.current
    }

    /// Seals `plain` under the current key, as an envelope.
    pub fn seal(&self, plain: &[u8]) -> Result<String, OpenError> {
        let header = format!("{ENVELOPE}:{}", self.current);
        let cipher = self
            .keys
            .get(&self.current)
            .ok_or_else(|| OpenError::UnknownKey(self.current.clone()))?;
        let (nonce, sealed) = cipher
            .seal(plain, header.as_bytes())
            .map_err(|_| OpenError::Malformed("too long to seal".to_owned()))?;
        let mut body = Vec::with_capacity(NONCE_LEN + sealed.len());
        body.extend_from_slice(&nonce);
        body.extend_from_slice(&sealed);
        Ok(format!("{header}:{}", URL_SAFE_NO_PAD.encode(body)))
    }

    /// Opens an envelope under the key it names.
    pub fn open(&self, text: &str) -> Result<Vec<u8>, OpenError> {
        let (kid, body) = parse_envelope(text)?;
        let cipher = self
            .keys
            .get(kid)
            .ok_or_else(|| OpenError::UnknownKey(kid.to_owned()))?;
        let body = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|e| OpenError::Malformed(e.to_string()))?;
        if body.len() < NONCE_LEN {
            return Err(OpenError::Malformed(format!("{} bytes", body.len())));
        }
        let (nonce, sealed) = body.split_at(NONCE_LEN);
        let header = format!("{ENVELOPE}:{kid}");
        cipher
            .open(nonce, sealed, header.as_bytes())
            .map_err(|e| match e {
                OpenFailure::BadNonce(n) => OpenError::Malformed(format!("nonce of {n} bytes")),
                OpenFailure::Tampered => OpenError::Tampered(kid.to_owned()),
            })
    }

    /// Whether `text` is sealed under the current key (and needs no
    /// re-sealing); judged by its header, without decrypting.
    pub fn is_current(&self, text: &str) -> bool {
        key_id(text) == Some(self.current.as_str())
    }
}

/// Whether `text` is an envelope rather than a clear value.
pub fn is_sealed(text: &str) -> bool {
    text.strip_prefix(ENVELOPE)
        .is_some_and(|rest| rest.starts_with(':'))
}

/// The key id an envelope names; `None` for a clear value or a
/// malformed envelope.
pub fn key_id(text: &str) -> Option<&str> {
    parse_envelope(text).ok().map(|(kid, _)| kid)
}

/// An envelope's key id and body.
fn parse_envelope(text: &str) -> Result<(&str, &str), OpenError> {
    let rest = text
        .strip_prefix(ENVELOPE)
        .and_then(|rest| rest.strip_prefix(':'))
        .ok_or_else(|| OpenError::Malformed(format!("not a `{ENVELOPE}` envelope")))?;
    let (kid, body) = rest
        .split_once(':')
        .ok_or_else(|| OpenError::Malformed("no key id".to_owned()))?;
    check_key_id(kid).map_err(|e| OpenError::Malformed(e.to_string()))?;
    Ok((kid, body.trim_end()))
}

fn check_key_id(kid: &str) -> Result<(), KeyringError> {
    let ok = !kid.is_empty()
        && kid.len() <= MAX_KEY_ID
        && kid
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(KeyringError::BadKeyId(kid.chars().take(40).collect()))
    }
}

/// An entry as an error may show it: without what could be key material.
fn redact_entry(entry: &str) -> String {
    format!("{}…", entry.chars().take(4).collect::<String>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn ring(entries: &[(&str, &str)], current: Option<&str>) -> Keyring {
        let text: Vec<String> = entries.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        Keyring::parse(&text.join(","), current).unwrap()
    }

    #[test]
    fn seal_round_trips_and_hides_the_value() {
        let keys = Keyring::generate("k1").unwrap();
        let sealed = keys.seal(b"{\"text\":\"top secret\"}").unwrap();
        assert!(sealed.starts_with("dfenc1:k1:"), "{sealed}");
        assert!(!sealed.contains("secret"));
        assert!(is_sealed(&sealed) && keys.is_current(&sealed));
        assert_eq!(key_id(&sealed), Some("k1"));
        assert_eq!(keys.open(&sealed).unwrap(), b"{\"text\":\"top secret\"}");
        // A fresh nonce each time: equal values differ at rest.
        assert_ne!(keys.seal(b"x").unwrap(), keys.seal(b"x").unwrap());
        assert!(!is_sealed("{\"a\":1}") && !is_sealed("\"dfenc1:x\"") && !is_sealed("dfenc10"));
    }

    #[test]
    fn old_values_open_after_a_rotation() {
        let (a, b) = (Cipher::generate_base64(), Cipher::generate_base64());
        let old = ring(&[("k1", &a)], None);
        let sealed = old.seal(b"before").unwrap();
        let rotated = ring(&[("k1", &a), ("k2", &b)], Some("k2"));
        assert_eq!(rotated.open(&sealed).unwrap(), b"before");
        assert!(!rotated.is_current(&sealed));
        let resealed = rotated.seal(b"before").unwrap();
        assert_eq!(key_id(&resealed), Some("k2"));
        // A process that has not got the new key yet says which it lacks.
        assert_eq!(old.open(&resealed), Err(OpenError::UnknownKey("k2".into())));
    }

    #[test]
    fn tampering_and_wrong_keys_are_detected() {
        let keys = Keyring::generate("k1").unwrap();
        let sealed = keys.seal(b"value").unwrap();
        let other = Keyring::generate("k1").unwrap();
        assert_eq!(other.open(&sealed), Err(OpenError::Tampered("k1".into())));

        let (header, body) = sealed.rsplit_once(':').unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(body).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let flipped = format!("{header}:{}", URL_SAFE_NO_PAD.encode(&bytes));
        assert_eq!(keys.open(&flipped), Err(OpenError::Tampered("k1".into())));

        // The key id is authenticated: relabelling a value fails even
        // when the ring holds the same key under both ids.
        let key = Cipher::generate_base64();
        let two = ring(&[("k1", &key), ("k2", &key)], Some("k1"));
        let relabelled = two.seal(b"v").unwrap().replacen(":k1:", ":k2:", 1);
        assert_eq!(two.open(&relabelled), Err(OpenError::Tampered("k2".into())));

        for bad in [
            "dfenc1:k1",
            "dfenc1:k1:!!",
            "dfenc1:k1:AAAA",
            "{}",
            "dfenc1:b@d:AAAA",
        ] {
            assert!(
                matches!(keys.open(bad), Err(OpenError::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn configured_keyrings_are_checked() {
        let a = Cipher::generate_base64();
        let b = Cipher::generate_base64();
        let two = format!("k1:{a},\nk2:{b}\n");
        assert_eq!(Keyring::parse(&two, Some("k2")).unwrap().current(), "k2");
        assert_eq!(
            Keyring::parse(&format!("only:{a}"), None)
                .unwrap()
                .current(),
            "only"
        );
        for (entries, current, want) in [
            (two.clone(), None, KeyringError::NoCurrent),
            (
                two.clone(),
                Some("k3"),
                KeyringError::UnknownCurrent("k3".into()),
            ),
            (String::new(), None, KeyringError::Empty),
            (
                format!("k1:{a},k1:{b}"),
                None,
                KeyringError::Duplicate("k1".into()),
            ),
            (format!("k 1:{a}"), None, KeyringError::Entry("k…".into())),
            (
                format!("k/1:{a}"),
                None,
                KeyringError::BadKeyId("k/1".into()),
            ),
        ] {
            assert_eq!(
                Keyring::parse(&entries, current).err(),
                Some(want),
                "{entries:?}"
            );
        }
        let short = Keyring::parse("k1:c2hvcnQ=", None).unwrap_err();
        assert!(matches!(short, KeyringError::BadKey { .. }), "{short}");
        // Errors and Debug never show key material.
        let bad = Keyring::parse(&a, None).unwrap_err().to_string();
        assert!(!bad.contains(&a[4..]), "{bad}");
        let shown = format!("{:?}", Keyring::parse(&two, Some("k1")).unwrap());
        assert!(!shown.contains(&a) && shown.contains("k2"), "{shown}");
    }
}
