//! The deep-agent harness.
//!
//! A worker executes one *step* of a run per queue message: load the thread
//! checkpoint, assemble the prompt, call the model through the middleware
//! stack, run the tool calls it asked for, commit everything atomically,
//! then publish what comes next. See `docs/step-protocol.md` and
//! `docs/middleware.md`.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agent;
pub mod backend;
pub mod background;
pub mod compress;
pub mod context;
mod error;
pub mod events;
pub mod gates;
pub mod mcp;
mod metrics;
pub mod middleware;
pub mod preflight;
pub mod prompt;
pub mod runtime;
pub mod sandbox;
pub mod step;
pub mod time_limits;
pub mod tool_id;
pub mod tool_names;
pub mod tools;
pub mod trace;

pub use context::StepContext;
pub use error::StepError;
pub use metrics::LimiterMetrics;
pub use runtime::Worker;
pub use step::{RetryConfig, StepRunner, StepRunnerBuilder};
pub use time_limits::TimeLimits;
