//! A fleet's first run as a new user meets it: `deepfleet submit` against a
//! queue that no worker consumes says so within seconds and keeps
//! following until a worker comes (with `--detach`, says so and exits;
//! `deepfleet batch follow` then writes the results); an unreachable RabbitMQ or Redis ends
//! `worker`, `scheduler` and `submit` within the connect bound, naming the
//! URL without its password, without a panic.
//!
//! Needs RabbitMQ on 127.0.0.1:5672 and Redis on 127.0.0.1:6379
//! (`scripts/services.sh`); without them the tests are skipped with a
//! note, and fail under `CI=true`. Queue names and key prefixes are unique
//! per test and removed afterwards.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use deepfleet_store::sealed::ContextKey;
use deepfleet_testkit::fleet::services::{self, Service};
use deepfleet_testkit::fleet::{AMQP_URL, FleetBuilder, REDIS_URL, delete_queues};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// How soon `submit` must say that nothing consumes its queue.
const SAY_WITHIN: Duration = Duration::from_secs(5);
/// The connect timeout the unreachable cases run with.
const CONNECT_SECS: u64 = 3;
/// What a failing command may take beyond its connect timeout.
const SLACK: Duration = Duration::from_secs(5);

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_deepfleet")
}

fn example(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Whether RabbitMQ and Redis answer; under CI their absence fails.
async fn services_available() -> bool {
    let Err(missing) = services::check(&Service::FLEET).await else {
        return true;
    };
    assert!(!services::in_ci(), "{missing}");
    eprintln!("skipping: {missing}");
    false
}

/// A `deepfleet` command with no configuration but `env`.
fn deepfleet(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env_remove("DEEPFLEET_CONFIG")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// The stderr lines of `child` as they come, echoed to the test's stderr.
fn stderr_lines(child: &mut Child) -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("  | {line}");
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits up to `within` for a line that satisfies `wanted`.
async fn line_within(
    lines: &mut mpsc::UnboundedReceiver<String>,
    within: Duration,
    what: &str,
    wanted: impl Fn(&str) -> bool,
) -> String {
    let found = tokio::time::timeout(within, async {
        while let Some(line) = lines.recv().await {
            if wanted(&line) {
                return Some(line);
            }
        }
        None
    })
    .await;
    match found {
        Ok(Some(line)) => line,
        Ok(None) => panic!("stderr closed before {what}"),
        Err(_) => panic!("no {what} within {within:?}"),
    }
}

fn write_tasks(dir: &Path, n: usize) -> PathBuf {
    let all = std::fs::read_to_string(example("examples/briefings/tasks.jsonl")).unwrap();
    let path = dir.join("tasks.jsonl");
    let lines: Vec<&str> = all.lines().take(n).collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_says_no_worker_consumes_then_a_late_worker_finishes_the_batch() {
    if !services_available().await {
        return;
    }
    let key = ContextKey::generate_base64();
    let mut fleet = FleetBuilder::new()
        .binary(bin())
        .context_key(&key)
        .fast_retries()
        .distributed(0)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tasks = write_tasks(dir.path(), 3);
    let out = dir.path().join("results.jsonl");
    let agent = example("examples/briefings/agent.yaml");
    let mut submit = deepfleet(
        &[
            "submit",
            tasks.to_str().unwrap(),
            "--agent",
            agent.to_str().unwrap(),
        ],
        &[
            ("DEEPFLEET__QUEUE_NAME", &fleet.queue_name),
            ("DEEPFLEET__KEY_PREFIX", &fleet.prefix),
            ("DEEPFLEET__CONTEXT_KEY", &key),
        ],
    )
    .args(["--queue", AMQP_URL, "--store", REDIS_URL, "--out"])
    .arg(&out)
    .spawn()
    .unwrap();
    let mut lines = stderr_lines(&mut submit);

    let started = Instant::now();
    let warning = line_within(
        &mut lines,
        SAY_WITHIN,
        "warning that no worker consumes",
        |l| l.contains("no worker consumes queue") && l.contains(&fleet.queue_name),
    )
    .await;
    assert!(warning.starts_with("warning:"), "{warning}");
    eprintln!("warned after {:?}", started.elapsed());
    // It keeps following rather than giving up.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(submit.try_wait().unwrap().is_none(), "submit gave up");

    fleet.spawn_worker().unwrap();
    line_within(
        &mut lines,
        Duration::from_secs(60),
        "word of the new consumer",
        |l| l.contains(&format!("queue {} now has 1 consumer", fleet.queue_name)),
    )
    .await;
    let status = tokio::time::timeout(Duration::from_secs(120), submit.wait())
        .await
        .expect("the batch did not finish once a worker came")
        .unwrap();
    assert!(status.success(), "submit exited with {status}");
    let results = std::fs::read_to_string(&out).unwrap();
    let statuses: Vec<String> = results
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["status"].to_string())
        .collect();
    assert_eq!(statuses, vec!["\"success\""; 3], "{results}");
    fleet.shutdown().await.unwrap();
}

/// `submit --detach` with no worker on the queue says so, once, and
/// exits; a worker started later runs the batch, which `batch follow`
/// writes out by the id `submit` printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_batch_without_a_worker_is_followed_once_one_comes() {
    if !services_available().await {
        return;
    }
    let key = ContextKey::generate_base64();
    let mut fleet = FleetBuilder::new()
        .binary(bin())
        .context_key(&key)
        .fast_retries()
        .distributed(0)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tasks = write_tasks(dir.path(), 3);
    let out = dir.path().join("results.jsonl");
    let agent = example("examples/briefings/agent.yaml");
    let (queue_name, prefix) = (fleet.queue_name.clone(), fleet.prefix.clone());
    let env = [
        ("DEEPFLEET__QUEUE_NAME", queue_name.as_str()),
        ("DEEPFLEET__KEY_PREFIX", prefix.as_str()),
        ("DEEPFLEET__CONTEXT_KEY", key.as_str()),
        ("DEEPFLEET__QUEUE", AMQP_URL),
        ("DEEPFLEET__STORE", REDIS_URL),
    ];
    let detached = deepfleet(
        &[
            "submit",
            tasks.to_str().unwrap(),
            "--agent",
            agent.to_str().unwrap(),
            "--detach",
        ],
        &env,
    )
    .output();
    let detached = tokio::time::timeout(Duration::from_secs(60), detached)
        .await
        .expect("submit --detach did not exit")
        .unwrap();
    let stderr = String::from_utf8_lossy(&detached.stderr);
    assert!(detached.status.success(), "{stderr}");
    let id = stderr
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("batch "))
        .unwrap_or_else(|| panic!("no batch id first: {stderr}"))
        .to_owned();
    assert!(
        stderr.contains(&format!("no worker consumes queue {queue_name}")),
        "{stderr}"
    );
    assert!(!out.exists(), "a detached submit writes no results");

    fleet.spawn_worker().unwrap();
    let follow = deepfleet(
        &["batch", "follow", &id, "--out", out.to_str().unwrap()],
        &env,
    )
    .output();
    let follow = tokio::time::timeout(Duration::from_secs(120), follow)
        .await
        .expect("the batch did not finish once a worker came")
        .unwrap();
    assert!(
        follow.status.success(),
        "{}",
        String::from_utf8_lossy(&follow.stderr)
    );
    let results = std::fs::read_to_string(&out).unwrap();
    let statuses: Vec<String> = results
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["status"].to_string())
        .collect();
    assert_eq!(statuses, vec!["\"success\""; 3], "{results}");
    fleet.shutdown().await.unwrap();
}

