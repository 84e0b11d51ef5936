//! A2A tasks: the thread of each run `POST /a2a/{assistant_id}` started,
//! by task id (the run id). A2A's `tasks/get` and `tasks/cancel` name the
//! task alone, and run metadata is kept per thread, so this is how the
//! task is found again, by any scheduler instance. A record goes with its
//! run (a delete, a rollback) or its thread.

use deepfleet_proto::TenantId;
use deepfleet_proto::keys::records::A2A_TASKS;
use deepfleet_store::Store;
use serde::{Deserialize, Serialize};

use super::{Owned, Repository};

/// Where an A2A task's run lives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct A2aTask {
    /// The run's thread (the task's context).
    pub thread_id: String,
    /// The assistant whose endpoint started it.
    pub assistant_id: String,
    /// The tenant it belongs to.
    #[serde(default, skip_serializing_if = "TenantId::is_default")]
    pub tenant: TenantId,
}

impl Owned for A2aTask {
    fn tenant(&self) -> &TenantId {
        &self.tenant
    }
}

/// The A2A tasks, by task id.
pub fn a2a_tasks(store: &dyn Store) -> Repository<'_, A2aTask> {
    Repository::new(store, A2A_TASKS)
}
