//! Persisting the embedded store to a local file.
//!
//! The embedded store is a handful of maps behind one mutex, so the
//! simplest durable form is the whole state as one JSON snapshot, written
//! to a temporary file and renamed over the old one (a crash leaves the
//! old snapshot or the new one, never half of each). We chose this over
//! an embedded database such as redb: embedded mode is for development
//! and single-machine batches, the state is small, and a snapshot needs no
//! second storage layout to keep in step with the in-memory one.
//!
//! Writes are throttled: a mutation writes a snapshot unless one was
//! written less than [`MIN_INTERVAL`] ago, in which case the change waits
//! for the next mutation or an explicit flush. A crash can therefore lose
//! the last moments of work, never a consistent state: every snapshot is
//! taken under the store's lock.
//!
//! With a [`Keyring`] the whole file is one sealed envelope (see
//! [`crate::at_rest`]); a file in clear or under an older key still
//! loads, and the store writes it anew, sealed under the current key, as
//! soon as it is opened.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::at_rest::{self, Keyring, OpenError};
use crate::error::StoreError;

/// The shortest time between two snapshot writes.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// The snapshot format this build writes and reads.
const VERSION: u32 = 1;

#[derive(Serialize, serde::Deserialize)]
struct Envelope<T> {
    version: u32,
    state: T,
}

/// A snapshot file and its write throttle.
#[derive(Debug)]
pub(crate) struct SnapshotFile {
    path: PathBuf,
    keyring: Option<Arc<Keyring>>,
    throttle: Mutex<Throttle>,
}

#[derive(Debug, Default)]
struct Throttle {
    last_write: Option<Instant>,
    /// A change not yet written.
    pending: bool,
}

