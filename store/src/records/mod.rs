//! Records: small JSON documents the HTTP API keeps beside the step
//! protocol's own state (API threads, assistants, runs' metadata, batch
//! summaries), by kind and id. Listings go through
//! [`crate::RecordIndex`]: the store keeps no list of a kind's records.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use crate::error::StoreError;

/// JSON records by `kind` and `id`.
///
/// Implementations must make each operation atomic on its one record,
/// [`Records::insert_record`] a create-if-absent without a race (exactly
/// one of two concurrent inserts wins), and puts and deletes idempotent.
/// A record past its expiry ([`Records::expire_record`]) is gone for every
/// operation at once, whenever its storage is actually freed.
#[async_trait]
pub trait Records: Send + Sync + 'static {
    /// Saves a small JSON record (an API thread, assistant or run's
    /// metadata) under `kind` and `id`, replacing an older one and its
    /// expiry (a replaced record does not expire until it is given an
    /// expiry again). Records are what the HTTP API keeps beside the step
    /// protocol's own state.
    async fn put_record(&self, kind: &str, id: &str, value: &Value) -> Result<(), StoreError>;

    /// Saves a record only if none exists under `kind` and `id`; returns
    /// whether it was written (create-if-absent without a race).
    async fn insert_record(&self, kind: &str, id: &str, value: &Value) -> Result<bool, StoreError>;

    /// Saves a record only if none exists under `kind` and `id`, expiring
    /// `ttl` from now, as one step; returns whether it was written. A
    /// lease: of several processes claiming the same id, exactly one wins,
    /// and a claimant that dies without releasing it (deleting the record)
    /// loses it at the deadline, never holding it for good as an insert
    /// followed by an expiry could.
    async fn claim_record(
        &self,
        kind: &str,
        id: &str,
        value: &Value,
        ttl: Duration,
    ) -> Result<bool, StoreError>;

    /// Loads a record.
    async fn get_record(&self, kind: &str, id: &str) -> Result<Option<Value>, StoreError>;

    /// Deletes a record; returns whether it existed.
    async fn delete_record(&self, kind: &str, id: &str) -> Result<bool, StoreError>;

    /// Makes a record expire `ttl` from now (at once for a zero `ttl`);
    /// returns whether it exists. A later put or insert replaces the
    /// expiry.
    async fn expire_record(&self, kind: &str, id: &str, ttl: Duration) -> Result<bool, StoreError>;
}
