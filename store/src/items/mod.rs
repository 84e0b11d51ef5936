//! Long-term items (the Agent Server store shape): JSON objects by
//! namespace and key, shared across threads, searched by namespace
//! prefix and filtered by field equality.
//!
//! Order is the same everywhere: namespaces label by label, then keys
//! byte-wise, so a search pages identically on every store.

pub(crate) mod query;
pub(crate) mod table;

use async_trait::async_trait;
use deepfleet_proto::{Item, ItemSearch, NamespaceQuery};
use serde_json::{Map, Value};

use crate::error::StoreError;

/// The long-term store.
///
/// Implementations must refuse a bad namespace, prefix or key with
/// [`StoreError::Invalid`] before reading or writing anything, make a put
/// atomic with the namespace index a search reads (an item is never
/// unreachable by a listing), keep `created_at` across replacements, and
/// order and page results as the module doc says.
#[async_trait]
pub trait Items: Send + Sync + 'static {
    /// Puts a long-term item (the Agent Server store shape): creates it or
    /// replaces its value, keeping `created_at` and stamping `updated_at`.
    /// A bad namespace or key is [`StoreError::Invalid`]; nothing is written.
    async fn put_item(
        &self,
        namespace: &[String],
        key: &str,
        value: &Map<String, Value>,
    ) -> Result<(), StoreError>;

    /// Loads a long-term item.
    async fn get_item(&self, namespace: &[String], key: &str) -> Result<Option<Item>, StoreError>;

    /// Deletes a long-term item; deleting a missing one is not an error.
    async fn delete_item(&self, namespace: &[String], key: &str) -> Result<(), StoreError>;

    /// Items under a namespace prefix whose values match the filter,
    /// ordered by namespace (label by label) then key, paged by offset and
    /// limit.
    async fn search_items(&self, search: &ItemSearch) -> Result<Vec<Item>, StoreError>;

    /// Namespaces holding items, matched, cut and paged as `query` asks.
    async fn list_namespaces(&self, query: &NamespaceQuery)
    -> Result<Vec<Vec<String>>, StoreError>;
}
