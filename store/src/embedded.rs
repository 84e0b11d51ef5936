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

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use deepfleet_proto::{AgentSpec, ChildResult, ParentLink, RunRecord, RunStatus};
use serde::{Deserialize, Serialize};
use tracing::warn;

use crate::snapshot::SnapshotFile;
use crate::{Checkpoint, CommitOutcome, StepCommit, Store, StoreError, ThreadSeed};

/// An in-process [`Store`].
#[derive(Default)]
pub struct EmbeddedStore {
    state: Mutex<State>,
    /// Where the state is persisted, for stores made by [`EmbeddedStore::open`].
    file: Option<SnapshotFile>,
    /// Run event streams; not persisted.
    events: Mutex<crate::run_events::RunEventLogs>,
    /// Run token-delta streams; not persisted.
    deltas: Mutex<
        crate::run_events::RunEventLogs<deepfleet_proto::RunDelta, { crate::RUN_DELTAS_MAX }>,
    >,
}

#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
struct State {
    specs: HashMap<String, AgentSpec>,
    runs: HashMap<String, RunRecord>,
    threads: HashMap<String, Checkpoint>,
    fan_in: HashMap<String, FanIn>,
    cancels: HashSet<String>,
    batch_done: HashMap<String, VecDeque<String>>,
    /// API records: kind -> id -> value.
    records: HashMap<String, BTreeMap<String, serde_json::Value>>,
    /// Long-term items.
    items: crate::items::ItemTable,
}

#[derive(Default, Serialize, Deserialize)]
struct FanIn {
    expected: u32,
    results: BTreeMap<String, ChildResult>,
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
        let file = SnapshotFile::new(path);
        let state = match file.load::<State>()? {
            Some(state) => state,
            None => {
                let state = State::default();
                file.write_now(&state)?;
                state
            }
        };
        Ok(EmbeddedStore {
            state: Mutex::new(state),
            file: Some(file),
            events: Mutex::default(),
            deltas: Mutex::default(),
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
    pub fn runs_to_recover(&self) -> Vec<(RunRecord, u64)> {
        let state = self.lock();
        state
            .runs
            .values()
            .filter(|r| matches!(r.status, RunStatus::Pending | RunStatus::Running))
            .map(|r| {
                let step = state.threads.get(&r.thread_id).map_or(0, |t| t.step);
                (r.clone(), step)
            })
            .collect()
    }

    fn lock(&self) -> Locked<'_> {
        // Every critical section leaves the maps consistent, so a panic
        // elsewhere does not invalidate them.
        Locked {
            guard: self.state.lock().unwrap_or_else(|e| e.into_inner()),
            file: self.file.as_ref(),
            mutated: false,
        }
    }
}

/// The locked state. Mutable access marks it changed; releasing a changed
/// state snapshots it (for a persisted store), so persistence needs no
/// call in each operation.
struct Locked<'a> {
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

#[async_trait]
impl Store for EmbeddedStore {
    async fn put_spec(&self, spec: &AgentSpec) -> Result<(), StoreError> {
        self.lock().specs.insert(spec.name.clone(), spec.clone());
        Ok(())
    }

    async fn get_spec(&self, name: &str) -> Result<Option<AgentSpec>, StoreError> {
        Ok(self.lock().specs.get(name).cloned())
    }

    async fn create_run(
        &self,
        run: &RunRecord,
        seed: &ThreadSeed,
    ) -> Result<Option<u64>, StoreError> {
        let mut state = self.lock();
        if state.runs.contains_key(&run.run_id) {
            return Ok(None);
        }
        state.runs.insert(run.run_id.clone(), run.clone());
        let thread = state.threads.entry(run.thread_id.clone()).or_default();
        thread.messages.extend(seed.messages.iter().cloned());
        thread.tokens += log_tokens(&seed.messages);
        thread
            .files
            .extend(seed.files.iter().map(|(k, v)| (k.clone(), v.clone())));
        thread
            .state
            .extend(seed.state.iter().map(|(k, v)| (k.clone(), v.clone())));
        Ok(Some(thread.step))
    }

