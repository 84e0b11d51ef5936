//! An in-process store for embedded mode.
//!
//! One mutex around plain maps: every operation is a short critical
//! section with no IO, so the lock is never held across an await, and each
//! operation is trivially atomic, which is what the trait asks for.
//!
//! [`EmbeddedStore::open`] keeps the same maps but persists them to a
//! local file (see `snapshot.rs`): every critical section that mutated the
//! state ends by snapshotting it, so a later process can pick up
//! interrupted runs.
//!
//! This module is the plumbing (`state.rs`, `snapshot.rs`) and, in a file
//! per capability (`admission.rs`, `checkpoints.rs`, ...), the
//! capability's trait implemented for [`EmbeddedStore`] on the maps of
//! `State` through `EmbeddedStore::lock`. The capabilities' modules hold
//! their traits and types and know no back end: the back end depends on
//! them, never the other way round.

mod admission;
mod batches;
mod checkpoints;
mod fan_in;
mod history;
mod items;
mod record_index;
mod records;
mod retention;
mod run_streams;
mod runs;
mod slots;
mod snapshot;
mod specs;
mod spend;
mod state;

use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use deepfleet_proto::{RunRecord, RunStatus};
use tracing::warn;

use self::snapshot::SnapshotFile;
pub(crate) use self::state::{RunFanIn, State};
use crate::Keyring;
use crate::error::StoreError;
use crate::run_streams::log::RunStreamLogs;

/// An in-process [`crate::Store`].
#[derive(Default)]
pub struct EmbeddedStore {
    state: Mutex<State>,
    /// Where the state is persisted, for stores made by [`EmbeddedStore::open`].
    file: Option<SnapshotFile>,
    /// Run event and delta streams; not persisted.
    streams: RunStreamLogs,
}

impl EmbeddedStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store persisted to `path`: loads the snapshot there if there is
    /// one, else starts empty and writes one at once (so a bad path fails
    /// now, not after the first run).
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with(path, None)
    }

    /// [`EmbeddedStore::open`], with the file sealed under `keyring` when
    /// there is one. A file found in clear or under an older key is
    /// written anew under the current key at once, so opening the store
    /// is its key rotation.
    pub fn open_with(path: &Path, keyring: Option<Arc<Keyring>>) -> Result<Self, StoreError> {
        let file = SnapshotFile::new(path, keyring);
        let state = match file.load::<State>()? {
            Some(state) => {
                if file.is_stale()? {
                    file.write_now(&state)?;
                }
                state
            }
            None => {
                let state = State::default();
                file.write_now(&state)?;
                state
            }
        };
        Ok(EmbeddedStore {
            state: Mutex::new(state),
            file: Some(file),
            streams: RunStreamLogs::default(),
        })
    }

    /// Writes any change not yet in the snapshot file (a no-op for an
    /// in-memory store). Call it before the process exits.
    pub fn flush(&self) -> Result<(), StoreError> {
        match &self.file {
            Some(file) => file.flush(&*self.lock()),
            None => Ok(()),
        }
    }

    /// Runs that were queued or executing when their process stopped
    /// (`pending`/`running`), with the step to publish for each: after
    /// reopening a persisted store, their step messages are gone with the
    /// old process's in-memory queue. A duplicate is fenced by the worker.
    /// Runs waiting for their batch's admission window are left out: their
    /// admission publishes their first step.
    pub fn runs_to_recover(&self) -> Vec<(RunRecord, u64)> {
        let state = self.lock();
        state
            .runs
            .values()
            .filter(|r| matches!(r.status, RunStatus::Pending | RunStatus::Running))
            // A run waiting for its batch's window has no step out yet.
            .filter(|r| {
                !r.batch_id.as_ref().is_some_and(|b| {
                    state
                        .admissions
                        .get(b)
                        .is_some_and(|w| w.is_waiting(&r.run_id))
                })
            })
            .map(|r| {
                let step = state.threads.get(&r.thread_id).map_or(0, |t| t.step);
                (r.clone(), step)
            })
            .collect()
    }

    /// How many live records of `kind` the store holds. Listings read
    /// indexes ([`crate::RecordIndex`]); this is for tests that check what
    /// a refused request did not write.
    pub fn record_count(&self, kind: &str) -> usize {
        let now = chrono::Utc::now();
        let state = self.lock();
        let deadlines = state.record_deadlines.get(kind);
        state.records.get(kind).map_or(0, |records| {
            records
                .keys()
                .filter(|id| {
                    deadlines
                        .and_then(|d| d.get(*id))
                        .is_none_or(|at| *at > now)
                })
                .count()
        })
    }

    /// The state, locked for one operation: each operation is one
    /// critical section, which makes it atomic.
    pub(crate) fn lock(&self) -> Locked<'_> {
        // Every critical section leaves the maps consistent, so a panic
        // elsewhere does not invalidate them.
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // What expired goes before anything reads it, so it is never seen.
        let gone = guard.sweep_threads(chrono::Utc::now());
        let mutated = !gone.is_empty();
        self.forget_streams(&gone);
        Locked {
            guard,
            file: self.file.as_ref(),
            mutated,
        }
    }

    /// Drops the streams of deleted runs.
    pub(crate) fn forget_streams(&self, runs: &[String]) {
        if runs.is_empty() {
            return;
        }
        let mut events = self.streams.events();
        let mut deltas = self.streams.deltas();
        for run in runs {
            events.remove(run);
            deltas.remove(run);
        }
    }

    /// The run streams, which have locks of their own.
    pub(crate) fn streams(&self) -> &RunStreamLogs {
        &self.streams
    }
}

