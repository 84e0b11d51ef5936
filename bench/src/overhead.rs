//! Items 1 and 2: framework time per step at zero model latency, for
//! deepfleet embedded, deepfleet distributed (RabbitMQ + Redis, two
//! worker processes) and deepagents in Python, all against one scripted
//! server whose request arrival times give the intervals.
//!
//! Runs go one at a time, as the reference measured deepagents: an
//! interval then holds one step's work and nothing else.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use deepfleet_testkit::ScriptedServer;

use deepfleet_testkit::fleet::Fleet;

use crate::fleet::{builder, check};
use crate::python::{Python, PythonReport};
use crate::scenario::{Intervals, engine, gaps, intervals, sample_request, scenario_task, spec};
use serde_json::Value;

/// How many runs to time, after how many warm-up runs.
#[derive(Clone, Copy)]
pub struct Passes {
    /// Runs whose intervals count.
    pub runs: usize,
    /// Runs before them that warm caches, connections and allocators.
    pub warmup: usize,
}

const RUN_LIMIT: Duration = Duration::from_secs(60);

async fn one_at_a_time(fleet: &mut Fleet, passes: Passes) -> anyhow::Result<()> {
    let spec = spec("bench-overhead")?;
    for n in 0..passes.warmup + passes.runs {
        check(&fleet.run(&spec, &[scenario_task(n)]).await?)?;
    }
    Ok(())
}

/// deepfleet embedded: one process, in-memory queue and store. Also
/// returns a mid-run request body for [`transport_floor`].
pub async fn embedded(passes: Passes) -> anyhow::Result<(Intervals, Option<Value>)> {
    let server = ScriptedServer::start(Arc::new(engine()?), Duration::ZERO).await?;
    let mut fleet = builder(&server.url(), 32, RUN_LIMIT).embedded()?;
    let ran = one_at_a_time(&mut fleet, passes).await;
    let stopped = fleet.shutdown().await;
    ran?;
    stopped?;
    let log = server.timed_requests();
    Ok((
        intervals(&log, passes.warmup),
        sample_request(&log, passes.warmup),
    ))
}

/// The part of every interval that is neither harness: the scripted
/// server and loopback HTTP. A bare client posts `body` (already
/// serialized) `calls` times back to back; the gaps between arrivals at
/// the server are that floor, in milliseconds.
pub async fn transport_floor(body: &Value, calls: usize) -> anyhow::Result<Vec<f64>> {
    let server = ScriptedServer::start(Arc::new(engine()?), Duration::ZERO).await?;
    let client = reqwest::Client::new();
    let bytes = serde_json::to_vec(body)?;
    let url = format!("{}/chat/completions", server.url());
    for _ in 0..calls {
        client
            .post(&url)
            .header("content-type", "application/json")
            .body(bytes.clone())
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await?;
    }
    let log = server.timed_requests();
    // The first gaps include connecting; leave a tenth out as warm-up.
    Ok(gaps(&log[log.len() / 10..]))
}

/// deepfleet distributed: two worker processes on RabbitMQ and Redis.
pub async fn distributed(binary: &Path, passes: Passes) -> anyhow::Result<Intervals> {
    let server = ScriptedServer::start(Arc::new(engine()?), Duration::ZERO).await?;
    let mut fleet = builder(&server.url(), 32, RUN_LIMIT)
        .binary(binary)
        .distributed(2)
        .await?;
    let ran = one_at_a_time(&mut fleet, passes).await;
    let stopped = fleet.shutdown().await;
    ran?;
    stopped?;
    Ok(intervals(&server.timed_requests(), passes.warmup))
}

/// deepagents: the same scenario from `bench/deepagents_overhead.py`.
pub async fn deepagents(
    python: &Python,
    passes: Passes,
) -> anyhow::Result<(Intervals, PythonReport)> {
    let server = ScriptedServer::start(Arc::new(engine()?), Duration::ZERO).await?;
    let report = python
        .run(
            "overhead",
            &server.url(),
            passes.warmup + passes.runs,
            Duration::from_secs(600),
        )
        .await?;
    if report.ok != report.runs {
        anyhow::bail!(
            "deepagents finished {} of {} scenario runs correctly",
            report.ok,
            report.runs
        );
    }
    Ok((intervals(&server.timed_requests(), passes.warmup), report))
}
