use thiserror::Error;

/// A queue operation failed.
#[derive(Debug, Error)]
pub enum QueueError {
    /// The broker connection failed or was lost.
    #[error("queue connection: {0}")]
    Connection(String),
    /// The broker refused to take a published message.
    #[error("publish not confirmed: {0}")]
    NotConfirmed(String),
    /// A settle (ack/nack) failed; the message will be redelivered.
    #[error("settling a delivery failed: {0}")]
    Settle(String),
    /// The queue was closed.
    #[error("queue closed")]
    Closed,
}

impl QueueError {
    /// Whether trying again later can succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            QueueError::Connection(_) | QueueError::NotConfirmed(_) | QueueError::Settle(_) => true,
            QueueError::Closed => false,
        }
    }
}
