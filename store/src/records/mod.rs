//! Records: small JSON documents the HTTP API keeps beside the step
//! protocol's own state (API threads, assistants, runs' metadata, batch
//! summaries), by kind and id.

mod embedded;
mod redis;

use async_trait::async_trait;
use serde_json::Value;

use crate::error::StoreError;

/// JSON records by `kind` and `id`.
///
/// Implementations must make each operation atomic on its one record,
/// [`Records::insert_record`] a create-if-absent without a race (exactly
/// one of two concurrent inserts wins), and puts and deletes idempotent.
/// Listing is in no particular order.
#[async_trait]
pub trait Records: Send + Sync + 'static {
    /// Saves a small JSON record (an API thread, assistant or run's
    /// metadata) under `kind` and `id`, replacing an older one. Records are
    /// what the HTTP API keeps beside the step protocol's own state.
    async fn put_record(&self, kind: &str, id: &str, value: &Value) -> Result<(), StoreError>;

    /// Saves a record only if none exists under `kind` and `id`; returns
    /// whether it was written (create-if-absent without a race).
    async fn insert_record(&self, kind: &str, id: &str, value: &Value) -> Result<bool, StoreError>;

    /// Loads a record.
    async fn get_record(&self, kind: &str, id: &str) -> Result<Option<Value>, StoreError>;

    /// Deletes a record; returns whether it existed.
    async fn delete_record(&self, kind: &str, id: &str) -> Result<bool, StoreError>;

    /// Every record of `kind`, in no particular order.
    async fn list_records(&self, kind: &str) -> Result<Vec<Value>, StoreError>;
}
