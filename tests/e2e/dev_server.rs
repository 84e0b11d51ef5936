//! `deepfleet dev`: the official `langgraph-sdk` flows of the Agent
//! Server scenario (`agent_server/sdk_flows.py`) against one process with
//! its queue, store and workers inside, and no RabbitMQ or Redis. The
//! queue and store settings point at a listener of the test's that would
//! see any connection; it must see none. A browser UI on another local
//! origin gets its CORS preflight answered. Then a spec added to the agents
//! folder is served without a restart, and SIGTERM stops the process
//! cleanly.
//!
//! Skipped with a note without PyPI, failed under `CI=true` (see
//! `live_scheduler`).

use std::io::ErrorKind;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::live_scheduler::{fixtures, free_port, listening, python};

/// `GET path` on `addr`: the whole response, head and body.
async fn get(addr: &str, path: &str) -> String {
    send(addr, &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n")).await
}

/// `head` (a request line and headers) on `addr`, closing the
/// connection after: the whole response, head and body.
async fn send(addr: &str, head: &str) -> String {
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("{head}Connection: close\r\n\r\n");
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    socket.read_to_string(&mut response).await.unwrap();
    response
}

/// A spec named `name` on the Agent Server scenario's replay script.
fn spec(name: &str, script: &Path) -> String {
    let agent = std::fs::read_to_string(fixtures().join("agents/helper.yaml")).unwrap();
    agent
        .replace("name: helper", &format!("name: {name}"))
        .replace(
            "replay:../script.yaml",
            &format!("replay:{}", script.display()),
        )
}

#[tokio::test]
async fn langgraph_sdk_drives_the_dev_server_without_servers() {
    let Some(python) = python().await else {
        return;
    };
    // The folder holds the spec and a YAML file that is no spec.
    let agents = tempfile::tempdir().unwrap();
    let script = fixtures().join("script.yaml");
    std::fs::write(agents.path().join("helper.yaml"), spec("helper", &script)).unwrap();
    std::fs::copy(&script, agents.path().join("script.yaml")).unwrap();
    // Where a RabbitMQ or Redis client of the process would connect.
    let trap = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    trap.set_nonblocking(true).unwrap();
    let trap_port = trap.local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{}", free_port());
    let mut dev = Command::new(env!("CARGO_BIN_EXE_deepfleet"))
        .args(["dev", "--listen", &addr, "--agents"])
        .arg(agents.path())
        .env(
            "DEEPFLEET__QUEUE",
            format!("amqp://127.0.0.1:{trap_port}/%2f"),
        )
        .env("DEEPFLEET__STORE", format!("redis://127.0.0.1:{trap_port}"))
        .env_remove("DEEPFLEET__CONTEXT_KEY")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    assert!(
        listening(&addr).await,
        "deepfleet dev did not listen on {addr}"
    );
    // A UI on another local origin (the Agent Chat UI's dev server) gets
    // its preflight answered, with the API key header allowed.
    let preflight = send(
        &addr,
        &format!(
            "OPTIONS /threads/search HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://localhost:3000\r\n\
             Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type,x-api-key\r\n"
        ),
    )
    .await
    .to_ascii_lowercase();
    assert!(preflight.starts_with("http/1.1 200"), "{preflight}");
    assert!(
        preflight.contains("access-control-allow-origin: http://localhost:3000"),
        "{preflight}"
    );
    assert!(preflight.contains("x-api-key"), "{preflight}");
    let flows = fixtures().join("sdk_flows.py");
    let run = Command::new(&python)
        .arg(&flows)
        .arg(format!("http://{addr}"))
        .status();
    let status = tokio::time::timeout(Duration::from_secs(180), run)
        .await
        .expect("sdk_flows.py timed out")
        .unwrap();
    assert!(status.success(), "sdk_flows.py failed: {status}");

    // A new spec is served within the watch's period (bounded wait).
    std::fs::write(agents.path().join("second.yaml"), spec("second", &script)).unwrap();
    let mut info = String::new();
    for _ in 0..100 {
        info = get(&addr, "/info").await;
        if info.contains("\"second\"") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(info.contains(r#""graphs":["helper","second"]"#), "{info}");

    // SIGTERM stops it gracefully.
    let pid = dev.id().unwrap().to_string();
    let sent = Command::new("kill").args(["-TERM", &pid]).status().await;
    assert!(sent.unwrap().success(), "kill -TERM {pid}");
    let exit = tokio::time::timeout(Duration::from_secs(60), dev.wait())
        .await
        .expect("deepfleet dev did not stop on SIGTERM")
        .unwrap();
    assert!(exit.success(), "deepfleet dev exited with {exit}");
    match trap.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("deepfleet dev connected to the configured queue or store: {other:?}"),
    }
}
