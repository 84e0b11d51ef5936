//! What the embedded store holds and persists: plain maps, one per kind of
//! state, serialized whole as the snapshot (field names are the snapshot
//! format; renaming one loses that part of existing snapshots).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use chrono::{DateTime, Utc};
use deepfleet_proto::{AgentSpec, ChildResult, RunRecord};
use serde::{Deserialize, Serialize};

use crate::checkpoints::Checkpoint;
use crate::items::table::ItemTable;
use crate::record_index::table::IndexTable;

/// The embedded store's persisted state.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct State {
    /// Served specs by name.
    pub(crate) specs: HashMap<String, AgentSpec>,
    /// Every stored spec version, by `name@version`.
    pub(crate) spec_versions: HashMap<String, AgentSpec>,
    pub(crate) runs: HashMap<String, RunRecord>,
    pub(crate) threads: HashMap<String, Checkpoint>,
    pub(crate) fan_in: HashMap<String, RunFanIn>,
    pub(crate) cancels: HashSet<String>,
    pub(crate) batch_done: HashMap<String, VecDeque<String>>,
    /// API records: kind -> id -> value.
    pub(crate) records: HashMap<String, BTreeMap<String, serde_json::Value>>,
    /// When the API records given an expiry expire: kind -> id -> deadline.
    pub(crate) record_deadlines: HashMap<String, HashMap<String, DateTime<Utc>>>,
    /// Record indexes by name.
    pub(crate) record_indexes: HashMap<String, IndexTable>,
    /// When expired records and indexes were last swept out; not
    /// persisted (a reopened store sweeps on its first write).
    #[serde(skip)]
    pub(crate) swept_at: Option<DateTime<Utc>>,
    /// Long-term items.
    pub(crate) items: ItemTable,
}

/// One parked run's fan-in: how many results it waits for, and those
/// recorded so far by `task` call id.
#[derive(Default, Serialize, Deserialize)]
pub(crate) struct RunFanIn {
    pub(crate) expected: u32,
    pub(crate) results: BTreeMap<String, ChildResult>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The field names are the snapshot format: a snapshot written before
    /// the store was split by capability still loads whole.
    #[test]
    fn snapshot_fields_keep_their_names() {
        let json = serde_json::to_value(State::default()).unwrap();
        let mut fields: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            [
                "batch_done",
                "cancels",
                "fan_in",
                "items",
                "record_deadlines",
                "record_indexes",
                "records",
                "runs",
                "spec_versions",
                "specs",
                "threads"
            ]
        );
        let fan_in = serde_json::to_value(RunFanIn::default()).unwrap();
        assert_eq!(fan_in, serde_json::json!({"expected": 0, "results": {}}));
    }
}
