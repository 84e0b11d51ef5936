//! Run metadata: what the API keeps about a run beside its
//! [`RunRecord`](deepfleet_proto::RunRecord), one kind per thread.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use deepfleet_proto::api::MultitaskStrategy;
use deepfleet_proto::keys::records::thread_runs;
use deepfleet_proto::{FileData, Message, Priority, SealedContext, TenantId};
use deepfleet_store::Store;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Listing, Repository, score_at};
use crate::state_edit::Rewind;

/// What the API keeps about a run beside its run record: the request
/// that made it, so a queued run can start later and `GET` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// The run.
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
    /// The tenant it belongs to, its thread's.
    #[serde(default, skip_serializing_if = "TenantId::is_default")]
    pub tenant: TenantId,
    /// The assistant it runs.
    pub assistant_id: String,
    /// The agent spec (the assistant's graph).
    pub graph_id: String,
    /// Caller metadata.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// The request's run arguments, echoed as the run's `kwargs`.
    #[serde(default)]
    pub kwargs: Map<String, Value>,
    /// The multitask strategy it was created with.
    pub multitask_strategy: MultitaskStrategy,
    /// The batch it belongs to.
    #[serde(default)]
    pub batch_id: Option<String>,
    /// The messages it appends to its thread when it starts.
    #[serde(default)]
    pub input: Vec<Message>,
    /// The files it writes into its thread's state backend when it starts.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, FileData>,
    /// Its runtime context (the assistant's, overridden by the request's),
    /// sealed: it may carry keys, and is never stored in clear.
    #[serde(default)]
    pub context: Option<SealedContext>,
    /// Cancelled before it started.
    #[serde(default)]
    pub cancelled: bool,
    /// The lane its steps take (interactive unless asked otherwise or
    /// part of an API batch).
    #[serde(default, skip_serializing_if = "Priority::is_batch")]
    pub priority: Priority,
    /// When it was accepted.
    pub created_at: DateTime<Utc>,
    /// Not started before this (`after_seconds`): it waits in its
    /// thread's queue until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<DateTime<Utc>>,
    /// Where it starts from, when not from the thread as it is: a fork
    /// from a checkpoint, its `command.update`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewind: Option<Rewind>,
}

/// The request field (kept in `kwargs`) of a run's own deadline, in
/// seconds: deepfleet's, beside the Agent Server's fields.
pub const TIMEOUT_SECS: &str = "timeout_secs";

impl RunMeta {
    /// The seconds the request gave the run (`timeout_secs`), if any.
    pub fn requested_timeout_secs(&self) -> Option<u64> {
        self.kwargs.get(TIMEOUT_SECS).and_then(Value::as_u64)
    }

    /// The order runs are listed and started in: oldest first, ties by id.
    pub fn age(&self) -> (DateTime<Utc>, &str) {
        (self.created_at, &self.run_id)
    }
}

/// The run metadata of `thread_id`, by run id, listed in the thread's
/// [`thread_runs`] index by creation time.
pub fn runs_of<'a>(store: &'a dyn Store, thread_id: &str) -> Repository<'a, RunMeta> {
    Repository::new(store, thread_runs(thread_id)).indexed(|meta: &RunMeta| {
        vec![Listing::new(
            thread_runs(&meta.thread_id),
            score_at(meta.created_at),
        )]
    })
}
