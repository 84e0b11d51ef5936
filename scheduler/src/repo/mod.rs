//! Typed repositories of the scheduler's records.
//!
//! The store keeps small JSON records by kind and id
//! ([`Records::put_record`] and friends); every kind holds one record type.
//! A [`Repository`] binds a kind to its type, so callers read and write
//! typed values and the JSON (and the kind names, from
//! [`deepfleet_proto::keys::records`]) stay in one place: what is stored
//! is exactly the type's serde form.
//!
//! Records a tenant owns ([`Owned`]) are read through
//! [`Repository::get_owned`] and [`Repository::list_owned`]: another
//! tenant's record is not there, exactly as an unknown id is not.

pub mod assistants;
pub mod batches;
pub mod follow_marks;
pub mod queued;
pub mod replies;
pub mod runs;
pub mod threads;

use std::borrow::Cow;
use std::marker::PhantomData;

use deepfleet_proto::TenantId;
use deepfleet_store::{Records, StoreError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::warn;

/// A record that belongs to one tenant.
pub trait Owned {
    /// The tenant it belongs to.
    fn tenant(&self) -> &TenantId;
}

/// The records of one kind, as values of `T`.
pub struct Repository<'a, T> {
    store: &'a dyn Records,
    kind: Cow<'static, str>,
    record: PhantomData<fn() -> T>,
}

impl<'a, T: Serialize + DeserializeOwned> Repository<'a, T> {
    /// The records of `kind` in `store`.
    pub fn new(store: &'a dyn Records, kind: impl Into<Cow<'static, str>>) -> Self {
        Repository {
            store,
            kind: kind.into(),
            record: PhantomData,
        }
    }

    /// The kind the records are stored under.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// Loads a record; one that does not decode is [`StoreError::Corrupt`].
    pub async fn get(&self, id: &str) -> Result<Option<T>, StoreError> {
        self.store
            .get_record(&self.kind, id)
            .await?
            .map(|value| serde_json::from_value(value).map_err(|e| self.corrupt(id, &e)))
            .transpose()
    }

    /// Saves a record, replacing an older one.
    pub async fn put(&self, id: &str, record: &T) -> Result<(), StoreError> {
        let value = serde_json::to_value(record).map_err(|e| self.corrupt(id, &e))?;
        self.store.put_record(&self.kind, id, &value).await
    }

    /// Saves a record unless one exists; returns whether it was saved.
    pub async fn insert(&self, id: &str, record: &T) -> Result<bool, StoreError> {
        let value = serde_json::to_value(record).map_err(|e| self.corrupt(id, &e))?;
        self.store.insert_record(&self.kind, id, &value).await
    }

    /// Deletes a record; returns whether it existed.
    pub async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        self.store.delete_record(&self.kind, id).await
    }

    /// Every record of the kind, in no particular order. A record that
    /// does not decode is skipped (and logged): one bad record must not
    /// hide all the others from a listing.
    pub async fn list(&self) -> Result<Vec<T>, StoreError> {
        let values = self.store.list_records(&self.kind).await?;
        Ok(values
            .into_iter()
            .filter_map(|value| match serde_json::from_value(value) {
                Ok(record) => Some(record),
                Err(e) => {
                    warn!(kind = %self.kind, error = %e, "skipping an unreadable record");
                    None
                }
            })
            .collect())
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

    /// Every record of `tenant`, in no particular order.
    pub async fn list_owned(&self, tenant: &TenantId) -> Result<Vec<T>, StoreError> {
        let mut records = self.list().await?;
        records.retain(|record| record.tenant() == tenant);
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
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
        assert_eq!(notes.list().await.unwrap().len(), 1);
        assert!(notes.delete("a").await.unwrap());
        assert_eq!(notes.get("a").await.unwrap(), None);
    }
}

#[cfg(test)]
#[path = "repo_tests.rs"]
mod kinds_tests;
