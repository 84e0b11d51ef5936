//! One record index of the embedded store: members by id, and the same
//! members in score order for paging. Persisted as the id -> score map
//! and the expiry; the order is rebuilt on load.

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{IndexEntry, Order};

/// A sorted set, as Redis keeps one.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(from = "Persisted", into = "Persisted")]
pub(crate) struct IndexTable {
    scores: HashMap<String, i64>,
    order: BTreeSet<(i64, String)>,
    expires_at: Option<DateTime<Utc>>,
}

/// What the snapshot keeps of an index.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
struct Persisted {
    members: HashMap<String, i64>,
    expires_at: Option<DateTime<Utc>>,
}

impl From<Persisted> for IndexTable {
    fn from(p: Persisted) -> Self {
        IndexTable {
            order: p.members.iter().map(|(id, s)| (*s, id.clone())).collect(),
            scores: p.members,
            expires_at: p.expires_at,
        }
    }
}

impl From<IndexTable> for Persisted {
    fn from(t: IndexTable) -> Self {
        Persisted {
            members: t.scores,
            expires_at: t.expires_at,
        }
    }
}

impl IndexTable {
    /// Whether the index has members and has not expired by `now`.
    pub(crate) fn is_live(&self, now: DateTime<Utc>) -> bool {
        !self.scores.is_empty() && self.expires_at.is_none_or(|at| at > now)
    }

    /// Adds or moves `id`; clears the expiry.
    pub(crate) fn put(&mut self, id: &str, score: i64) {
        if let Some(old) = self.scores.insert(id.to_owned(), score) {
            self.order.remove(&(old, id.to_owned()));
        }
        self.order.insert((score, id.to_owned()));
        self.expires_at = None;
    }

    /// Moves member `id` to `score`, keeping the expiry (a move adds no
    /// member whose record might outlive it).
    pub(crate) fn rescore(&mut self, id: &str, score: i64) {
        let Some(old) = self.scores.insert(id.to_owned(), score) else {
            return;
        };
        self.order.remove(&(old, id.to_owned()));
        self.order.insert((score, id.to_owned()));
    }

    /// The score of member `id`.
    pub(crate) fn score(&self, id: &str) -> Option<i64> {
        self.scores.get(id).copied()
    }

    /// Removes `id` when `at` is `None` or its score; returns whether it
    /// was removed.
    pub(crate) fn remove(&mut self, id: &str, at: Option<i64>) -> bool {
        match self.scores.get(id) {
            Some(score) if at.is_none_or(|at| at == *score) => {
                let score = *score;
                self.scores.remove(id);
                self.order.remove(&(score, id.to_owned()));
                true
            }
            _ => false,
        }
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.scores.contains_key(id)
    }

    pub(crate) fn len(&self) -> usize {
        self.scores.len()
    }

    pub(crate) fn page(&self, order: Order, offset: usize, limit: usize) -> Vec<IndexEntry> {
        let entry = |(score, id): &(i64, String)| IndexEntry {
            id: id.clone(),
            score: *score,
        };
        match order {
            Order::Ascending => self
                .order
                .iter()
                .skip(offset)
                .take(limit)
                .map(entry)
                .collect(),
            Order::Descending => self
                .order
                .iter()
                .rev()
                .skip(offset)
                .take(limit)
                .map(entry)
                .collect(),
        }
    }

    /// Removes the members scored below `below`; returns how many.
    pub(crate) fn trim(&mut self, below: i64) -> usize {
        let keep = self.order.split_off(&(below, String::new()));
        let gone = std::mem::replace(&mut self.order, keep);
        for (_, id) in &gone {
            self.scores.remove(id);
        }
        gone.len()
    }

    pub(crate) fn expire_at(&mut self, at: DateTime<Utc>) {
        self.expires_at = Some(at);
    }
}
