//! Record indexes in the embedded store's `record_indexes` map. An index
//! past its expiry is invisible at once and removed when an operation
//! meets it (or by the records' sweep); an index left empty is removed
//! with its last member, as Redis removes an empty sorted set.

use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;

use super::records::deadline_after;
use crate::embedded::{EmbeddedStore, Locked};
use crate::error::StoreError;
use crate::record_index::table::IndexTable;
use crate::record_index::{IndexEntry, Order, RecordIndex};

#[async_trait]
impl RecordIndex for EmbeddedStore {
    async fn index_put(&self, index: &str, id: &str, score: i64) -> Result<(), StoreError> {
        let mut state = self.lock();
        let now = Utc::now();
        state.sweep(now);
        let table = state.record_indexes.entry(index.to_owned()).or_default();
        if !table.is_live(now) {
            *table = IndexTable::default();
        }
        table.put(id, score);
        Ok(())
    }

    async fn index_remove(&self, index: &str, id: &str) -> Result<bool, StoreError> {
        Ok(remove(&mut self.lock(), index, id, None))
    }

    async fn index_remove_at(&self, index: &str, id: &str, score: i64) -> Result<bool, StoreError> {
        Ok(remove(&mut self.lock(), index, id, Some(score)))
    }

    async fn index_score(&self, index: &str, id: &str) -> Result<Option<i64>, StoreError> {
        let state = self.lock();
        Ok(live(&state, index).and_then(|t| t.score(id)))
    }

    async fn index_move_at(
        &self,
        index: &str,
        id: &str,
        score: i64,
        to: i64,
    ) -> Result<bool, StoreError> {
        // The compare and the move happen under the one lock.
        let mut state = self.lock();
        if live(&state, index).and_then(|t| t.score(id)) != Some(score) {
            return Ok(false);
        }
        let Some(table) = state.record_indexes.get_mut(index) else {
            return Ok(false);
        };
        table.rescore(id, to);
        Ok(true)
    }

    async fn index_count(&self, index: &str) -> Result<u64, StoreError> {
        let state = self.lock();
        let n = live(&state, index).map_or(0, IndexTable::len);
        Ok(u64::try_from(n).unwrap_or(u64::MAX))
    }

    async fn index_page(
        &self,
        index: &str,
        order: Order,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<IndexEntry>, StoreError> {
        let state = self.lock();
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        Ok(live(&state, index).map_or_else(Vec::new, |t| t.page(order, offset, limit)))
    }

    async fn index_trim(&self, index: &str, below: i64) -> Result<u64, StoreError> {
        let mut state = self.lock();
        if live(&state, index).is_none() {
            return Ok(0);
        }
        let Some(table) = state.record_indexes.get_mut(index) else {
            return Ok(0);
        };
        let trimmed = table.trim(below);
        if table.len() == 0 {
            state.record_indexes.remove(index);
        }
        Ok(u64::try_from(trimmed).unwrap_or(u64::MAX))
    }

    async fn index_expire(&self, index: &str, ttl: Duration) -> Result<bool, StoreError> {
        let now = Utc::now();
        let mut state = self.lock();
        if live(&state, index).is_none() {
            return Ok(false);
        }
        if ttl.is_zero() {
            state.record_indexes.remove(index);
        } else if let Some(table) = state.record_indexes.get_mut(index) {
            table.expire_at(deadline_after(now, ttl));
        }
        Ok(true)
    }
}

/// The index, unless it is missing or expired.
fn live<'a>(state: &'a Locked<'_>, index: &str) -> Option<&'a IndexTable> {
    state
        .record_indexes
        .get(index)
        .filter(|t| t.is_live(Utc::now()))
}

/// Removes `id` (at score `at`, if given); an index left empty, or found
/// expired, goes.
fn remove(state: &mut Locked<'_>, index: &str, id: &str, at: Option<i64>) -> bool {
    let Some(table) = live(state, index) else {
        if state.record_indexes.contains_key(index) {
            state.record_indexes.remove(index);
        }
        return false;
    };
    if !table.contains(id) {
        return false;
    }
    let Some(table) = state.record_indexes.get_mut(index) else {
        return false;
    };
    let removed = table.remove(id, at);
    if table.len() == 0 {
        state.record_indexes.remove(index);
    }
    removed
}
