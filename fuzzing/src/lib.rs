//! What each fuzz target checks, as plain functions over one input.
//!
//! Two callers run them. cargo-fuzz's targets in `fuzz/` hand them what
//! libFuzzer generates (`make fuzz`: coverage-guided search, minutes per
//! target, with a build of its own). This crate's tests hand them every
//! input kept in `fuzz/corpus/` (and any crash saved under
//! `fuzz/artifacts/`), in the ordinary test build: what a search once
//! found stays checked on every `cargo test`, at no extra build.
//!
//! A check panics to report a failure, as libFuzzer expects, so the
//! checks assert and expect freely.
#![allow(clippy::expect_used, clippy::unwrap_used)]

pub mod file_tools;
pub mod job;
pub mod json;
pub mod message;
pub mod path;
pub mod runtime;
pub mod spec;
pub mod submission;
pub mod task_line;

/// A target's check: one input in, a panic on failure.
pub type Check = fn(&[u8]);

/// Every target by its name in `fuzz/`, with its check.
pub const TARGETS: &[(&str, Check)] = &[
    ("file_tools", file_tools::check),
    ("job", job::check),
    ("message", message::check),
    ("path", path::check),
    ("spec", spec::check),
    ("submission", submission::check),
    ("task_line", task_line::check),
];

#[cfg(test)]
mod replay;
