//! Thread records: what the API keeps about a thread beside its
//! checkpoint.

use chrono::{DateTime, Utc};
use deepfleet_proto::TenantId;
use deepfleet_proto::api::ThreadTtl;
use deepfleet_proto::keys::records::{THREADS, tenant_threads};
use deepfleet_store::Store;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Listing, Owned, Repository, score_at};

/// What the API keeps about a thread beside its checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRecord {
    /// The thread.
    pub thread_id: String,
    /// The tenant it belongs to (records from before tenants: the
    /// default one).
    #[serde(default, skip_serializing_if = "TenantId::is_default")]
    pub tenant: TenantId,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When a run last started or the record changed.
    pub updated_at: DateTime<Utc>,
    /// Caller metadata (searchable).
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// The run that last started on the thread.
    #[serde(default)]
    pub active_run: Option<String>,
    /// Made for a stateless run; listed in no search.
    #[serde(default)]
    pub temporary: bool,
    /// A run to roll back once it has stopped (`action=rollback`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<String>,
    /// Deletes the thread once this long has passed since `updated_at`
    /// (see `lifecycle::thread_ttl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<ThreadTtl>,
}

impl ThreadRecord {
    /// A new, idle thread of `tenant`.
    pub fn new(tenant: TenantId, thread_id: String, metadata: Map<String, Value>) -> Self {
        let now = Utc::now();
        ThreadRecord {
            thread_id,
            tenant,
            created_at: now,
            updated_at: now,
            metadata,
            active_run: None,
            temporary: false,
            rollback: None,
            ttl: None,
        }
    }
}

impl Owned for ThreadRecord {
    fn tenant(&self) -> &TenantId {
        &self.tenant
    }
}

/// The thread records, by thread id; each but the temporary ones listed
/// in its tenant's [`tenant_threads`] index by creation time.
pub fn threads(store: &dyn Store) -> Repository<'_, ThreadRecord> {
    Repository::new(store, THREADS).indexed(|thread: &ThreadRecord| {
        if thread.temporary {
            return Vec::new();
        }
        vec![Listing::new(
            tenant_threads(thread.tenant.as_str()),
            score_at(thread.created_at),
        )]
    })
}
