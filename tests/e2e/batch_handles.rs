//! Batch handles: `deepfleet submit` names its batch at once, and
//! `deepfleet batch status|follow|results|cancel ID` handle it by that id
//! from another process. A `submit` interrupted and re-attached with
//! `batch follow` gets every result once; the same tasks submitted again
//! (after the first submit ended, or while it runs) are the same batch
//! and add no run; `--detach` enqueues and exits; `batch cancel` stops
//! the runs that have not ended.
//!
//! The oracles are the scripted model's calls (one per task over all
//! invocations) and the runs the fleet's store holds (one per task).

use std::process::Stdio;
use std::time::Duration;

use deepfleet_proto::{ResultLine, ResultStatus, RunStatus};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

use crate::interrupted_batch::{
    CONCURRENCY, LATENCY, PATIENCE, SlowBatch, TASKS, assert_complete, fleet_runs, interrupt,
    signal,
};
use crate::support::{AMQP_URL, Fleet, REDIS_URL, distributed, fleet};

/// The fleet's flags and settings for a `deepfleet` command.
fn in_fleet(batch: &SlowBatch, fleet: &Fleet, args: &[&str]) -> tokio::process::Command {
    let mut cmd = batch.deepfleet(args);
    cmd.args(["--queue", AMQP_URL, "--store", REDIS_URL])
        .env("DEEPFLEET__QUEUE_NAME", &fleet.queue_name)
        .env("DEEPFLEET__KEY_PREFIX", &fleet.prefix);
    cmd
}

/// `deepfleet submit` of the batch, writing to `out`, with `extra` flags.
fn submit(batch: &SlowBatch, fleet: &Fleet, out: &str, extra: &[&str]) -> Child {
    let mut args = vec![
        "submit",
        "tasks.jsonl",
        "--agent",
        "agent.yaml",
        "--out",
        out,
    ];
    args.extend(extra);
    in_fleet(batch, fleet, &args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The batch id `child` prints first on stderr (`batch ID`); the rest of
/// its stderr is passed through.
async fn batch_id_of(child: &mut Child) -> String {
    let stderr = child.stderr.take().expect("stderr is piped");
    let mut lines = BufReader::new(stderr).lines();
    let first = tokio::time::timeout(PATIENCE, lines.next_line())
        .await
        .expect("submit printed no batch id in time")
        .unwrap()
        .expect("submit printed nothing");
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("{line}");
        }
    });
    first
        .strip_prefix("batch ")
        .unwrap_or_else(|| panic!("submit's first line names no batch: {first}"))
        .to_owned()
}

/// Runs `deepfleet batch ARGS` to its end; returns its exit code and
/// stdout.
async fn batch_command(batch: &SlowBatch, fleet: &Fleet, args: &[&str]) -> (i32, String) {
    let mut full = vec!["batch"];
    full.extend(args);
    let output = tokio::time::timeout(
        PATIENCE,
        in_fleet(batch, fleet, &full)
            .stdout(Stdio::piped())
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("deepfleet batch {args:?} did not end"))
    .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    (output.status.code().unwrap_or(-1), stdout)
}

/// `batch status ID --json`.
async fn status(batch: &SlowBatch, fleet: &Fleet, id: &str) -> serde_json::Value {
    let (code, stdout) = batch_command(batch, fleet, &["status", id, "--json"]).await;
    assert_eq!(code, 0, "batch status: {stdout}");
    serde_json::from_str(stdout.trim()).unwrap()
}

/// The lines of results file `name`, sorted by task.
fn lines_of(batch: &SlowBatch, name: &str) -> Vec<ResultLine> {
    let mut lines: Vec<ResultLine> = std::fs::read_to_string(batch.path(name))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines.sort_by(|a, b| a.id.cmp(&b.id));
    lines
}

async fn wait_success(child: &mut Child, what: &str) {
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .unwrap_or_else(|_| panic!("{what} did not end"))
        .unwrap();
    assert!(status.success(), "{what} exited with {status}");
}

