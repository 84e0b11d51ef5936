//! Subagent fan-in: the results a parked run collects from its children
//! before it resumes. A commit that parks a run
//! ([`crate::StepCommit::fan_in_expected`]) opens the fan-in; each child's
//! completion records its result here.

use async_trait::async_trait;
use deepfleet_proto::{ChildResult, ParentLink};

use crate::error::StoreError;

/// Child results of parked runs.
///
/// Implementations must make [`FanIn::record_child_result`] atomic and
/// idempotent per `task` call id (a redelivered completion keeps the first
/// result and does not count twice), so exactly one child sees the count
/// reach zero and resumes the parent.
#[async_trait]
pub trait FanIn: Send + Sync + 'static {
    /// Records a subagent's result for its parent, once per `task` call
    /// (repeats are ignored). Returns how many results the parent still
    /// waits for; [`StoreError::NotFound`] when the parent is not parked.
    async fn record_child_result(
        &self,
        parent: &ParentLink,
        result: &ChildResult,
    ) -> Result<u32, StoreError>;

    /// The child results recorded for a parked run, in no particular order.
    async fn child_results(
        &self,
        thread_id: &str,
        run_id: &str,
    ) -> Result<Vec<ChildResult>, StoreError>;
}
