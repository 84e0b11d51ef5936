//! Items in the embedded store's item table (see `table.rs`).

use async_trait::async_trait;
use deepfleet_proto::{Item, ItemSearch, NamespaceQuery};
use serde_json::{Map, Value};

use crate::embedded::EmbeddedStore;
use crate::error::StoreError;
use crate::items::Items;
use crate::items::query::{check_address, check_prefix};

#[async_trait]
impl Items for EmbeddedStore {
    async fn put_item(
        &self,
        namespace: &[String],
        key: &str,
        value: &Map<String, Value>,
    ) -> Result<(), StoreError> {
        check_address(namespace, key)?;
        let now = chrono::Utc::now();
        self.lock().items.put(namespace, key, value, now);
        Ok(())
    }

    async fn get_item(&self, namespace: &[String], key: &str) -> Result<Option<Item>, StoreError> {
        check_address(namespace, key)?;
        Ok(self.lock().items.get(namespace, key))
    }

    async fn delete_item(&self, namespace: &[String], key: &str) -> Result<(), StoreError> {
        check_address(namespace, key)?;
        self.lock().items.delete(namespace, key);
        Ok(())
    }

    async fn search_items(&self, search: &ItemSearch) -> Result<Vec<Item>, StoreError> {
        check_prefix(&search.namespace_prefix)?;
        Ok(self.lock().items.search(search))
    }

    async fn list_namespaces(
        &self,
        query: &NamespaceQuery,
    ) -> Result<Vec<Vec<String>>, StoreError> {
        check_prefix(&query.prefix)?;
        Ok(self.lock().items.namespaces(query))
    }
}
