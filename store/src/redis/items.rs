//! Long-term items on Redis.
//!
//! Layout (key names from [`deepfleet_proto::Keys`]):
//!
//! - `store_items(ns)`: one hash per namespace, item key -> item JSON;
//! - `store_index(root)`: the dot-joined namespaces under one root label
//!   that hold items, as a sorted set read by lexical range, so a prefix
//!   search reads one range and never scans the keyspace;
//! - `store_roots`: the root labels, for searches and listings without a
//!   prefix.
//!
//! The items hash and the index of one root share a hash tag (the root
//! label), so a put or delete updates both in one script, on a cluster as
//! on a single server. All of one root's items share a slot: spread load
//! over roots (agent names) rather than inside one.

use std::sync::LazyLock;

use async_trait::async_trait;
use chrono::Utc;
use deepfleet_proto::item::join_namespace;
use deepfleet_proto::{Item, ItemSearch, NamespaceQuery};
use redis::Script;
use serde_json::{Map, Value};

use crate::error::StoreError;
use crate::items::Items;
use crate::items::query::{Pager, check_address, check_prefix, has_prefix, list_namespaces};
use crate::redis::RedisStore;
use crate::redis::conn::Retry;
use crate::redis::scripts::Call;

static PUT_ITEM: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/put_item.lua")));
/// How often a put reads the item again when another put came between
/// its read and its write.
const PUT_ATTEMPTS: usize = 8;
static DELETE_ITEM: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/delete_item.lua")));

#[async_trait]
impl Items for RedisStore {
    async fn put_item(
        &self,
        namespace: &[String],
        key: &str,
        value: &Map<String, Value>,
    ) -> Result<(), StoreError> {
        check_address(namespace, key)?;
        let items = self.keys().store_items(namespace);
        let root = &namespace[0];
        // The root is listed before the item exists, so an item is never
        // unreachable by a listing; a root left without items is skipped.
        let roots = self.keys().store_roots();
        self.write::<i64>(
            "index store root",
            roots.len() + root.len(),
            redis::cmd("SADD").arg(&roots).arg(root),
        )
        .await?;
        let index = self.keys().store_index(root);
        let now = Utc::now();
        for _ in 0..PUT_ATTEMPTS {
            let seen: Option<String> = self
                .query(
                    "read item",
                    Retry::Once,
                    redis::cmd("HGET").arg(&items).arg(key),
                )
                .await?;
            // An old item that does not decode is replaced, as a fresh one.
            let created_at = seen
                .as_deref()
                .and_then(|raw| self.codec().decode::<Item>(&items, raw).ok())
                .map_or(now, |old| old.created_at);
            let item = Item {
                namespace: namespace.to_vec(),
                key: key.to_owned(),
                value: value.clone(),
                created_at,
                updated_at: now,
            };
            let call = Call::new(&PUT_ITEM, vec![items.clone(), index.clone()])
                .arg(key)
                .arg(join_namespace(namespace))
                .arg(seen.unwrap_or_default())
                .arg(self.codec().encode(&items, &item)?);
            if self.run_script::<i64>("put item", &call).await? == 1 {
                return Ok(());
            }
        }
        Err(StoreError::Command(format!(
            "put item {key} in {items}: the item kept changing"
        )))
    }

    async fn get_item(&self, namespace: &[String], key: &str) -> Result<Option<Item>, StoreError> {
        check_address(namespace, key)?;
        let items = self.keys().store_items(namespace);
        let raw: Option<String> = self
            .query(
                "get item",
                Retry::Once,
                redis::cmd("HGET").arg(&items).arg(key),
            )
            .await?;
        self.codec().decode_opt(format_args!("{items} {key}"), raw)
    }

    async fn delete_item(&self, namespace: &[String], key: &str) -> Result<(), StoreError> {
        check_address(namespace, key)?;
        let items = self.keys().store_items(namespace);
        let call = Call::new(
            &DELETE_ITEM,
            vec![items, self.keys().store_index(&namespace[0])],
        )
        .arg(key)
        .arg(join_namespace(namespace));
        self.run_script::<i64>("delete item", &call).await?;
        Ok(())
    }

    async fn search_items(&self, search: &ItemSearch) -> Result<Vec<Item>, StoreError> {
        check_prefix(&search.namespace_prefix)?;
        let mut pager = Pager::new(search);
        for namespace in self.namespaces_under(&search.namespace_prefix).await? {
            if pager.full() {
                break;
            }
            let items = self.keys().store_items(&namespace);
            let raw: Vec<(String, String)> = self
                .query(
                    "search items",
                    Retry::Once,
                    redis::cmd("HGETALL").arg(&items),
                )
                .await?;
            let mut found = raw
                .iter()
                .map(|(key, raw)| self.codec().decode::<Item>(&format!("{items} {key}"), raw))
                .collect::<Result<Vec<_>, _>>()?;
            found.sort_by(|a, b| a.key.cmp(&b.key));
            for item in &found {
                pager.offer(item);
            }
        }
        Ok(pager.finish())
    }

    async fn list_namespaces(
        &self,
        query: &NamespaceQuery,
    ) -> Result<Vec<Vec<String>>, StoreError> {
        check_prefix(&query.prefix)?;
        let all = self.namespaces_under(&query.prefix).await?;
        Ok(list_namespaces(all, query))
    }
}

impl RedisStore {
    /// Every namespace holding items under `prefix`, label by label.
    async fn namespaces_under(&self, prefix: &[String]) -> Result<Vec<Vec<String>>, StoreError> {
        let roots: Vec<String> = match prefix.first() {
            Some(root) => vec![root.clone()],
            None => {
                let mut roots: Vec<String> = self
                    .query(
                        "list store roots",
                        Retry::Once,
                        redis::cmd("SMEMBERS").arg(self.keys().store_roots()),
                    )
                    .await?;
                roots.sort();
                roots
            }
        };
        // `[P` .. `(P/` holds `P` and every `P.…` ('/' follows '.'), plus a
        // few siblings like `P-x`, which the label-wise check drops.
        let (low, high) = if prefix.is_empty() {
            ("-".to_owned(), "+".to_owned())
        } else {
            let joined = join_namespace(prefix);
            (format!("[{joined}"), format!("({joined}/"))
        };
        let mut joined: Vec<String> = Vec::new();
        for root in &roots {
            let members: Vec<String> = self
                .query(
                    "list namespaces",
                    Retry::Once,
                    redis::cmd("ZRANGEBYLEX")
                        .arg(self.keys().store_index(root))
                        .arg(&low)
                        .arg(&high),
                )
                .await?;
            joined.extend(members);
        }
        let mut namespaces: Vec<Vec<String>> = joined
            .iter()
            .map(|j| j.split('.').map(str::to_owned).collect::<Vec<_>>())
            .filter(|ns| has_prefix(ns, prefix))
            .collect();
        namespaces.sort();
        Ok(namespaces)
    }
}