/// A local port that nothing listens on.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `command` of deepfleet against `queue` and `store` (each with a
/// password that must not show) and checks that it fails within the
/// connect bound, naming `shown` and no secret, without panicking; returns
/// its stderr.
async fn fails_fast(command: &str, queue: &str, store: &str, shown: &str, base: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let tasks = write_tasks(dir.path(), 1);
    let agents = dir.path().join("agents");
    std::fs::create_dir(&agents).unwrap();
    std::fs::copy(
        example("examples/briefings/agent.yaml"),
        agents.join("briefings.yaml"),
    )
    .unwrap();
    let args: Vec<&str> = match command {
        "submit" => vec![
            "submit",
            tasks.to_str().unwrap(),
            "--agent",
            "examples/briefings/agent.yaml",
        ],
        "scheduler" => vec!["scheduler", "--agents", agents.to_str().unwrap()],
        _ => vec![command],
    };
    let key = ContextKey::generate_base64();
    let timeout = CONNECT_SECS.to_string();
    let started = Instant::now();
    let run = deepfleet(
        &args,
        &[
            ("DEEPFLEET__QUEUE", queue),
            ("DEEPFLEET__STORE", store),
            ("DEEPFLEET__QUEUE_NAME", base),
            ("DEEPFLEET__KEY_PREFIX", base),
            ("DEEPFLEET__CONTEXT_KEY", &key),
            ("DEEPFLEET__CONNECT_TIMEOUT_SECS", &timeout),
        ],
    )
    .current_dir(env!("CARGO_MANIFEST_DIR"))
    .output();
    let bound = Duration::from_secs(CONNECT_SECS) + SLACK;
    let out = tokio::time::timeout(bound * 2, run)
        .await
        .unwrap_or_else(|_| panic!("{command} hung against {shown}"))
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "{command} against {shown}: {:?} after {took:?}\n{stderr}",
        out.status
    );
    assert!(!out.status.success(), "{command}: {stderr}");
    assert!(took < bound, "{command} took {took:?}");
    assert!(stderr.contains(shown), "{command}: {stderr}");
    assert!(!stderr.contains("s3cret"), "{command}: {stderr}");
    assert!(!stderr.contains("panicked"), "{command}: {stderr}");
    stderr.into_owned()
}

