//! The store backend: one namespace of the long-term store as files,
//! shared by every thread that resolves to the same namespace.
//!
//! Item key = absolute virtual path, item value = the file's
//! [`FileData`] as JSON. The namespace is fixed when the backend is built
//! (from the agent, the tenant and the run's context; see
//! [`crate::backend::routes`]), never from anything the model says.
//!
//! Writes go straight to the store, not into the step's commit: memories
//! must outlive the thread. That is safe under redelivery because a step
//! is only re-executed when its commit did not happen, and the re-execution
//! writes after the abandoned attempt, so the store ends with the writes of
//! the attempt whose messages were committed (last writer wins; a replayed
//! step writes the same content again). What an abandoned attempt wrote and
//! the committed one did not stays behind, like any external side effect of
//! a tool.
//!
//! Listing, glob and grep read the namespace's items (paged) and reuse the
//! state backend's path logic, so both backends answer alike.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use deepfleet_proto::{FileData, ItemSearch};
use deepfleet_store::{Store, StoreError};
use serde_json::{Map, Value};

use super::{Backend, BackendError, FileInfo, GrepResult, StateBackend};

/// Items read per search while listing a namespace.
const PAGE: usize = 100;

/// Files in one namespace of the long-term store.
#[derive(Clone)]
pub struct StoreBackend {
    store: Arc<dyn Store>,
    namespace: Vec<String>,
}

impl StoreBackend {
    /// The files of `namespace` in `store`.
    pub fn new(store: Arc<dyn Store>, namespace: Vec<String>) -> Self {
        StoreBackend { store, namespace }
    }

    /// The namespace this backend reads and writes.
    pub fn namespace(&self) -> &[String] {
        &self.namespace
    }

    /// The raw value of item `key` in the namespace (prompt templates read
    /// non-file items too).
    pub async fn item_value(&self, key: &str) -> Result<Option<Map<String, Value>>, BackendError> {
        Ok(self
            .store
            .get_item(&self.namespace, key)
            .await
            .map_err(unavailable)?
            .map(|item| item.value))
    }

    /// Every file of the namespace (sub-namespaces excluded).
    async fn files(&self) -> Result<BTreeMap<String, FileData>, BackendError> {
        let mut files = BTreeMap::new();
        let mut offset = 0;
        loop {
            let page = self
                .store
                .search_items(&ItemSearch {
                    namespace_prefix: self.namespace.clone(),
                    limit: PAGE,
                    offset,
                    ..ItemSearch::default()
                })
                .await
                .map_err(unavailable)?;
            let n = page.len();
            for item in page {
                if item.namespace == self.namespace {
                    let file = to_file(&item.key, item.value)?;
                    files.insert(item.key, file);
                }
            }
            if n < PAGE {
                return Ok(files);
            }
            offset += n;
        }
    }

    /// A state backend over a snapshot of the namespace, for the queries
    /// whose path logic it already has.
    async fn snapshot(&self) -> Result<StateBackend, BackendError> {
        Ok(StateBackend::new(self.files().await?))
    }
}

/// A store failure: a bad namespace is a configuration error the model
/// cannot fix, an outage is retried; either way the step fails.
fn unavailable(e: StoreError) -> BackendError {
    BackendError::Unavailable(format!("store: {e}"))
}

fn to_file(path: &str, value: Map<String, Value>) -> Result<FileData, BackendError> {
    serde_json::from_value(Value::Object(value))
        .map_err(|e| BackendError::Other(format!("stored file {path} is not a file: {e}")))
}

fn to_value(file: &FileData) -> Result<Map<String, Value>, BackendError> {
    match serde_json::to_value(file) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) | Err(_) => Err(BackendError::Other(
            "file data did not serialize to an object".to_owned(),
        )),
    }
}

#[async_trait]
impl Backend for StoreBackend {
    async fn ls(&self, path: &str) -> Result<Vec<FileInfo>, BackendError> {
        self.snapshot().await?.ls(path).await
    }

    async fn read(&self, path: &str) -> Result<FileData, BackendError> {
        let item = self
            .store
            .get_item(&self.namespace, path)
            .await
            .map_err(unavailable)?
            .ok_or(BackendError::NotFound)?;
        to_file(path, item.value)
    }

