//! API batches: a header per batch and its members in submission order.

use chrono::{DateTime, Utc};
use deepfleet_proto::TenantId;
use deepfleet_proto::keys::records::{BATCHES, batch_members};
use deepfleet_store::Store;
use serde::{Deserialize, Serialize};

use super::{Listing, Owned, Repository};

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
    /// The SHA-256 of the request that made it, when it came with an
    /// `Idempotency-Key`: a retry with the same key must send the same
    /// runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
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

impl BatchMember {
    /// Its score in the batch's index: its position.
    pub fn score(&self) -> i64 {
        i64::try_from(self.index).unwrap_or(i64::MAX)
    }
}

impl Owned for BatchHeader {
    fn tenant(&self) -> &TenantId {
        &self.tenant
    }
}

/// Batch headers, by batch id.
pub fn batches(store: &dyn Store) -> Repository<'_, BatchHeader> {
    Repository::new(store, BATCHES)
}

/// The members of `batch_id`, by run id, listed in the index of the same
/// name in submission order.
pub fn members<'a>(store: &'a dyn Store, batch_id: &str) -> Repository<'a, BatchMember> {
    let index = batch_members(batch_id);
    Repository::new(store, index.clone())
        .indexed(move |member: &BatchMember| vec![Listing::new(index.clone(), member.score())])
}
