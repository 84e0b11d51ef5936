//! One request at a time decides what a thread runs next.
//!
//! Admitting a run reads the thread (its active run, its queue) and then
//! writes (starts the run or queues it). Two requests for the same free
//! thread, on one scheduler or two, would both read "free" and both start
//! a run: two runs stepping one thread. A lease per thread
//! ([`THREAD_LEASES`], a store claim with a deadline) makes the read and
//! the write one decision: the second request waits for the first to
//! finish, then sees its run and queues, supersedes or is refused as its
//! strategy says. The deadline frees a thread whose holder died.

use std::time::Duration;

use deepfleet_proto::keys::records::THREAD_LEASES;
use serde_json::Value;

use super::Lifecycle;
use crate::error::SchedulerError;

/// How long a lease outlives a holder that never gives it back: far
/// longer than an admission takes (a few store calls and a publish).
const LEASE: Duration = Duration::from_secs(30);
/// Longest a request waits for another's admission on the same thread.
const WAIT: Duration = Duration::from_secs(5);
/// How often a waiting request tries again.
const RETRY: Duration = Duration::from_millis(20);

/// A held lease on a thread; [`ThreadLease::release`] gives it back.
#[derive(Debug)]
#[must_use = "a lease is held until released (or its deadline)"]
pub struct ThreadLease {
    thread_id: String,
    holder: String,
}

impl Lifecycle {
    /// Takes `thread_id`'s lease, waiting up to a few seconds for another
    /// request's admission there to end.
    pub async fn lease_thread(&self, thread_id: &str) -> Result<ThreadLease, SchedulerError> {
        let holder = uuid::Uuid::new_v4().to_string();
        let value = Value::String(holder.clone());
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if self
                .store()
                .claim_record(THREAD_LEASES, thread_id, &value, LEASE)
                .await?
            {
                return Ok(ThreadLease {
                    thread_id: thread_id.to_owned(),
                    holder,
                });
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(SchedulerError::ThreadContended);
            }
            tokio::time::sleep(RETRY).await;
        }
    }

    /// Gives `lease` back, unless its deadline passed and another request
    /// holds the thread now. A failure to reach the store is logged: the
    /// deadline frees the thread then.
    pub async fn release_thread(&self, lease: ThreadLease) {
        let store = self.store();
        let held = match store.get_record(THREAD_LEASES, &lease.thread_id).await {
            Ok(held) => held,
            Err(error) => {
                tracing::warn!(thread_id = %lease.thread_id, %error, "releasing a thread lease");
                return;
            }
        };
        if held.as_ref().and_then(Value::as_str) != Some(lease.holder.as_str()) {
            return;
        }
        if let Err(error) = store.delete_record(THREAD_LEASES, &lease.thread_id).await {
            tracing::warn!(thread_id = %lease.thread_id, %error, "releasing a thread lease");
        }
    }
}
