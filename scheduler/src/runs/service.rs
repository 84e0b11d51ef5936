//! What the runs service works with, shared by every entry that makes or
//! follows runs.

use chrono::{DateTime, Utc};
use deepfleet_store::Store;

use super::graphs::Graphs;
use crate::lifecycle::Lifecycle;

/// The runs service's state: cheap to clone, one per process.
#[derive(Clone)]
pub struct Runs {
    /// Run lifecycle over the store and queue.
    pub life: Lifecycle,
    /// The registered graphs (agent spec names).
    pub graphs: Graphs,
    /// When this scheduler started: the system assistants' timestamps.
    pub started_at: DateTime<Utc>,
    /// Runs one tenant may have pending or running at once.
    pub tenant_runs_in_flight: Option<u32>,
}

impl Runs {
    /// The store, for the repositories.
    pub fn store(&self) -> &dyn Store {
        self.life.store().as_ref()
    }
}
