//! The step protocol (see `docs/step-protocol.md`).
//!
//! Data travels one way: the [`driver`] hands each step message to
//! `run_step`, which loads it, [`decide`]s, and hands an executable step
//! to [`execute`], which walks the pure [`turn`] machine doing the I/O
//! each state asks for; the [`commit`] it assembles is written,
//! [`announce`]d, and its follow-ups published. The delivery is settled
//! last, once, by `settle`.
//!
//! - [`announce`]: run events for streaming followers, after each commit;
//! - `builder`: building a [`StepRunner`], its agent cache once;
//! - [`call_ids`]: tool-call ids made unique as a model turn comes in;
//! - [`commit`]: the commit of a finished step (pure);
//! - `committed`: after a commit: its events, then its follow-ups or the
//!   next step the delivery keeps;
//! - `deadline_check`: ending parked runs at their deadline;
//! - [`decide`]: pure decisions (fencing, follow-ups);
//! - [`delegation`]: tool results into call results and child runs (pure);
//! - [`deltas`]: token streaming of followed runs;
//! - [`driver`]: delivery in, its steps run, one settlement out;
//! - [`execute`]: the thin driver of the turn machine;
//! - `failure`: what a failed step settles as: deferred, retried, or its
//!   run ended (pure);
//! - [`follow_up`]: idempotent publishing of next steps and child runs;
//! - [`guard`]: checks across the calls of one turn;
//! - [`halt`]: why a run stops before its step (cancel, deadline, budget);
//! - [`hitl`]: human in the loop: gating a turn, applying decisions (pure);
//! - `hold`: whether a delivery keeps the next step it calls for;
//! - `io`: the queue, store and event sink steps read and write;
//! - `load`: loading what a step message names, and deciding;
//! - [`model_call`]: the step's model call through the middleware;
//! - `prepare`: a step's agent, context, slots and span, before its call;
//! - [`resume`]: completing a turn parked on its subagents;
//! - `retry`: backoff of failed steps;
//! - `run_end`: ending a run outside its step's commit;
//! - `run_step`: one step message loaded, decided and carried out;
//! - [`run_budget`]: the runs a run may still start below it (pure);
//! - `settle`: the one place a delivery is acked, requeued or
//!   dead-lettered;
//! - `slots`: taking a run's concurrency slots before its step;
//! - `spec_versions`: the spec versions a worker has read, kept;
//! - [`spans`]: trace spans of steps, model and tool calls;
//! - [`spend`]: what a run spends from its budgets' accounts;
//! - `throttle`: which failures defer a step (the rate limiter has no
//!   capacity for it, or its concurrency pool is full), and how long (pure);
//! - [`tool_calls`]: running a turn's tool calls through the middleware;
//! - [`turn`]: the turn machine's states and transitions (pure).

pub mod announce;
mod builder;
pub mod call_ids;
pub mod commit;
mod committed;
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
mod io;
mod load;
pub mod model_call;
mod prepare;
pub mod resume;
mod retry;
pub mod run_budget;
mod run_end;
mod run_step;
mod settle;
mod slots;
pub mod spans;
mod spec_versions;
pub mod spend;
mod throttle;
pub mod tool_calls;
pub mod turn;

pub use builder::StepRunnerBuilder;
pub use driver::StepRunner;
pub use retry::RetryConfig;