const COMMANDS: [&str; 3] = ["worker", "scheduler", "submit"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_broker_port_fails_fast_naming_the_url_without_its_password() {
    let port = closed_port();
    let queue = format!("amqp://fleet:s3cret@127.0.0.1:{port}/%2f");
    let shown = format!("amqp://fleet:***@127.0.0.1:{port}/%2f");
    for command in COMMANDS {
        let base = format!("first-run.{}", uuid::Uuid::new_v4());
        fails_fast(command, &queue, REDIS_URL, &shown, &base).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_redis_port_fails_fast_naming_the_url_without_its_password() {
    if !services_available().await {
        return;
    }
    let port = closed_port();
    let store = format!("redis://:s3cret@127.0.0.1:{port}");
    let shown = format!("redis://:***@127.0.0.1:{port}");
    for command in COMMANDS {
        let base = format!("first-run.{}", uuid::Uuid::new_v4());
        fails_fast(command, AMQP_URL, &store, &shown, &base).await;
        delete_queues(AMQP_URL, &base).await;
    }
}

/// Servers that accept connections and never answer: the connect timeout
/// is what ends the wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_servers_fail_after_the_connect_timeout() {
    if !services_available().await {
        return;
    }
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let queue = format!("amqp://fleet:s3cret@127.0.0.1:{port}/%2f");
    let base = format!("first-run.{}", uuid::Uuid::new_v4());
    let shown = format!("amqp://fleet:***@127.0.0.1:{port}/%2f");
    let within = format!("within {CONNECT_SECS}s");
    let broker = fails_fast("worker", &queue, REDIS_URL, &shown, &base).await;
    assert!(broker.contains(&within), "{broker}");
    let store = format!("redis://:s3cret@127.0.0.1:{port}");
    let shown = format!("redis://:***@127.0.0.1:{port}");
    let redis = fails_fast("worker", AMQP_URL, &store, &shown, &base).await;
    assert!(redis.contains(&within), "{redis}");
    delete_queues(AMQP_URL, &base).await;
    drop(silent);
}
