//! API batches: a header per batch and its members in submission order.

use chrono::{DateTime, Utc};
use deepfleet_proto::TenantId;
use deepfleet_proto::keys::records::{BATCHES, batch_members};
use deepfleet_store::Records;
use serde::{Deserialize, Serialize};

use super::{Owned, Repository};

/// A batch's header: that it exists and how big it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchHeader {
    /// The batch.
    pub batch_id: String,
    /// The tenant it belongs to.
    #[serde(default, skip_serializing_if = "TenantId::is_default")]
    pub tenant: TenantId,
    /// How many runs it was created with.
    pub total: usize,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

/// One run of a batch.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BatchMember {
    /// Its position in the request.
    pub index: u64,
    /// The run.
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
}

impl Owned for BatchHeader {
    fn tenant(&self) -> &TenantId {
        &self.tenant
    }
}

/// Batch headers, by batch id.
pub fn batches(store: &dyn Records) -> Repository<'_, BatchHeader> {
    Repository::new(store, BATCHES)
}

/// The members of `batch_id`, by run id.
pub fn members<'a>(store: &'a dyn Records, batch_id: &str) -> Repository<'a, BatchMember> {
    Repository::new(store, batch_members(batch_id))
}
