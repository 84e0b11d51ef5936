//! Records in the embedded store's `records` map (kind -> id -> value),
//! with the deadlines of those given an expiry in `record_deadlines`
//! (kept in the snapshot, as wall-clock times, so a reopened store still
//! expires them).
//!
//! An expired record is invisible at once and removed when an operation
//! meets it, or by the sweep that a write runs at most every
//! [`SWEEP_EVERY`], so records nobody reads again do not stay forever.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::embedded::{EmbeddedStore, State};
use crate::error::StoreError;
use crate::records::Records;

/// How often a write sweeps out every expired record and index.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(10);

#[async_trait]
impl Records for EmbeddedStore {
    async fn put_record(&self, kind: &str, id: &str, value: &Value) -> Result<(), StoreError> {
        let mut state = self.lock();
        let now = Utc::now();
        state.sweep(now);
        forget_deadline(&mut state, kind, id);
        let records = state.records.entry(kind.to_owned()).or_default();
        records.insert(id.to_owned(), value.clone());
        Ok(())
    }

    async fn insert_record(&self, kind: &str, id: &str, value: &Value) -> Result<bool, StoreError> {
        let mut state = self.lock();
        let now = Utc::now();
        state.sweep(now);
        if live(&state, kind, id, now) {
            return Ok(false);
        }
        forget_deadline(&mut state, kind, id);
        let records = state.records.entry(kind.to_owned()).or_default();
        records.insert(id.to_owned(), value.clone());
        Ok(true)
    }

    async fn claim_record(
        &self,
        kind: &str,
        id: &str,
        value: &Value,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        let now = Utc::now();
        state.sweep(now);
        if live(&state, kind, id, now) {
            return Ok(false);
        }
        let records = state.records.entry(kind.to_owned()).or_default();
        records.insert(id.to_owned(), value.clone());
        state
            .record_deadlines
            .entry(kind.to_owned())
            .or_default()
            .insert(id.to_owned(), deadline_after(now, ttl));
        Ok(true)
    }

    async fn get_record(&self, kind: &str, id: &str) -> Result<Option<Value>, StoreError> {
        let now = Utc::now();
        let state = self.lock();
        if live(&state, kind, id, now) {
            return Ok(state.records.get(kind).and_then(|r| r.get(id)).cloned());
        }
        if state.records.get(kind).is_some_and(|r| r.contains_key(id)) {
            // Expired: mutate (and snapshot) only now that there is a
            // record to remove.
            let mut state = state;
            remove(&mut state, kind, id);
        }
        Ok(None)
    }

    async fn delete_record(&self, kind: &str, id: &str) -> Result<bool, StoreError> {
        let now = Utc::now();
        let mut state = self.lock();
        let existed = live(&state, kind, id, now);
        remove(&mut state, kind, id);
        Ok(existed)
    }

    async fn expire_record(&self, kind: &str, id: &str, ttl: Duration) -> Result<bool, StoreError> {
        let now = Utc::now();
        let mut state = self.lock();
        if !live(&state, kind, id, now) {
            return Ok(false);
        }
        if ttl.is_zero() {
            remove(&mut state, kind, id);
            return Ok(true);
        }
        let deadline = deadline_after(now, ttl);
        state
            .record_deadlines
            .entry(kind.to_owned())
            .or_default()
            .insert(id.to_owned(), deadline);
        Ok(true)
    }
}

