//! Kept steps (`docs/step-protocol.md`, step 8): a worker runs a run's
//! next steps under the delivery it has not acked, and the steps of the
//! one subagent it delegates to and of itself once woken. A worker killed
//! while it keeps a run leaves the unacked message as the run's record,
//! and another worker finishes the run from where it stood; a worker told
//! to stop hands the run back to the queue after its step, repeating
//! nothing.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::{ChildRun, ResultStatus};
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

/// Asserts that each step of `run` was committed once in `thread`.
async fn committed_once(fleet: &Fleet, thread: &str, run: &str) {
    let record = fleet.store.get_run(thread, run).await.unwrap().unwrap();
    let checkpoint = fleet.store.load_thread(thread).await.unwrap();
    assert_eq!(
        exactly_once::repeats(&record, &checkpoint),
        Vec::<String>::new()
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
    committed_once(&fleet, &run.thread_id, &run.run_id).await;
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

/// Model calls of the delegating run: the parent's `task` call, the
/// subagent's two `ls` calls and its answer, the woken parent's `ls` and
/// its answer.
const DELEGATING_CALLS: usize = 6;

async fn delegating_server() -> ScriptedServer {
    let script = ScriptBuilder::new()
        .call(
            When::input("^Delegate$").turn(0),
            [Call::task("Look around")],
        )
        .call(When::input("^Look around$").turn(0), [Call::ls("/")])
        .call(When::input("^Look around$").turn(1), [Call::ls("/")])
        .answer(When::input("^Look around$").turn(2), "looked")
        .call(When::input("^Delegate$").turn(1), [Call::ls("/")])
        .answer(When::input("^Delegate$").turn(2), "done")
        .build();
    let engine = ReplayEngine::new(Script::from_yaml(&script).unwrap());
    ScriptedServer::start(Arc::new(engine), Duration::from_millis(150))
        .await
        .unwrap()
}

/// Runs the delegating run on one worker, SIGKILLs it once `calls` model
/// calls were made, and finishes the run on a fresh worker: each step,
/// the parent's and the subagent's, was committed once, and no call but
/// the one in flight at the kill was made again.
async fn delegation_kept_and_killed_at(calls: usize) {
    let server = delegating_server().await;
    let builder = fleet().model_url(Some(server.url()));
    let Some(mut fleet) = distributed(builder, 1).await else {
        return;
    };
    let spec = spec("kept-delegation", "openai:scripted-model", "");
    let (follower, runs) = fleet
        .submit(&spec, &[task("t1", "Delegate")])
        .await
        .unwrap();
    let parent = &runs[0];
    // The subagent's first call is under way: the parent is parked on it.
    wait_for_calls(&server, 2).await;
    let parked = fleet.store.load_thread(&parent.thread_id).await.unwrap();
    let child: ChildRun = parked.pending.expect("the parent is parked").children[0].clone();
    wait_for_calls(&server, calls).await;
    fleet.kill_worker(0).await.unwrap();
    // Everything since the parent's first message ran under it.
    for thread in [&parent.thread_id, &child.thread_id] {
        let checkpoint = fleet.store.load_thread(thread).await.unwrap();
        assert!(
            checkpoint.step >= 1,
            "{thread} is at step {}",
            checkpoint.step
        );
        assert_eq!(checkpoint.published, 0, "a step of {thread} was published");
    }

    fleet.spawn_worker().unwrap();
    finished_once(&mut fleet, follower).await;
    let made = server.requests().len();
    assert!(
        (DELEGATING_CALLS..=DELEGATING_CALLS + 1).contains(&made),
        "{made} model calls"
    );
    committed_once(&fleet, &parent.thread_id, &parent.run_id).await;
    committed_once(&fleet, &child.thread_id, &child.run_id).await;
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_kept_by_a_killed_worker_goes_on_from_where_it_stood() {
    // The subagent's second call is under way.
    delegation_kept_and_killed_at(3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_woken_parent_kept_by_a_killed_worker_goes_on_from_where_it_stood() {
    // The subagent ended; the parent's first call after it is under way.
    delegation_kept_and_killed_at(5).await;
}
