//! What the embedded store holds and persists: plain maps, one per kind of
//! state, serialized whole as the snapshot (field names are the snapshot
//! format; renaming one loses that part of existing snapshots).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use deepfleet_proto::{AgentSpec, ChildResult, RunRecord};
use serde::{Deserialize, Serialize};

use crate::checkpoints::Checkpoint;
use crate::items::table::ItemTable;

/// The embedded store's persisted state.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct State {
    pub(crate) specs: HashMap<String, AgentSpec>,
    pub(crate) runs: HashMap<String, RunRecord>,
    pub(crate) threads: HashMap<String, Checkpoint>,
    pub(crate) fan_in: HashMap<String, RunFanIn>,
    pub(crate) cancels: HashSet<String>,
    pub(crate) batch_done: HashMap<String, VecDeque<String>>,
    /// API records: kind -> id -> value.
    pub(crate) records: HashMap<String, BTreeMap<String, serde_json::Value>>,
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
