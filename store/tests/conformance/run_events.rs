//! Run event streams and partial message reads, which every [`Store`]
//! must serve alike.

use std::sync::Arc;

use deepfleet_proto::{RunEvent, RunStatus};
use deepfleet_store::{Store, ThreadSeed};
use pretty_assertions::assert_eq;

use crate::scenarios::{commit, msg, record};

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

pub async fn run_events_read_after_an_id(store: Arc<dyn Store>) {
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

pub async fn load_messages_from_an_index(store: Arc<dyn Store>) {
    let run = record("t1", "r1");
    store
        .create_run(
            &run,
            &ThreadSeed {
                messages: vec![msg("a")],
                ..ThreadSeed::default()
            },
        )
        .await
        .unwrap();
    let mut step = commit(&run, 0);
    step.messages = vec![msg("b"), msg("c")];
    store.commit_step(&step).await.unwrap();
    assert_eq!(
        store.load_messages("t1", 1).await.unwrap(),
        vec![msg("b"), msg("c")]
    );
    assert_eq!(store.load_messages("t1", 0).await.unwrap().len(), 3);
    assert!(store.load_messages("t1", 3).await.unwrap().is_empty());
    assert!(store.load_messages("nobody", 0).await.unwrap().is_empty());
}
