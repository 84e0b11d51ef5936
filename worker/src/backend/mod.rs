//! File backends: where the file tools read and write.
//!
//! The trait mirrors deepagents' backend protocol: structured results, with
//! the tools (`crate::tools`) owning every model-facing string. `state` is
//! the per-thread backend checkpointed with the thread; store, composite
//! and local backends implement the same trait.

pub mod composite;
pub mod disk;
pub mod local;
pub mod path;
pub mod pattern;
pub mod routes;
pub mod search;
pub mod state;
pub mod store;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use deepfleet_proto::FileData;

pub use composite::CompositeBackend;
pub use local::LocalBackend;
pub use state::StateBackend;
pub use store::StoreBackend;

/// An `ls`/`glob` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// Absolute virtual path; directories end with `/`.
    pub path: String,
    /// Whether the entry is a directory.
    pub is_dir: bool,
    /// Size in UTF-8 bytes (0 for directories).
    pub size: u64,
    /// Last modification, when known.
    pub modified_at: Option<DateTime<Utc>>,
}

/// One `grep` hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepMatch {
    /// The file.
    pub path: String,
    /// 1-based line number.
    pub line: usize,
    /// The whole line.
    pub text: String,
}

/// `grep` hits, possibly cut at `max_count`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrepResult {
    /// Hits in path order, then line order.
    pub matches: Vec<GrepMatch>,
    /// Whether `max_count` stopped the search early.
    pub truncated: bool,
}

/// Why a backend operation failed. The tools turn these into the error
/// texts the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// No file at the path.
    #[error("file_not_found")]
    NotFound,
    /// The path names a directory.
    #[error("is_directory")]
    IsDirectory,
    /// The path is not acceptable; the message is the model-facing text.
    #[error("{0}")]
    InvalidPath(String),
    /// A permission rule or the OS refused.
    #[error("permission_denied")]
    PermissionDenied,
    /// The backend cannot do this at all (e.g. delete on a read-only route).
    #[error("{0}")]
    Unsupported(String),
    /// Anything else, as text.
    #[error("{0}")]
    Other(String),
    /// The storage behind the backend failed (a store or disk outage):
    /// not the model's doing, so the step fails and is retried.
    #[error("backend unavailable: {0}")]
    Unavailable(String),
}

/// A filesystem the agent's tools operate on. Paths are absolute virtual
/// paths, already validated by [`path::validate`].
#[async_trait]
pub trait Backend: Send + Sync {
    /// Entries directly under `path`, sorted by path.
    async fn ls(&self, path: &str) -> Result<Vec<FileInfo>, BackendError>;

    /// The whole file; windowing is the `read_file` tool's job.
    async fn read(&self, path: &str) -> Result<FileData, BackendError>;

    /// Creates or overwrites a text file.
    async fn write(&self, path: &str, content: &str) -> Result<(), BackendError>;

    /// Deletes a file, or a directory and everything under it.
    async fn delete(&self, path: &str) -> Result<(), BackendError>;

    /// Files matching `pattern` (deepagents glob semantics) under `path`
    /// (the root when `None`).
    async fn glob(&self, pattern: &str, path: Option<&str>) -> Result<Vec<FileInfo>, BackendError>;

    /// Lines containing the literal `pattern`, in files under `path` whose
    /// names match `glob`, stopping after `max_count` hits.
    async fn grep(
        &self,
        pattern: &str,
        path: Option<&str>,
        glob: Option<&str>,
        max_count: usize,
    ) -> Result<GrepResult, BackendError>;

    /// Whether [`Backend::delete`] is supported (the `delete` tool is hidden
    /// otherwise).
    fn supports_delete(&self) -> bool {
        true
    }
}
