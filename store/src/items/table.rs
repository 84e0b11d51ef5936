//! The embedded store's items, kept in its persisted state.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use deepfleet_proto::item::join_namespace;
use deepfleet_proto::{Item, ItemSearch, NamespaceQuery};
use serde_json::{Map, Value};

use super::query::{Pager, has_prefix, list_namespaces};

/// The embedded store's items, by dot-joined namespace (string keys, so
/// the table serializes as JSON) then key.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct ItemTable {
    namespaces: BTreeMap<String, BTreeMap<String, Item>>,
}

impl ItemTable {
    pub(crate) fn put(
        &mut self,
        namespace: &[String],
        key: &str,
        value: &Map<String, Value>,
        now: DateTime<Utc>,
    ) {
        let items = self
            .namespaces
            .entry(join_namespace(namespace))
            .or_default();
        let created_at = items.get(key).map_or(now, |old| old.created_at);
        items.insert(
            key.to_owned(),
            Item {
                namespace: namespace.to_vec(),
                key: key.to_owned(),
                value: value.clone(),
                created_at,
                updated_at: now,
            },
        );
    }

    pub(crate) fn get(&self, namespace: &[String], key: &str) -> Option<Item> {
        self.namespaces
            .get(&join_namespace(namespace))
            .and_then(|items| items.get(key))
            .cloned()
    }

    pub(crate) fn delete(&mut self, namespace: &[String], key: &str) {
        let joined = join_namespace(namespace);
        if let Some(items) = self.namespaces.get_mut(&joined) {
            items.remove(key);
            if items.is_empty() {
                self.namespaces.remove(&joined);
            }
        }
    }

    pub(crate) fn search(&self, search: &ItemSearch) -> Vec<Item> {
        let mut pager = Pager::new(search);
        for (namespace, items) in self.in_order() {
            if !has_prefix(namespace, &search.namespace_prefix) {
                continue;
            }
            for item in items.values() {
                pager.offer(item);
            }
            if pager.full() {
                break;
            }
        }
        pager.finish()
    }

    pub(crate) fn namespaces(&self, query: &NamespaceQuery) -> Vec<Vec<String>> {
        let all = self.in_order().into_iter().map(|(ns, _)| ns.clone());
        list_namespaces(all, query)
    }

    /// Namespaces holding items, label by label (the joined keys order
    /// `a-b` before `a.c`; labels order `["a", "c"]` first).
    fn in_order(&self) -> Vec<(&Vec<String>, &BTreeMap<String, Item>)> {
        let mut out: Vec<(&Vec<String>, &BTreeMap<String, Item>)> = self
            .namespaces
            .values()
            .filter_map(|items| items.values().next().map(|first| (&first.namespace, items)))
            .collect();
        out.sort_by(|a, b| a.0.cmp(b.0));
        out
    }
}
