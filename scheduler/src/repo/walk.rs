//! Walking an index: the records one index lists, in its order, read a
//! chunk of ids at a time, so a listing costs the records it reads (the
//! page, plus those a filter skips), never the size of the index.
//!
//! A record that does not decode is skipped (and logged): one bad record
//! must not hide all the others. An id whose record is gone (deleted, or expired) is skipped and removed
//! from the index on the spot, unless it was re-indexed meanwhile
//! ([`deepfleet_store::RecordIndex::index_remove_at`]): indexes clean
//! themselves as they are read. Positions are read afresh for each
//! chunk, so ids indexed while a walk goes on may shift it by a few
//! (as any offset paging over a changing list does).

use std::collections::VecDeque;

use deepfleet_store::{IndexEntry, Order, StoreError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::warn;

use super::Repository;

/// The most ids one read asks for.
const MAX_CHUNK: u64 = 256;
/// What the first read asks for unless told ([`Walk::chunk`]).
const FIRST_CHUNK: u64 = 16;

/// What an index entry names.
enum Found<T> {
    Record(T),
    /// A record that does not decode; it stays listed.
    Unreadable,
    /// No record: deleted or expired since it was listed.
    Gone,
}

/// The records of one index in order; see the module docs.
pub struct Walk<'r, 'a, T> {
    repo: &'r Repository<'a, T>,
    index: String,
    order: Order,
    /// The index position of the next id to read.
    next: u64,
    /// How many ids the next read asks for (doubling up to
    /// [`MAX_CHUNK`]).
    chunk: u64,
    /// Ids read, with what each names.
    read: VecDeque<(IndexEntry, Found<T>)>,
    /// The last read came back short: the index has no more.
    exhausted: bool,
}

impl<'a, T: Serialize + DeserializeOwned> Repository<'a, T> {
    /// The records listed in `index`, in `order`; see [`Walk`].
    pub fn walk(&self, index: impl Into<String>, order: Order) -> Walk<'_, 'a, T> {
        Walk {
            repo: self,
            index: index.into(),
            order,
            next: 0,
            chunk: FIRST_CHUNK,
            read: VecDeque::new(),
            exhausted: false,
        }
    }
}

impl<T: Serialize + DeserializeOwned> Walk<'_, '_, T> {
    /// Starts at position `offset` of the index instead of its first id.
    pub fn from(mut self, offset: usize) -> Self {
        self.next = u64::try_from(offset).unwrap_or(u64::MAX);
        self
    }

    /// Makes the first read ask for `n` ids: the page wanted, so an
    /// unfiltered page is one read.
    pub fn chunk(mut self, n: usize) -> Self {
        self.chunk = u64::try_from(n).unwrap_or(MAX_CHUNK).clamp(1, MAX_CHUNK);
        self
    }

    /// The next record, `None` past the last.
    pub async fn next(&mut self) -> Result<Option<T>, StoreError> {
        loop {
            if let Some((entry, found)) = self.read.pop_front() {
                match found {
                    Found::Record(record) => return Ok(Some(record)),
                    Found::Unreadable => {}
                    Found::Gone => self.unlist(&entry).await?,
                }
                continue;
            }
            if self.exhausted {
                return Ok(None);
            }
            self.read_chunk().await?;
        }
    }

    /// Up to `n` more records.
    pub async fn take(&mut self, n: usize) -> Result<Vec<T>, StoreError> {
        let mut out = Vec::with_capacity(n.min(1024));
        while out.len() < n {
            match self.next().await? {
                Some(record) => out.push(record),
                None => break,
            }
        }
        Ok(out)
    }

    /// Every record left.
    pub async fn all(&mut self) -> Result<Vec<T>, StoreError> {
        self.take(usize::MAX).await
    }

    /// Reads the next chunk of ids and their records (concurrently: one
    /// round trip's wait for the chunk, not one per record).
    async fn read_chunk(&mut self) -> Result<(), StoreError> {
        let store = self.repo.store();
        let entries = store
            .index_page(&self.index, self.order, self.next, self.chunk)
            .await?;
        let got = u64::try_from(entries.len()).unwrap_or(u64::MAX);
        self.exhausted = got < self.chunk;
        self.next = self.next.saturating_add(got);
        self.chunk = self.chunk.saturating_mul(2).min(MAX_CHUNK);
        let found = futures::future::try_join_all(entries.iter().map(|e| self.find(&e.id))).await?;
        self.read.extend(entries.into_iter().zip(found));
        Ok(())
    }

    async fn find(&self, id: &str) -> Result<Found<T>, StoreError> {
        match self.repo.get(id).await {
            Ok(Some(record)) => Ok(Found::Record(record)),
            Ok(None) => Ok(Found::Gone),
            Err(StoreError::Corrupt { key, reason }) => {
                warn!(%key, %reason, "skipping an unreadable record");
                Ok(Found::Unreadable)
            }
            Err(e) => Err(e),
        }
    }

    /// Removes the id of a record that is gone; the ids after it move up
    /// one place.
    async fn unlist(&mut self, entry: &IndexEntry) -> Result<(), StoreError> {
        let store = self.repo.store();
        if store
            .index_remove_at(&self.index, &entry.id, entry.score)
            .await?
        {
            self.next = self.next.saturating_sub(1);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone, Utc};
    use deepfleet_proto::TenantId;
    use deepfleet_proto::keys::records::{THREADS, tenant_threads};
    use deepfleet_store::embedded::EmbeddedStore;
    use deepfleet_store::prelude::*;
    use pretty_assertions::assert_eq;
    use serde_json::Map;

    use super::*;
    use crate::repo::threads::{ThreadRecord, threads};

    fn thread(id: &str, minute: i64, temporary: bool) -> ThreadRecord {
        let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + Duration::minutes(minute);
        ThreadRecord {
            created_at: at,
            updated_at: at,
            temporary,
            ..ThreadRecord::new(TenantId::default(), id.to_owned(), Map::new())
        }
    }

    fn ids(records: &[ThreadRecord]) -> Vec<&str> {
        records.iter().map(|t| t.thread_id.as_str()).collect()
    }

    #[tokio::test]
    async fn a_walk_pages_an_index_and_drops_what_is_gone() {
        let store = EmbeddedStore::new();
        let repo = threads(&store);
        for i in 0..40 {
            let id = format!("t{i:02}");
            repo.put(&id, &thread(&id, i, false)).await.unwrap();
        }
        repo.put("tmp", &thread("tmp", 99, true)).await.unwrap();
        let index = tenant_threads(TenantId::default().as_str());
        assert_eq!(repo.count(&index).await.unwrap(), 40, "temporary: unlisted");
        let page = repo
            .walk(index.as_str(), Order::Descending)
            .from(5)
            .chunk(3)
            .take(3)
            .await
            .unwrap();
        assert_eq!(ids(&page), ["t34", "t33", "t32"]);

        // Deleted through the repository: unlisted; behind its back
        // (as an expiry does): skipped, then unlisted by the walk.
        assert!(repo.delete("t39").await.unwrap());
        store.delete_record(THREADS, "t38").await.unwrap();
        store
            .expire_record(THREADS, "t37", std::time::Duration::ZERO)
            .await
            .unwrap();
        assert_eq!(repo.count(&index).await.unwrap(), 39);
        let mut walk = repo.walk(index.as_str(), Order::Descending).chunk(2);
        let first = walk.take(3).await.unwrap();
        assert_eq!(ids(&first), ["t36", "t35", "t34"]);
        // Positions moved up as the walk removed ids: nothing skipped.
        let rest = walk.all().await.unwrap();
        assert_eq!(rest.len(), 34);
        assert_eq!(rest.last().map(|t| t.thread_id.as_str()), Some("t00"));
        assert_eq!(repo.count(&index).await.unwrap(), 37);
    }

    #[tokio::test]
    async fn an_unreadable_record_is_skipped_and_stays_listed() {
        let store = EmbeddedStore::new();
        let repo = threads(&store);
        for (i, id) in ["a", "b"].into_iter().enumerate() {
            repo.put(id, &thread(id, i64::try_from(i).unwrap(), false))
                .await
                .unwrap();
        }
        store
            .put_record(THREADS, "a", &serde_json::json!(3))
            .await
            .unwrap();
        let index = tenant_threads(TenantId::default().as_str());
        let all = repo
            .walk(index.as_str(), Order::Ascending)
            .all()
            .await
            .unwrap();
        assert_eq!(ids(&all), ["b"]);
        assert_eq!(repo.count(&index).await.unwrap(), 2);
    }
}
