//! Run streams: each run's stream of commit events (what a follower polls
//! to learn that a step committed) and its stream of token deltas (what
//! it shows while a model call is still streaming). Both are transient:
//! a follower that misses entries recovers from the checkpoint.

pub(crate) mod log;

use async_trait::async_trait;
use deepfleet_proto::{RunDelta, RunEvent};

use crate::error::StoreError;

/// Most events a run's stream keeps (one per step of the run and its
/// subagents).
pub const RUN_EVENTS_MAX: usize = 10_000;

/// How long a run's event stream outlives its last append.
pub const RUN_EVENTS_TTL_SECS: u64 = 24 * 3600;

/// Most token deltas a run's delta stream keeps: a long answer streamed
/// in 50 ms windows fits many times over; older ones are of no use to a
/// follower, which gets the committed message anyway.
pub const RUN_DELTAS_MAX: usize = 2_000;

/// How long a run's delta stream outlives its last append: long enough
/// for a follower to catch up, short enough that deltas never pile up.
pub const RUN_DELTAS_TTL_SECS: u64 = 600;

/// Per-run event and delta streams.
///
/// Implementations must keep each stream in append order, hand out ids
/// that increase along it (opaque strings without `/` or `:`, so they fit
/// in an SSE id), cap and expire streams as documented on each append,
/// and never block or fail a commit on them.
#[async_trait]
pub trait RunStreams: Send + Sync + 'static {
    /// Appends `event` to `run_id`'s event stream. Streams are capped
    /// (oldest events dropped past [`RUN_EVENTS_MAX`]) and expire
    /// [`RUN_EVENTS_TTL_SECS`] after the last append; followers that miss
    /// events recover from the checkpoint.
    async fn append_run_event(&self, run_id: &str, event: &RunEvent) -> Result<(), StoreError>;

    /// Up to `max` events of `run_id`'s stream after the one with id
    /// `after` (from the start when `None`), oldest first, with their ids.
    /// Ids are opaque, increasing strings without `/` or `:`.
    async fn run_events(
        &self,
        run_id: &str,
        after: Option<&str>,
        max: usize,
    ) -> Result<Vec<(String, RunEvent)>, StoreError>;

    /// Appends streamed tokens to `run_id`'s delta stream, kept apart from
    /// its event stream: capped at [`RUN_DELTAS_MAX`], expiring
    /// [`RUN_DELTAS_TTL_SECS`] after the last append.
    async fn append_run_delta(&self, run_id: &str, delta: &RunDelta) -> Result<(), StoreError>;

    /// Up to `max` deltas of `run_id` after the one with id `after` (from
    /// the start when `None`), oldest first, with their ids (opaque,
    /// increasing, without `/` or `:`).
    async fn run_deltas(
        &self,
        run_id: &str,
        after: Option<&str>,
        max: usize,
    ) -> Result<Vec<(String, RunDelta)>, StoreError>;
}
