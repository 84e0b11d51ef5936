//! `RunsError`: why the runs service refused or failed, in the service's
//! own terms. A refusal is the caller's to mend; a backend failure is
//! worth trying again. Each edge maps it to its wire (the HTTP API to a
//! status and a `detail`, the submissions queue to a refusal reply or a
//! requeue, a cron to a log line); none of them is known here.

use deepfleet_proto::{ErrorCode, LimitExceeded};
use deepfleet_queue::QueueError;
use deepfleet_store::StoreError;

use crate::error::SchedulerError;
use crate::state_edit::EditError;

/// A refusal or failure of the runs service. A refusal's text is what
/// the caller reads: never internal details.
#[derive(Debug, thiserror::Error)]
pub enum RunsError {
    /// The request cannot be read as one.
    #[error("{0}")]
    Malformed(String),
    /// A well-formed request that breaks the contract.
    #[error("{0}")]
    Invalid(String),
    /// The agent spec the request names or brings is invalid.
    #[error("{0}")]
    InvalidSpec(String),
    /// Input past one of the limits.
    #[error(transparent)]
    TooLarge(#[from] LimitExceeded),
    /// Something the request names does not exist, or is another
    /// tenant's.
    #[error("{0}")]
    NotFound(String),
    /// The request contradicts the state of what it names.
    #[error("{0}")]
    Conflict(String),
    /// The tenant has too many runs in flight.
    #[error("{detail}")]
    TooManyRuns {
        /// What the caller reads.
        detail: String,
        /// Seconds to wait before trying again.
        retry_after: u64,
    },
    /// The store failed.
    #[error(transparent)]
    Store(StoreError),
    /// The queue failed.
    #[error(transparent)]
    Queue(#[from] QueueError),
}

impl RunsError {
    /// [`RunsError::Malformed`].
    pub fn malformed(detail: impl Into<String>) -> Self {
        RunsError::Malformed(detail.into())
    }

    /// [`RunsError::Invalid`].
    pub fn invalid(detail: impl Into<String>) -> Self {
        RunsError::Invalid(detail.into())
    }

    /// [`RunsError::NotFound`].
    pub fn not_found(detail: impl Into<String>) -> Self {
        RunsError::NotFound(detail.into())
    }

    /// [`RunsError::Conflict`].
    pub fn conflict(detail: impl Into<String>) -> Self {
        RunsError::Conflict(detail.into())
    }

    /// Whether a backend failed (the request may succeed later), rather
    /// than the request being refused.
    pub fn is_backend(&self) -> bool {
        matches!(self, RunsError::Store(_) | RunsError::Queue(_))
    }

    /// The stable code of this error, the same on every wire.
    pub fn code(&self) -> ErrorCode {
        match self {
            RunsError::Malformed(_) | RunsError::Invalid(_) => ErrorCode::InvalidRequest,
            RunsError::InvalidSpec(_) => ErrorCode::InvalidSpec,
            RunsError::TooLarge(_) => ErrorCode::TooLarge,
            RunsError::NotFound(_) => ErrorCode::NotFound,
            RunsError::Conflict(_) => ErrorCode::Conflict,
            RunsError::TooManyRuns { .. } => ErrorCode::TooManyRuns,
            RunsError::Store(_) | RunsError::Queue(_) => ErrorCode::Internal,
        }
    }
}

impl From<StoreError> for RunsError {
    fn from(e: StoreError) -> Self {
        match e {
            // The store refused what the caller asked: the caller's mistake.
            StoreError::Invalid(reason) => RunsError::Invalid(reason),
            e => RunsError::Store(e),
        }
    }
}

impl From<EditError> for RunsError {
    fn from(e: EditError) -> Self {
        SchedulerError::Edit(e).into()
    }
}

/// The scheduler's refusals, sorted into the service's kinds.
impl From<SchedulerError> for RunsError {
    fn from(e: SchedulerError) -> Self {
        match e {
            SchedulerError::InvalidTask { reason, .. }
            | SchedulerError::InvalidDecisions { reason, .. } => RunsError::Invalid(reason),
            SchedulerError::TooLarge { limit, .. } => RunsError::TooLarge(limit),
            SchedulerError::Spec(e) => RunsError::InvalidSpec(e.to_string()),
            SchedulerError::UnknownRun(run) => {
                RunsError::NotFound(format!("Run '{run}' not found."))
            }
            SchedulerError::UnknownAgent(name) => {
                RunsError::NotFound(format!("Graph '{name}' not found."))
            }
            e @ (SchedulerError::UnknownCheckpoint(_) | SchedulerError::UnknownThread(_)) => {
                RunsError::NotFound(e.to_string())
            }
            e @ (SchedulerError::NotInterrupted { .. }
            | SchedulerError::ThreadBusy
            | SchedulerError::ThreadContended
            | SchedulerError::ThreadChanged
            | SchedulerError::Edit(EditError::WaitsOnTools)) => RunsError::Conflict(e.to_string()),
            e @ SchedulerError::Edit(EditError::UnknownMessage(_)) => {
                RunsError::Invalid(e.to_string())
            }
            SchedulerError::RunStillRunning(_) => {
                RunsError::Conflict("Run is still running; cancel it first.".to_owned())
            }
            SchedulerError::Store(e) => e.into(),
            SchedulerError::Queue(e) => RunsError::Queue(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_failures_are_told_from_refusals() {
        let store = RunsError::from(StoreError::Connection("down".into()));
        assert!(store.is_backend());
        assert_eq!(store.code(), ErrorCode::Internal);
        let invalid = RunsError::from(StoreError::Invalid("bad key".into()));
        assert!(!invalid.is_backend());
        assert_eq!(invalid.to_string(), "bad key");
        let busy = RunsError::from(SchedulerError::ThreadBusy);
        assert!(matches!(busy, RunsError::Conflict(_)));
        assert_eq!(busy.code(), ErrorCode::Conflict);
    }
}
