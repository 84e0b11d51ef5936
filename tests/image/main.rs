//! The image as the chart deploys it: `scripts/image.sh` builds it with
//! podman (from the binary under test, on a base assembled from the host:
//! no registry), the test unpacks its filesystem, renders the chart with
//! `helm/deepfleet/ci/local-values.yaml`, and starts the scheduler and a
//! worker from the image under bubblewrap with exactly the command, args,
//! environment, volumes, user and ports of the rendered Deployments. Their
//! readiness probes pass, a 50-task batch submitted through the
//! scheduler's API completes on the scripted model, readiness drops while
//! their Redis is down (liveness does not) and returns with it, and SIGTERM
//! ends both with status 0 within their termination grace periods.
//!
//! Needs RabbitMQ on 127.0.0.1:5672, `redis-server` (a private Redis is
//! started, so it can be killed), podman, bubblewrap and the chart's tools
//! venv (`scripts/helm.sh tools`, created when missing). Without them the
//! test is skipped with a note; under `CI=true` it installs podman and
//! bubblewrap when missing, and fails when anything is still missing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod chart;
mod http;
mod oci;
mod sandbox;
mod tools;
mod wait;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::servers::{PrivateRedis, RedisOptions, free_port};
use serde_json::{Value, json};

use crate::chart::{Container, Rendered};
use crate::sandbox::Pod;
use crate::tools::root;
use crate::wait::wait_for;

const AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
const TASKS: usize = 50;
/// Bounds of each wait; generous, for a debug binary on a busy machine.
const START: Duration = Duration::from_secs(120);
const BATCH: Duration = Duration::from_secs(300);
const READINESS: Duration = Duration::from_secs(60);

/// An image in podman's storage, removed when dropped.
struct Image(String);

impl Image {
    /// `scripts/image.sh --prebuilt` with the binary under test.
    fn build() -> Self {
        let image = Image(format!(
            "localhost/deepfleet-image-test:{}",
            uuid::Uuid::new_v4()
        ));
        let status = Command::new(root().join("scripts/image.sh"))
            .args([
                "--prebuilt",
                env!("CARGO_BIN_EXE_deepfleet"),
                "--tag",
                &image.0,
            ])
            .status()
            .unwrap();
        assert!(status.success(), "scripts/image.sh: {status}");
        image
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        let _ = Command::new("podman")
            .args(["rmi", "--force", &self.0])
            .output();
    }
}

/// Deletes the step and submission queues of a run when dropped, whatever
/// the test's outcome.
struct Queues(String);

impl Drop for Queues {
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Runtime::new() else {
            return;
        };
        runtime.block_on(deepfleet_testkit::fleet::delete_queues(AMQP, &self.0));
    }
}

/// Waits until `pod`'s readiness probe answers 200 (`want`) or anything
/// else (`!want`); fails at once if the process exits.
fn wait_ready(pod: &mut Pod, container: &Container, name: &str, want: bool, within: Duration) {
    let (path, port) = &container.readiness;
    let what = format!(
        "{name} {path} to be {}",
        if want { "200" } else { "not 200" }
    );
    wait_for(within, &what, || {
        pod.assert_running();
        (http::status(*port, path) == 200) == want
    });
}

fn briefing_input(i: usize) -> Value {
    json!({"messages": [{"role": "user", "content": format!("Write a briefing on topic {i}.")}]})
}

/// The output examples/briefings/script.yaml gives task `i`.
fn expected_briefing(i: usize) -> String {
    format!(
        "Briefing on topic {i}:\n@@ lines 1-3 of 3 @@\n# topic {i}\n\nSummary: topic {i} matters because it is in our batch."
    )
}

