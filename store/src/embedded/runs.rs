//! Runs in the embedded store: the `runs` map by run id, the `cancels`
//! set, and the seed applied to `threads` in the same critical section,
//! where the run also joins what its thread owns (`owned`) and the seed
//! is told to the thread's `history`.

use async_trait::async_trait;
use deepfleet_proto::RunRecord;

use crate::checkpoints::log_tokens;
use crate::embedded::EmbeddedStore;
use crate::error::StoreError;
use crate::history::Change;
use crate::runs::{Runs, ThreadSeed};

#[async_trait]
impl Runs for EmbeddedStore {
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
        state.own_run(run);
        let thread = state.threads.entry(run.thread_id.clone()).or_default();
        thread.messages.extend(seed.messages.iter().cloned());
        thread.tokens += log_tokens(&seed.messages);
        thread
            .files
            .extend(seed.files.iter().map(|(k, v)| (k.clone(), v.clone())));
        thread
            .state
            .extend(seed.state.iter().map(|(k, v)| (k.clone(), v.clone())));
        let step = thread.step;
        if let Some(change) = Change::of_seed(&run.run_id, seed) {
            state.tell_history(&run.thread_id, change);
        }
        Ok(Some(step))
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

    async fn request_cancel(&self, _thread_id: &str, run_id: &str) -> Result<(), StoreError> {
        self.lock().cancels.insert(run_id.to_owned());
        Ok(())
    }

    async fn cancel_requested(&self, _thread_id: &str, run_id: &str) -> Result<bool, StoreError> {
        Ok(self.lock().cancels.contains(run_id))
    }
}
