//! What the harness reports as it works: model and tool calls, token use,
//! compaction. Metrics, traces and streaming subscribe through an
//! [`EventSink`]; the harness never depends on who listens.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use deepfleet_model::{CallPurpose, ErrorKind};
use deepfleet_proto::{ErrorCode, RunRecord, RunStatus, ToolStatus, Usage};

/// Which run an event belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventScope {
    /// The run.
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
    /// The agent spec's name.
    pub agent: String,
    /// The subagent type, for delegated runs.
    pub subagent: Option<String>,
    /// The tenant the run belongs to (empty before the record is
    /// loaded).
    pub tenant: String,
}

impl EventScope {
    /// The scope of a message's events before its run record is loaded
    /// (agent unknown).
    pub fn of_job(run_id: &str, thread_id: &str) -> Self {
        EventScope {
            run_id: run_id.to_owned(),
            thread_id: thread_id.to_owned(),
            agent: String::new(),
            subagent: None,
            tenant: String::new(),
        }
    }

    /// The scope of `run`'s events.
    pub fn of(run: &RunRecord) -> Self {
        EventScope {
            run_id: run.run_id.clone(),
            thread_id: run.thread_id.clone(),
            agent: run.agent.clone(),
            subagent: run.subagent.clone(),
            tenant: run.tenant.as_str().to_owned(),
        }
    }
}

/// How context was compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompactionKind {
    /// A large tool result was written to a file and replaced by a preview.
    Offload,
    /// Old `write_file`/`edit_file` arguments were truncated in the request.
    ArgumentTruncation,
    /// Older messages were summarized.
    Summarization,
    /// A context-overflow error forced a summary and a retry.
    OverflowRetry,
    /// The model called `compact_conversation`.
    ManualCompaction,
    /// An oversized user message was written to a file.
    UserMessageEviction,
}

impl CompactionKind {
    /// The label used in metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionKind::Offload => "offload",
            CompactionKind::ArgumentTruncation => "argument_truncation",
            CompactionKind::Summarization => "summarization",
            CompactionKind::OverflowRetry => "overflow_retry",
            CompactionKind::ManualCompaction => "manual_compaction",
            CompactionKind::UserMessageEviction => "user_message_eviction",
        }
    }
}

/// Why a message was dead-lettered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeadLetterReason {
    /// The payload was not a job this build understands.
    Malformed,
    /// The job contradicts the store (unknown run, a step from the future).
    Rejected,
    /// The step kept failing until its attempts ran out.
    AttemptsExhausted,
}

impl DeadLetterReason {
    /// The label used in metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            DeadLetterReason::Malformed => "malformed",
            DeadLetterReason::Rejected => "rejected",
            DeadLetterReason::AttemptsExhausted => "attempts_exhausted",
        }
    }
}

/// One thing that happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A model call finished (successfully or not).
    ModelCall {
        /// The model name sent to the provider.
        model: String,
        /// Why the call was made.
        purpose: CallPurpose,
        /// Tokens, when the call succeeded.
        usage: Option<Usage>,
        /// Wall time of the call, client retries included.
        latency: Duration,
    },
    /// A tool call finished.
    ToolCall {
        /// The tool.
        tool: String,
        /// Its outcome.
        status: ToolStatus,
        /// Wall time of the call.
        latency: Duration,
    },
    /// Context was compressed.
    Compaction {
        /// How.
        kind: CompactionKind,
        /// Tokens before.
        tokens_before: u64,
        /// Tokens after.
        tokens_after: u64,
    },
    /// A step was committed.
    StepCommitted {
        /// The run's status after it.
        status: RunStatus,
        /// Wall time from delivery to commit.
        latency: Duration,
    },
    /// A worker took a step message off the queue. The scope carries only
    /// the run and thread ids: the run record is not loaded yet.
    StepStarted {
        /// Time from publication to delivery, when the envelope says when
        /// it was published.
        queue_wait: Option<Duration>,
    },
    /// The delivery of a step message was settled, whatever its outcome.
    StepEnded,
    /// A run reached a final status.
    RunFinished {
        /// The final status.
        status: RunStatus,
        /// From the run's creation to now.
        latency: Duration,
    },
    /// A failed step was published again for a later attempt.
    Retried {
        /// What failed.
        code: ErrorCode,
    },
    /// A message was moved to the dead-letter queue.
    DeadLettered {
        /// Why.
        reason: DeadLetterReason,
    },
    /// A model call failed at the provider (after the client's retries).
    ProviderError {
        /// The model name sent to the provider.
        model: String,
        /// The class of failure.
        kind: ErrorKind,
    },
    /// What a run's model calls cost, at the worker's prices: its own
    /// call of a step, or the summaries the step made.
    Cost {
        /// The model name sent to the provider.
        model: String,
        /// Nano-dollars.
        nano_usd: u64,
    },
    /// A model call waited for the fleet-wide rate limiter.
    RateLimitWait {
        /// How long.
        wait: Duration,
    },
    /// A step was deferred: its run's concurrency pool was full.
    SlotWait {
        /// The full pool.
        pool: deepfleet_proto::SlotPool,
    },
}

/// Receives events. Implementations must be cheap and must not block:
/// they run on the step's path.
pub trait EventSink: Send + Sync {
    /// Handles one event.
    fn emit(&self, scope: &EventScope, event: &Event);
}

/// Drops every event.
pub struct NoopSink;

impl EventSink for NoopSink {
    fn emit(&self, _scope: &EventScope, _event: &Event) {}
}

/// Keeps every event, for tests.
#[derive(Default)]
pub struct RecordingSink {
    events: Mutex<Vec<(EventScope, Event)>>,
}

impl RecordingSink {
    /// A shareable empty recorder.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Everything recorded so far.
    pub fn events(&self) -> Vec<(EventScope, Event)> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl EventSink for RecordingSink {
    fn emit(&self, scope: &EventScope, event: &Event) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((scope.clone(), event.clone()));
    }
}

/// Several sinks as one.
pub struct FanOut(pub Vec<Arc<dyn EventSink>>);

impl EventSink for FanOut {
    fn emit(&self, scope: &EventScope, event: &Event) {
        for sink in &self.0 {
            sink.emit(scope, event);
        }
    }
}
