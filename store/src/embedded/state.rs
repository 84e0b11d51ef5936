//! What the embedded store holds and persists: plain maps, one per kind of
//! state, serialized whole as the snapshot (field names are the snapshot
//! format; renaming one loses that part of existing snapshots).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use chrono::{DateTime, Utc};
use deepfleet_proto::{AgentSpec, ChildResult, RunRecord};
use serde::{Deserialize, Serialize};

use crate::admission::window::Window;
use crate::checkpoints::Checkpoint;
use crate::history::{Change, Logged};
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
    /// Each thread's history, in commit order.
    pub(crate) history: HashMap<String, Vec<Logged>>,
    pub(crate) fan_in: HashMap<String, RunFanIn>,
    pub(crate) cancels: HashSet<String>,
    pub(crate) batch_done: HashMap<String, VecDeque<String>>,
    /// Batch admission windows by batch id.
    pub(crate) admissions: HashMap<String, Window>,
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
    /// What each thread owns beside its checkpoint, by thread id.
    pub(crate) owned: HashMap<String, ThreadOwned>,
    /// When threads and batches expire.
    pub(crate) expiries: Expiries,
    /// Spend accounts by name.
    pub(crate) spend: HashMap<String, SpendAccount>,
    /// Concurrency slot pools by name: the runs holding their slots.
    pub(crate) slots: HashMap<String, BTreeSet<String>>,
}

/// One spend account: each run's highest report and their total.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct SpendAccount {
    pub(crate) runs: HashMap<String, u64>,
    pub(crate) total: u64,
}

/// The runs a thread has had and the subagent threads they started: what
/// expires and is deleted with it.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ThreadOwned {
    pub(crate) runs: BTreeSet<String>,
    pub(crate) children: BTreeSet<String>,
    /// The run created last; only its end sets the thread's expiry.
    pub(crate) latest: Option<String>,
}

/// Expiry instants. Expired entries are invisible because every operation
/// sweeps them first ([`State::sweep_threads`]), in the same critical section.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Expiries {
    pub(crate) threads: HashMap<String, DateTime<Utc>>,
    pub(crate) batches: HashMap<String, DateTime<Utc>>,
    /// The earliest instant of either map; `None` when unknown (after a
    /// load) or when both are empty. Spares a sweep the walk while
    /// nothing is due.
    #[serde(skip)]
    next: Option<DateTime<Utc>>,
}

impl Expiries {
    fn note(&mut self, at: DateTime<Utc>) {
        self.next = Some(self.next.map_or(at, |next| next.min(at)));
    }

    fn recompute(&mut self) {
        self.next = self
            .threads
            .values()
            .chain(self.batches.values())
            .min()
            .copied();
    }
}

impl State {
    /// Tells `thread`'s history of `change`, with the log's length after
    /// it: what a commit, a seed and an update each append.
    pub(crate) fn tell_history(&mut self, thread: &str, change: Change) {
        let log_len = self
            .threads
            .get(thread)
            .map_or(0, |t| t.messages.len() as u64);
        self.history
            .entry(thread.to_owned())
            .or_default()
            .push(Logged { log_len, change });
    }

    /// Records a new run on its thread (and a subagent thread on its
    /// parent's): the run becomes the thread's latest, and a thread set to
    /// expire lives again.
    pub(crate) fn own_run(&mut self, run: &RunRecord) {
        let owned = self.owned.entry(run.thread_id.clone()).or_default();
        owned.runs.insert(run.run_id.clone());
        owned.latest = Some(run.run_id.clone());
        self.expiries.threads.remove(&run.thread_id);
        if let Some(parent) = &run.parent {
            self.owned
                .entry(parent.thread_id.clone())
                .or_default()
                .children
                .insert(run.thread_id.clone());
        }
    }

    /// Sets `root` and the subagent threads under it to expire `at`, if
    /// `ended_run` is still its latest run; returns whether it was.
    pub(crate) fn expire_tree(&mut self, root: &str, ended_run: &str, at: DateTime<Utc>) -> bool {
        let latest = self.owned.get(root).and_then(|o| o.latest.as_deref());
        if latest != Some(ended_run) {
            return false;
        }
        for thread in self.tree(root) {
            self.expiries.threads.insert(thread, at);
        }
        self.expiries.note(at);
        true
    }

    /// Sets a batch's done list to expire `at`.
    pub(crate) fn expire_batch(&mut self, batch_id: &str, at: DateTime<Utc>) {
        self.expiries.batches.insert(batch_id.to_owned(), at);
        self.expiries.note(at);
    }