/// A fleet of two workers on the batch's slow model.
async fn slow_fleet(batch: &SlowBatch) -> Option<Fleet> {
    let builder = fleet()
        .model_url(Some(batch.server.url()))
        .concurrency(u16::try_from(CONCURRENCY).unwrap());
    distributed(builder, 2).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_submit_is_followed_to_the_end_by_its_id() {
    let batch = SlowBatch::new().await;
    let Some(fleet) = slow_fleet(&batch).await else {
        return;
    };
    let mut first = submit(&batch, &fleet, "results.jsonl", &[]);
    let id = batch_id_of(&mut first).await;
    // Interrupted while it still submits, `submit` leaves tasks that only
    // submitting the file again starts; here every run is in the fleet.
    let submitted = tokio::time::timeout(PATIENCE, async {
        while fleet_runs(&fleet).await.len() < TASKS {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        submitted.is_ok(),
        "submit did not submit every task in time"
    );
    batch.wait_for_calls(2 * CONCURRENCY + 2).await;
    tokio::time::sleep(LATENCY + Duration::from_millis(100)).await;
    interrupt(&mut first, "INT").await;
    let partial = batch.lines().len();
    assert!(partial < TASKS, "the batch ended before SIGINT");
    let counts = status(&batch, &fleet, &id).await;
    assert_eq!(counts["total"], TASKS, "{counts}");

    let (code, stdout) =
        batch_command(&batch, &fleet, &["follow", &id, "--out", "results.jsonl"]).await;
    assert_eq!(code, 0, "batch follow: {stdout}");
    assert_complete(&batch);
    assert!(
        !batch.path("results.jsonl.unfinished").exists(),
        "a batch followed to its end leaves no marker"
    );
    let counts = status(&batch, &fleet, &id).await;
    assert_eq!(counts["counts"]["success"], TASKS, "{counts}");
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_tasks_submitted_again_add_no_runs() {
    let batch = SlowBatch::new().await;
    let Some(fleet) = slow_fleet(&batch).await else {
        return;
    };
    // Two at once, each following the batch into its own file.
    let mut one = submit(&batch, &fleet, "results.jsonl", &[]);
    let mut two = submit(&batch, &fleet, "again.jsonl", &[]);
    let (id_one, id_two) = (batch_id_of(&mut one).await, batch_id_of(&mut two).await);
    assert_eq!(id_one, id_two, "the same tasks are the same batch");
    wait_success(&mut one, "the first submit").await;
    wait_success(&mut two, "the concurrent submit").await;
    assert_complete(&batch);
    // Once more after the batch ended: its results, no new run.
    let mut three = submit(&batch, &fleet, "later.jsonl", &[]);
    assert_eq!(batch_id_of(&mut three).await, id_one);
    wait_success(&mut three, "the later submit").await;
    assert_complete(&batch);
    let first = lines_of(&batch, "results.jsonl");
    assert_eq!(lines_of(&batch, "again.jsonl"), first);
    assert_eq!(lines_of(&batch, "later.jsonl"), first);
    assert_eq!(fleet_runs(&fleet).await.len(), TASKS, "one run per task");
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_batch_is_counted_cancelled_and_its_results_written() {
    let batch = SlowBatch::new().await;
    let Some(fleet) = slow_fleet(&batch).await else {
        return;
    };
    // Paused workers take no step until the batch is cancelled.
    let workers = |name: &str| {
        fleet
            .worker_pids()
            .into_iter()
            .for_each(|p| signal(p, name))
    };
    workers("STOP");
    let mut detached = submit(&batch, &fleet, "results.jsonl", &["--detach"]);
    let id = batch_id_of(&mut detached).await;
    wait_success(&mut detached, "submit --detach").await;
    assert!(
        !batch.path("results.jsonl").exists(),
        "a detached submit writes no results"
    );
    let counts = status(&batch, &fleet, &id).await;
    assert_eq!(
        (&counts["total"], &counts["counts"]["pending"]),
        (&serde_json::json!(TASKS), &serde_json::json!(TASKS)),
        "{counts}"
    );
    let (code, stdout) = batch_command(&batch, &fleet, &["cancel", &id]).await;
    assert_eq!(code, 0, "batch cancel: {stdout}");
    assert!(
        stdout.contains(&format!("{TASKS} run(s) asked to stop")),
        "{stdout}"
    );
    workers("CONT");
    let ended = tokio::time::timeout(PATIENCE, async {
        loop {
            let counts = status(&batch, &fleet, &id).await;
            if counts["counts"]["cancelled"] == TASKS {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert!(ended.is_ok(), "the cancelled runs did not end");
    assert!(
        fleet_runs(&fleet)
            .await
            .iter()
            .all(|r| r.status == RunStatus::Cancelled)
    );
    let (code, _) =
        batch_command(&batch, &fleet, &["results", &id, "--out", "results.jsonl"]).await;
    assert_eq!(code, 1, "cancelled runs did not succeed");
    let lines = batch.lines();
    assert_eq!(lines.len(), TASKS);
    assert!(lines.iter().all(|l| l.status == ResultStatus::Error));
    assert!(
        batch.server.requests().is_empty(),
        "a cancelled task called the model"
    );
    let (code, _) = batch_command(&batch, &fleet, &["status", "no-such-batch"]).await;
    assert_eq!(code, 2, "an unknown batch is an error");
    fleet.shutdown().await.unwrap();
}
