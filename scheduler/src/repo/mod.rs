//! Typed repositories of the scheduler's records.
//!
//! The store keeps small JSON records by kind and id
//! ([`Records::put_record`] and friends); every kind holds one record type.
//! A [`Repository`] binds a kind to its type, so callers read and write
//! typed values and the JSON (and the kind names, from
//! [`deepfleet_proto::keys::records`]) stay in one place: what is stored
//! is exactly the type's serde form.
//!
//! Listings read indexes ([`deepfleet_store::RecordIndex`]), never every
//! record of a kind: a repository made [`Repository::indexed`] lists each
//! record it saves in the indexes its [`Indexer`] names (a tenant's
//! threads, a thread's runs, ...), and [`Repository::walk`] reads one of
//! them in order, a page at a time (see [`walk`]).
//!
//! Records a tenant owns ([`Owned`]) are read through
//! [`Repository::get_owned`]: another tenant's record is not there,
//! exactly as an unknown id is not; their listings are per-tenant indexes.

pub mod a2a_tasks;
pub mod assistants;
pub mod batches;
pub mod crons;
pub mod follow_marks;
pub mod queued;
pub mod replies;
pub mod runs;
pub mod threads;
pub mod walk;
pub mod webhooks;

use std::borrow::Cow;
use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use deepfleet_proto::TenantId;
use deepfleet_store::{Store, StoreError};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A record that belongs to one tenant.
pub trait Owned {
    /// The tenant it belongs to.
    fn tenant(&self) -> &TenantId;
}

/// Where a record is listed: an index and its score there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The index ([`deepfleet_proto::keys::records`] names them).
    pub index: String,
    /// The record's score in it.
    pub score: i64,
}

impl Listing {
    /// A listing in `index` at `score`.
    pub fn new(index: impl Into<String>, score: i64) -> Self {
        Listing {
            index: index.into(),
            score,
        }
    }
}

/// The indexes a record is listed in, from the record itself.
pub type Indexer<T> = Box<dyn Fn(&T) -> Vec<Listing> + Send + Sync>;

/// A time as an index score: microseconds since the epoch.
pub fn score_at(at: DateTime<Utc>) -> i64 {
    at.timestamp_micros()
}

/// The records of one kind, as values of `T`.
pub struct Repository<'a, T> {
    store: &'a dyn Store,
    kind: Cow<'static, str>,
    indexer: Option<Indexer<T>>,
    record: PhantomData<fn() -> T>,
}

impl<'a, T: Serialize + DeserializeOwned> Repository<'a, T> {
    /// The records of `kind` in `store`, listed nowhere.
    pub fn new(store: &'a dyn Store, kind: impl Into<Cow<'static, str>>) -> Self {
        Repository {
            store,
            kind: kind.into(),
            indexer: None,
            record: PhantomData,
        }
    }

    /// These records, each listed where `indexer` says: a save indexes
    /// the record after writing it, a delete unindexes it after deleting
    /// it (so a reader may meet an id whose record is gone, never a record
    /// missing from its listings for good).
    pub fn indexed(mut self, indexer: impl Fn(&T) -> Vec<Listing> + Send + Sync + 'static) -> Self {
        self.indexer = Some(Box::new(indexer));
        self
    }

    /// The kind the records are stored under.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The store.
    pub(crate) fn store(&self) -> &'a dyn Store {
        self.store
    }

    /// Loads a record; one that does not decode is [`StoreError::Corrupt`].
    pub async fn get(&self, id: &str) -> Result<Option<T>, StoreError> {
        self.store
            .get_record(&self.kind, id)
            .await?
            .map(|value| serde_json::from_value(value).map_err(|e| self.corrupt(id, &e)))
            .transpose()
    }

    /// Saves a record, replacing an older one, and lists it.
    pub async fn put(&self, id: &str, record: &T) -> Result<(), StoreError> {
        let value = serde_json::to_value(record).map_err(|e| self.corrupt(id, &e))?;
        self.store.put_record(&self.kind, id, &value).await?;
        self.list(id, record).await
    }

    /// Saves a record unless one exists, and lists it; returns whether it
    /// was saved.
    pub async fn insert(&self, id: &str, record: &T) -> Result<bool, StoreError> {
        let value = serde_json::to_value(record).map_err(|e| self.corrupt(id, &e))?;
        if !self.store.insert_record(&self.kind, id, &value).await? {
            return Ok(false);
        }
        self.list(id, record).await?;
        Ok(true)
    }

    /// Deletes a record and unlists it; returns whether it existed. A
    /// record that does not decode is deleted all the same; its index
    /// entries go when a reader meets them.
    pub async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let Some(indexer) = &self.indexer else {
            return self.store.delete_record(&self.kind, id).await;
        };
        let listed = match self.get(id).await {
            Err(StoreError::Corrupt { .. }) => None,
            other => other?,
        };
        let existed = self.store.delete_record(&self.kind, id).await?;
        for listing in listed.iter().flat_map(indexer) {
            self.store.index_remove(&listing.index, id).await?;
        }
        Ok(existed)
    }

    /// How many ids `index` lists (counting those of records gone since,
    /// until a walk meets them).
    pub async fn count(&self, index: &str) -> Result<u64, StoreError> {
        self.store.index_count(index).await
    }

    async fn list(&self, id: &str, record: &T) -> Result<(), StoreError> {
        for listing in self.indexer.iter().flat_map(|indexer| indexer(record)) {
            self.store
                .index_put(&listing.index, id, listing.score)
                .await?;
        }
        Ok(())
    }

    fn corrupt(&self, id: &str, e: &serde_json::Error) -> StoreError {
        StoreError::Corrupt {
            key: format!("{}/{id}", self.kind),
            reason: e.to_string(),
        }
    }
}

impl<T: Serialize + DeserializeOwned + Owned> Repository<'_, T> {
    /// Loads `tenant`'s record `id`; another tenant's is `None`, as an
    /// unknown one is.
    pub async fn get_owned(&self, id: &str, tenant: &TenantId) -> Result<Option<T>, StoreError> {
        Ok(self
            .get(id)
            .await?
            .filter(|record| record.tenant() == tenant))
    }
}

#[cfg(test)]
mod tests {
    use deepfleet_store::Records;
    use deepfleet_store::embedded::EmbeddedStore;
    use pretty_assertions::assert_eq;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Note {
        text: String,
    }

    #[tokio::test]
    async fn records_round_trip_as_their_serde_form() {
        let store = EmbeddedStore::new();
        let notes = Repository::<Note>::new(&store, "notes");
        let note = Note { text: "hi".into() };
        assert!(notes.insert("a", &note).await.unwrap());
        assert!(!notes.insert("a", &note).await.unwrap());
        assert_eq!(
            store.get_record("notes", "a").await.unwrap(),
            Some(json!({"text": "hi"}))
        );
        assert_eq!(notes.get("a").await.unwrap(), Some(note));
        store.put_record("notes", "bad", &json!(3)).await.unwrap();
        assert!(matches!(
            notes.get("bad").await,
            Err(StoreError::Corrupt { .. })
        ));
        assert!(notes.delete("bad").await.unwrap());
        assert!(notes.delete("a").await.unwrap());
        assert_eq!(notes.get("a").await.unwrap(), None);
    }
}

#[cfg(test)]
#[path = "repo_tests.rs"]
mod kinds_tests;
