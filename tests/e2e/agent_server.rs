//! The scheduler's HTTP API driven by the official `langgraph-sdk`
//! Python client: a live `deepfleet scheduler` and two `deepfleet worker`
//! processes on RabbitMQ and Redis run `agent_server/sdk_flows.py`
//! (assistants, threads, run + wait, stream, background run + join,
//! batch, store, interrupt + resume, multitask reject/enqueue, cancel).
//!
//! The client is installed into a venv under `target/` the first time.
//! Without PyPI the test is skipped with a note, and fails under
//! `CI=true`, like a missing RabbitMQ or Redis.

use std::path::{Path, PathBuf};
use std::time::Duration;

use deepfleet_testkit::fleet::services;
use tokio::process::Command;

use crate::queue_intake::{listening, start_scheduler};
use crate::support::{distributed, fleet};

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/agent_server")
}

/// A venv with `langgraph-sdk` and `pika`; `None` (skip) when pip cannot
/// install them outside CI.
pub(crate) async fn python() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/e2e-venv");
    let python = venv.join("bin/python");
    let ready = python.exists()
        && Command::new(&python)
            .args(["-c", "import langgraph_sdk, pika"])
            .status()
            .await
            .is_ok_and(|s| s.success());
    if ready {
        return Some(python);
    }
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .await
        .is_ok_and(|s| s.success());
    let installed = made
        && Command::new(venv.join("bin/pip"))
            .args(["install", "-q", "langgraph-sdk", "pika"])
            .status()
            .await
            .is_ok_and(|s| s.success());
    if installed {
        return Some(python);
    }
    let hint = "cannot install langgraph-sdk and pika into target/e2e-venv (is PyPI reachable?)";
    assert!(!services::in_ci(), "{hint}");
    eprintln!("skipping: {hint}");
    None
}

/// A free local port for the scheduler.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

#[tokio::test]
async fn langgraph_sdk_drives_the_scheduler() {
    let Some(fleet) = distributed(fleet(), 2).await else {
        return;
    };
    let Some(python) = python().await else {
        fleet.shutdown().await.unwrap();
        return;
    };
    let (mut scheduler, addr) = start_scheduler(&fleet, &fixtures().join("agents"), &[]);
    let url = format!("http://{addr}");
    let up = listening(&addr).await;
    let outcome = if up {
        tokio::time::timeout(
            Duration::from_secs(180),
            Command::new(&python)
                .arg(fixtures().join("sdk_flows.py"))
                .arg(&url)
                .status(),
        )
        .await
    } else {
        Ok(Ok(std::process::ExitStatus::default()))
    };
    let _ = scheduler.kill().await;
    crate::queue_intake::delete_submission_queues(&format!("{}.submissions", fleet.queue_name))
        .await;
    fleet.shutdown().await.unwrap();
    assert!(up, "the scheduler did not listen on {addr}");
    let status = outcome.expect("sdk flows timed out").unwrap();
    assert!(status.success(), "sdk flows failed: {status}");
}
