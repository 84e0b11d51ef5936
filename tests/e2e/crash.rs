//! Crash safety: workers killed with SIGKILL in the middle of a batch lose
//! nothing and repeat nothing.
use deepfleet_proto::ResultStatus;
use deepfleet_testkit::exactly_once;
use pretty_assertions::assert_eq;

use crate::batch::{briefing_tasks, briefings_spec, expected_briefing};
use crate::support::{distributed, fleet};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkilled_workers_lose_and_repeat_nothing() {
    let Some(mut fleet) = distributed(fleet(), 2).await else {
        return;
    };
    let spec = briefings_spec();
    // A kill a second: a fresh debug-build worker needs most of a second to
    // start (connections, the tokenizer), so shorter gaps starve the fleet
    // rather than test it. The batch takes several seconds on this machine.
    let batch = fleet
        .run_killing(
            &spec,
            &briefing_tasks(400),
            std::time::Duration::from_millis(1000),
        )
        .await
        .unwrap();
    assert!(batch.kills >= 3, "only {} kills happened", batch.kills);
    for (i, r) in batch.results.iter().enumerate() {
        assert_eq!(r.status, ResultStatus::Success, "{:?}", r.error);
        assert_eq!(r.output, expected_briefing(i));
    }
    // No step was committed twice: one assistant message per model call,
    // and exactly one result per tool call.
    for run in &batch.runs {
        let record = fleet
            .store
            .get_run(&run.thread_id, &run.run_id)
            .await
            .unwrap()
            .unwrap();
        let thread = fleet.store.load_thread(&run.thread_id).await.unwrap();
        let repeats = exactly_once::repeats(&record, &thread);
        assert!(repeats.is_empty(), "{repeats:?}");
    }
    fleet.shutdown().await.unwrap();
}