/// `now + ttl`, or the far future when that does not fit.
pub(crate) fn deadline_after(now: DateTime<Utc>, ttl: Duration) -> DateTime<Utc> {
    chrono::Duration::from_std(ttl)
        .ok()
        .and_then(|ttl| now.checked_add_signed(ttl))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// Whether the record exists and has not expired by `now`.
fn live(state: &State, kind: &str, id: &str, now: DateTime<Utc>) -> bool {
    let exists = state.records.get(kind).is_some_and(|r| r.contains_key(id));
    let expired = state
        .record_deadlines
        .get(kind)
        .and_then(|d| d.get(id))
        .is_some_and(|deadline| *deadline <= now);
    exists && !expired
}

fn forget_deadline(state: &mut State, kind: &str, id: &str) {
    if let Some(deadlines) = state.record_deadlines.get_mut(kind) {
        deadlines.remove(id);
        if deadlines.is_empty() {
            state.record_deadlines.remove(kind);
        }
    }
}

/// Removes a record and its deadline; a kind left empty goes too.
fn remove(state: &mut State, kind: &str, id: &str) {
    forget_deadline(state, kind, id);
    if let Some(records) = state.records.get_mut(kind) {
        records.remove(id);
        if records.is_empty() {
            state.records.remove(kind);
        }
    }
}

impl State {
    /// Removes every record and index past its deadline, unless the last
    /// sweep was less than [`SWEEP_EVERY`] ago.
    pub(crate) fn sweep(&mut self, now: DateTime<Utc>) {
        let due = self.swept_at.is_none_or(|at| {
            now.signed_duration_since(at)
                .to_std()
                .is_ok_and(|since| since >= SWEEP_EVERY)
        });
        if !due {
            return;
        }
        self.swept_at = Some(now);
        let expired: Vec<(String, String)> = self
            .record_deadlines
            .iter()
            .flat_map(|(kind, deadlines)| {
                deadlines
                    .iter()
                    .filter(|(_, deadline)| **deadline <= now)
                    .map(|(id, _)| (kind.clone(), id.clone()))
            })
            .collect();
        for (kind, id) in expired {
            remove(self, &kind, &id);
        }
        self.record_indexes.retain(|_, index| index.is_live(now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record_index::{Order, RecordIndex};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[tokio::test]
    async fn a_reopened_store_keeps_the_deadlines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        {
            let store = EmbeddedStore::open(&path).unwrap();
            for id in ["soon", "later"] {
                store.put_record("runs/t", id, &json!(1)).await.unwrap();
            }
            let soon = Duration::from_millis(100);
            store.expire_record("runs/t", "soon", soon).await.unwrap();
            let later = Duration::from_secs(3600);
            store.expire_record("runs/t", "later", later).await.unwrap();
            store.index_put("runs/t", "later", 1).await.unwrap();
            store.index_expire("runs/t", later).await.unwrap();
            store.flush().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let store = EmbeddedStore::open(&path).unwrap();
        assert_eq!(store.get_record("runs/t", "soon").await.unwrap(), None);
        assert_eq!(
            store.get_record("runs/t", "later").await.unwrap(),
            Some(json!(1))
        );
        let state = store.lock();
        let deadline = state.record_deadlines["runs/t"]["later"];
        assert!(deadline > Utc::now() + chrono::Duration::minutes(59));
        assert!(state.record_indexes["runs/t"].is_live(Utc::now()));
    }

    #[tokio::test]
    async fn a_write_sweeps_out_expired_records_and_indexes() {
        let store = EmbeddedStore::new();
        store.put_record("a", "x", &json!(1)).await.unwrap();
        store
            .expire_record("a", "x", Duration::from_millis(1))
            .await
            .unwrap();
        store.index_put("i", "x", 1).await.unwrap();
        store
            .index_expire("i", Duration::from_millis(1))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        // The last sweep was long enough ago.
        store.lock().swept_at = Some(Utc::now() - chrono::Duration::minutes(1));
        store.put_record("b", "y", &json!(2)).await.unwrap();
        let state = store.lock();
        assert!(!state.records.contains_key("a"));
        assert!(state.record_deadlines.is_empty());
        assert!(!state.record_indexes.contains_key("i"));
        drop(state);
        assert!(
            store
                .index_page("i", Order::Ascending, 0, 1)
                .await
                .unwrap()
                .is_empty()
        );
    }
}
