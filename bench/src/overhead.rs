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

use crate::fleet::{Fleet, check};
use crate::python::{Python, PythonReport};
use crate::scenario::{Intervals, engine, intervals, scenario_task, spec};

/// How many runs to time, after how many warm-up runs.
#[derive(Clone, Copy)]
pub struct Passes {
    /// Runs whose intervals count.
    pub runs: usize,
    /// Runs before them that warm caches, connections and allocators.
    pub warmup: usize,
}

const RUN_LIMIT: Duration = Duration::from_secs(60);

async fn one_at_a_time(fleet: &Fleet, passes: Passes) -> anyhow::Result<()> {
    let spec = spec("bench-overhead")?;
    for n in 0..passes.warmup + passes.runs {
        check(&fleet.run(&spec, &[scenario_task(n)], RUN_LIMIT).await?)?;
    }
    Ok(())
}

/// deepfleet embedded: one process, in-memory queue and store.
pub async fn embedded(passes: Passes) -> anyhow::Result<Intervals> {
    let server = ScriptedServer::start(Arc::new(engine()?), Duration::ZERO).await?;
    let fleet = Fleet::embedded(&server.url(), 32)?;
    let ran = one_at_a_time(&fleet, passes).await;
    fleet.shutdown().await;
    ran?;
    Ok(intervals(&server.timed_requests(), passes.warmup))
}

/// deepfleet distributed: two worker processes on RabbitMQ and Redis.
pub async fn distributed(binary: &Path, passes: Passes) -> anyhow::Result<Intervals> {
    let server = ScriptedServer::start(Arc::new(engine()?), Duration::ZERO).await?;
    let mut fleet = Fleet::distributed().await?;
    let ran = async {
        fleet.spawn_workers(binary, 2, 32, &server.url())?;
        one_at_a_time(&fleet, passes).await
    }
    .await;
    fleet.shutdown().await;
    ran?;
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
