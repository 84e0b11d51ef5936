//! What `POST /runs/crons/search` and `/count` filter by, as the
//! reference names them (how a search sorts is [`crate::sort`]; what it
//! answers with, [`crate::select`]).

use serde_json::{Map, Value};

use crate::search::metadata_matches;
use deepfleet_scheduler::repo::crons::CronRecord;

/// Which crons a search or count keeps.
pub struct Filter {
    /// Only this assistant's (as the cron names it).
    pub assistant_id: Option<String>,
    /// Only this thread's.
    pub thread_id: Option<String>,
    /// Only enabled (or disabled) ones.
    pub enabled: Option<bool>,
    /// Only those whose metadata holds these pairs.
    pub metadata: Option<Map<String, Value>>,
}

impl Filter {
    /// Whether `cron` passes.
    pub fn matches(&self, cron: &CronRecord) -> bool {
        self.assistant_id
            .as_ref()
            .is_none_or(|a| *a == cron.payload.assistant_id)
            && self
                .thread_id
                .as_ref()
                .is_none_or(|t| cron.thread_id.as_ref() == Some(t))
            && self.enabled.is_none_or(|e| e == cron.enabled)
            && metadata_matches(self.metadata.as_ref(), &cron.metadata)
    }
}
