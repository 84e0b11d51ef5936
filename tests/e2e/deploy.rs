//! The binary as a pod runs it: `/healthz` and `/readyz` of a worker and a
//! scheduler, readiness following a Redis and a RabbitMQ (a node of the
//! test's own) that go away and come back,
//! SIGTERM ending both with status 0, and `deepfleet keygen`.
//!
//! Needs RabbitMQ on 127.0.0.1:5672 (`scripts/services.sh`) and the
//! `redis-server` binary (a private Redis is started per test, so it can
//! be killed). Without them the tests are skipped with a note, and fail
//! under `CI=true`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use deepfleet_testkit::servers::{self, PrivateRedis, RedisOptions};

const AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_deepfleet")
}

/// Whether the servers these tests need are here; under CI their absence
/// fails the test.
fn servers_available() -> bool {
    let rabbit = TcpStream::connect("127.0.0.1:5672").is_ok();
    let redis = Command::new("redis-server")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if rabbit && redis {
        return true;
    }
    let what = format!(
        "RabbitMQ on 127.0.0.1:5672: {rabbit}, redis-server binary: {redis}; run scripts/services.sh"
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{what}");
    eprintln!("skipped: {what}");
    false
}

/// A free local port, for a process of the test to listen on.
fn free_port() -> u16 {
    servers::free_port().unwrap()
}

/// A Redis of this test alone (so it can be stopped), on `runtime`.
fn private_redis(runtime: &tokio::runtime::Runtime) -> PrivateRedis {
    runtime
        .block_on(PrivateRedis::start(RedisOptions::default()))
        .unwrap()
}

/// A `deepfleet` process, killed if the test ends before it exits.
struct Process(Child);

impl Process {
    fn start(args: &[&str], env: &[(&str, String)]) -> Self {
        let mut cmd = Command::new(bin());
        cmd.args(args)
            .env_remove("DEEPFLEET_CONFIG")
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        Process(cmd.spawn().unwrap())
    }

    /// Waits until `GET path` on `port` answers `want`; fails at once if
    /// the process exits first.
    fn wait_status(&mut self, port: u16, path: &str, want: u16, within: Duration) {
        let what = format!("{path} to answer {want}");
        wait_for(within, &what, || {
            if let Some(exit) = self.0.try_wait().unwrap() {
                panic!("the process exited ({exit}) while waiting for {what}");
            }
            status(port, path) == want
        });
    }

    /// Sends SIGTERM, as Kubernetes does, and returns the exit code.
    fn terminate(&mut self, within: Duration) -> Option<i32> {
        let pid = self.0.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("no exit within {within:?} of SIGTERM");
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The status code of `GET path`, or 0 when nothing answers.
fn status(port: u16, path: &str) -> u16 {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return 0;
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return 0;
    }
    let mut head = [0_u8; 12];
    if stream.read_exact(&mut head).is_err() {
        return 0;
    }
    std::str::from_utf8(&head[9..12])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn wait_for(within: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("timed out after {within:?} waiting for {what}");
}

fn fleet_env(redis: &PrivateRedis, queue_name: &str) -> Vec<(&'static str, String)> {
    let key = Command::new(bin()).arg("keygen").output().unwrap();
    assert!(key.status.success());
    vec![
        ("DEEPFLEET__QUEUE", AMQP.to_owned()),
        ("DEEPFLEET__STORE", redis.url()),
        ("DEEPFLEET__QUEUE_NAME", queue_name.to_owned()),
        ("DEEPFLEET__KEY_PREFIX", queue_name.replace('.', "-")),
        (
            "DEEPFLEET__CONTEXT_KEY",
            String::from_utf8(key.stdout).unwrap().trim().to_owned(),
        ),
    ]
}

fn unique(what: &str) -> String {
    format!("deploy-test.{what}.{}", uuid::Uuid::new_v4())
}

/// Deletes the queues a test's processes declared under `base`.
fn delete_queues(base: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(deepfleet_testkit::fleet::delete_queues(AMQP, base));
}

#[test]
fn worker_readiness_follows_redis_and_sigterm_exits_zero() {
    if !servers_available() {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut redis = private_redis(&runtime);
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let base = unique("worker");
    let mut worker = Process::start(
        &["worker", "--metrics-listen", &listen],
        &fleet_env(&redis, &base),
    );
    worker.wait_status(port, "/readyz", 200, Duration::from_secs(60));
    assert_eq!(status(port, "/healthz"), 200);
    assert_eq!(status(port, "/metrics"), 200);

    runtime.block_on(redis.kill()).unwrap();
    worker.wait_status(port, "/readyz", 503, Duration::from_secs(20));
    // Liveness does not follow: restarting the pod would not bring Redis back.
    assert_eq!(status(port, "/healthz"), 200);

    runtime.block_on(redis.start_again()).unwrap();
    worker.wait_status(port, "/readyz", 200, Duration::from_secs(60));
    assert_eq!(worker.terminate(Duration::from_secs(20)), Some(0));
    delete_queues(&base);
}

#[test]
fn worker_readiness_follows_a_restarted_broker() {
    use deepfleet_testkit::servers::{PrivateRabbit, RabbitOptions};
    if !servers_available() {
        return;
    }
    if PrivateRabbit::script().is_none() {
        let what = "rabbitmq-server is not installed";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{what}");
        eprintln!("skipped: {what}");
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut rabbit = runtime
        .block_on(PrivateRabbit::start(RabbitOptions::default()))
        .unwrap();
    let redis = private_redis(&runtime);
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut env = fleet_env(&redis, &unique("broker"));
    env.retain(|(k, _)| *k != "DEEPFLEET__QUEUE");
    env.push(("DEEPFLEET__QUEUE", rabbit.url()));
    let mut worker = Process::start(&["worker", "--metrics-listen", &listen], &env);
    worker.wait_status(port, "/readyz", 200, Duration::from_secs(60));

    runtime.block_on(rabbit.stop()).unwrap();
    worker.wait_status(port, "/readyz", 503, Duration::from_secs(20));
    assert_eq!(status(port, "/healthz"), 200);

    // Back on the same port: the worker reconnects by itself.
    runtime.block_on(rabbit.start_again()).unwrap();
    worker.wait_status(port, "/readyz", 200, Duration::from_secs(60));
    assert_eq!(worker.terminate(Duration::from_secs(20)), Some(0));
}

#[test]
fn scheduler_serves_probes_and_drains_on_sigterm() {
    if !servers_available() {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let redis = private_redis(&runtime);
    let port = free_port();
    let agents = tempfile::tempdir().unwrap();
    std::fs::write(
        agents.path().join("probe.yaml"),
        "name: probe\nmodel: openai:gpt-4.1-mini\n",
    )
    .unwrap();
    let base = unique("scheduler");
    let mut env = fleet_env(&redis, &base);
    // The listen address from the settings, as a pod may set it.
    env.push(("DEEPFLEET__SCHEDULER__LISTEN", format!("127.0.0.1:{port}")));
    env.push(("DEEPFLEET__SCHEDULER__GRACE_SECS", "5".to_owned()));
    // The scheduler refuses a spec whose provider has no key.
    env.push(("OPENAI_API_KEY", "sk-unused".to_owned()));
    let mut scheduler = Process::start(
        &["scheduler", "--agents", agents.path().to_str().unwrap()],
        &env,
    );
    scheduler.wait_status(port, "/readyz", 200, Duration::from_secs(60));
    assert_eq!(status(port, "/healthz"), 200);
    assert_eq!(status(port, "/ok"), 200);
    assert_eq!(scheduler.terminate(Duration::from_secs(15)), Some(0));
    delete_queues(&base);
}

#[test]
fn keygen_writes_a_private_key_file_and_refuses_to_overwrite_it() {
    use std::os::unix::fs::PermissionsExt;

    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("fleet.key");
    let run = |extra: &[&str]| {
        Command::new(bin())
            .args(["keygen", "--out"])
            .arg(&path)
            .args(extra)
            .env_remove("DEEPFLEET_CONFIG")
            .output()
            .unwrap()
    };
    assert!(run(&[]).status.success());
    let key = std::fs::read_to_string(&path).unwrap();
    assert_eq!(key.trim().len(), 44, "base64 of 32 bytes: {key:?}");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let again = run(&[]);
    assert!(!again.status.success());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), key);
    assert!(run(&["--force"]).status.success());
    assert_ne!(std::fs::read_to_string(&path).unwrap(), key);
}

#[test]
fn an_unreachable_store_fails_fast_naming_the_url_without_its_password() {
    if !servers_available() {
        return;
    }
    let key = Command::new(bin()).arg("keygen").output().unwrap();
    let base = unique("unreachable");
    let started = Instant::now();
    let out = Command::new(bin())
        .args([
            "worker",
            "--queue",
            AMQP,
            "--store",
            "redis://:hunter2@127.0.0.1:1",
        ])
        .env_remove("DEEPFLEET_CONFIG")
        .env("DEEPFLEET__QUEUE_NAME", &base)
        .env(
            "DEEPFLEET__CONTEXT_KEY",
            String::from_utf8(key.stdout).unwrap().trim(),
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    assert!(stderr.contains("redis://:***@127.0.0.1:1"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    delete_queues(&base);
}
