//! API keys and tenants on a live `deepfleet scheduler`: the official
//! `langgraph-sdk` with `api_key` for two tenants (`agent_server/
//! tenant_flows.py`): another tenant's assistant, thread, run, batch,
//! store item and stream answer 404, a wrong key 401, a read key cannot
//! create runs (403) nor run an assistant called `search` over A2A, and
//! a batch's thread (made past the API) is taken over by no one. Every route is driven with two tenants' keys in the
//! scheduler's router tests (`api/src/auth_tests.rs`); the
//! embedded `dev` server takes the same keys through the same router.
//!
//! Skipped like the Agent Server scenario without PyPI, RabbitMQ or
//! Redis, and failed under `CI=true`.

use std::process::Stdio;
use std::time::Duration;

use deepfleet_proto::{Role, TaskLine, TenantId};
use deepfleet_scheduler::keys::key_line;
use deepfleet_scheduler::submit_task;
use tokio::process::Command;

use crate::live_scheduler::{
    delete_submission_queues, fixtures, free_port, listening, python, scheduler_command,
    submissions,
};
use crate::support::{distributed, fleet};

const KEY_A: &str = "dfk_tenant_a_submit";
const KEY_A_READ: &str = "dfk_tenant_a_read";
const KEY_B: &str = "dfk_tenant_b_admin";

#[tokio::test]
async fn two_tenants_see_only_their_own_records_through_the_sdk() {
    let Some(fleet) = distributed(fleet(), 1).await else {
        return;
    };
    let Some(python) = python().await else {
        fleet.shutdown().await.unwrap();
        return;
    };
    let a = TenantId::new("tenant-a").unwrap();
    let b = TenantId::new("tenant-b").unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let mut scheduler = scheduler_command(&fleet, &addr)
        .arg("--agents")
        .arg(fixtures().join("agents"))
        // Admin: the flows create an assistant as tenant a.
        .env("DEEPFLEET__API__KEYS__A", key_line(KEY_A, &a, Role::Admin))
        .env(
            "DEEPFLEET__API__KEYS__AREAD",
            key_line(KEY_A_READ, &a, Role::Read),
        )
        .env("DEEPFLEET__API__KEYS__B", key_line(KEY_B, &b, Role::Admin))
        .spawn()
        .unwrap();
    let up = listening(&addr).await;
    let outcome = if up {
        // A run of a batch tenant a submits past the API, as `deepfleet
        // submit` does: its thread has no API record for anyone to adopt.
        let task = TaskLine {
            id: "t1".into(),
            input: "write notes".into(),
            context: None,
            files: None,
            state: None,
            timeout_secs: None,
        };
        let intake = fleet.intake().unwrap().with_tenant(a.clone());
        let batch = uuid::Uuid::new_v4().to_string();
        let batch_run = submit_task(&intake, "helper", &task, Some(&batch))
            .await
            .unwrap();
        let run = Command::new(&python)
            .arg(fixtures().join("tenant_flows.py"))
            .args([
                &format!("http://{addr}"),
                KEY_A,
                KEY_B,
                KEY_A_READ,
                &batch_run.thread_id,
            ])
            .env_remove("LANGGRAPH_API_KEY")
            .env_remove("LANGSMITH_API_KEY")
            .env_remove("LANGCHAIN_API_KEY")
            .status();
        tokio::time::timeout(Duration::from_secs(120), run).await
    } else {
        Ok(Ok(std::process::ExitStatus::default()))
    };
    let _ = scheduler.kill().await;
    delete_submission_queues(&submissions(&fleet)).await;
    fleet.shutdown().await.unwrap();
    assert!(up, "the scheduler did not listen on {addr}");
    let status = outcome.expect("tenant_flows.py timed out").unwrap();
    assert!(status.success(), "tenant_flows.py failed: {status}");
}

#[tokio::test]
async fn a_scheduler_on_a_network_address_without_keys_refuses_to_start() {
    let output = Command::new(env!("CARGO_BIN_EXE_deepfleet"))
        .args(["scheduler", "--listen", "0.0.0.0:0"])
        .env_remove("DEEPFLEET_CONFIG")
        .env_remove("DEEPFLEET__API__ALLOW_OPEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("without API keys") && stderr.contains("allow_open"),
        "{stderr}"
    );
}
