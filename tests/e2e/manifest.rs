//! The project manifest (`deepfleet.toml`): `run` started in the
//! project's folder needs no flags, and from elsewhere `--config` and an
//! agent's name; the manifest's `[env]` reaches the process (`RUST_LOG`);
//! `dev` (embedded) and `scheduler` (distributed) serve its `[agents]`
//! and not the other spec beside them.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::live_scheduler::{
    delete_submission_queues, free_port, listening, scheduler_command, submissions,
};
use crate::support::{distributed, fleet};

const MANIFEST: &str = r#"
[agents]
briefings = "agent.yaml"

[run]
tasks = "tasks.jsonl"

[env]
RUST_LOG = "info"
"#;

/// A copy of `examples/briefings` with a manifest, and a second spec the
/// manifest does not list.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/briefings");
    for file in ["agent.yaml", "script.yaml", "tasks.jsonl"] {
        std::fs::copy(example.join(file), dir.path().join(file)).unwrap();
    }
    std::fs::write(
        dir.path().join("other.yaml"),
        "name: other\nmodel: replay:script.yaml\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("deepfleet.toml"), MANIFEST).unwrap();
    dir
}

/// `deepfleet ARGS` in `cwd`, with no configuration of the test's own.
fn deepfleet(cwd: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_deepfleet"));
    command
        .args(args)
        .current_dir(cwd)
        .env_remove("DEEPFLEET_CONFIG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    command
}

async fn finished(mut command: Command) -> Output {
    tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("deepfleet did not finish within 120 s")
        .unwrap()
}

/// The result lines of `path` that succeeded, of how many.
fn successes(path: &Path) -> (usize, usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ok = lines.iter().filter(|l| l["status"] == "success").count();
    (ok, lines.len())
}

#[tokio::test]
async fn run_takes_its_agent_tasks_and_env_from_the_manifest() {
    let project = project();
    let output = finished(deepfleet(project.path(), &["run"])).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(successes(&project.path().join("results.jsonl")), (24, 24));
    // Logged at info: [env] set RUST_LOG.
    assert!(stderr.contains("configuration file"), "{stderr}");

    let elsewhere = tempfile::tempdir().unwrap();
    let config = project.path().join("deepfleet.toml");
    let config = config.to_str().unwrap();
    let args = [
        "--config",
        config,
        "run",
        "--agent",
        "briefings",
        "--out",
        "out.jsonl",
    ];
    let output = finished(deepfleet(elsewhere.path(), &args)).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(successes(&elsewhere.path().join("out.jsonl")), (24, 24));

    let args = ["--config", config, "run", "--agent", "nope"];
    let output = finished(deepfleet(elsewhere.path(), &args)).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(r#"no agent "nope" in [agents] (briefings) and no such file"#),
        "{stderr}"
    );
}

/// `method path` on `addr` with a JSON `body`: the whole response.
async fn request(addr: &str, method: &str, path: &str, body: &str) -> String {
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    let read = socket.read_to_string(&mut response);
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("no answer within 60 s")
        .unwrap();
    response
}

/// The server at `addr` serves only the manifest's agent, and runs it.
async fn serves_the_listed_agent(addr: &str) {
    assert!(listening(addr).await, "nothing listened on {addr}");
    let info = request(addr, "GET", "/info", "").await;
    assert!(info.contains(r#""graphs":["briefings"]"#), "{info}");
    let run = r#"{"assistant_id":"briefings","input":{"messages":[{"role":"user","content":"Write a briefing on wind."}]}}"#;
    let answer = request(addr, "POST", "/runs/wait", run).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"messages\""), "{answer}");
}

#[tokio::test]
async fn dev_serves_the_manifests_agents() {
    let project = project();
    let addr = format!("127.0.0.1:{}", free_port());
    let mut dev = deepfleet(project.path(), &["dev", "--listen", &addr]);
    dev.stdout(Stdio::null()).stderr(Stdio::inherit());
    let mut dev = dev.spawn().unwrap();
    serves_the_listed_agent(&addr).await;
    dev.kill().await.unwrap();
}

#[tokio::test]
async fn the_scheduler_serves_the_manifests_agents() {
    let Some(fleet) = distributed(fleet(), 1).await else {
        return;
    };
    let project = project();
    let addr = format!("127.0.0.1:{}", free_port());
    let mut scheduler = scheduler_command(&fleet, &addr)
        .current_dir(project.path())
        .spawn()
        .unwrap();
    // The fleet's queues and keys go whatever the check finds.
    let checked = tokio::spawn(async move { serves_the_listed_agent(&addr).await }).await;
    scheduler.kill().await.unwrap();
    delete_submission_queues(&submissions(&fleet)).await;
    fleet.shutdown().await.unwrap();
    checked.unwrap();
}
