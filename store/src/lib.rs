//! Durable state of the fleet: thread checkpoints, run records, subagent
//! fan-in, cancel flags, specs and batch progress.
//!
//! A worker holds nothing between messages; everything a step needs is
//! loaded from the store and everything it produced is written back by one
//! atomic [`Checkpoints::commit_step`], fenced by a compare-and-set on the
//! step number. Messages are append-only, so bytes written per step are
//! proportional to what the step added, never to the conversation.
//!
//! The store is a set of small capability traits, one per kind of state
//! ([`Specs`], [`Admission`], [`Runs`], [`Checkpoints`], [`History`],
//! [`FanIn`], [`RunStreams`], [`Records`], [`RecordIndex`], [`Items`],
//! [`Batches`], [`Retention`], [`Spend`], [`Slots`]); a caller that needs
//! one takes that trait, a caller that needs everything takes [`Store`],
//! which every type implementing all of them is.
//! `use deepfleet_store::prelude::*` brings every capability's methods
//! into scope.
//!
//! Each capability is a module with its trait and shared types, and knows
//! no back end. Each back end is a module with its plumbing and a file per
//! capability implementing that trait: [`embedded::EmbeddedStore`] (in
//! process; state and snapshots) and [`redis::RedisStore`] (a single Redis
//! or a Redis Cluster; connection, codec, script calls). So the back ends
//! depend on the capabilities and never the other way round.
#![warn(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod admission;
pub mod at_rest;
pub mod batches;
pub mod checkpoints;
mod cipher;
pub mod embedded;
mod error;
pub mod fan_in;
pub mod history;
pub mod items;
pub mod prelude;
pub mod record_index;
pub mod records;
pub mod redis;
pub mod retention;
pub mod run_streams;
pub mod runs;
pub mod sealed;
pub mod slots;
pub mod specs;
pub mod spend;

pub use admission::{Admission, AdmissionState, Entered};
pub use at_rest::Keyring;
pub use batches::Batches;
pub use checkpoints::{
    Checkpoint, CheckpointSource, Checkpoints, CommitOutcome, StepCommit, UpdateMark,
};
pub use error::StoreError;
pub use fan_in::FanIn;
pub use history::{
    CheckpointState, Conversation, Fence, History, HistoryQuery, Restore, ThreadUpdate, Timeline,
    UpdateOutcome,
};
pub use items::Items;
pub use record_index::{IndexEntry, Order, RecordIndex};
pub use records::Records;
pub use retention::Retention;
pub use run_streams::{
    RUN_DELTAS_MAX, RUN_DELTAS_TTL_SECS, RUN_EVENTS_MAX, RUN_EVENTS_TTL_SECS, RunStreams,
};
pub use runs::{Runs, ThreadSeed};
pub use slots::Slots;
pub use specs::Specs;
pub use spend::Spend;

/// The fleet's whole durable state: every capability at once, for callers
/// (the step driver, the HTTP API, the binary's wiring) that touch most of
/// it. Implemented for every type that implements all the capabilities;
/// `Arc<dyn Store>` upcasts to any one of them.
///
/// Together, implementations must keep every key of one thread together,
/// so that [`Checkpoints::commit_step`] (which also writes the run record
/// and resets the run's fan-in) is one atomic operation.
///
/// ```
/// use std::sync::Arc;
/// use deepfleet_store::{Batches, Store, embedded::EmbeddedStore};
///
/// /// Needs one capability only.
/// async fn drain(batches: &dyn Batches) -> Vec<String> {
///     batches.pop_batch_done("b1", 10).await.unwrap()
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
/// store.push_batch_done("b1", "r1").await.unwrap();
/// assert_eq!(drain(&*store).await, ["r1"]);
/// # });
/// ```
pub trait Store:
    Specs
    + Admission
    + Runs
    + Checkpoints
    + History
    + FanIn
    + RunStreams
    + Records
    + RecordIndex
    + Items
    + Batches
    + Retention
    + Spend
    + Slots
{
}

impl<T> Store for T where
    T: Specs
        + Admission
        + Runs
        + Checkpoints
        + History
        + FanIn
        + RunStreams
        + Records
        + RecordIndex
        + Items
        + Batches
        + Retention
        + Spend
        + Slots
{
}
