//! An in-process store for embedded mode.
//!
//! One mutex around plain maps: every operation is a short critical
//! section with no IO, so the lock is never held across an await, and each
//! operation is trivially atomic, which is what the trait asks for.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use deepfleet_proto::{AgentSpec, ChildResult, ParentLink, RunRecord};

use crate::{Checkpoint, CommitOutcome, StepCommit, Store, StoreError, ThreadSeed};

/// An in-process [`Store`].
#[derive(Default)]
pub struct EmbeddedStore {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    specs: HashMap<String, AgentSpec>,
    runs: HashMap<String, RunRecord>,
    threads: HashMap<String, Checkpoint>,
    fan_in: HashMap<String, FanIn>,
    cancels: HashSet<String>,
    batch_done: HashMap<String, VecDeque<String>>,
}

#[derive(Default)]
struct FanIn {
    expected: u32,
    results: BTreeMap<String, ChildResult>,
}

impl EmbeddedStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves the maps consistent, so a panic
        // elsewhere does not invalidate them.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
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
}
