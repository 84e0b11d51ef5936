//! Kept steps (`docs/step-protocol.md`, step 8): a worker runs a run's
//! next steps under the delivery it has not acked. A worker killed while
//! it keeps a run leaves the unacked message as the run's record, and
//! another worker finishes the run from where it stood; a worker told to
//! stop hands the run back to the queue after its step, repeating nothing.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::ResultStatus;
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_scheduler::BatchFollower;
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::exactly_once;
use deepfleet_testkit::fleet::Fleet;
use deepfleet_testkit::script::{Call, ScriptBuilder, When};
use pretty_assertions::assert_eq;

use crate::support::{distributed, fleet, spec, task};

/// Model calls of the run: one `ls` a turn, then the answer.
const CALLS: u32 = 6;

async fn server(latency: Duration) -> ScriptedServer {
    let mut script = ScriptBuilder::new();
    for turn in 0..CALLS - 1 {
        script = script.call(When::input("^Go$").turn(turn), [Call::ls("/")]);
    }
    let script = script.answer(When::input("^Go$").turn(CALLS - 1), "done");
    let engine = ReplayEngine::new(Script::from_yaml(&script.build()).unwrap());
    ScriptedServer::start(Arc::new(engine), latency)
        .await
        .unwrap()
}

async fn wait_for_calls(server: &ScriptedServer, n: usize) {
    let waited = tokio::time::timeout(Duration::from_secs(60), async {
        while server.requests().len() < n {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "the run made {} calls",
        server.requests().len()
    );
}

/// Follows the fleet's one run to its end, which must be the scripted
/// answer.
async fn finished_once(fleet: &mut Fleet, follower: BatchFollower) {
    let results = fleet.follow(follower).await.unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(
        results[0].status,
        ResultStatus::Success,
        "{:?}",
        results[0].error
    );
    assert_eq!(results[0].output, "done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_kept_by_a_killed_worker_goes_on_from_where_it_stood() {
    let server = server(Duration::from_millis(150)).await;
    let builder = fleet().model_url(Some(server.url()));
    let Some(mut fleet) = distributed(builder, 1).await else {
        return;
    };
    let spec = spec("kept", "openai:scripted-model", "");
    let (follower, runs) = fleet.submit(&spec, &[task("t1", "Go")]).await.unwrap();
    let run = &runs[0];
    // The fourth call is under way: three steps were committed under the
    // run's first message, and no other was published.
    wait_for_calls(&server, 4).await;
    fleet.kill_worker(0).await.unwrap();
    let thread = fleet.store.load_thread(&run.thread_id).await.unwrap();
    assert!(thread.step >= 3, "the thread is at step {}", thread.step);
    assert_eq!(thread.published, 0, "a kept step was published");

    fleet.spawn_worker().unwrap();
    finished_once(&mut fleet, follower).await;
    // Only the call the killed worker had in flight was made again.
    let calls = server.requests().len();
    let once = CALLS as usize;
    assert!((once..=once + 1).contains(&calls), "{calls} model calls");
    let record = fleet
        .store
        .get_run(&run.thread_id, &run.run_id)
        .await
        .unwrap()
        .unwrap();
    let thread = fleet.store.load_thread(&run.thread_id).await.unwrap();
    assert_eq!(
        exactly_once::repeats(&record, &thread),
        Vec::<String>::new()
    );
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_worker_hands_its_kept_run_back_after_the_step() {
    // Each call well within the worker's grace period.
    let server = server(Duration::from_millis(300)).await;
    let builder = fleet().model_url(Some(server.url()));
    let Some(mut fleet) = distributed(builder, 1).await else {
        return;
    };
    let spec = spec("handed-back", "openai:scripted-model", "");
    let (follower, runs) = fleet.submit(&spec, &[task("t1", "Go")]).await.unwrap();
    wait_for_calls(&server, 2).await;
    fleet.terminate_worker(0).await.unwrap();
    // The step under way was committed and the next one published.
    let run = &runs[0];
    let thread = fleet.store.load_thread(&run.thread_id).await.unwrap();
    assert_eq!(
        thread.published, thread.step,
        "the next step was not published"
    );
    assert!(thread.step >= 2, "the thread is at step {}", thread.step);

    fleet.spawn_worker().unwrap();
    finished_once(&mut fleet, follower).await;
    assert_eq!(
        server.requests().len(),
        CALLS as usize,
        "a call was made twice"
    );
    fleet.shutdown().await.unwrap();
}
