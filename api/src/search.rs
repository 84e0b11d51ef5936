//! The two rules every search and list route of the Agent Server shares:
//! a `metadata` filter matches when the record carries each given key
//! with the given value, and a page is `offset` records skipped, then at
//! most `limit` (10 when unset; [`PageLimit`] bounds it as it is read).
//! Over an index, [`Paging`] says where the walk starts.

use deepfleet_proto::api::PageLimit;
use serde_json::{Map, Value};

/// The page size when a request names none, as the reference's default.
pub const DEFAULT_LIMIT: usize = 10;

/// A request's page size: its `limit`, or [`DEFAULT_LIMIT`].
pub fn page_size(limit: Option<PageLimit>) -> usize {
    limit.map_or(DEFAULT_LIMIT, PageLimit::get)
}

/// Whether `metadata` holds every key of `filter` with the same value; no
/// filter matches everything.
pub fn metadata_matches(
    filter: Option<&Map<String, Value>>,
    metadata: &Map<String, Value>,
) -> bool {
    filter.is_none_or(|f| f.iter().all(|(k, v)| metadata.get(k) == Some(v)))
}

/// Whether a thread's `values` (none when it has no state) have every
/// top-level key/value of `filter`.
pub fn values_match(filter: Option<&Map<String, Value>>, values: Option<&Value>) -> bool {
    filter.is_none_or(|f| {
        values
            .and_then(Value::as_object)
            .is_some_and(|v| metadata_matches(Some(f), v))
    })
}

/// A page read from an index walk (see `deepfleet_scheduler::repo::walk`): without a
/// filter the index skips `offset` itself, so the page costs its own
/// size; with one, the walk starts at the first record and the matches
/// are skipped, so it costs the records up to the page's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paging {
    /// The index position the walk starts at.
    pub from: usize,
    /// Matches still to skip.
    pub skip: usize,
    /// The page size.
    pub limit: usize,
}

impl Paging {
    /// The paging of a request's `offset` and `limit`, with or without a
    /// filter.
    pub fn new(offset: Option<usize>, limit: Option<PageLimit>, filtered: bool) -> Self {
        let (offset, limit) = (offset.unwrap_or(0), page_size(limit));
        if filtered {
            Paging {
                from: 0,
                skip: offset,
                limit,
            }
        } else {
            Paging {
                from: offset,
                skip: 0,
                limit,
            }
        }
    }

    /// The first `limit` matches, a number the server chose (a sorted
    /// search's walk over every match).
    pub fn first(limit: usize) -> Self {
        Paging {
            from: 0,
            skip: 0,
            limit,
        }
    }

    /// How many ids the walk's first read should ask for.
    pub fn chunk(&self) -> usize {
        self.skip.saturating_add(self.limit)
    }

    /// Whether the next match is skipped (counting it as skipped).
    pub fn skips(&mut self) -> bool {
        if self.skip == 0 {
            return false;
        }
        self.skip -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_filter_matches_records_holding_each_of_its_pairs() {
        let metadata = map(json!({"team": "a", "tier": 2}));
        assert!(metadata_matches(None, &metadata));
        assert!(metadata_matches(
            Some(&map(json!({"team": "a"}))),
            &metadata
        ));
        assert!(!metadata_matches(
            Some(&map(json!({"team": "b"}))),
            &metadata
        ));
        assert!(!metadata_matches(
            Some(&map(json!({"owner": "a"}))),
            &metadata
        ));
    }

    #[test]
    fn an_unfiltered_page_starts_in_the_index_a_filtered_one_skips_matches() {
        let limit = |size| PageLimit::try_from(size).ok();
        let plain = Paging::new(Some(20), None, false);
        assert_eq!((plain.from, plain.skip, plain.chunk()), (20, 0, 10));
        let mut filtered = Paging::new(Some(2), limit(5), true);
        assert_eq!((filtered.from, filtered.chunk()), (0, 7));
        assert_eq!(Paging::new(None, None, true).limit, DEFAULT_LIMIT);
        let most = Paging::new(None, limit(PageLimit::MAX), true);
        assert_eq!(most.limit, PageLimit::MAX);
        assert!(filtered.skips() && filtered.skips() && !filtered.skips());
    }
}
