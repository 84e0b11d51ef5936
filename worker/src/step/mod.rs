//! The step protocol (see `docs/step-protocol.md`).
//!
//! - [`announce`]: run events for streaming followers, after each commit;
//! - [`decide`]: pure decisions (fencing, follow-ups);
//! - [`deltas`]: token streaming of followed runs;
//! - [`execute`]: one model call plus its tools, producing a commit;
//! - [`driver`]: delivery in, commit, follow-ups out, ack last;
//! - `failure`: retries, and ending runs that cannot go on;
//! - [`follow_up`]: idempotent publishing of next steps and child runs;
//! - [`guard`]: checks across the calls of one turn;
//! - [`spans`]: trace spans of model and tool calls.

pub mod announce;
pub mod decide;
pub mod deltas;
pub mod driver;
pub mod execute;
mod failure;
pub mod follow_up;
pub mod guard;
pub mod hitl;
mod retry;
pub mod spans;

pub use driver::StepRunner;
pub use retry::RetryConfig;
