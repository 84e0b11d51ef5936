//! `[limits]`: how large a request, a message and a file may be, and how
//! many files a thread holds. The scheduler refuses what goes past them
//! (413 on the HTTP API, a `too_large` refusal on the queue), workers'
//! file tools answer the model with the limit, so one oversized input
//! cannot grow a checkpoint every later step loads.

use deepfleet_proto::InputLimits;
use deepfleet_proto::input_limits::{
    DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES_PER_THREAD, DEFAULT_MAX_MESSAGE_BYTES,
};
use deepfleet_proto::run::DEFAULT_RUN_TIMEOUT_SECS;
use serde::{Deserialize, Serialize};

/// The default largest HTTP request body.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 16 * 1024 * 1024;

/// Size and count limits.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsSettings {
    /// Largest HTTP request body the API reads, in bytes. Default:
    /// 16 MiB.
    pub max_body_bytes: u64,
    /// Largest message content a run's input may carry, in bytes.
    /// Default: 1 MiB.
    pub max_message_bytes: u64,
    /// Largest file a run's input, the store API or a file tool may
    /// write, in bytes. Default: 10 MiB.
    pub max_file_bytes: u64,
    /// Most files one thread may hold. Default: 10000.
    pub max_files_per_thread: u64,
    /// Seconds a run may take from its first step on, its subagents
    /// included, unless its spec (`limits.run_timeout_secs`), task line or
    /// API request (`timeout_secs`) says; past it the run ends `timeout`.
    /// Default: 86400 (the Agent Server's `BG_JOB_TIMEOUT_SECS`).
    pub run_timeout_secs: u64,
}

impl Default for LimitsSettings {
    fn default() -> Self {
        LimitsSettings {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_files_per_thread: DEFAULT_MAX_FILES_PER_THREAD,
            run_timeout_secs: DEFAULT_RUN_TIMEOUT_SECS,
        }
    }
}

impl LimitsSettings {
    /// The limits of a thread's input and files.
    pub fn input(&self) -> InputLimits {
        InputLimits {
            max_message_bytes: self.max_message_bytes,
            max_file_bytes: self.max_file_bytes,
            max_files_per_thread: self.max_files_per_thread,
        }
    }

    /// The body limit as the HTTP server takes it.
    pub fn body_bytes(&self) -> usize {
        usize::try_from(self.max_body_bytes).unwrap_or(usize::MAX)
    }
}