    async fn get_run(
        &self,
        thread_id: &str,
        run_id: &str,
    ) -> Result<Option<RunRecord>, StoreError> {
        Ok(self
            .lock()
            .runs
            .get(run_id)
            .filter(|r| r.thread_id == thread_id)
            .cloned())
    }

    async fn find_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        Ok(self.lock().runs.get(run_id).cloned())
    }

    async fn load_thread(&self, thread_id: &str) -> Result<Checkpoint, StoreError> {
        Ok(self
            .lock()
            .threads
            .get(thread_id)
            .cloned()
            .unwrap_or_default())
    }

    async fn load_messages(
        &self,
        thread_id: &str,
        from: u64,
    ) -> Result<Vec<deepfleet_proto::LoggedMessage>, StoreError> {
        let from = usize::try_from(from).unwrap_or(usize::MAX);
        Ok(self
            .lock()
            .threads
            .get(thread_id)
            .map(|t| t.messages.iter().skip(from).cloned().collect())
            .unwrap_or_default())
    }

    async fn append_run_event(
        &self,
        run_id: &str,
        event: &deepfleet_proto::RunEvent,
    ) -> Result<(), StoreError> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .append(run_id, event);
        Ok(())
    }

    async fn run_events(
        &self,
        run_id: &str,
        after: Option<&str>,
        max: usize,
    ) -> Result<Vec<(String, deepfleet_proto::RunEvent)>, StoreError> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .read(run_id, after, max)
    }

    async fn append_run_delta(
        &self,
        run_id: &str,
        delta: &deepfleet_proto::RunDelta,
    ) -> Result<(), StoreError> {
        self.deltas
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .append(run_id, delta);
        Ok(())
    }

    async fn run_deltas(
        &self,
        run_id: &str,
        after: Option<&str>,
        max: usize,
    ) -> Result<Vec<(String, deepfleet_proto::RunDelta)>, StoreError> {
        self.deltas
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .read(run_id, after, max)
    }

    async fn commit_step(&self, commit: &StepCommit) -> Result<CommitOutcome, StoreError> {
        let mut state = self.lock();
        let thread = state.threads.entry(commit.thread_id.clone()).or_default();
        if thread.step != commit.step {
            return Ok(CommitOutcome::Conflict {
                current: thread.step,
            });
        }
        thread.step += 1;
        thread.messages.extend(commit.messages.iter().cloned());
        thread.tokens += log_tokens(&commit.messages);
        if let Some(context) = &commit.context {
            thread.context = context.clone();
        }
        for (path, file) in &commit.files {
            match file {
                Some(file) => thread.files.insert(path.clone(), file.clone()),
                None => thread.files.remove(path),
            };
        }
        if let Some(custom) = &commit.state {
            thread.state = custom.clone();
        }
        thread.pending = commit.pending.clone();
        let run_id = commit.run.run_id.clone();
        state.runs.insert(run_id.clone(), commit.run.clone());
        if let Some(expected) = commit.fan_in_expected {
            state.fan_in.insert(
                run_id,
                FanIn {
                    expected,
                    results: BTreeMap::new(),
                },
            );
        }
        Ok(CommitOutcome::Committed)
    }

    async fn mark_published(&self, thread_id: &str, step: u64) -> Result<(), StoreError> {
        let mut state = self.lock();
        let thread = state.threads.entry(thread_id.to_owned()).or_default();
        thread.published = thread.published.max(step);
        Ok(())
    }

    async fn record_child_result(
        &self,
        parent: &ParentLink,
        result: &ChildResult,
    ) -> Result<u32, StoreError> {
        let mut state = self.lock();
        let fan_in = state
            .fan_in
            .get_mut(&parent.run_id)
            .ok_or_else(|| StoreError::NotFound(format!("fan-in of run {}", parent.run_id)))?;
        fan_in
            .results
            .entry(result.tool_call_id.clone())
            .or_insert_with(|| result.clone());
        let have = u32::try_from(fan_in.results.len()).unwrap_or(u32::MAX);
        Ok(fan_in.expected.saturating_sub(have))
    }

    async fn child_results(
        &self,
        _thread_id: &str,
        run_id: &str,
    ) -> Result<Vec<ChildResult>, StoreError> {
        Ok(self
            .lock()
            .fan_in
            .get(run_id)
            .map(|f| f.results.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn request_cancel(&self, _thread_id: &str, run_id: &str) -> Result<(), StoreError> {
        self.lock().cancels.insert(run_id.to_owned());
        Ok(())
    }

    async fn cancel_requested(&self, _thread_id: &str, run_id: &str) -> Result<bool, StoreError> {
        Ok(self.lock().cancels.contains(run_id))
    }

    async fn push_batch_done(&self, batch_id: &str, run_id: &str) -> Result<(), StoreError> {
        self.lock()
            .batch_done
            .entry(batch_id.to_owned())
            .or_default()
            .push_back(run_id.to_owned());
        Ok(())
    }

    async fn pop_batch_done(&self, batch_id: &str, max: usize) -> Result<Vec<String>, StoreError> {
        let mut state = self.lock();
        let Some(done) = state.batch_done.get_mut(batch_id) else {
            return Ok(Vec::new());
        };
        let n = max.min(done.len());
        Ok(done.drain(..n).collect())
    }
    async fn put_record(
        &self,
        kind: &str,
        id: &str,
        value: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let mut state = self.lock();
        let records = state.records.entry(kind.to_owned()).or_default();
        records.insert(id.to_owned(), value.clone());
        Ok(())
    }

    async fn insert_record(
        &self,
        kind: &str,
        id: &str,
        value: &serde_json::Value,
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        let records = state.records.entry(kind.to_owned()).or_default();
        if records.contains_key(id) {
            return Ok(false);
        }
        records.insert(id.to_owned(), value.clone());
        Ok(true)
    }

    async fn get_record(
        &self,
        kind: &str,
        id: &str,
    ) -> Result<Option<serde_json::Value>, StoreError> {
        Ok(self
            .lock()
            .records
            .get(kind)
            .and_then(|r| r.get(id))
            .cloned())
    }

    async fn delete_record(&self, kind: &str, id: &str) -> Result<bool, StoreError> {
        Ok(self
            .lock()
            .records
            .get_mut(kind)
            .is_some_and(|r| r.remove(id).is_some()))
    }

    async fn list_records(&self, kind: &str) -> Result<Vec<serde_json::Value>, StoreError> {
        Ok(self
            .lock()
            .records
            .get(kind)
            .map(|r| r.values().cloned().collect())
            .unwrap_or_default())
    }
    async fn put_item(
        &self,
        namespace: &[String],
        key: &str,
        value: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), StoreError> {
        crate::items::check_address(namespace, key)?;
        let now = chrono::Utc::now();
        self.lock().items.put(namespace, key, value, now);
        Ok(())
    }

    async fn get_item(
        &self,
        namespace: &[String],
        key: &str,
    ) -> Result<Option<deepfleet_proto::Item>, StoreError> {
        crate::items::check_address(namespace, key)?;
        Ok(self.lock().items.get(namespace, key))
    }

    async fn delete_item(&self, namespace: &[String], key: &str) -> Result<(), StoreError> {
        crate::items::check_address(namespace, key)?;
        self.lock().items.delete(namespace, key);
        Ok(())
    }

    async fn search_items(
        &self,
        search: &deepfleet_proto::ItemSearch,
    ) -> Result<Vec<deepfleet_proto::Item>, StoreError> {
        crate::items::check_prefix(&search.namespace_prefix)?;
        Ok(self.lock().items.search(search))
    }

    async fn list_namespaces(
        &self,
        query: &deepfleet_proto::NamespaceQuery,
    ) -> Result<Vec<Vec<String>>, StoreError> {
        crate::items::check_prefix(&query.prefix)?;
        Ok(self.lock().items.namespaces(query))
    }
}

/// Tokens of appended messages, for the thread's running total.
fn log_tokens(messages: &[deepfleet_proto::LoggedMessage]) -> u64 {
    messages.iter().map(|m| u64::from(m.tokens)).sum()
}
