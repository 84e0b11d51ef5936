//! Cron records: a schedule, the run it creates and whose it is. When a
//! cron fires next is not kept here but as its score in the
//! [`CRON_DUE`] index, which the cron loops claim from (see
//! [`crate::crons`]): a claim moves that score, so it never rewrites a
//! record a `PATCH` may be changing at the same time.

use chrono::{DateTime, Utc};
use deepfleet_proto::api::RunCreateParams;
use deepfleet_proto::keys::records::{CRON_DUE, CRONS, tenant_crons};
use deepfleet_proto::{SealedContext, TenantId};
use deepfleet_store::{Store, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Listing, Owned, Repository, score_at};

/// What the API keeps about a cron.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CronRecord {
    /// The cron.
    pub cron_id: String,
    /// The tenant it belongs to, whose runs it creates.
    #[serde(default, skip_serializing_if = "TenantId::is_default")]
    pub tenant: TenantId,
    /// The thread its runs go to; none for a stateless cron.
    pub thread_id: Option<String>,
    /// The cron expression.
    pub schedule: String,
    /// Its IANA time zone; none is UTC.
    pub timezone: Option<String>,
    /// No run is created after this time.
    pub end_time: Option<DateTime<Utc>>,
    /// Whether it fires.
    pub enabled: bool,
    /// Stateless crons: `delete` or `keep` each run's thread.
    pub on_run_completed: Option<String>,
    /// The run each firing creates, without its context.
    pub payload: RunCreateParams,
    /// The request's context and `configurable`, sealed: opened only to
    /// create a run.
    pub context: Option<SealedContext>,
    /// Caller metadata (searchable).
    pub metadata: Map<String, Value>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

impl Owned for CronRecord {
    fn tenant(&self) -> &TenantId {
        &self.tenant
    }
}

/// The cron records, by cron id, each listed in its tenant's
/// [`tenant_crons`] index by creation time.
pub fn crons(store: &dyn Store) -> Repository<'_, CronRecord> {
    Repository::new(store, CRONS).indexed(|cron: &CronRecord| {
        vec![Listing::new(
            tenant_crons(cron.tenant.as_str()),
            score_at(cron.created_at),
        )]
    })
}

/// When `cron_id` fires next, as the due index has it.
pub async fn next_run(
    store: &dyn Store,
    cron_id: &str,
) -> Result<Option<DateTime<Utc>>, StoreError> {
    Ok(store
        .index_score(CRON_DUE, cron_id)
        .await?
        .and_then(DateTime::from_timestamp_micros))
}

/// Sets when `cron_id` fires next; `None` takes it off the due index (a
/// disabled cron, or one past its end).
pub async fn set_next_run(
    store: &dyn Store,
    cron_id: &str,
    next: Option<DateTime<Utc>>,
) -> Result<(), StoreError> {
    match next {
        Some(at) => store.index_put(CRON_DUE, cron_id, score_at(at)).await,
        None => store.index_remove(CRON_DUE, cron_id).await.map(|_| ()),
    }
}