    async fn write(&self, path: &str, content: &str) -> Result<(), BackendError> {
        let now = Utc::now();
        let file = match self.read(path).await {
            Ok(old) => FileData {
                created_at: old.created_at,
                ..FileData::text(content, now)
            },
            Err(BackendError::NotFound) => FileData::text(content, now),
            Err(e) => return Err(e),
        };
        self.store
            .put_item(&self.namespace, path, &to_value(&file)?)
            .await
            .map_err(unavailable)
    }

    async fn delete(&self, path: &str) -> Result<(), BackendError> {
        let prefix = format!("{}/", path.trim_end_matches('/'));
        let doomed: Vec<String> = self
            .files()
            .await?
            .into_keys()
            .filter(|key| key == path || key.starts_with(&prefix))
            .collect();
        if doomed.is_empty() {
            return Err(BackendError::NotFound);
        }
        for key in doomed {
            self.store
                .delete_item(&self.namespace, &key)
                .await
                .map_err(unavailable)?;
        }
        Ok(())
    }

    async fn glob(&self, pattern: &str, path: Option<&str>) -> Result<Vec<FileInfo>, BackendError> {
        self.snapshot().await?.glob(pattern, path).await
    }

    async fn grep(
        &self,
        pattern: &str,
        path: Option<&str>,
        glob: Option<&str>,
        max_count: usize,
    ) -> Result<GrepResult, BackendError> {
        self.snapshot()
            .await?
            .grep(pattern, path, glob, max_count)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_store::embedded::EmbeddedStore;
    use deepfleet_store::prelude::*;
    use pretty_assertions::assert_eq;

    fn backend(store: &Arc<EmbeddedStore>, user: &str) -> StoreBackend {
        let store: Arc<dyn Store> = store.clone();
        StoreBackend::new(store, vec!["agent".into(), user.into()])
    }

    #[tokio::test]
    async fn files_are_items_of_the_namespace() {
        let store = Arc::new(EmbeddedStore::new());
        let u1 = backend(&store, "u1");
        u1.write("/prefs.txt", "tea").await.unwrap();
        u1.write("/notes/a.md", "alpha\nbeta").await.unwrap();
        let item = store
            .get_item(&["agent".into(), "u1".into()], "/prefs.txt")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(item.value["content"], "tea");
        assert_eq!(u1.read("/prefs.txt").await.unwrap().content, "tea");

        let paths = |v: Vec<FileInfo>| v.into_iter().map(|f| f.path).collect::<Vec<_>>();
        assert_eq!(paths(u1.ls("/").await.unwrap()), ["/notes/", "/prefs.txt"]);
        assert_eq!(paths(u1.glob("*.md", None).await.unwrap()), ["/notes/a.md"]);
        let hits = u1.grep("beta", None, None, 10).await.unwrap();
        assert_eq!(hits.matches[0].line, 2);

        // Another namespace sees nothing.
        let u2 = backend(&store, "u2");
        assert_eq!(u2.read("/prefs.txt").await, Err(BackendError::NotFound));
        assert_eq!(u2.ls("/").await.unwrap(), Vec::new());
    }

    #[tokio::test]
    async fn overwrite_keeps_created_at_and_delete_is_recursive() {
        let store = Arc::new(EmbeddedStore::new());
        let b = backend(&store, "u1");
        b.write("/a.txt", "1").await.unwrap();
        let first = b.read("/a.txt").await.unwrap();
        b.write("/a.txt", "2").await.unwrap();
        let second = b.read("/a.txt").await.unwrap();
        assert_eq!(second.content, "2");
        assert_eq!(second.created_at, first.created_at);

        b.write("/d/x", "x").await.unwrap();
        b.write("/d/y/z", "z").await.unwrap();
        b.delete("/d").await.unwrap();
        assert_eq!(b.ls("/").await.unwrap().len(), 1);
        assert_eq!(b.delete("/d").await, Err(BackendError::NotFound));
    }

    #[tokio::test]
    async fn many_files_are_paged() {
        let store = Arc::new(EmbeddedStore::new());
        let b = backend(&store, "u1");
        for i in 0..(PAGE * 2 + 5) {
            b.write(&format!("/f{i:03}"), "x").await.unwrap();
        }
        assert_eq!(b.ls("/").await.unwrap().len(), PAGE * 2 + 5);
    }

    #[tokio::test]
    async fn a_bad_namespace_fails_the_step() {
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let b = StoreBackend::new(store, vec!["a.b".into()]);
        assert!(matches!(
            b.write("/x", "x").await,
            Err(BackendError::Unavailable(_))
        ));
    }
}
