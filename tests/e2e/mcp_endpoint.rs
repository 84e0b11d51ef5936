//! The scheduler's `/mcp/` endpoint driven by a real MCP client, `rmcp`'s
//! streamable HTTP client (the one the worker calls MCP servers with): a
//! live `deepfleet scheduler` with API keys for two tenants and a
//! `deepfleet worker` on RabbitMQ and Redis, and `deepfleet dev` (one
//! process, the embedded store) with the same keys. Each key lists only its
//! tenant's assistants as tools; calling one runs it to its end and
//! answers the scripted reply.
//!
//! The distributed half is skipped without RabbitMQ or Redis, and fails
//! under `CI=true`.

use std::process::Stdio;
use std::time::Duration;

use deepfleet_proto::{Role, TenantId};
use deepfleet_scheduler::keys::key_line;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use tokio::process::{Child, Command};

use crate::live_scheduler::{
    delete_submission_queues, fixtures, free_port, listening, scheduler_command, submissions,
};
use crate::support::{distributed, fleet};

const KEY_A: &str = "dfk_mcp_tenant_a";
const KEY_B: &str = "dfk_mcp_tenant_b";

fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// An MCP client of `url` presenting `key` (as a bearer token).
async fn connect(url: &str, key: &str) -> RunningService<RoleClient, ()> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(key);
    let transport = StreamableHttpClientTransport::with_client(http(), config);
    ().serve(transport).await.unwrap()
}

async fn tool_names(client: &RunningService<RoleClient, ()>) -> Vec<String> {
    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|tool| tool.name.into_owned())
        .collect();
    names.sort();
    names
}

/// What a live scheduler's tools do, checked against `base`.
async fn check_tools(base: &str) {
    // Tenant a has an assistant of its own; tenant b has none.
    let created = http()
        .post(format!("{base}/assistants"))
        .header("x-api-key", KEY_A)
        .json(&json!({"graph_id": "helper", "name": "echo bot", "description": "Echoes."}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 200, "{}", created.text().await.unwrap());

    let a = connect(&format!("{base}/mcp/"), KEY_A).await;
    assert_eq!(tool_names(&a).await, ["echo_bot", "helper"]);
    let b = connect(&format!("{base}/mcp/"), KEY_B).await;
    assert_eq!(tool_names(&b).await, ["helper"]);

    let mut call = CallToolRequestParams::new("echo_bot");
    call.arguments = json!({"input": "echo over mcp"}).as_object().cloned();
    let answer = a.call_tool(call).await.unwrap();
    assert_ne!(answer.is_error, Some(true), "{answer:?}");
    let text: Vec<String> = answer
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect();
    assert_eq!(text, ["echo over mcp"]);

    // Another tenant's assistant is no tool of b's.
    let mut call = CallToolRequestParams::new("echo_bot");
    call.arguments = json!({"input": "echo x"}).as_object().cloned();
    assert!(b.call_tool(call).await.is_err());

    let _ = a.cancel().await;
    let _ = b.cancel().await;
}

/// The two tenants' key lines, as the scheduler's and dev's settings.
fn with_keys(command: &mut Command) -> &mut Command {
    let a = TenantId::new("mcp-a").unwrap();
    let b = TenantId::new("mcp-b").unwrap();
    command
        .env("DEEPFLEET__API__KEYS__A", key_line(KEY_A, &a, Role::Admin))
        .env("DEEPFLEET__API__KEYS__B", key_line(KEY_B, &b, Role::Submit))
}

/// Runs [`check_tools`] against `server` listening on `addr`, then stops
/// it; fails unless it listened and the checks passed within 2 minutes.
async fn check_server(mut server: Child, addr: &str) {
    let up = listening(addr).await;
    let outcome = if up {
        let checked = tokio::spawn({
            let base = format!("http://{addr}");
            async move { check_tools(&base).await }
        });
        Some(tokio::time::timeout(Duration::from_secs(120), checked).await)
    } else {
        None
    };
    let _ = server.kill().await;
    assert!(up, "the server did not listen on {addr}");
    match outcome {
        Some(Ok(Err(panicked))) => std::panic::resume_unwind(panicked.into_panic()),
        Some(Err(_)) => panic!("the MCP checks timed out"),
        Some(Ok(Ok(()))) | None => {}
    }
}

#[tokio::test]
async fn an_mcp_client_lists_and_calls_its_tenants_assistants() {
    let Some(fleet) = distributed(fleet(), 1).await else {
        return;
    };
    let addr = format!("127.0.0.1:{}", free_port());
    let scheduler = with_keys(
        scheduler_command(&fleet, &addr)
            .arg("--agents")
            .arg(fixtures().join("agents")),
    )
    .spawn()
    .unwrap();
    let checked = tokio::spawn(async move { check_server(scheduler, &addr).await }).await;
    delete_submission_queues(&submissions(&fleet)).await;
    fleet.shutdown().await.unwrap();
    if let Err(failed) = checked {
        std::panic::resume_unwind(failed.into_panic());
    }
}

#[tokio::test]
async fn an_mcp_client_lists_and_calls_the_dev_servers_assistants() {
    let addr = format!("127.0.0.1:{}", free_port());
    let dev = with_keys(
        Command::new(env!("CARGO_BIN_EXE_deepfleet"))
            .args(["dev", "--listen", &addr, "--agents"])
            .arg(fixtures().join("agents"))
            .env_remove("DEEPFLEET_CONFIG")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true),
    )
    .spawn()
    .unwrap();
    check_server(dev, &addr).await;
}
