//! Runtime context at rest: sealed with AES-GCM under the fleet's key.
//!
//! A run's context may carry provider keys or user tokens, and stateless
//! workers need it on every step, so it travels with the run record. It is
//! only ever stored and queued in this form; the worker opens it for the
//! step it executes and never writes the clear value back.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A JSON value encrypted with AES-256-GCM.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SealedContext {
    /// The 96-bit nonce, base64 (standard alphabet, padded).
    pub nonce: String,
    /// The ciphertext with its 128-bit tag appended, base64.
    pub ciphertext: String,
}

/// Prints lengths only, so a sealed value in a `{:?}` never leaks bytes an
/// attacker could collect.
impl fmt::Debug for SealedContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SealedContext({} bytes)", self.ciphertext.len())
    }
}
