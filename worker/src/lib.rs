//! The deep-agent harness.
//!
//! A worker executes one *step* of a run per queue message: load the thread
//! checkpoint, assemble the prompt, call the model through the middleware
//! stack, run the tool calls it asked for, commit everything atomically,
//! then publish what comes next. See `docs/step-protocol.md`.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod backend;
pub mod tools;
