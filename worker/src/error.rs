//! Why a step failed, and whether redelivering it can help.

use deepfleet_fleet::PublishError;
use deepfleet_model::ModelError;
use deepfleet_proto::ErrorCode;
use deepfleet_queue::QueueError;
use deepfleet_store::StoreError;

/// A step that could not complete.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The model call failed (after the client's own retries).
    #[error("model call failed: {0}")]
    Model(#[from] ModelError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The queue failed.
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// A tool failed in a way the model cannot act on.
    #[error("tool `{tool}` failed: {message}")]
    Tool {
        /// The tool.
        tool: String,
        /// What went wrong.
        message: String,
    },
    /// The agent spec cannot be turned into an agent (e.g. an unknown
    /// provider).
    #[error("agent `{agent}`: {message}")]
    Agent {
        /// The agent's name.
        agent: String,
        /// What is wrong.
        message: String,
    },
    /// The stored state contradicts itself (e.g. a missing child result).
    #[error("inconsistent state: {0}")]
    Inconsistent(String),
    /// The queue would dead-letter this step if its worker died once more:
    /// it kept being redelivered without finishing. Retried like any
    /// transient failure (a fresh message, after a backoff, one attempt
    /// more), so workers dying around a step cost it attempts only once
    /// per full round of deliveries the queue allows.
    #[error(
        "the step was delivered as often as the queue allows without finishing, in each of its \
         attempts: the workers running it crashed or were stopped (look for OOM kills and \
         restarts)"
    )]
    LastDelivery,
    /// The run asks for something its inputs cannot give (a prompt
    /// template or store namespace naming a missing context value).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The agent has `execute`, and this worker cannot sandbox: the run is
    /// refused rather than retried, as the worker's machine will not
    /// change between attempts.
    #[error("the agent declares a sandbox for `execute`, and this worker cannot provide one: {0}")]
    SandboxUnavailable(String),
    /// The step ran past its time limit and was abandoned uncommitted.
    #[error(
        "the step ran longer than {} s (worker.step_timeout_secs) and was stopped",
        .0.as_secs_f64()
    )]
    TimedOut(std::time::Duration),
    /// The run's tenant or assistant has as many runs in flight as its
    /// concurrency limit allows: the step waits on the queue for a place
    /// (deferred, not failed).
    #[error("no free place in concurrency pool `{}`", .0.name())]
    AwaitingSlot(deepfleet_proto::SlotPool),
}

impl StepError {
    /// Whether redelivering the step can succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            StepError::Model(e) => e.is_retryable(),
            StepError::Store(e) => e.is_retryable(),
            StepError::Queue(e) => e.is_retryable(),
            StepError::Tool { .. }
            | StepError::TimedOut(_)
            | StepError::LastDelivery
            | StepError::AwaitingSlot(_) => true,
            StepError::Agent { .. }
            | StepError::Inconsistent(_)
            | StepError::InvalidRequest(_)
            | StepError::SandboxUnavailable(_) => false,
        }
    }

    /// The code recorded on a run this error ends.
    pub fn code(&self) -> ErrorCode {
        use deepfleet_model::ErrorKind;
        match self {
            StepError::Model(e) => match e.kind {
                ErrorKind::Auth => ErrorCode::ModelAuth,
                ErrorKind::BadRequest
                | ErrorKind::InvalidResponse
                | ErrorKind::ResponseTooLarge
                | ErrorKind::Unsupported => ErrorCode::ModelBadRequest,
                ErrorKind::ContextOverflow => ErrorCode::ContextOverflow,
                ErrorKind::RateLimited
                | ErrorKind::Overloaded
                | ErrorKind::Server
                | ErrorKind::Timeout
                | ErrorKind::Transport
                | ErrorKind::AwaitingCapacity => ErrorCode::ModelUnavailable,
            },
            StepError::Tool { .. } => ErrorCode::ToolFailed,
            StepError::Agent { .. } => ErrorCode::InvalidSpec,
            StepError::InvalidRequest(_) => ErrorCode::InvalidRequest,
            StepError::SandboxUnavailable(_) => ErrorCode::SandboxUnavailable,
            // Lost workers, like a lost store or broker: the run ends
            // `attempts_exhausted` only once no attempt is left.
            StepError::LastDelivery
            | StepError::AwaitingSlot(_)
            | StepError::Store(_)
            | StepError::Queue(_)
            | StepError::Inconsistent(_)
            | StepError::TimedOut(_) => ErrorCode::Internal,
        }
    }
}

/// A follow-up step that could not be published: a queue failure is
/// retried like any other; an envelope that does not encode is a bug in
/// the stored state, which retrying cannot fix.
impl From<PublishError> for StepError {
    fn from(e: PublishError) -> Self {
        match e {
            PublishError::Queue(e) => StepError::Queue(e),
            e @ PublishError::Encode { .. } => StepError::Inconsistent(e.to_string()),
        }
    }
}
