//! Batch admission: each batch keeps a bounded number of runs in flight
//! (its *window*) and admits the next waiting run as one ends, so a large
//! batch delivers results from its first seconds instead of advancing
//! every run one step at a time.
//!
//! A run of a windowed batch is created as usual (its record exists,
//! pending) and then entered: it is admitted at once if the window has
//! room, else it waits at the back of the batch's line and nobody
//! publishes its first step. When an admitted run ends, whoever handles
//! its end (the worker's follow-ups, or the sweep that finds it ended)
//! asks for its successor with [`Admission::admit_after`], which records
//! the answer under the ended run (set once): a redelivered follow-up
//! gets the same successor back and republishes the same first step,
//! which the worker fences. Admitted runs whose first step is not known
//! to be out yet are *unstarted* until [`Admission::admission_started`],
//! so a sweep can republish the step of a publisher that died.

pub(crate) mod window;

use async_trait::async_trait;

use crate::error::StoreError;

/// Where a run entered into its batch's admission stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entered {
    /// Admitted, its first step not known to be published: publish it,
    /// then call [`Admission::admission_started`].
    Start,
    /// Waiting for a place in the window, or admitted and started before:
    /// nothing to publish.
    Hold,
}

/// What a sweep reads of one batch's admission.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdmissionState {
    /// How many runs the batch keeps in flight.
    pub window: u32,
    /// How many runs wait for a place.
    pub waiting: u64,
    /// The runs admitted whose end was not handled yet.
    pub admitted: Vec<String>,
    /// The admitted runs whose first step is not known to be published.
    pub unstarted: Vec<String>,
}

/// Per-batch admission windows.
///
/// Implementations must make [`Admission::enter_admission`],
/// [`Admission::admit_after`] and [`Admission::top_up`] each atomic, so
/// the admitted runs of a batch never outnumber its window (except runs
/// admitted before the window shrank), and make `admit_after` answer the
/// same for the same ended run every time.
#[async_trait]
pub trait Admission: Send + Sync + 'static {
    /// Enters `run_id` into batch `batch_id`, whose window becomes
    /// `window`: admitted if the window has room and nobody waits, else
    /// at the back of the line. Idempotent: a run entered before keeps its
    /// place and is [`Entered::Hold`]: the intake that entered it
    /// publishes it (two submits of one batch at once must not both),
    /// and one left unstarted is the sweep's to start.
    async fn enter_admission(
        &self,
        batch_id: &str,
        run_id: &str,
        window: u32,
    ) -> Result<Entered, StoreError>;

    /// Frees the place of `ended_run`, which ended, and admits the next
    /// waiting run in it (if the window still has room). Returns the run
    /// admitted for `ended_run`: the same on every call, `None` when none
    /// was (nobody waited, or `ended_run` was never admitted here).
    async fn admit_after(
        &self,
        batch_id: &str,
        ended_run: &str,
    ) -> Result<Option<String>, StoreError>;

    /// Admits waiting runs until the window is full; returns them.
    async fn top_up(&self, batch_id: &str) -> Result<Vec<String>, StoreError>;

    /// Marks `runs` started: their first steps are published.
    async fn admission_started(&self, batch_id: &str, runs: &[String]) -> Result<(), StoreError>;

    /// The admission of `batch_id` as it is now (the default when it has
    /// none).
    async fn admission_state(&self, batch_id: &str) -> Result<AdmissionState, StoreError>;

    /// The batches with an admission that has runs waiting or admitted.
    async fn admission_batches(&self) -> Result<Vec<String>, StoreError>;

    /// Drops `batch_id` from [`Admission::admission_batches`] if nothing
    /// waits and nothing is admitted; returns whether it did.
    async fn close_admission(&self, batch_id: &str) -> Result<bool, StoreError>;
}
