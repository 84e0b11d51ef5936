//! Telling a run's followers about a commit: one [`RunEvent`] appended to
//! the run's event stream, and, for a subagent run, to its parent's stream
//! under the `task:<tool_call_id>` namespace, so a follower of the parent
//! sees its subagents' steps without polling their threads.
//!
//! Best effort by design: the commit is the record, the stream only a
//! notice. A failed append is logged and the step goes on; a follower
//! that misses an event catches up at the next one (it reads messages
//! from what it has seen, not from the event's `from`) or when it sees
//! the run end.

use deepfleet_proto::{ParentLink, RunEvent, RunRecord};
use deepfleet_store::Store;
use tracing::warn;

/// The event of `run`'s commit of `step`, which took the thread's log from
/// `from` to `to` messages.
pub fn event_of(run: &RunRecord, step: u64, from: u64, to: u64) -> RunEvent {
    RunEvent {
        run_id: run.run_id.clone(),
        thread_id: run.thread_id.clone(),
        step,
        status: run.status,
        from,
        to,
        namespace: Vec::new(),
    }
}

/// Appends the commit's event to the run's stream and its parent's.
pub async fn announce(store: &dyn Store, run: &RunRecord, step: u64, from: u64, to: u64) {
    Announcement::of(run, step, from, to).send(store).await;
}

/// A commit's event, held until it is sent: a delivery that keeps the
/// run's next step sends it beside that step's load, in the same round
/// trip, instead of before it.
pub struct Announcement {
    event: RunEvent,
    parent: Option<ParentLink>,
}

impl Announcement {
    /// The event of `run`'s commit of `step` (see [`event_of`]).
    pub fn of(run: &RunRecord, step: u64, from: u64, to: u64) -> Self {
        Announcement {
            event: event_of(run, step, from, to),
            parent: run.parent.clone(),
        }
    }

    /// Appends the event to the run's stream and, for a subagent, to its
    /// parent's, the two at once.
    pub async fn send(self, store: &dyn Store) {
        let Announcement { event, parent } = self;
        let own = async {
            if let Err(e) = store.append_run_event(&event.run_id, &event).await {
                warn!(run_id = %event.run_id, step = event.step, error = %e, "appending a run event");
            }
        };
        let nested = async {
            let Some(parent) = &parent else { return };
            let nested = RunEvent {
                namespace: RunEvent::task_namespace(&parent.tool_call_id),
                ..event.clone()
            };
            if let Err(e) = store.append_run_event(&parent.run_id, &nested).await {
                warn!(run_id = %parent.run_id, step = event.step, error = %e, "appending a subagent event");
            }
        };
        tokio::join!(own, nested);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use deepfleet_proto::{ParentLink, RunStatus};
    use deepfleet_store::embedded::EmbeddedStore;
    use deepfleet_store::prelude::*;
    use pretty_assertions::assert_eq;

    fn run(id: &str, parent: Option<ParentLink>) -> RunRecord {
        RunRecord {
            status: RunStatus::Running,
            parent,
            ..RunRecord::new(id, format!("t-{id}"), "a", Utc::now())
        }
    }

    #[tokio::test]
    async fn subagent_commits_reach_the_parent_namespaced() {
        let store = EmbeddedStore::new();
        let parent = ParentLink {
            run_id: "p".into(),
            thread_id: "t-p".into(),
            tool_call_id: "call-7".into(),
        };
        announce(&store, &run("p", None), 0, 0, 2).await;
        announce(&store, &run("c", Some(parent)), 0, 1, 3).await;
        let own: Vec<RunEvent> = store
            .run_events("c", None, 10)
            .await
            .unwrap()
            .into_iter()
            .map(|(_, e)| e)
            .collect();
        assert_eq!(own, vec![event_of(&run("c", None), 0, 1, 3)]);
        let seen_by_parent: Vec<(String, Vec<String>)> = store
            .run_events("p", None, 10)
            .await
            .unwrap()
            .into_iter()
            .map(|(_, e)| (e.run_id, e.namespace))
            .collect();
        assert_eq!(
            seen_by_parent,
            vec![
                ("p".to_owned(), vec![]),
                ("c".to_owned(), vec!["task:call-7".to_owned()])
            ]
        );
    }
}
