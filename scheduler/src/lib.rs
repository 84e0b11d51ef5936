//! The scheduler: takes runs in, follows them to the end.
//!
//! [`runs`] is the runs service, the application layer every entry that
//! makes or follows runs goes through (the HTTP API crate, A2A and MCP
//! over it, the [`submissions`] queue and [`crons`]); [`lifecycle`] is the
//! run lifecycle under it. A task batch goes through [`Intake`], which
//! validates a task, writes the run record and publishes its first step;
//! [`BatchFollower`] turns finished runs into result lines. All of it
//! works the same over the embedded and the distributed backends.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod admission;
mod batch;
pub mod batch_ids;
pub mod convert;
pub mod crons;
mod custom_state;
mod error;
pub mod ids;
mod intake;
pub mod keys;
pub mod lifecycle;
pub mod make_run;
mod message_ids;
mod refusals;
pub mod replies;
pub mod repo;
pub mod reserved;
pub mod resume;
pub mod retention;
pub mod run_bounds;
pub mod runs;
mod runtime_context;
pub mod slot_sweep;
pub mod state_edit;
pub mod submissions;
pub mod task_batches;
pub mod webhook_delivery;
pub mod webhooks;

pub use admission::AdmissionSweep;
pub use batch::{BatchFollower, result_line};
pub use batch_ids::batch_run_id;
pub use crons::CronLoop;
pub use custom_state::validate_seed;
pub use error::SchedulerError;
pub use intake::Intake;
pub use lifecycle::Lifecycle;
pub use replies::Replier;
pub use reserved::ReservedQueues;
pub use retention::RetentionPolicy;
pub use run_bounds::RunBounds;
pub use runs::tasks::{submit_task, validate_task};
pub use runtime_context::validate as validate_context;
pub use submissions::SubmissionIntake;
pub use task_batches::{TaskBatchCounts, TaskBatchMember, TaskBatches};
pub use webhook_delivery::WebhookDeliverer;
pub use webhooks::WebhookConfig;
