//! Items 3 and 4: completed runs per second through RabbitMQ and Redis
//! at zero model latency, and many runs in flight on one worker while a
//! slow model does the waiting.
//!
//! Runs are submitted before the workers start, so the clock covers the
//! workers' work only (plus their start-up, a few milliseconds).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use deepfleet_proto::TaskLine;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::fleet::{builder, check, peak_rss};
use crate::python::Python;
use crate::scenario::{QUICK_CALLS, engine, quick_task, scenario_task, spec};

/// One throughput measurement.
pub struct Throughput {
    /// Worker processes.
    pub workers: usize,
    /// Runs completed.
    pub runs: usize,
    /// Model calls (steps) those runs made.
    pub steps: usize,
    /// Seconds from the workers' start to the last result.
    pub wall_s: f64,
}

impl Throughput {
    /// Completed runs per second.
    pub fn runs_per_s(&self) -> f64 {
        self.runs as f64 / self.wall_s
    }

    /// Steps per second.
    pub fn steps_per_s(&self) -> f64 {
        self.steps as f64 / self.wall_s
    }
}

/// One concurrency measurement: `runs` short runs started at once.
pub struct Concurrency {
    /// Runs in flight.
    pub runs: usize,
    /// Seconds until the last one finished.
    pub wall_s: f64,
    /// Peak resident memory of the process that ran them, bytes.
    pub peak_rss: u64,
    /// Runs that ended as scripted.
    pub ok: usize,
    /// What the failed ones raised (exception types).
    pub errors: Vec<String>,
}

/// A scripted server without a request log (which would grow with every
/// call), answering after `latency`.
pub async fn quiet_server(latency: Duration) -> anyhow::Result<(String, JoinHandle<()>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    let engine = Arc::new(engine()?);
    let task = tokio::spawn(deepfleet_testkit::serve(engine, latency, None, listener));
    Ok((url, task))
}

/// How a client (a worker, or the floor's bare client) reaches the
/// scripted server.
#[derive(Clone, Copy)]
pub enum Http {
    /// HTTP/1.1: a connection per call in flight, kept alive between calls.
    One,
    /// HTTP/2 by prior knowledge: every call on one connection, as calls
    /// to an `https` provider that offers HTTP/2 are.
    Two,
}

/// Submits `tasks`, then starts `workers` processes with `concurrency`
/// each, and waits for all runs; returns the wall time from the
/// workers' start and their peak RSS (the largest of them).
async fn run_on_workers(
    binary: &Path,
    url: &str,
    tasks: &[TaskLine],
    (workers, concurrency): (usize, u16),
    http: Http,
    limit: Duration,
) -> anyhow::Result<(f64, u64)> {
    let fleet = builder(url, concurrency, limit).binary(binary);
    let fleet = match http {
        Http::One => fleet,
        Http::Two => fleet.model_http2(),
    };
    let mut fleet = fleet.distributed(0).await?;
    let ran = async {
        let (follower, _) = fleet.submit(&spec("bench-fleet")?, tasks).await?;
        let started = tokio::time::Instant::now();
        fleet.spawn_workers(workers)?;
        let results = fleet.follow(follower).await?;
        let wall = started.elapsed().as_secs_f64();
        check(&results)?;
        let mut rss = 0;
        for pid in fleet.worker_pids() {
            rss = rss.max(peak_rss(pid)?);
        }
        Ok::<_, anyhow::Error>((wall, rss))
    }
    .await;
    let stopped = fleet.shutdown().await;
    let measured = ran?;
    stopped?;
    Ok(measured)
}

/// Steps each worker of item 3 runs at once.
pub const FLEET_CONCURRENCY: u16 = 256;

/// Item 3: `runs` scenario runs with 1 and with 2 worker processes.
pub async fn throughput(binary: &Path, runs: usize) -> anyhow::Result<Vec<Throughput>> {
    let (url, server) = quiet_server(Duration::ZERO).await?;
    let tasks: Vec<TaskLine> = (0..runs).map(scenario_task).collect();
    let mut out = Vec::new();
    for workers in [1, 2] {
        let measured = run_on_workers(
            binary,
            &url,
            &tasks,
            (workers, FLEET_CONCURRENCY),
            Http::One,
            Duration::from_secs(300),
        )
        .await;
        let (wall_s, _) = measured.with_context(|| format!("throughput, {workers} workers"))?;
        out.push(Throughput {
            workers,
            runs,
            steps: runs * crate::scenario::CALLS_PER_RUN,
            wall_s,
        });
    }
    server.abort();
    Ok(out)
}

/// Item 4, deepfleet: each of `levels` short runs in flight at once on
/// one worker process, the model answering after `latency`.
pub async fn deepfleet_concurrency(
    binary: &Path,
    levels: &[usize],
    latency: Duration,
) -> anyhow::Result<Vec<Concurrency>> {
    let (url, server) = quiet_server(latency).await?;
    let mut out = Vec::new();
    for &runs in levels {
        let tasks: Vec<TaskLine> = (0..runs).map(quick_task).collect();
        let concurrency = u16::try_from(runs).context("at most 65,535 runs in flight")?;
        let (wall_s, peak_rss) = run_on_workers(
            binary,
            &url,
            &tasks,
            (1, concurrency),
            Http::Two,
            Duration::from_secs(300),
        )
        .await
        .with_context(|| format!("{runs} concurrent runs"))?;
        out.push(Concurrency {
            runs,
            wall_s,
            peak_rss,
            ok: runs,
            errors: Vec::new(),
        });
    }
    server.abort();
    Ok(out)
}

/// Item 4, deepagents: asyncio at growing levels, stopping after the
/// first level whose wall time passes `give_up` times the model-bound
/// ideal (the process is then CPU-bound: more runs only queue) or where
/// runs fail.
pub async fn deepagents_concurrency(
    python: &Python,
    levels: &[usize],
    latency: Duration,
    give_up: f64,
) -> anyhow::Result<Vec<Concurrency>> {
    let (url, server) = quiet_server(latency).await?;
    let ideal = latency.as_secs_f64() * QUICK_CALLS as f64;
    let mut out = Vec::new();
    for &runs in levels {
        let report = python
            .run("concurrency", &url, runs, Duration::from_secs(300))
            .await?;
        let point = Concurrency {
            runs,
            wall_s: report.wall_s,
            peak_rss: report.peak_rss_kib * 1024,
            ok: report.ok,
            errors: report.errors,
        };
        let stop = point.ok < runs || point.wall_s > give_up * ideal;
        out.push(point);
        if stop {
            break;
        }
    }
    server.abort();
    Ok(out)
}
