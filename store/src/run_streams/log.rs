//! The embedded store's run streams (commit events, and token deltas): an
//! in-memory log per run with Redis-Stream-shaped ids (`0-{n}`), capped
//! like the Redis ones. They are not part of the persisted snapshot: a
//! follower after a restart recovers from the checkpoint.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

use deepfleet_proto::{RunDelta, RunEvent};

use super::{RUN_DELTAS_MAX, RUN_EVENTS_MAX};
use crate::error::StoreError;

/// Both streams of every run, each behind a lock of its own (an append
/// never waits on the store's state lock or on the other stream).
#[derive(Default)]
pub(crate) struct RunStreamLogs {
    events: Mutex<RunEventLogs<RunEvent, RUN_EVENTS_MAX>>,
    deltas: Mutex<RunEventLogs<RunDelta, RUN_DELTAS_MAX>>,
}

impl RunStreamLogs {
    pub(crate) fn events(&self) -> MutexGuard<'_, RunEventLogs<RunEvent, RUN_EVENTS_MAX>> {
        // Each operation leaves a log consistent, so a panic elsewhere
        // does not invalidate it.
        self.events.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn deltas(&self) -> MutexGuard<'_, RunEventLogs<RunDelta, RUN_DELTAS_MAX>> {
        self.deltas.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Every run's log of `T`, each capped at `CAP` entries.
pub(crate) struct RunEventLogs<T = RunEvent, const CAP: usize = RUN_EVENTS_MAX> {
    logs: HashMap<String, Log<T>>,
}

impl<T, const CAP: usize> Default for RunEventLogs<T, CAP> {
    fn default() -> Self {
        RunEventLogs {
            logs: HashMap::new(),
        }
    }
}

struct Log<T> {
    next: u64,
    entries: VecDeque<(u64, T)>,
}

impl<T: Clone, const CAP: usize> RunEventLogs<T, CAP> {
    pub(crate) fn append(&mut self, run_id: &str, event: &T) {
        let log = self.logs.entry(run_id.to_owned()).or_insert_with(|| Log {
            next: 0,
            entries: VecDeque::new(),
        });
        log.next += 1;
        log.entries.push_back((log.next, event.clone()));
        while log.entries.len() > CAP {
            log.entries.pop_front();
        }
    }

    /// Drops a run's log (its run was deleted).
    pub(crate) fn remove(&mut self, run_id: &str) {
        self.logs.remove(run_id);
    }

    pub(crate) fn read(
        &self,
        run_id: &str,
        after: Option<&str>,
        max: usize,
    ) -> Result<Vec<(String, T)>, StoreError> {
        let after = after.map(parse_id).transpose()?.unwrap_or(0);
        Ok(self
            .logs
            .get(run_id)
            .into_iter()
            .flat_map(|log| log.entries.iter())
            .filter(|(n, _)| *n > after)
            .take(max.max(1))
            .map(|(n, event)| (format!("0-{n}"), event.clone()))
            .collect())
    }
}

/// The sequence number of an id this store handed out.
fn parse_id(id: &str) -> Result<u64, StoreError> {
    id.strip_prefix("0-")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| StoreError::Invalid(format!("not a run event id: {id:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::RunStatus;
    use pretty_assertions::assert_eq;

    fn event(step: u64) -> RunEvent {
        RunEvent {
            run_id: "r".into(),
            thread_id: "t".into(),
            step,
            status: RunStatus::Running,
            from: step,
            to: step + 1,
            namespace: vec![],
        }
    }

    #[test]
    fn reads_after_an_id_in_order() {
        let mut logs: RunEventLogs = RunEventLogs::default();
        for step in 0..3 {
            logs.append("r", &event(step));
        }
        let all = logs.read("r", None, 10).unwrap();
        assert_eq!(
            all.iter()
                .map(|(id, e)| (id.as_str(), e.step))
                .collect::<Vec<_>>(),
            vec![("0-1", 0), ("0-2", 1), ("0-3", 2)]
        );
        let rest = logs.read("r", Some("0-2"), 10).unwrap();
        assert_eq!(rest, vec![("0-3".to_owned(), event(2))]);
        assert_eq!(logs.read("r", Some("0-1"), 1).unwrap().len(), 1);
        assert!(logs.read("other", None, 10).unwrap().is_empty());
        assert!(logs.read("r", Some("garbage"), 10).is_err());
    }

    #[test]
    fn logs_keep_their_cap() {
        let mut logs: RunEventLogs<u64, 2> = RunEventLogs::default();
        for n in 0..5 {
            logs.append("r", &n);
        }
        let kept: Vec<(String, u64)> = logs.read("r", None, 10).unwrap();
        assert_eq!(kept, vec![("0-4".to_owned(), 3), ("0-5".to_owned(), 4)]);
    }
}
