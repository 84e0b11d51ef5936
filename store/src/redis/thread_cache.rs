//! The Redis store's cache of threads it has read, so that loading a
//! thread again reads only what changed since: the log entries appended
//! after the held copy ends, and the files only when they were written.
//! A step then reads a flat number of bytes however long its conversation
//! has grown (`lua/load_thread.lua` documents the fence).
//!
//! What is held is only ever a prefix the server confirms: the cache
//! never answers a load by itself, so a thread written by another worker,
//! updated, deleted or created again reads exactly as a full read would.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use deepfleet_proto::{FileData, LoggedMessage};
use moka::sync::Cache;

/// How many bytes of threads one store holds by default: a few hundred
/// long conversations, little beside a worker's working set.
pub const DEFAULT_THREAD_CACHE_BYTES: u64 = 32 * 1024 * 1024;

/// One thread's conversation and files as last read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HeldThread {
    /// The thread's generation (`gen` in its meta) when read.
    pub(crate) generation: String,
    /// The log index of `messages[0]`: the conversation's base then.
    pub(crate) first: u64,
    /// The conversation, `first` to the log's end then.
    pub(crate) messages: Vec<LoggedMessage>,
    /// The files' revision (`files_rev` in the meta) when read.
    pub(crate) files_rev: u64,
    /// The files then.
    pub(crate) files: BTreeMap<String, FileData>,
    /// Stored bytes of the messages and of the files, for the cache's
    /// budget.
    pub(crate) log_bytes: u64,
    pub(crate) files_bytes: u64,
}

impl HeldThread {
    /// The log length this copy covers.
    pub(crate) fn log_len(&self) -> u64 {
        self.first + self.messages.len() as u64
    }
}

/// What a load read, decoded: the part of the thread the server sent
/// because the held copy lacked it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tail {
    /// The conversation's base now.
    pub(crate) base: u64,
    /// The log index the read entries start at: `base` when the held copy
    /// was not used, its end otherwise.
    pub(crate) from: u64,
    /// The entries read, decoded, and their stored bytes.
    pub(crate) messages: Vec<LoggedMessage>,
    pub(crate) log_bytes: u64,
    /// The files, when they were read, and their stored bytes.
    pub(crate) files: Option<(BTreeMap<String, FileData>, u64)>,
}

/// The conversation and files a load returns: the held copy completed by
/// the tail. `held` must be the copy the load named to the server (the
/// server's `from` and files flag say which of it still holds).
pub(crate) fn complete(held: Option<&HeldThread>, tail: Tail) -> Completed {
    let extended = held.filter(|h| tail.from > tail.base && tail.base >= h.first);
    let (mut messages, mut log_bytes) = match extended {
        Some(h) => {
            let skip = usize::try_from(tail.base - h.first).unwrap_or(usize::MAX);
            (
                h.messages.get(skip..).unwrap_or_default().to_vec(),
                h.log_bytes,
            )
        }
        None => (Vec::with_capacity(tail.messages.len()), 0),
    };
    messages.extend(tail.messages);
    log_bytes += tail.log_bytes;
    let (files, files_bytes) = match (tail.files, held) {
        (Some(read), _) => read,
        (None, Some(h)) => (h.files.clone(), h.files_bytes),
        // The server reads the files whenever nothing is held.
        (None, None) => (BTreeMap::new(), 0),
    };
    Completed {
        messages,
        files,
        log_bytes,
        files_bytes,
    }
}

/// The result of [`complete`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Completed {
    pub(crate) messages: Vec<LoggedMessage>,
    pub(crate) files: BTreeMap<String, FileData>,
    pub(crate) log_bytes: u64,
    pub(crate) files_bytes: u64,
}

/// Threads held, by id, evicted by size.
pub(crate) struct ThreadCache {
    threads: Option<Cache<String, Arc<HeldThread>>>,
    /// This cache's own random id, and how many generations it has
    /// offered: a generation is unique without drawing randomness per
    /// load.
    origin: String,
    offered: AtomicU64,
}

impl ThreadCache {
    /// A cache of at most `bytes` (by the stored size of what it holds);
    /// 0 holds nothing.
    pub(crate) fn new(bytes: u64) -> Self {
        let threads = (bytes > 0).then(|| {
            Cache::builder()
                .max_capacity(bytes)
                .weigher(|_: &String, held: &Arc<HeldThread>| {
                    u32::try_from(held.log_bytes + held.files_bytes).unwrap_or(u32::MAX)
                })
                .build()
        });
        ThreadCache {
            threads,
            origin: uuid::Uuid::new_v4().simple().to_string(),
            offered: AtomicU64::new(0),
        }
    }

