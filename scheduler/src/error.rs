use deepfleet_fleet::PublishError;
use deepfleet_proto::SpecError;
use deepfleet_queue::QueueError;
use deepfleet_store::StoreError;

use crate::state_edit::EditError;

/// Why the scheduler refused or failed a request.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    /// A task breaks the contract; nothing was written.
    #[error("task {id}: {reason}")]
    InvalidTask {
        /// The task's id (empty if it had none).
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// A task goes past one of the input limits; nothing was written.
    #[error("task {id}: {limit}")]
    TooLarge {
        /// The task's id.
        id: String,
        /// The limit it went past.
        limit: deepfleet_proto::LimitExceeded,
    },
    /// The agent spec is invalid.
    #[error("invalid agent spec: {0}")]
    Spec(#[from] SpecError),
    /// No run by that id exists.
    #[error("unknown run '{0}'")]
    UnknownRun(String),
    /// A resume named a run that is not waiting for a decision.
    #[error("run '{run_id}' is not waiting for a decision (status: {status:?})")]
    NotInterrupted {
        /// The run.
        run_id: String,
        /// Its status.
        status: deepfleet_proto::RunStatus,
    },
    /// Decisions that do not answer the run's interrupt; nothing was
    /// recorded.
    #[error("decisions for run '{run_id}': {reason}")]
    InvalidDecisions {
        /// The run.
        run_id: String,
        /// What is wrong.
        reason: String,
    },
    /// A run was refused because its thread is busy and its strategy is
    /// `reject`.
    #[error(
        "Thread is already running a task. Wait for it to finish or choose a different multitask strategy."
    )]
    ThreadBusy,
    /// Another request kept deciding what the thread runs next for longer
    /// than a request waits; nothing was written.
    #[error("Thread is busy admitting another run; retry shortly.")]
    ThreadContended,
    /// A run cannot be deleted while it runs.
    #[error("run '{0}' is still running; cancel it first")]
    RunStillRunning(String),
    /// The thread is gone (deleted while a request was about it).
    #[error("Thread '{0}' not found.")]
    UnknownThread(String),
    /// No spec by that name is registered.
    #[error("unknown agent '{0}'")]
    UnknownAgent(String),
    /// The thread has no checkpoint by that id.
    #[error("Checkpoint '{0}' not found.")]
    UnknownCheckpoint(u64),
    /// A change to a thread's state found it changed since it was read
    /// (a run's step or seed in between); nothing was written.
    #[error("The thread changed while its state was updated; read it again and retry.")]
    ThreadChanged,
    /// An edit of the thread's values cannot apply.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The queue failed.
    #[error(transparent)]
    Queue(#[from] QueueError),
}

/// A step that could not be published: the queue's failure as it is; an
/// envelope that does not encode names its run (it cannot happen for the
/// ids the scheduler makes, but is not hidden either).
impl From<PublishError> for SchedulerError {
    fn from(e: PublishError) -> Self {
        match e {
            PublishError::Queue(e) => SchedulerError::Queue(e),
            PublishError::Encode { run_id, source } => SchedulerError::InvalidTask {
                id: run_id,
                reason: format!("cannot encode its step: {source}"),
            },
        }
    }
}