impl SnapshotFile {
    /// The snapshot at `path`, sealed under `keyring` when there is one.
    pub(crate) fn new(path: &Path, keyring: Option<Arc<Keyring>>) -> Self {
        SnapshotFile {
            path: path.to_owned(),
            keyring,
            throttle: Mutex::new(Throttle::default()),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the snapshot; `None` when the file does not exist yet.
    pub(crate) fn load<T: DeserializeOwned>(&self) -> Result<Option<T>, StoreError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io_error("reading", &e)),
        };
        let corrupt = |reason: String| StoreError::Corrupt {
            key: self.path.display().to_string(),
            reason,
        };
        let bytes = self.opened(bytes)?;
        let envelope: Envelope<T> =
            serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
        if envelope.version != VERSION {
            return Err(corrupt(format!(
                "snapshot version {} (this build reads {VERSION})",
                envelope.version
            )));
        }
        Ok(Some(envelope.state))
    }

    /// Whether the file should be written anew to be sealed under the
    /// current key: it is in clear or under an older key. Never with no
    /// keyring, or no file.
    pub(crate) fn is_stale(&self) -> Result<bool, StoreError> {
        let Some(keyring) = &self.keyring else {
            return Ok(false);
        };
        match std::fs::read(&self.path) {
            Ok(bytes) => Ok(!keyring.is_current(&String::from_utf8_lossy(&bytes))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(self.io_error("reading", &e)),
        }
    }

    /// The file's JSON: `bytes` opened when sealed.
    fn opened(&self, bytes: Vec<u8>) -> Result<Vec<u8>, StoreError> {
        let text = String::from_utf8_lossy(&bytes);
        if !at_rest::is_sealed(&text) {
            return Ok(bytes);
        }
        let sealed = |reason| StoreError::Sealed {
            key: self.path.display().to_string(),
            reason,
        };
        let keyring = self.keyring.as_ref().ok_or_else(|| {
            sealed(OpenError::NoKeyring(
                at_rest::key_id(&text).unwrap_or("?").to_owned(),
            ))
        })?;
        keyring.open(&text).map_err(sealed)
    }

    /// Records a change of `state`, writing it unless a write happened
    /// within [`MIN_INTERVAL`].
    pub(crate) fn changed<T: Serialize>(&self, state: &T) -> Result<(), StoreError> {
        let mut throttle = self.lock();
        throttle.pending = true;
        if throttle
            .last_write
            .is_some_and(|at| at.elapsed() < MIN_INTERVAL)
        {
            return Ok(());
        }
        self.write(state, &mut throttle)
    }

    /// Writes `state` if a change is still unwritten.
    pub(crate) fn flush<T: Serialize>(&self, state: &T) -> Result<(), StoreError> {
        let mut throttle = self.lock();
        if !throttle.pending {
            return Ok(());
        }
        self.write(state, &mut throttle)
    }

    /// Writes `state` now.
    pub(crate) fn write_now<T: Serialize>(&self, state: &T) -> Result<(), StoreError> {
        let mut throttle = self.lock();
        self.write(state, &mut throttle)
    }

    fn write<T: Serialize>(&self, state: &T, throttle: &mut Throttle) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(&Envelope {
            version: VERSION,
            state,
        })
        .map_err(|e| StoreError::Command(format!("encoding the snapshot: {e}")))?;
        let bytes = match &self.keyring {
            Some(keyring) => keyring
                .seal(&bytes)
                .map_err(|reason| StoreError::Sealed {
                    key: self.path.display().to_string(),
                    reason,
                })?
                .into_bytes(),
            None => bytes,
        };
        let tmp = self.path.with_extension("tmp");
        let written = std::fs::File::create(&tmp)
            .and_then(|mut f| f.write_all(&bytes).and_then(|()| f.sync_all()))
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        written.map_err(|e| self.io_error("writing", &e))?;
        throttle.last_write = Some(Instant::now());
        throttle.pending = false;
        Ok(())
    }

    fn io_error(&self, what: &str, e: &std::io::Error) -> StoreError {
        StoreError::Connection(format!("{what} {}: {e}", self.path.display()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Throttle> {
        self.throttle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::collections::BTreeMap;

    #[test]
    fn round_trips_and_throttles() {
        let dir = tempfile::tempdir().unwrap();
        let file = SnapshotFile::new(&dir.path().join("s.json"), None);
        assert_eq!(file.load::<BTreeMap<String, u32>>().unwrap(), None);
        let mut state = BTreeMap::from([("a".to_owned(), 1)]);
        file.changed(&state).unwrap();
        state.insert("b".into(), 2);
        // Within the interval: not written yet...
        file.changed(&state).unwrap();
        assert_eq!(
            file.load::<BTreeMap<String, u32>>().unwrap().unwrap().len(),
            1
        );
        // ...until a flush.
        file.flush(&state).unwrap();
        assert_eq!(file.load::<BTreeMap<String, u32>>().unwrap(), Some(state));
    }

    #[test]
    fn a_keyed_snapshot_is_sealed_and_reseals_what_it_finds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let state = BTreeMap::from([("secret-marker".to_owned(), 1_u32)]);
        // Written in clear, before encryption was on.
        SnapshotFile::new(&path, None).write_now(&state).unwrap();
        let keys = Arc::new(Keyring::generate("k1").unwrap());
        let sealed = SnapshotFile::new(&path, Some(keys.clone()));
        assert!(sealed.is_stale().unwrap());
        assert_eq!(sealed.load().unwrap(), Some(state.clone()));
        sealed.write_now(&state).unwrap();
        assert!(!sealed.is_stale().unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("dfenc1:k1:") && !text.contains("secret-marker"),
            "{text}"
        );
        assert_eq!(sealed.load().unwrap(), Some(state));
        // Without the key, the file is a clear error, not an empty store.
        let err = SnapshotFile::new(&path, None)
            .load::<BTreeMap<String, u32>>()
            .unwrap_err();
        assert!(matches!(err, StoreError::Sealed { .. }), "{err}");
    }

    #[test]
    fn corrupt_and_foreign_snapshots_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, "{\"version\": 9, \"state\": {}}").unwrap();
        let file = SnapshotFile::new(&path, None);
        let err = file
            .load::<BTreeMap<String, u32>>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("snapshot version 9"), "{err}");
        std::fs::write(&path, "not json").unwrap();
        assert!(matches!(
            file.load::<BTreeMap<String, u32>>(),
            Err(StoreError::Corrupt { .. })
        ));
    }
}
