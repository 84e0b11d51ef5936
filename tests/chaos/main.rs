//! Chaos: a distributed batch whose agents delegate to subagents runs
//! through SIGKILLed workers, a RabbitMQ restart, a Redis restart and a
//! worker frozen past the broker's consumer timeout, and loses nothing
//! and repeats nothing.
//!
//! The test starts a RabbitMQ node and a Redis (append-only file on) of
//! its own on free ports, so the shared services are untouched. It first
//! runs the batch fault-free, embedded, for the reference; then on the
//! private servers with worker processes while the faults strike (see
//! `faults.rs`). Then every run must be complete, every result line
//! equal to the reference's, no step committed twice and no run created
//! twice (`audit.rs`), nothing dead-lettered, and no worker process gone
//! by itself.
//!
//! The model is the testkit's scripted server, answering after a latency
//! as a provider does, so steps take time and the faults land on work in
//! flight (the reference run's server answers at once).
//!
//! Knobs (environment): `CHAOS_RUNS` (top-level runs, default 200; `make
//! chaos` runs 1,000), `CHAOS_WORKERS` (worker processes, default 3),
//! `CHAOS_CONCURRENCY` (steps per worker, default 8),
//! `CHAOS_MODEL_LATENCY_MS` (default 500), `CHAOS_KILL_EVERY_MS` (mean
//! interval between kills, default 2000), `CHAOS_SEED` (default random;
//! printed), `CHAOS_LOG` (workers' `RUST_LOG`, default `error`).
//!
//! Needs `rabbitmq-server` and `redis-server` installed; without them the
//! test is skipped with a note, and fails under `CI=true`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod audit;
mod batch;
mod faults;
mod verdict;

use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::{AgentSpec, ResultLine, ResultStatus, TaskLine};
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::fleet::services::in_ci;
use deepfleet_testkit::fleet::{FleetBuilder, task};
use deepfleet_testkit::script::{Call, ScriptBuilder, When, write_task};
use deepfleet_testkit::servers::{PrivateRabbit, PrivateRedis, RabbitOptions, RedisOptions};
use tokio::time::Instant;

use crate::faults::Faults;
use crate::verdict::Verdict;

/// The broker's consumer timeout: a worker frozen longer has its channel
/// closed and its deliveries handed to others.
const CONSUMER_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the faulty batch may take.
const BATCH_LIMIT: Duration = Duration::from_secs(1800);

/// The test's settings, from the environment.
struct Knobs {
    runs: usize,
    workers: usize,
    concurrency: u16,
    latency: Duration,
    kill_every: Duration,
    seed: u64,
    log: String,
}

impl Knobs {
    fn from_env() -> Knobs {
        let number = |name: &str, default: u64| {
            std::env::var(name)
                .ok()
                .map(|v| {
                    v.parse::<u64>()
                        .unwrap_or_else(|_| panic!("{name}={v}: not a number"))
                })
                .unwrap_or(default)
        };
        Knobs {
            runs: usize::try_from(number("CHAOS_RUNS", 200)).unwrap(),
            workers: usize::try_from(number("CHAOS_WORKERS", 3)).unwrap(),
            concurrency: u16::try_from(number("CHAOS_CONCURRENCY", 8)).unwrap(),
            latency: Duration::from_millis(number("CHAOS_MODEL_LATENCY_MS", 500)),
            kill_every: Duration::from_millis(number("CHAOS_KILL_EVERY_MS", 2000)),
            seed: number("CHAOS_SEED", rand::random()),
            log: std::env::var("CHAOS_LOG").unwrap_or_else(|_| "error".to_owned()),
        }
    }
}

/// Whether both servers are installed; under CI their absence fails.
fn servers_installed() -> bool {
    let rabbit = PrivateRabbit::script().is_some();
    let redis = PrivateRedis::installed();
    if rabbit && redis {
        return true;
    }
    let what = format!("rabbitmq-server installed: {rabbit}, redis-server installed: {redis}");
    assert!(!in_ci(), "{what} (both required under CI=true)");
    eprintln!("skipping: {what}");
    false
}

