use deepfleet_queue::QueueError;

/// A step message could not be published.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The envelope could not be encoded as JSON.
    #[error("encoding a step job for run {run_id}: {source}")]
    Encode {
        /// The run the step belongs to.
        run_id: String,
        /// What serde_json said.
        source: serde_json::Error,
    },
    /// The queue refused or lost the message.
    #[error(transparent)]
    Queue(#[from] QueueError),
}

impl PublishError {
    /// Whether publishing again later can succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            PublishError::Encode { .. } => false,
            PublishError::Queue(e) => e.is_retryable(),
        }
    }
}
