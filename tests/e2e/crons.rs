//! Crons through the official `langgraph-sdk` (`crons/cron_flows.py`):
//! every method of `client.crons` against a live scheduler, then, with
//! two schedulers of one fleet polling the same crons, an every-second
//! cron fires each due second exactly once (a thread cron and a
//! stateless one), each run created within a second of its time and run
//! to the end by the workers. The same flows run on `deepfleet dev`
//! (embedded store, one process); two cron loops over one embedded store
//! are the scheduler crate's `two_loops_fire_each_due_time_once`.
//!
//! Skipped with a note without PyPI, failed under `CI=true` (see
//! `live_scheduler`).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use crate::live_scheduler::{
    delete_submission_queues, fixtures, free_port, listening, python, start_scheduler, submissions,
};
use crate::support::{distributed, fleet};

/// The flows script.
fn flows() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/crons/cron_flows.py")
}

/// Runs the flows with `python` against `a` and `b` within `limit`,
/// each run created within `late_secs` of its fire time; whether they
/// passed.
async fn run_flows(python: &PathBuf, a: &str, b: &str, late_secs: u32, limit: Duration) -> bool {
    let run = Command::new(python)
        .arg(flows())
        .args([format!("http://{a}"), format!("http://{b}")])
        .arg(late_secs.to_string())
        .status();
    match tokio::time::timeout(limit, run).await {
        Ok(Ok(status)) => status.success(),
        Ok(Err(e)) => panic!("cannot start the flows: {e}"),
        Err(_) => panic!("the cron flows timed out"),
    }
}

#[tokio::test]
async fn a_cron_fires_each_due_time_once_with_two_schedulers() {
    let Some(fleet) = distributed(fleet(), 2).await else {
        return;
    };
    let Some(python) = python().await else {
        fleet.shutdown().await.unwrap();
        return;
    };
    let agents = fixtures().join("agents");
    let (mut first, a) = start_scheduler(&fleet, &agents);
    let (mut second, b) = start_scheduler(&fleet, &agents);
    let up = listening(&a).await && listening(&b).await;
    let passed = up && run_flows(&python, &a, &b, 1, Duration::from_secs(120)).await;
    let _ = first.kill().await;
    let _ = second.kill().await;
    delete_submission_queues(&submissions(&fleet)).await;
    fleet.shutdown().await.unwrap();
    assert!(up, "the schedulers did not listen on {a} and {b}");
    assert!(passed, "cron_flows.py failed");
}

#[tokio::test]
async fn crons_fire_on_the_dev_server() {
    let Some(python) = python().await else {
        return;
    };
    let addr = format!("127.0.0.1:{}", free_port());
    let mut dev = Command::new(env!("CARGO_BIN_EXE_deepfleet"))
        .args(["dev", "--listen", &addr, "--agents"])
        .arg(fixtures().join("agents"))
        .env_remove("DEEPFLEET_CONFIG")
        .env_remove("DEEPFLEET__CONTEXT_KEY")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let up = listening(&addr).await;
    // One process serves the API, fires the crons and runs their steps
    // (a debug build, beside the other tests): its runs may be created
    // later than a fleet's scheduler creates them.
    let passed = up && run_flows(&python, &addr, &addr, 2, Duration::from_secs(120)).await;
    let _ = dev.kill().await;
    assert!(up, "deepfleet dev did not listen on {addr}");
    assert!(passed, "cron_flows.py failed on deepfleet dev");
}
