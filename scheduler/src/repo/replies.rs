//! Reply addresses of submitted runs that are not answered yet.

use deepfleet_proto::keys::records::REPLIES;
use deepfleet_store::Records;
use serde::{Deserialize, Serialize};

use super::Repository;

/// Where and how to answer one submitted run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyRecord {
    /// The run.
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
    /// The submission's `id`, echoed as the answer's `id`.
    #[serde(default)]
    pub id: Option<String>,
    /// The AMQP `reply_to` of the submission.
    #[serde(default)]
    pub reply_to: Option<String>,
    /// The AMQP `correlation_id` of the submission.
    #[serde(default)]
    pub correlation_id: Option<String>,
}

/// Reply addresses, by run id.
pub fn replies(store: &dyn Records) -> Repository<'_, ReplyRecord> {
    Repository::new(store, REPLIES)
}
