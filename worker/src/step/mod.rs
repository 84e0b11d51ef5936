//! The step protocol (see `docs/step-protocol.md`).
//!
//! Data travels one way: the [`driver`] loads, [`decide`]s, and hands an
//! executable step to [`execute`], which walks the pure [`turn`] machine
//! doing the I/O each state asks for; the [`commit`] it assembles is
//! written, [`announce`]d, and its follow-ups published last.
//!
//! - [`announce`]: run events for streaming followers, after each commit;
//! - [`background`]: the ledger of background tasks (async subagents);
//! - [`call_ids`]: tool-call ids made unique as a model turn comes in;
//! - [`commit`]: the commit of a finished step (pure);
//! - `deadline_check`: ending parked runs at their deadline;
//! - [`decide`]: pure decisions (fencing, follow-ups);
//! - [`delegation`]: tool results into call results and child runs (pure);
//! - [`deltas`]: token streaming of followed runs;
//! - [`driver`]: delivery in, commit, follow-ups out, ack last;
//! - [`execute`]: the thin driver of the turn machine;
//! - `failure`: retries, and ending runs that cannot go on;
//! - [`follow_up`]: idempotent publishing of next steps and child runs;
//! - [`guard`]: checks across the calls of one turn;
//! - [`halt`]: why a run stops before its step (cancel, deadline, budget);
//! - [`hitl`]: human in the loop: gating a turn, applying decisions (pure);
//! - [`model_call`]: the step's model call through the middleware;
//! - [`resume`]: completing a turn parked on its subagents;
//! - [`run_budget`]: the runs a run may still start below it (pure);
//! - `slots`: taking a run's concurrency slots before its step;
//! - `spec_versions`: the spec versions a worker has read, kept;
//! - [`spans`]: trace spans of model and tool calls;
//! - [`spend`]: what a run spends from its budgets' accounts;
//! - `throttle`: deferring a step the rate limiter has no capacity for,
//!   or whose concurrency pool is full;
//! - [`time_limits`]: how long a step and a tool call may take;
//! - [`tool_calls`]: running a turn's tool calls through the middleware;
//! - [`turn`]: the turn machine's states and transitions (pure).

pub mod announce;
pub mod background;
pub mod call_ids;
pub mod commit;
mod deadline_check;
pub mod decide;
pub mod delegation;
pub mod deltas;
pub mod driver;
pub mod execute;
mod failure;
pub mod follow_up;
pub mod guard;
pub mod halt;
pub mod hitl;
mod hold;
pub mod model_call;
pub mod resume;
mod retry;
pub mod run_budget;
mod slots;
pub mod spans;
mod spec_versions;
pub mod spend;
mod throttle;
pub mod time_limits;
pub mod tool_calls;
pub mod turn;

pub use driver::StepRunner;
pub use retry::RetryConfig;
pub use time_limits::TimeLimits;
