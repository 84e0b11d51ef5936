//! Encryption at rest (`[encryption]`): the keyring every scheduler and
//! worker of a fleet seals the store's values with (see
//! `deepfleet_store::at_rest`), and the embedded state file too.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use deepfleet_store::Keyring;
use serde::{Deserialize, Serialize};

use crate::SettingsError;

/// Encryption at rest. Without keys, values are stored in clear; with
/// them, every value with content is sealed under the current key, and
/// values in clear or under another key of the ring still read.
#[derive(Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EncryptionSettings {
    /// The keys by id: `kid:base64` entries (base64 of 32 bytes, as
    /// `deepfleet keygen` prints) separated by commas or newlines.
    /// Default: none (values in clear).
    pub keys: Option<String>,
    /// A file holding the keys in the same form, one per line, for
    /// processes that share a volume (a Kubernetes secret); `keys` wins
    /// when both are set. Default: none.
    pub keys_file: Option<PathBuf>,
    /// The id of the key that seals new values; may be left out when
    /// there is one key. Default: none.
    pub current: Option<String>,
}

/// Never prints key material.
impl fmt::Debug for EncryptionSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EncryptionSettings")
            .field("keys", &self.keys.as_ref().map(|_| "[redacted]"))
            .field("keys_file", &self.keys_file)
            .field("current", &self.current)
            .finish()
    }
}

impl EncryptionSettings {
    /// The configured keyring, if any; malformed keys, an unknown current
    /// id, or a key file that cannot be read are errors.
    pub fn keyring(&self) -> Result<Option<Arc<Keyring>>, SettingsError> {
        let current = self.current.as_deref();
        if let Some(keys) = self.keys.as_deref() {
            return Keyring::parse(keys, current)
                .map(|k| Some(Arc::new(k)))
                .map_err(SettingsError::Keyring);
        }
        let Some(path) = &self.keys_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path).map_err(|source| SettingsError::KeysFile {
            path: path.clone(),
            source,
        })?;
        Keyring::parse(&text, current)
            .map(|k| Some(Arc::new(k)))
            .map_err(|source| SettingsError::KeyringInFile {
                path: path.clone(),
                source,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Settings;
    use deepfleet_store::sealed::ContextKey;

    #[test]
    fn the_keyring_comes_from_variables_or_a_file() {
        let (a, b) = (ContextKey::generate_base64(), ContextKey::generate_base64());
        let loaded = Settings::load_from(
            None,
            [
                (
                    "DEEPFLEET__ENCRYPTION__KEYS".to_owned(),
                    format!("k1:{a},k2:{b}"),
                ),
                ("DEEPFLEET__ENCRYPTION__CURRENT".to_owned(), "k2".to_owned()),
            ],
        )
        .unwrap();
        assert!(loaded.unknown.is_empty());
        let ring = loaded.settings.encryption.keyring().unwrap().unwrap();
        assert_eq!(ring.current(), "k2");
        assert!(!format!("{:?}", loaded.settings).contains(&a));

        let dir = tempfile::tempdir().unwrap();
        let keys = dir.path().join("keys");
        std::fs::write(&keys, format!("k1:{a}\nk2:{b}\n")).unwrap();
        let from_file = EncryptionSettings {
            keys_file: Some(keys.clone()),
            current: Some("k1".into()),
            ..EncryptionSettings::default()
        };
        assert_eq!(from_file.keyring().unwrap().unwrap().current(), "k1");
        let no_current = EncryptionSettings {
            current: None,
            ..from_file
        };
        let err = format!(
            "{:#}",
            anyhow::Error::from(no_current.keyring().unwrap_err())
        );
        assert!(err.contains("keys") && err.contains("current"), "{err}");
        assert!(EncryptionSettings::default().keyring().unwrap().is_none());
    }
}
