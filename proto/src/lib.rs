//! deepfleet's wire contract.
//!
//! Types only: jobs on the queue, agent specs, messages, run records, the
//! checkpoint's stored shapes, the batch JSONL lines and the Redis key
//! schema. No runtime, no IO: every other crate depends on this one, and
//! services in other languages read its JSON Schemas (`proto/schema/`).
#![warn(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod api;
pub mod batch;
pub mod caller_usage;
pub mod checkpoint;
pub mod concurrency;
pub mod cost;
pub mod error;
pub mod harness;
pub mod hitl;
pub mod http_tool;
pub mod input_limits;
pub mod item;
pub mod job;
pub mod keys;
pub mod mcp;
pub mod message;
pub mod model_params;
pub mod path;
pub mod run;
pub mod run_delta;
pub mod run_event;
pub mod sandbox;
pub mod schema;
pub mod sealed;
pub mod spec;
pub mod spec_error;
pub mod spec_lines;
pub mod spec_name;
pub mod spec_version;
pub mod submission;
pub mod tenant;
pub mod value_source;

pub use batch::{PendingReview, ResultLine, ResultStatus, ResultUsage, TaskLine};
pub use caller_usage::{CallUsage, UsageByCaller};
pub use checkpoint::{
    ChildRun, ContextCursor, Encoding, EvictedMessage, FileData, LoggedMessage, PendingCall,
    PendingTools, SummaryEvent,
};
pub use concurrency::{ConcurrencyLimit, SlotPool};
pub use cost::{Budget, Price, Prices};
pub use error::ErrorCode;
pub use hitl::{
    ActionRequest, Decision, DecisionType, EditedAction, Interrupt, InterruptConfig, InterruptOn,
    ReviewConfig,
};
pub use input_limits::{InputLimits, LimitExceeded};
pub use item::{Item, ItemSearch, NamespaceError, NamespaceQuery};
pub use job::{ENVELOPE_VERSION, Envelope, Job, StepJob};
pub use keys::Keys;
pub use message::{
    AssistantMessage, ContentBlock, ImageSource, Message, SystemMessage, ToolCall, ToolMessage,
    ToolStatus, Usage, UserMessage,
};
pub use model_params::{ModelParams, ReasoningEffort};
pub use run::{ChildResult, ParentLink, Priority, RunError, RunRecord, RunStatus};
pub use run_delta::{DeltaSource, RunDelta, ToolCallChunk};
pub use run_event::RunEvent;
pub use sandbox::SandboxSpec;
pub use sealed::SealedContext;
pub use spec::{AgentSpec, Limits, ModelProfile, SpecError, SubagentSpec};
pub use spec_version::{ServedSpec, spec_version};
pub use submission::{
    RefusalStatus, Submission, SubmissionInput, SubmissionRefusal, SubmissionResult,
};
pub use tenant::{Caller, Role, TenantId};
