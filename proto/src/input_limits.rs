//! What one request may bring and one thread may hold: the sizes of a
//! message and of a file, and the number of files. Every entry point (the
//! HTTP API, queue submissions, task lines) and every tool that writes a
//! thread's files checks the same limits, so an oversized input is refused
//! with a reason naming its limit instead of growing a checkpoint that
//! every later step must load.

use serde::{Deserialize, Serialize};

/// The default largest message: far above any prompt, far below what would
/// hurt a step that loads it.
pub const DEFAULT_MAX_MESSAGE_BYTES: u64 = 1024 * 1024;
/// The default largest file.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// The default most files one thread holds.
pub const DEFAULT_MAX_FILES_PER_THREAD: u64 = 10_000;

/// Size and count limits of a thread's input and files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InputLimits {
    /// Largest message content, in bytes.
    pub max_message_bytes: u64,
    /// Largest file content, in bytes.
    pub max_file_bytes: u64,
    /// Most files one thread holds.
    pub max_files_per_thread: u64,
}

impl Default for InputLimits {
    fn default() -> Self {
        InputLimits {
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_files_per_thread: DEFAULT_MAX_FILES_PER_THREAD,
        }
    }
}

/// A limit an input went past.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} is {size}{unit}, over the limit of {limit} (limits.{setting})")]
pub struct LimitExceeded {
    /// What went past it (`message 2`, `file /a.txt`, `the thread's file count`).
    pub what: String,
    /// Its size or count.
    pub size: u64,
    /// The limit.
    pub limit: u64,
    /// ` bytes`, or empty for a count.
    pub unit: &'static str,
    /// The setting that sets the limit.
    pub setting: &'static str,
}

impl InputLimits {
    /// Checks a message of `bytes` bytes; `what` names it.
    pub fn check_message(
        &self,
        what: impl Into<String>,
        bytes: usize,
    ) -> Result<(), LimitExceeded> {
        check(
            what,
            bytes as u64,
            self.max_message_bytes,
            " bytes",
            "max_message_bytes",
        )
    }

    /// Checks the file at `path` of `bytes` bytes.
    pub fn check_file(&self, path: &str, bytes: usize) -> Result<(), LimitExceeded> {
        check(
            format!("file {path}"),
            bytes as u64,
            self.max_file_bytes,
            " bytes",
            "max_file_bytes",
        )
    }

    /// Checks a thread that would hold `files` files.
    pub fn check_file_count(&self, files: usize) -> Result<(), LimitExceeded> {
        check(
            "the thread's file count",
            files as u64,
            self.max_files_per_thread,
            "",
            "max_files_per_thread",
        )
    }
}

fn check(
    what: impl Into<String>,
    size: u64,
    limit: u64,
    unit: &'static str,
    setting: &'static str,
) -> Result<(), LimitExceeded> {
    if size <= limit {
        return Ok(());
    }
    Err(LimitExceeded {
        what: what.into(),
        size,
        limit,
        unit,
        setting,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_is_inclusive_and_its_error_names_the_setting() {
        let limits = InputLimits {
            max_message_bytes: 5,
            max_file_bytes: 3,
            max_files_per_thread: 2,
        };
        assert!(limits.check_message("message 0", 5).is_ok());
        assert_eq!(
            limits
                .check_message("message 0", 6)
                .unwrap_err()
                .to_string(),
            "message 0 is 6 bytes, over the limit of 5 (limits.max_message_bytes)"
        );
        assert_eq!(
            limits.check_file("/a.txt", 4).unwrap_err().to_string(),
            "file /a.txt is 4 bytes, over the limit of 3 (limits.max_file_bytes)"
        );
        assert!(limits.check_file_count(2).is_ok());
        assert_eq!(
            limits.check_file_count(3).unwrap_err().to_string(),
            "the thread's file count is 3, over the limit of 2 (limits.max_files_per_thread)"
        );
    }
}
