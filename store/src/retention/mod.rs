//! The data's life cycle: what a thread owns (its checkpoint, its runs'
//! records, fan-ins, cancel flags and id index, their event and delta
//! streams, and the threads of the subagent runs it started) expires
//! together once its run has ended, or is deleted together.
//!
//! Expiry is set when a run ends, by whoever ends it, not found by
//! scanning: the store keeps, per thread, the ids of its runs and of its
//! subagent threads, so every key of a thread is named without a
//! keyspace walk. A new run on a thread makes its keys permanent again
//! ([`crate::Runs::create_run`]). Store items (`/memories/`) are never
//! touched here: they live until deleted.

use std::time::Duration;

use async_trait::async_trait;

use crate::error::StoreError;

/// Expiry and deletion of everything a thread owns.
///
/// Implementations must:
/// - apply [`Retention::expire_thread`] only while `ended_run` is the
///   thread's latest run, atomically with that check (a run created on the
///   thread meanwhile keeps it alive), to the thread and to every subagent
///   thread below it;
/// - make keys that expired or were purged invisible at once, whether
///   they are removed at once or later;
/// - keep later writes by a step in flight from bringing a purged or
///   expired thread back: [`crate::Checkpoints::commit_step`] of a run
///   whose record is gone answers [`crate::CommitOutcome::Gone`], and the
///   published mark is not raised on a thread that is gone.
#[async_trait]
pub trait Retention: Send + Sync + 'static {
    /// Sets every key of `thread_id` and of the subagent threads under it
    /// to expire `ttl` from now (at least a second), if `ended_run` is
    /// still the thread's latest run. Returns whether it was.
    async fn expire_thread(
        &self,
        thread_id: &str,
        ended_run: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError>;

    /// Deletes every key of `thread_id` and of the subagent threads under
    /// it, whatever its runs are doing (cancel them first: a step in flight
    /// finds its run gone when it commits).
    async fn purge_thread(&self, thread_id: &str) -> Result<(), StoreError>;

    /// Sets the keys of batch `batch_id` (its done list) to expire `ttl`
    /// from now (at least a second); a later run of the batch that ends
    /// sets it again.
    async fn expire_batch(&self, batch_id: &str, ttl: Duration) -> Result<(), StoreError>;
}

/// Whole seconds of `ttl`, rounded up, at least one: an expiry of zero
/// would delete at once, which is [`Retention::purge_thread`]'s job.
pub(crate) fn ttl_secs(ttl: Duration) -> u64 {
    let secs = ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0);
    secs.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_round_up_to_whole_seconds() {
        assert_eq!(ttl_secs(Duration::ZERO), 1);
        assert_eq!(ttl_secs(Duration::from_millis(1500)), 2);
        assert_eq!(ttl_secs(Duration::from_secs(30)), 30);
    }
}
