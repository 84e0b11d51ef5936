use thiserror::Error;

/// A store operation failed.
#[derive(Debug, Error)]
pub enum StoreError {
    /// The server could not be reached or the connection broke.
    #[error("store connection: {0}")]
    Connection(String),
    /// The server answered with an error.
    #[error("store command failed: {0}")]
    Command(String),
    /// A stored value did not decode; the store holds data this build
    /// cannot read.
    #[error("corrupt stored value at {key}: {reason}")]
    Corrupt {
        /// The key holding the value.
        key: String,
        /// What did not decode.
        reason: String,
    },
    /// A value stored sealed does not open: no keyring is configured, its
    /// key id is not in the keyring, or it was altered. Retrying does not
    /// help; configure the key it names.
    #[error("sealed value at {key} does not open: {reason}")]
    Sealed {
        /// The key holding the value.
        key: String,
        /// Why it did not open.
        reason: crate::at_rest::OpenError,
    },
    /// A run, thread or spec that must exist does not.
    #[error("not found: {0}")]
    NotFound(String),
    /// The caller asked for something the store refuses (a bad item
    /// namespace or key); nothing was read or written.
    #[error("invalid store request: {0}")]
    Invalid(String),
}

impl StoreError {
    /// Whether trying again later can succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            StoreError::Connection(_) | StoreError::Command(_) => true,
            StoreError::Corrupt { .. }
            | StoreError::Sealed { .. }
            | StoreError::NotFound(_)
            | StoreError::Invalid(_) => false,
        }
    }
}
