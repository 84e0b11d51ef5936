//! Reply addresses of submitted runs that are not answered yet.

use deepfleet_proto::keys::records::REPLIES;
use deepfleet_store::Store;
use serde::{Deserialize, Serialize};

use super::{Listing, Repository};

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

/// Reply addresses, by run id, listed in the [`REPLIES`] index by run id
/// (all scores 0: run ids are UUIDv7, so that is the order they came in).
pub fn replies(store: &dyn Store) -> Repository<'_, ReplyRecord> {
    Repository::new(store, REPLIES).indexed(|_: &ReplyRecord| vec![Listing::new(REPLIES, 0)])
}
