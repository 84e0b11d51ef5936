//! Records in the embedded store's `records` map: kind -> id -> value.

use async_trait::async_trait;
use serde_json::Value;

use super::Records;
use crate::embedded::EmbeddedStore;
use crate::error::StoreError;

#[async_trait]
impl Records for EmbeddedStore {
    async fn put_record(&self, kind: &str, id: &str, value: &Value) -> Result<(), StoreError> {
        let mut state = self.lock();
        let records = state.records.entry(kind.to_owned()).or_default();
        records.insert(id.to_owned(), value.clone());
        Ok(())
    }

    async fn insert_record(&self, kind: &str, id: &str, value: &Value) -> Result<bool, StoreError> {
        let mut state = self.lock();
        let records = state.records.entry(kind.to_owned()).or_default();
        if records.contains_key(id) {
            return Ok(false);
        }
        records.insert(id.to_owned(), value.clone());
        Ok(true)
    }

    async fn get_record(&self, kind: &str, id: &str) -> Result<Option<Value>, StoreError> {
        Ok(self
            .lock()
            .records
            .get(kind)
            .and_then(|r| r.get(id))
            .cloned())
    }

    async fn delete_record(&self, kind: &str, id: &str) -> Result<bool, StoreError> {
        Ok(self
            .lock()
            .records
            .get_mut(kind)
            .is_some_and(|r| r.remove(id).is_some()))
    }

    async fn list_records(&self, kind: &str) -> Result<Vec<Value>, StoreError> {
        Ok(self
            .lock()
            .records
            .get(kind)
            .map(|r| r.values().cloned().collect())
            .unwrap_or_default())
    }
}