    /// Deletes `root` and the subagent threads under it; returns the ids
    /// of the runs deleted (whose streams go too).
    pub(crate) fn purge_tree(&mut self, root: &str) -> Vec<String> {
        let threads = self.tree(root);
        threads.iter().flat_map(|t| self.purge_thread(t)).collect()
    }

    /// Deletes what expired by `now`; returns the ids of the runs deleted.
    pub(crate) fn sweep_threads(&mut self, now: DateTime<Utc>) -> Vec<String> {
        if self.expiries.next.is_some_and(|next| now < next) {
            return Vec::new();
        }
        let due: Vec<String> = self
            .expiries
            .threads
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(thread, _)| thread.clone())
            .collect();
        let runs = due.iter().flat_map(|t| self.purge_thread(t)).collect();
        let batches: Vec<String> = self
            .expiries
            .batches
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(batch, _)| batch.clone())
            .collect();
        for batch in batches {
            self.expiries.batches.remove(&batch);
            self.batch_done.remove(&batch);
            self.admissions.remove(&batch);
        }
        self.expiries.recompute();
        runs
    }

    /// `root` and every subagent thread under it.
    fn tree(&self, root: &str) -> Vec<String> {
        let mut seen = BTreeSet::from([root.to_owned()]);
        let mut todo = vec![root.to_owned()];
        let mut out = Vec::new();
        while let Some(thread) = todo.pop() {
            if let Some(owned) = self.owned.get(&thread) {
                for child in &owned.children {
                    if seen.insert(child.clone()) {
                        todo.push(child.clone());
                    }
                }
            }
            out.push(thread);
        }
        out
    }

    /// Deletes one thread and its runs (not its subagent threads).
    fn purge_thread(&mut self, thread: &str) -> Vec<String> {
        self.threads.remove(thread);
        self.history.remove(thread);
        self.expiries.threads.remove(thread);
        let Some(owned) = self.owned.remove(thread) else {
            return Vec::new();
        };
        for run in &owned.runs {
            self.runs.remove(run);
            self.fan_in.remove(run);
            self.cancels.remove(run);
        }
        owned.runs.into_iter().collect()
    }
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
                "admissions",
                "batch_done",
                "cancels",
                "expiries",
                "fan_in",
                "history",
                "items",
                "owned",
                "record_deadlines",
                "record_indexes",
                "records",
                "runs",
                "slots",
                "spec_versions",
                "specs",
                "spend",
                "threads"
            ]
        );
        let fan_in = serde_json::to_value(RunFanIn::default()).unwrap();
        let expiries = serde_json::to_value(Expiries::default()).unwrap();
        assert_eq!(expiries, serde_json::json!({"threads": {}, "batches": {}}));
        assert_eq!(fan_in, serde_json::json!({"expected": 0, "results": {}}));
    }

    fn run(thread: &str, id: &str, parent: Option<&str>) -> RunRecord {
        RunRecord {
            parent: parent.map(|p| deepfleet_proto::ParentLink {
                run_id: format!("run-of-{p}"),
                thread_id: p.to_owned(),
                tool_call_id: "c".into(),
            }),
            ..RunRecord::new(id, thread, "a", Utc::now())
        }
    }

    #[test]
    fn a_tree_expires_whole_once_due_and_not_before() {
        let mut state = State::default();
        for r in [run("t", "r1", None), run("c", "rc", Some("t"))] {
            state.runs.insert(r.run_id.clone(), r.clone());
            state
                .threads
                .insert(r.thread_id.clone(), Default::default());
            state.own_run(&r);
        }
        let now = Utc::now();
        assert!(!state.expire_tree("t", "rc", now), "not t's latest run");
        assert!(state.expire_tree("t", "r1", now + chrono::Duration::seconds(5)));
        assert!(state.sweep_threads(now).is_empty());
        assert_eq!(state.threads.len(), 2);
        let mut gone = state.sweep_threads(now + chrono::Duration::seconds(5));
        gone.sort();
        assert_eq!(gone, ["r1", "rc"]);
        assert!(state.threads.is_empty() && state.runs.is_empty() && state.owned.is_empty());
    }

    #[test]
    fn a_new_run_keeps_its_thread() {
        let mut state = State::default();
        let first = run("t", "r1", None);
        state.own_run(&first);
        let now = Utc::now();
        assert!(state.expire_tree("t", "r1", now));
        state.own_run(&run("t", "r2", None));
        assert!(state.expiries.threads.is_empty());
        assert!(!state.expire_tree("t", "r1", now), "r2 is the latest");
    }
}
