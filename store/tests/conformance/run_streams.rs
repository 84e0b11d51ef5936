//! [`deepfleet_store::RunStreams`] scenarios: run event and delta streams,
//! which every store must serve alike.

use std::sync::Arc;

use deepfleet_proto::{RunDelta, RunEvent, RunStatus};
use deepfleet_store::RunStreams;
use pretty_assertions::assert_eq;

fn event(step: u64, status: RunStatus) -> RunEvent {
    RunEvent {
        run_id: "r1".into(),
        thread_id: "t1".into(),
        step,
        status,
        from: step,
        to: step + 1,
        namespace: if step == 1 {
            RunEvent::task_namespace("call-1")
        } else {
            vec![]
        },
    }
}

pub async fn run_events_read_after_an_id(store: Arc<dyn RunStreams>) {
    assert!(store.run_events("r1", None, 10).await.unwrap().is_empty());
    let want = [
        event(0, RunStatus::Running),
        event(1, RunStatus::Running),
        event(2, RunStatus::Success),
    ];
    for e in &want {
        store.append_run_event("r1", e).await.unwrap();
    }
    let all = store.run_events("r1", None, 10).await.unwrap();
    assert_eq!(
        all.iter().map(|(_, e)| e.clone()).collect::<Vec<_>>(),
        want.to_vec()
    );
    assert!(all.iter().all(|(id, _)| !id.contains(['/', ':'])));
    let first = store.run_events("r1", None, 1).await.unwrap();
    assert_eq!(first, all[..1].to_vec());
    let rest = store.run_events("r1", Some(&first[0].0), 10).await.unwrap();
    assert_eq!(rest, all[1..].to_vec());
    let none = store.run_events("r1", Some(&all[2].0), 10).await.unwrap();
    assert!(none.is_empty());
}

/// Deltas are a stream of their own: reads pick up after an id, in order,
/// and never see the run's events.
pub async fn run_deltas_read_after_an_id(store: Arc<dyn RunStreams>) {
    assert!(store.run_deltas("r1", None, 10).await.unwrap().is_empty());
    let want: Vec<RunDelta> = ["Hel", "lo", "!"]
        .into_iter()
        .map(|text| RunDelta {
            step: 2,
            index: 5,
            text: text.into(),
            ..RunDelta::default()
        })
        .collect();
    for d in &want {
        store.append_run_delta("r1", d).await.unwrap();
    }
    store
        .append_run_event("r1", &event(2, RunStatus::Running))
        .await
        .unwrap();
    let all = store.run_deltas("r1", None, 10).await.unwrap();
    assert_eq!(all.iter().map(|(_, d)| d.clone()).collect::<Vec<_>>(), want);
    assert!(all.iter().all(|(id, _)| !id.contains(['/', ':'])));
    let rest = store.run_deltas("r1", Some(&all[0].0), 1).await.unwrap();
    assert_eq!(rest, all[1..2].to_vec());
    assert!(store.run_deltas("r2", None, 10).await.unwrap().is_empty());
    assert_eq!(store.run_events("r1", None, 10).await.unwrap().len(), 1);
}

conformance!(run_events_read_after_an_id, run_deltas_read_after_an_id);
