//! Error answers: the `{"detail", "code"}` body of every failed request,
//! and the `__error__` body a wait answers with when its run failed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ErrorCode;

/// The body of every 4xx/5xx answer; `langgraph-sdk` reads `detail`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorResponse {
    /// What the caller reads; never internal details.
    pub detail: String,
    /// The stable code.
    pub code: ErrorCode,
}

/// Why a run failed, as waits and streams report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunFailure {
    /// The stable code (a string, so a failure without a code still reads).
    pub error: String,
    /// Human-readable reason.
    pub message: String,
}

/// The `/wait` and `/join` body of a run that failed (reference §1.7);
/// its `__error__` is also the data of a stream's `error` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WaitErrorResponse {
    /// The failure.
    #[serde(rename = "__error__")]
    pub error: RunFailure,
}
