//! Run records: creating a run (and seeding its thread), reading it back
//! by thread and id or by id alone, and the cancel flag a run checks at
//! each step boundary.
//!
//! A run's record is rewritten by every step it commits
//! ([`crate::Checkpoints::commit_step`]); this capability creates it and
//! reads it.

use std::collections::BTreeMap;

use async_trait::async_trait;
use deepfleet_proto::{FileData, LoggedMessage, RunRecord};
use serde_json::{Map, Value};

use crate::error::StoreError;

/// What a new run brings to its thread.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadSeed {
    /// Messages appended to the thread (the run's input).
    pub messages: Vec<LoggedMessage>,
    /// Files written into the state backend.
    pub files: BTreeMap<String, FileData>,
    /// Custom state fields set on the thread.
    pub state: Map<String, Value>,
}

/// Run records and cancel flags.
///
/// Implementations must make [`Runs::create_run`] idempotent (a repeated
/// creation writes nothing, so a redelivered intake is harmless) and
/// atomic with its thread seed, never overwriting state a concurrent
/// commit wrote; a run created by one process must be found by id from
/// any other sharing the store. Cancel flags only ever get set.
#[async_trait]
pub trait Runs: Send + Sync + 'static {
    /// Creates `run` and applies `seed` to its thread. Returns the thread's
    /// step at which the run starts, or `None` if the run already existed
    /// (nothing is written then: creation is idempotent).
    async fn create_run(
        &self,
        run: &RunRecord,
        seed: &ThreadSeed,
    ) -> Result<Option<u64>, StoreError>;

    /// Loads a run record.
    async fn get_run(&self, thread_id: &str, run_id: &str)
    -> Result<Option<RunRecord>, StoreError>;

    /// Loads a run record by id alone.
    async fn find_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError>;

    /// Asks a run to stop at its next step boundary.
    async fn request_cancel(&self, thread_id: &str, run_id: &str) -> Result<(), StoreError>;

    /// Whether a run was asked to stop.
    async fn cancel_requested(&self, thread_id: &str, run_id: &str) -> Result<bool, StoreError>;
}
