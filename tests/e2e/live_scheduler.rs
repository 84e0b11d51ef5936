//! A live `deepfleet scheduler` for a distributed fleet, and Python client
//! flows run against it (`langgraph-sdk`, `pika`, `a2a-sdk`), shared by
//! the Agent Server, A2A, queue intake and streaming scenarios.
//!
//! The clients are installed into a venv under `target/` the first time.
//! Without PyPI a flow is skipped with a note, and fails under `CI=true`,
//! like a missing RabbitMQ or Redis.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use deepfleet_queue::amqp::{AmqpConfig, AmqpQueue};
use deepfleet_testkit::fleet::services;
use tokio::process::{Child, Command};
use tokio::sync::OnceCell;

use crate::support::{AMQP_URL, CONTEXT_KEY, Fleet, REDIS_URL};

/// The Agent Server scenario's files (its agents serve the other
/// scenarios too).
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/agent_server")
}

/// The A2A client, pinned: its API changed whole between releases.
const A2A_SDK: &str = "a2a-sdk==1.3.0";

/// A venv with `langgraph-sdk`, `pika` and [`A2A_SDK`], made once per
/// test process; `None` (skip) when pip cannot install them outside CI.
///
/// Once per process because the scenarios that need it start together:
/// two pip installs into one new venv race on its files.
pub async fn python() -> Option<PathBuf> {
    static READY: OnceCell<Option<PathBuf>> = OnceCell::const_new();
    READY.get_or_init(install_clients).await.clone()
}

async fn install_clients() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/e2e-venv");
    let python = venv.join("bin/python");
    let ready = python.exists()
        && Command::new(&python)
            .args(["-c", "import langgraph_sdk, pika, a2a.client"])
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
        && Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "-q",
                "langgraph-sdk",
                "pika",
                A2A_SDK,
            ])
            .status()
            .await
            .is_ok_and(|s| s.success());
    if installed {
        return Some(python);
    }
    let hint = "cannot install langgraph-sdk, pika and a2a-sdk into target/e2e-venv \
                (is PyPI reachable?)";
    assert!(!services::in_ci(), "{hint}");
    eprintln!("skipping: {hint}");
    None
}

/// A free local port (bound, then released for a process to take).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// The submission queue of `fleet`'s schedulers.
pub fn submissions(fleet: &Fleet) -> String {
    format!("{}.submissions", fleet.queue_name)
}

/// Deletes a submission queue's topology (queue, dead letters, results).
pub async fn delete_submission_queues(name: &str) {
    if let Ok(queue) = AmqpQueue::connect(AmqpConfig::new(AMQP_URL, name)).await {
        let _ = queue.delete_all().await;
        let _ = queue.close().await;
    }
}

/// Starts `deepfleet scheduler` for `fleet` on a free port, serving the
/// specs in `agents` and taking submissions on [`submissions`]; returns
/// the process and its address.
pub fn start_scheduler(fleet: &Fleet, agents: &Path) -> (Child, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    let child = scheduler_command(fleet, &addr)
        .arg("--agents")
        .arg(agents)
        .spawn()
        .unwrap();
    (child, addr)
}

/// `deepfleet scheduler` for `fleet`, listening on `addr` and taking
/// submissions on [`submissions`], without its agents.
pub fn scheduler_command(fleet: &Fleet, addr: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_deepfleet"));
    command
        .args(["scheduler", "--queue", AMQP_URL, "--store", REDIS_URL])
        .args(["--listen", addr])
        .args(["--submissions", &submissions(fleet)])
        .env_remove("DEEPFLEET_CONFIG")
        .env("DEEPFLEET__QUEUE_NAME", &fleet.queue_name)
        .env("DEEPFLEET__KEY_PREFIX", &fleet.prefix)
        .env("DEEPFLEET__CONTEXT_KEY", CONTEXT_KEY.as_str())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    command
}

/// Whether something listens on `addr` within 10 s (the scheduler
/// declares its queues before it listens).
pub async fn listening(addr: &str) -> bool {
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// The official JavaScript client, installed from the npm registry under
/// `target/` the first time with `npm ci` from the lock file of
/// `tests/e2e/js_sdk/npm/` (`scripts/npm-locked.sh`); returns
/// its `node_modules` (for `NODE_PATH`). `None` (skip) without node or the
/// registry outside CI, like [`python`].
pub async fn node_sdk() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let prefix = root.join("target/e2e-node");
    let installed = Command::new(root.join("scripts/npm-locked.sh"))
        .arg(root.join("tests/e2e/js_sdk/npm"))
        .arg(&prefix)
        .status()
        .await
        .is_ok_and(|s| s.success());
    if installed {
        return Some(prefix.join("node_modules"));
    }
    let hint = "cannot install tests/e2e/js_sdk/npm into target/e2e-node \
                (are node, npm and the registry there?)";
    assert!(!services::in_ci(), "{hint}");
    eprintln!("skipping: {hint}");
    None
}

/// Runs the Python `flows` script against a scheduler of `fleet` serving
/// `agents`, giving it the arguments `args` makes of the scheduler's URL
/// and the submission queue; then stops everything. Fails unless the
/// scheduler listened and the script passed within `limit`; skipped like
/// [`python`].
pub async fn run_flows(
    fleet: Fleet,
    agents: &Path,
    flows: &Path,
    args: impl FnOnce(&str, &str) -> Vec<String>,
    limit: Duration,
) {
    let Some(python) = python().await else {
        fleet.shutdown().await.unwrap();
        return;
    };
    run_client(
        fleet,
        agents,
        &flows.display().to_string(),
        limit,
        |url, queue| {
            let mut command = Command::new(&python);
            command.arg(flows).args(args(url, queue));
            command
        },
    )
    .await;
}

/// Runs the command `client` makes of the URL of a scheduler of `fleet`
/// serving `agents` (and its submission queue), then stops everything.
/// Fails unless the scheduler listened and the client passed within
/// `limit`.
pub async fn run_client(
    fleet: Fleet,
    agents: &Path,
    name: &str,
    limit: Duration,
    client: impl FnOnce(&str, &str) -> Command,
) {
    let submissions = submissions(&fleet);
    let (mut scheduler, addr) = start_scheduler(&fleet, agents);
    let up = listening(&addr).await;
    let outcome = if up {
        let run = client(&format!("http://{addr}"), &submissions)
            .kill_on_drop(true)
            .status();
        tokio::time::timeout(limit, run).await
    } else {
        Ok(Ok(std::process::ExitStatus::default()))
    };
    let _ = scheduler.kill().await;
    delete_submission_queues(&submissions).await;
    fleet.shutdown().await.unwrap();
    assert!(up, "the scheduler did not listen on {addr}");
    let status = outcome
        .unwrap_or_else(|_| panic!("{name} timed out"))
        .unwrap();
    assert!(status.success(), "{name} failed: {status}");
}
