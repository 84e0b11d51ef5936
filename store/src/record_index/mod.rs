//! Record indexes: ordered lists of record ids (sorted sets: id ->
//! score), so the HTTP API's listings read one page of ids instead of
//! every record of a kind.
//!
//! An index names records a caller stores through [`crate::Records`]; the
//! store does not tie the two together. Writers add a record, then index
//! it; delete it, then unindex it. A reader therefore may meet an id whose
//! record is gone (deleted meanwhile, or expired): it skips it and removes
//! it with [`RecordIndex::index_remove_at`], which leaves the member alone
//! when a writer re-indexed it meanwhile.
//!
//! **Expiry.** Records expire one by one ([`crate::Records::expire_record`]);
//! their index entries go in one of three ways:
//!
//! - readers remove the members of expired records as they meet them;
//! - [`RecordIndex::index_trim`] removes every member scored below a bound
//!   (for an index scored by time: everything older than the retention);
//! - [`RecordIndex::index_expire`] gives the index key itself an expiry:
//!   call it when every record the index lists expires within that time
//!   (a finished batch's members, a temporary thread's runs), and the
//!   index disappears with them. [`RecordIndex::index_put`] clears that
//!   expiry again, since the new member's record may outlive it.
//!
//! An index left empty is no key at all, on Redis as in the embedded
//! store.

pub(crate) mod table;

use std::time::Duration;

use async_trait::async_trait;

use crate::error::StoreError;

/// Which way a page runs through an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Lowest score first; equal scores by id, byte-wise.
    Ascending,
    /// Highest score first; equal scores by id, byte-wise descending.
    Descending,
}

/// One member of an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// The record id.
    pub id: String,
    /// Its score.
    pub score: i64,
}

/// Ordered indexes of record ids by name.
///
/// Scores are integers within ±2^53 (microseconds since the epoch fit),
/// exact on every store. Implementations must make each operation atomic
/// on its one index, order members by score then id as [`Order`] says,
/// and page by position in that order, so that one page costs its size
/// (plus a logarithm), never the size of the index.
#[async_trait]
pub trait RecordIndex: Send + Sync + 'static {
    /// Adds `id` to `index` with `score`, or moves it there; clears an
    /// expiry the index had (see the module docs).
    async fn index_put(&self, index: &str, id: &str, score: i64) -> Result<(), StoreError>;

    /// Removes `id` from `index`; returns whether it was there.
    async fn index_remove(&self, index: &str, id: &str) -> Result<bool, StoreError>;

    /// Removes `id` from `index` only if its score is still `score`, as a
    /// reader saw it: a member re-indexed meanwhile (with a new score)
    /// stays. Returns whether it was removed.
    async fn index_remove_at(&self, index: &str, id: &str, score: i64) -> Result<bool, StoreError>;

    /// The score of `id` in `index`, if it is a member.
    async fn index_score(&self, index: &str, id: &str) -> Result<Option<i64>, StoreError>;

    /// Moves `id` from `score` to `to` only if its score is still `score`
    /// (a compare-and-set on one member); returns whether it moved. Of
    /// several callers that saw the same score, exactly one moves it: an
    /// index scored by due time hands each due entry to one of them.
    async fn index_move_at(
        &self,
        index: &str,
        id: &str,
        score: i64,
        to: i64,
    ) -> Result<bool, StoreError>;

    /// How many members `index` has.
    async fn index_count(&self, index: &str) -> Result<u64, StoreError>;

    /// The members of `index` at positions `offset..offset + limit` in
    /// `order`.
    async fn index_page(
        &self,
        index: &str,
        order: Order,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<IndexEntry>, StoreError>;

    /// Removes every member scored below `below`; returns how many.
    async fn index_trim(&self, index: &str, below: i64) -> Result<u64, StoreError>;

    /// Deletes the whole index after `ttl` (at once for a zero `ttl`),
    /// unless a member is added before; returns whether the index exists.
    async fn index_expire(&self, index: &str, ttl: Duration) -> Result<bool, StoreError>;
}
