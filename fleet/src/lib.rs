//! What every fleet process shares, whatever its role.
//!
//! Workers, the scheduler and the CLI's embedded mode all count tokens
//! the same way (a message's count is stored once, when it enters a
//! thread), export the same Prometheus families and put step messages on
//! the queue in the same envelope. Keeping those here lets the scheduler
//! do all three without depending on the agent harness (`deepfleet-worker`).
//!
//! - [`tokens`]: tiktoken counts of messages;
//! - [`metrics`]: the registry and its families, updated through typed
//!   methods with bounded labels;
//! - [`publish`]: building and publishing a step message;
//! - [`admission`]: starting the runs a batch's admission window lets in.
#![warn(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod admission;
mod error;
pub mod metrics;
pub mod publish;
pub mod tokens;

pub use error::PublishError;
pub use metrics::{Caller, METRIC_NAMES, Metrics};
pub use publish::{publish_deadline_check, publish_step, step_message};