/// Submits [`TASKS`] briefings with `POST /runs/batch` with the chart's
/// generated admin key (refused without it), follows the batch until every
/// run has ended, and checks each result.
fn run_batch(scheduler: &mut Pod, port: u16, key: &str) {
    let runs: Vec<Value> = (0..TASKS)
        .map(|i| json!({"assistant_id": "briefings", "input": briefing_input(i)}))
        .collect();
    let body = serde_json::to_string(&runs).unwrap();
    let (status, answer) = http::request(port, "POST", "/runs/batch", Some(&body));
    assert_eq!(status, 401, "POST /runs/batch without a key: {answer}");
    let key = Some(key);
    let (status, answer) = http::request_as(port, key, "POST", "/runs/batch", Some(&body));
    assert_eq!(status, 200, "POST /runs/batch: {answer}");
    let created: Vec<Value> = serde_json::from_str(&answer).unwrap();
    assert_eq!(created.len(), TASKS);
    let batch = created[0]["metadata"]["batch_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let mut counts = Value::Null;
    wait_for(BATCH, "the batch to finish", || {
        scheduler.assert_running();
        let (status, body) = http::request_as(port, key, "GET", &format!("/batches/{batch}"), None);
        assert_eq!(status, 200, "GET /batches/{batch}: {body}");
        counts = serde_json::from_str::<Value>(&body).unwrap()["counts"].clone();
        let ended = ["success", "error", "interrupted"]
            .iter()
            .map(|k| counts[k].as_u64().unwrap())
            .sum::<u64>();
        ended == TASKS as u64
    });
    assert_eq!(counts["success"], TASKS, "{counts}");

    let (status, body) = http::request_as(
        port,
        key,
        "GET",
        &format!("/batches/{batch}/runs?limit={TASKS}"),
        None,
    );
    assert_eq!(status, 200, "{body}");
    let page: Value = serde_json::from_str(&body).unwrap();
    let results = page["runs"].as_array().unwrap();
    assert_eq!(results.len(), TASKS);
    for (i, run) in results.iter().enumerate() {
        assert_eq!(run["status"], "success", "{run}");
        assert_eq!(run["output"], expected_briefing(i), "{run}");
    }
}

/// The section names of the ELF file at `path`, as binutils' `readelf`
/// (which `scripts/image.sh` needs for `objcopy`) lists them.
fn sections(path: &Path) -> Vec<String> {
    let out = Command::new("readelf")
        .args(["-S", "-W"])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "readelf: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_once("] ")?.1.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The binary at `path` ships without symbols or debug info, and names
/// the file that keeps them.
fn assert_stripped(path: &Path) {
    let shipped = sections(path);
    assert!(
        shipped
            .iter()
            // `.debug_gdb_scripts` is loaded with the program (a few
            // bytes naming gdb's pretty printers), so no strip removes it.
            .all(|s| s != ".symtab" && (s == ".debug_gdb_scripts" || !s.starts_with(".debug"))),
        "the shipped binary is stripped: {shipped:?}"
    );
    assert!(shipped.iter().any(|s| s == ".gnu_debuglink"), "{shipped:?}");
}

#[test]
fn the_image_runs_the_rendered_deployments() {
    let Some(python) = tools::provide() else {
        return;
    };
    let started = Instant::now();
    let phase = |what: &str| eprintln!("[{:>5.1}s] {what}", started.elapsed().as_secs_f64());
    let work = tempfile::tempdir().unwrap();
    let image = Image::build();
    let archive = work.path().join("image.tar");
    oci::save(&image.0, &archive);
    let rootfs = work.path().join("rootfs");
    let config = oci::unpack(&archive, &work.path().join("oci"), &rootfs);
    std::fs::remove_file(&archive).unwrap();
    std::fs::remove_dir_all(work.path().join("oci")).unwrap();
    // The same final stage as the registry path of deploy/Dockerfile.
    assert_eq!(config.entrypoint, ["/usr/local/bin/deepfleet"]);
    assert_eq!(config.user, "10001:10001");
    assert_eq!(config.labels["org.opencontainers.image.title"], "deepfleet");
    assert_stripped(&rootfs.join("usr/local/bin/deepfleet"));
    phase("image built and unpacked");

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let script = Script::load(root().join("examples/briefings/script.yaml")).unwrap();
    let model = runtime
        .block_on(ScriptedServer::start(
            Arc::new(ReplayEngine::new(script)),
            Duration::ZERO,
        ))
        .unwrap();
    let mut redis = runtime
        .block_on(PrivateRedis::start(RedisOptions::default()))
        .unwrap();
    let queues = Queues(format!("image-test.{}", uuid::Uuid::new_v4()));
    let rendered = Rendered::render(
        &python,
        &[&root().join("helm/deepfleet/ci/local-values.yaml")],
        &[
            format!("config.queueName={}", queues.0),
            format!("config.providers.scripted.baseUrl={}", model.url()),
            format!("rabbitmq.url={AMQP}"),
            format!("redis.url={}", redis.url()),
            // The host's network is shared: free ports, not 2024 and 9464.
            format!("scheduler.port={}", free_port().unwrap()),
            format!("worker.metricsPort={}", free_port().unwrap()),
        ],
    );
    let scheduler_spec = rendered.deployment("-scheduler");
    let worker_spec = rendered.deployment("-worker");
    let mut scheduler = Pod::start(
        "scheduler",
        &rootfs,
        &config,
        &scheduler_spec,
        &work.path().join("scheduler"),
    );
    let mut worker = Pod::start(
        "worker",
        &rootfs,
        &config,
        &worker_spec,
        &work.path().join("worker"),
    );
    wait_ready(&mut scheduler, &scheduler_spec, "scheduler", true, START);
    wait_ready(&mut worker, &worker_spec, "worker", true, START);
    phase("scheduler and worker ready");

    // The API shares its port with the probes (`http`).
    let key = rendered.secret_value("-api-key", "api-key");
    run_batch(&mut scheduler, scheduler_spec.readiness.1, &key);
    // 4 main-agent and 3 subagent model calls per briefing.
    assert_eq!(model.requests().len(), TASKS * 7);
    phase("the batch completed");

    runtime.block_on(redis.kill()).unwrap();
    wait_ready(
        &mut scheduler,
        &scheduler_spec,
        "scheduler",
        false,
        READINESS,
    );
    wait_ready(&mut worker, &worker_spec, "worker", false, READINESS);
    // Liveness does not follow: restarting the pod would not bring Redis
    // back.
    for spec in [&scheduler_spec, &worker_spec] {
        let (path, port) = &spec.liveness;
        assert_eq!(http::status(*port, path), 200, "{path} without Redis");
    }
    phase("not ready without Redis");
    runtime.block_on(redis.start_again()).unwrap();
    wait_ready(
        &mut scheduler,
        &scheduler_spec,
        "scheduler",
        true,
        READINESS,
    );
    wait_ready(&mut worker, &worker_spec, "worker", true, READINESS);
    phase("ready again with Redis");

    for (pod, spec) in [
        (&mut scheduler, &scheduler_spec),
        (&mut worker, &worker_spec),
    ] {
        let grace = Duration::from_secs(spec.termination_grace_secs);
        assert_eq!(pod.terminate(grace), Some(0));
    }
    phase("both exited 0 on SIGTERM");
}
