//! Deadlines (issue 17): a run past its deadline ends `timeout` with the
//! reason on its result line, and the subagent it waits on is cancelled,
//! however slow the model is.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::{ResultStatus, RunStatus, TaskLine};
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::fleet::Fleet;
use deepfleet_testkit::script::{Call, ScriptBuilder, When};
use pretty_assertions::assert_eq;

use crate::support::{distributed, fleet, replay_model, scenario, spec, task};

/// Each model call takes this long.
const LATENCY: Duration = Duration::from_millis(300);
/// The run's time: a few of the subagent's calls.
const TIMEOUT_SECS: u64 = 2;
/// How long an end the test waits for (a subagent's cancellation, a
/// parked run's timeout) may take to show in the store.
const REPORT_LIMIT: Duration = Duration::from_secs(30);

/// The parent delegates at once; the subagent lists files forever.
fn endless_subagent() -> Script {
    let script = ScriptBuilder::new()
        .call(
            When::input("^Research$").turn(0),
            [Call::task("Dig forever")],
        )
        .call(When::input("^Dig forever$"), [Call::ls("/")])
        .build();
    Script::from_yaml(&script).unwrap()
}

/// What `read` yields first, read every 100 ms for at most
/// [`REPORT_LIMIT`]; panics naming `what` after that.
async fn eventually<T, F, Fut>(what: &str, mut read: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    tokio::time::timeout(REPORT_LIMIT, async {
        loop {
            if let Some(value) = read().await {
                return value;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("not in {REPORT_LIMIT:?}: {what}"))
}

async fn server() -> ScriptedServer {
    ScriptedServer::start(Arc::new(ReplayEngine::new(endless_subagent())), LATENCY)
        .await
        .unwrap()
}

fn timed_task() -> TaskLine {
    TaskLine {
        timeout_secs: Some(TIMEOUT_SECS),
        ..task("t1", "Research")
    }
}

async fn a_run_past_its_deadline_times_out(fleet: &mut Fleet) {
    // Steps enough for a minute of listing: only the deadline stops it.
    let spec = spec(
        "researcher",
        "openai:scripted",
        "limits: {max_steps: 200}\n",
    );
    let batch = fleet.run_batch(&spec, &[timed_task()]).await.unwrap();
    let line = &batch.results[0];
    assert_eq!(line.status, ResultStatus::Timeout, "{line:?}");
    let error = line.error.as_deref().unwrap_or_default();
    assert!(
        error.starts_with(&format!(
            "timeout: the run passed its deadline ({TIMEOUT_SECS} s from its first step)"
        )),
        "{error}"
    );
    let run = &batch.runs[0];
    let record = fleet
        .store
        .get_run(&run.thread_id, &run.run_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status, RunStatus::Timeout);
    let deadline = record.deadline.expect("the first step set the deadline");
    assert!(record.updated_at >= deadline, "ended before its deadline");
    // The subagent learns its parent's deadline passed and ends cancelled,
    // reporting to the parent like any ended subagent.
    let child = eventually("the subagent reported its end", || async {
        let results = fleet
            .store
            .child_results(&run.thread_id, &run.run_id)
            .await
            .unwrap();
        results.into_iter().next()
    })
    .await;
    assert_eq!(child.status, RunStatus::Cancelled, "{child:?}");
    assert!(
        child.output.contains("passed its deadline"),
        "{}",
        child.output
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_deadline_times_out_embedded() {
    let server = server().await;
    let mut fleet = fleet().model_url(Some(server.url())).embedded().unwrap();
    a_run_past_its_deadline_times_out(&mut fleet).await;
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_deadline_times_out_distributed() {
    let server = server().await;
    let Some(mut fleet) = distributed(fleet().model_url(Some(server.url())), 2).await else {
        return;
    };
    a_run_past_its_deadline_times_out(&mut fleet).await;
    fleet.shutdown().await.unwrap();
}

/// A spec's `limits.run_timeout_secs` bounds its runs when the task says
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_specs_run_timeout_applies_without_a_task_timeout() {
    let server = server().await;
    let mut fleet = fleet().model_url(Some(server.url())).embedded().unwrap();
    let spec = spec(
        "researcher",
        "openai:scripted",
        "limits: {max_steps: 200, run_timeout_secs: 1}\n",
    );
    let line = &fleet.run(&spec, &[task("t1", "Research")]).await.unwrap()[0];
    assert_eq!(line.status, ResultStatus::Timeout, "{line:?}");
    assert!(
        line.error
            .as_deref()
            .unwrap_or_default()
            .contains("(1 s from"),
        "{line:?}"
    );
    fleet.shutdown().await.unwrap();
}

/// A spec's `limits.step_timeout_secs` abandons a step that takes longer
/// (here, a model call slower than it) and retries it, as the worker's
/// own step limit does; the run fails once the attempts are used up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_past_the_specs_step_timeout_is_retried_then_fails() {
    let server = ScriptedServer::start(
        Arc::new(ReplayEngine::new(endless_subagent())),
        Duration::from_millis(1_500),
    )
    .await
    .unwrap();
    let mut fleet = fleet().model_url(Some(server.url())).embedded().unwrap();
    let spec = spec(
        "researcher",
        "openai:scripted",
        "limits: {step_timeout_secs: 1}\n",
    );
    let line = &fleet.run(&spec, &[task("t1", "Research")]).await.unwrap()[0];
    assert_eq!(line.status, ResultStatus::Error, "{line:?}");
    let error = line.error.as_deref().unwrap_or_default();
    assert!(error.starts_with("attempts_exhausted: "), "{error}");
    assert_eq!(line.steps, 0, "no step committed");
    assert!(server.requests().len() > 1, "the step was tried again");
    fleet.shutdown().await.unwrap();
}

/// The parent delegates a write that a human must approve.
fn gated_subagent() -> String {
    ScriptBuilder::new()
        .call(When::input("^Delegate$").turn(0), [Call::task("Write it")])
        .call(
            When::input("^Write it$"),
            [Call::write_file("/g.txt", "gamma")],
        )
        .build()
}

// A run parked on a subagent that waits for a human takes no step of its
// own, yet its deadline still ends it: the check it scheduled when it
// parked finds the deadline passed, ends it `timeout` and cancels the
// subagent, which stops waiting for its human and ends `cancelled`.
scenario!(
    a_parked_run_times_out_while_its_subagent_waits_for_a_human,
    |fleet| {
        let dir = tempfile::tempdir().unwrap();
        let spec = spec(
            "delegator",
            &replay_model(dir.path(), &gated_subagent()),
            "interrupt_on:\n  write_file: true\n",
        );
        let task = TaskLine {
            timeout_secs: Some(1),
            ..task("t1", "Delegate")
        };
        let batch = fleet.run_batch(&spec, &[task]).await.unwrap();
        let (line, run) = (&batch.results[0], &batch.runs[0]);
        assert_eq!(line.status, ResultStatus::Interrupted, "{line:?}");
        let review = line
            .review
            .clone()
            .expect("the subagent waits for a review");
        let ended = eventually("the parked run ended", || async {
            let record = fleet
                .store
                .get_run(&run.thread_id, &run.run_id)
                .await
                .unwrap()
                .unwrap();
            record.status.is_terminal().then_some(record)
        })
        .await;
        assert_eq!(ended.status, RunStatus::Timeout, "{ended:?}");
        assert!(
            fleet
                .store
                .cancel_requested(&review.thread_id, &review.run_id)
                .await
                .unwrap(),
            "the waiting subagent is cancelled"
        );
        let child = eventually("the waiting subagent ended", || async {
            let record = fleet
                .store
                .get_run(&review.thread_id, &review.run_id)
                .await
                .unwrap()
                .unwrap();
            record.status.is_terminal().then_some(record)
        })
        .await;
        assert_eq!(child.status, RunStatus::Cancelled, "{child:?}");
    }
);
