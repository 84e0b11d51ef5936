//! Running shell commands in a bubblewrap sandbox, for the `execute` tool.
//!
//! A command runs over a private temporary copy of the thread's files
//! ([`tree`]), seen as the sandbox's `/`, with the host's system paths
//! read-only, no network unless the spec allows it, no host secrets and
//! resource limits ([`bwrap`]); its output is capped and its time bounded
//! ([`process`]); afterwards the files it created, changed or deleted are
//! read back so the step commits them. [`host`] finds out once per
//! process whether this machine can sandbox at all. What is isolated and
//! what is not is written up in `docs/sandbox.md`.

pub mod bwrap;
pub mod host;
pub mod process;
pub mod tree;

pub use host::{Ran, Request, SandboxHost};
pub use process::{End, Outcome};

/// Why a command could not be run.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// This worker cannot sandbox (no `bwrap`, or it cannot create
    /// namespaces here).
    #[error("sandbox unavailable on this worker: {0}")]
    Unavailable(String),
    /// Preparing the work directory or starting the sandbox failed.
    #[error("the sandbox could not be set up: {0}")]
    Setup(String),
}

impl SandboxError {
    fn setup(e: impl std::fmt::Display) -> Self {
        SandboxError::Setup(e.to_string())
    }
}