/// The locked state. Mutable access marks it changed; releasing a changed
/// state snapshots it (for a persisted store), so persistence needs no
/// call in each operation.
pub(crate) struct Locked<'a> {
    guard: MutexGuard<'a, State>,
    file: Option<&'a SnapshotFile>,
    mutated: bool,
}

impl Deref for Locked<'_> {
    type Target = State;

    fn deref(&self) -> &State {
        &self.guard
    }
}

impl DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut State {
        self.mutated = true;
        &mut self.guard
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        if let Some(file) = self.file.filter(|_| self.mutated)
            && let Err(e) = file.changed(&*self.guard)
        {
            // The change stays pending: the next mutation or flush retries.
            warn!(path = %file.path().display(), error = %e, "writing the store snapshot failed");
        }
    }
}

impl Drop for EmbeddedStore {
    fn drop(&mut self) {
        if let Err(e) = self.flush() {
            warn!(error = %e, "writing the store snapshot on exit failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoints::Checkpoints;
    use crate::runs::{Runs, ThreadSeed};
    use pretty_assertions::assert_eq;

    #[tokio::test]
    async fn a_reopened_embedded_store_has_its_runs_and_threads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let now = chrono::Utc::now();
        let run = RunRecord {
            status: RunStatus::Running,
            batch_id: Some("b".into()),
            ..RunRecord::new("r1", "t1", "a", now)
        };
        let mut seed = ThreadSeed::default();
        seed.state.insert("ticket".into(), serde_json::json!("T-1"));
        {
            let store = EmbeddedStore::open(&path).unwrap();
            store.create_run(&run, &seed).await.unwrap();
            store.flush().unwrap();
        }
        let reopened = EmbeddedStore::open(&path).unwrap();
        assert_eq!(reopened.find_run("r1").await.unwrap(), Some(run.clone()));
        let thread = reopened.load_thread("t1").await.unwrap();
        assert_eq!(thread.state, seed.state);
        let recover: Vec<(String, u64)> = reopened
            .runs_to_recover()
            .into_iter()
            .map(|(r, step)| (r.run_id, step))
            .collect();
        assert_eq!(recover, [("r1".to_owned(), 0)]);
    }
}