/// A parent that splits its task between two writing subagents, then
/// reads back what the second wrote and answers with it.
fn script() -> Script {
    let split = When::input(r"^Split (?P<n>\d+)$");
    let script = ScriptBuilder::new()
        .call(
            split.clone().turn(0),
            [
                Call::task(&write_task("alpha{{n}}", "/a.txt")),
                Call::task(&write_task("beta{{n}}", "/b.txt")),
            ],
        )
        .call(split.clone().turn(1), [Call::read_file("/b.txt")])
        .answer(split.turn(2), "{{last_tool}}")
        .writing_subagents()
        .build();
    Script::from_yaml(&script).unwrap()
}

/// The scripted model, answering after `latency` as a provider would.
async fn model(latency: Duration) -> ScriptedServer {
    ScriptedServer::start(Arc::new(ReplayEngine::new(script())), latency)
        .await
        .unwrap()
}

fn tasks(n: usize) -> Vec<TaskLine> {
    (0..n)
        .map(|i| task(&format!("t{i}"), &format!("Split {i}")))
        .collect()
}

/// The batch fault-free, embedded, on a model that answers at once: the
/// lines every faulty run must reproduce, and how long it took.
async fn reference(spec: &AgentSpec, tasks: &[TaskLine]) -> (Vec<ResultLine>, Duration) {
    let started = Instant::now();
    let instant = model(Duration::ZERO).await;
    let mut reference = FleetBuilder::new()
        .model_url(Some(instant.url()))
        .embedded()
        .unwrap();
    let expected = reference.run(spec, tasks).await.unwrap();
    reference.shutdown().await.unwrap();
    assert!(
        expected.iter().all(|r| r.status == ResultStatus::Success),
        "the fault-free reference failed: {:?}",
        expected.iter().find(|r| r.status != ResultStatus::Success)
    );
    (expected, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegating_batch_loses_and_repeats_nothing_through_faults() {
    if !servers_installed() {
        return;
    }
    let knobs = Knobs::from_env();
    eprintln!(
        "chaos: {} runs, {} workers of {} steps at once, model latency {:?}, a kill every {:?} on average, seed {}",
        knobs.runs, knobs.workers, knobs.concurrency, knobs.latency, knobs.kill_every, knobs.seed
    );
    let spec = AgentSpec::from_yaml("name: chaos\nmodel: openai:scripted\n").unwrap();
    let tasks = tasks(knobs.runs);
    let (expected, reference_took) = reference(&spec, &tasks).await;

    let mut rabbit = PrivateRabbit::start(RabbitOptions {
        consumer_timeout: Some(CONSUMER_TIMEOUT),
    })
    .await
    .unwrap();
    let mut redis = PrivateRedis::start(RedisOptions { aof: true })
        .await
        .unwrap();
    let redis_url = redis.url();
    let slow = model(knobs.latency).await;
    let mut fleet = FleetBuilder::new()
        .binary(env!("CARGO_BIN_EXE_deepfleet"))
        .servers(&rabbit.url(), &redis_url)
        .model_url(Some(slow.url()))
        .concurrency(knobs.concurrency)
        .log_level(&knobs.log)
        .distributed(knobs.workers)
        .await
        .unwrap();
    let started = Instant::now();
    let mut faults = Faults::new(
        &mut rabbit,
        &mut redis,
        knobs.seed,
        knobs.kill_every,
        CONSUMER_TIMEOUT,
    );
    let outcome = batch::run(&mut fleet, &mut faults, &spec, &tasks, BATCH_LIMIT).await;
    let took = started.elapsed();
    let figures = faults.figures.clone();
    let outcome = outcome.unwrap();
    let verdict = Verdict {
        expected,
        results: outcome.results,
        audit: audit::audit(&*fleet.store, &redis_url, &fleet.prefix)
            .await
            .unwrap(),
        dead: {
            faults::answers(&fleet).await.unwrap();
            fleet.drain_dead_letters(10_000).await.unwrap()
        },
        timed_out: rabbit.log().contains("delivery acknowledgement on channel"),
        figures,
        poll_errors: outcome.poll_errors,
        took,
        reference_took,
        seed: knobs.seed,
    };
    eprintln!("{}", verdict.figures_line());
    verdict.assert_clean();
    fleet.shutdown().await.unwrap();
}
