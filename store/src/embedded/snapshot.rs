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

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

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
    throttle: Mutex<Throttle>,
}

#[derive(Debug, Default)]
struct Throttle {
    last_write: Option<Instant>,
    /// A change not yet written.
    pending: bool,
}

impl SnapshotFile {
    pub(crate) fn new(path: &Path) -> Self {
        SnapshotFile {
            path: path.to_owned(),
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
        let file = SnapshotFile::new(&dir.path().join("s.json"));
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
    fn corrupt_and_foreign_snapshots_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, "{\"version\": 9, \"state\": {}}").unwrap();
        let file = SnapshotFile::new(&path);
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