    /// Whether this cache holds anything (a load need not copy what it
    /// read for a cache of no bytes).
    pub(crate) fn holds(&self) -> bool {
        self.threads.is_some()
    }

    /// A generation to offer a thread that has none, unique among every
    /// store's.
    pub(crate) fn new_generation(&self) -> String {
        let n = self.offered.fetch_add(1, Ordering::Relaxed);
        format!("{}.{n}", self.origin)
    }

    pub(crate) fn get(&self, thread_id: &str) -> Option<Arc<HeldThread>> {
        self.threads.as_ref()?.get(thread_id)
    }

    pub(crate) fn keep(&self, thread_id: &str, held: HeldThread) {
        if let Some(threads) = &self.threads {
            threads.insert(thread_id.to_owned(), Arc::new(held));
        }
    }

    pub(crate) fn forget(&self, thread_id: &str) {
        if let Some(threads) = &self.threads {
            threads.invalidate(thread_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use deepfleet_proto::Message;

    use super::*;

    fn msg(text: &str) -> LoggedMessage {
        LoggedMessage {
            message: Message::user(text),
            tokens: 1,
        }
    }

    fn held(first: u64, texts: &[&str]) -> HeldThread {
        HeldThread {
            generation: "g".into(),
            first,
            messages: texts.iter().map(|t| msg(t)).collect(),
            files_rev: 3,
            files: [(
                "/a".to_owned(),
                FileData::text("held", chrono::DateTime::UNIX_EPOCH),
            )]
            .into(),
            log_bytes: 10 * texts.len() as u64,
            files_bytes: 4,
        }
    }

    fn tail(base: u64, from: u64, texts: &[&str]) -> Tail {
        Tail {
            base,
            from,
            messages: texts.iter().map(|t| msg(t)).collect(),
            log_bytes: 10 * texts.len() as u64,
            files: None,
        }
    }

    #[test]
    fn the_tail_extends_the_held_conversation() {
        let h = held(0, &["a", "b"]);
        let done = complete(Some(&h), tail(0, 2, &["c"]));
        assert_eq!(done.messages, vec![msg("a"), msg("b"), msg("c")]);
        assert_eq!((done.log_bytes, done.files_bytes), (30, 4));
        assert_eq!(done.files, h.files);
    }

    #[test]
    fn files_read_replace_the_held_ones() {
        let h = held(0, &["a"]);
        let read = [(
            "/b".to_owned(),
            FileData::text("new", chrono::DateTime::UNIX_EPOCH),
        )]
        .into();
        let done = complete(
            Some(&h),
            Tail {
                files: Some((read, 3)),
                ..tail(0, 1, &[])
            },
        );
        assert_eq!(done.files.keys().collect::<Vec<_>>(), ["/b"]);
        assert_eq!(done.files_bytes, 3);
    }

    #[test]
    fn a_tail_from_the_base_is_the_whole_conversation() {
        // The server did not use the held copy (another generation, or the
        // base moved past it): what it sent is all there is.
        let h = held(0, &["a", "b"]);
        let done = complete(Some(&h), tail(5, 5, &["x"]));
        assert_eq!(done.messages, vec![msg("x")]);
        assert_eq!(done.log_bytes, 10);
    }

    #[test]
    fn unchanged_files_are_kept_when_the_log_is_read_whole() {
        let h = held(0, &["a"]);
        let done = complete(Some(&h), tail(1, 1, &["branch"]));
        assert_eq!(done.messages, vec![msg("branch")]);
        assert_eq!(done.files, h.files);
    }

    #[test]
    fn a_held_copy_from_an_earlier_base_is_cut_at_the_new_one() {
        let h = held(2, &["old", "a", "b"]);
        let done = complete(Some(&h), tail(3, 5, &["c"]));
        assert_eq!(done.messages, vec![msg("a"), msg("b"), msg("c")]);
    }

    #[test]
    fn a_cache_of_no_bytes_holds_nothing() {
        let cache = ThreadCache::new(0);
        cache.keep("t", held(0, &["a"]));
        assert_eq!(cache.get("t"), None);
        let cache = ThreadCache::new(1 << 20);
        cache.keep("t", held(0, &["a"]));
        assert_eq!(cache.get("t").map(|h| h.log_len()), Some(1));
        cache.forget("t");
        assert_eq!(cache.get("t"), None);
    }

    #[test]
    fn generations_differ_within_a_cache_and_across_caches() {
        let (a, b) = (ThreadCache::new(0), ThreadCache::new(0));
        let offered = [a.new_generation(), a.new_generation(), b.new_generation()];
        assert_ne!(offered[0], offered[1]);
        assert_ne!(offered[0], offered[2]);
    }
}
