//! Item 11 (issue #20): process CPU per model call, in embedded mode, on
//! the scenario with many runs in flight, beside deepagents running the
//! same runs and a bare HTTP client posting one captured request (the
//! floor: what any harness pays to send a call and read its answer).
//!
//! Each system runs in a process of its own against the scripted server
//! in this process, so the CPU counted is the harness's and not the
//! server's, read from outside ([`crate::child`]).

use std::fmt::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use deepfleet_proto::TaskLine;
use serde_json::Value;
use tokio::process::Command;

use crate::child::{Timed, timed_child};
use crate::fleet::check;
use crate::floor::{Load, loopback};
use crate::python::Python;
use crate::scenario::{CALLS_PER_RUN, scenario_task};
use crate::throughput::{Http, quiet_server};

/// One system's CPU over a batch of model calls.
pub struct CpuPerCall {
    /// Runs completed (0 for the floor).
    pub runs: usize,
    /// Model calls made.
    pub calls: usize,
    /// Process CPU time, user and system, in seconds.
    pub cpu_s: f64,
    /// Wall time, in seconds.
    pub wall_s: f64,
}

impl CpuPerCall {
    /// CPU milliseconds per model call.
    pub fn ms_per_call(&self) -> f64 {
        self.cpu_s * 1e3 / self.calls as f64
    }
}

/// The batch's shape: how many runs, how many in flight at once.
#[derive(Clone, Copy)]
pub struct Plan {
    /// Scenario runs.
    pub runs: usize,
    /// Runs in flight at once.
    pub in_flight: usize,
}

/// deepfleet: `deepfleet run` on the scenario's tasks, `in_flight` runs
/// (and steps) at once, the default agent on the scripted model.
pub async fn deepfleet(binary: &Path, work_dir: &Path, plan: Plan) -> anyhow::Result<CpuPerCall> {
    let (url, server) = quiet_server(Duration::ZERO).await?;
    // Absolute, as the process runs in `dir`.
    let dir = std::path::absolute(work_dir.join("cpu"))?;
    std::fs::create_dir_all(&dir)?;
    let tasks: Vec<TaskLine> = (0..plan.runs).map(scenario_task).collect();
    let mut lines = String::new();
    for task in &tasks {
        lines.push_str(&serde_json::to_string(task)?);
        lines.push('\n');
    }
    let tasks_path = dir.join("tasks.jsonl");
    let agent_path = dir.join("agent.yaml");
    let out_path = dir.join("results.jsonl");
    std::fs::write(&tasks_path, lines)?;
    std::fs::write(
        &agent_path,
        "name: bench-cpu\nmodel: 'openai:scripted-model'\nlimits: {max_steps: 50}\n",
    )?;
    let in_flight = plan.in_flight.to_string();
    let binary = std::fs::canonicalize(binary)
        .with_context(|| format!("no deepfleet binary at {}", binary.display()))?;
    let mut command = Command::new(binary);
    command
        .arg("run")
        .arg(&tasks_path)
        .arg("--agent")
        .arg(&agent_path)
        .args(["--concurrency", &in_flight, "--window", &in_flight])
        .arg("--out")
        .arg(&out_path)
        .arg("--fresh")
        .env("OPENAI_BASE_URL", &url)
        .env("OPENAI_API_KEY", deepfleet_testkit::fleet::API_KEY)
        .env("RUST_LOG", "error")
        .current_dir(&dir);
    let measured = timed_child(command, Duration::from_secs(600)).await;
    server.abort();
    let Timed { cpu_s, wall_s, .. } = measured?;
    let results = std::fs::read_to_string(&out_path)
        .with_context(|| format!("reading {}", out_path.display()))?;
    let results: Vec<deepfleet_proto::ResultLine> = results
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .context("reading a result line")?;
    if results.len() != plan.runs {
        bail!("{} results for {} runs", results.len(), plan.runs);
    }
    check(&results)?;
    Ok(CpuPerCall {
        runs: plan.runs,
        calls: plan.runs * CALLS_PER_RUN,
        cpu_s,
        wall_s,
    })
}

/// deepagents: the same runs with asyncio, `in_flight` at once
/// (`bench/deepagents_overhead.py cpu`). The script counts its CPU over
/// the runs only, leaving out the interpreter's start and imports (a few
/// seconds), which deepfleet's process total includes.
pub async fn deepagents(python: &Python, plan: Plan) -> anyhow::Result<CpuPerCall> {
    let (url, server) = quiet_server(Duration::ZERO).await?;
    let in_flight = plan.in_flight.to_string();
    let report = python
        .run_with(
            "cpu",
            &url,
            plan.runs,
            &["--in-flight", &in_flight],
            Duration::from_secs(1800),
        )
        .await;
    server.abort();
    let report = report?;
    if report.ok != report.runs {
        bail!(
            "deepagents finished {} of {} runs as scripted ({:?})",
            report.ok,
            report.runs,
            report.errors
        );
    }
    Ok(CpuPerCall {
        runs: report.runs,
        calls: report.runs * CALLS_PER_RUN,
        cpu_s: report.cpu_s.context("the cpu report has no cpu_s")?,
        wall_s: report.wall_s,
    })
}

/// The floor: `loopback-client` posting `body` (a mid-run request of the
/// scenario) `calls` times, `in_flight` at once, reading each answer.
pub async fn floor(
    client: &Path,
    work_dir: &Path,
    body: &Value,
    calls: usize,
    in_flight: usize,
) -> anyhow::Result<CpuPerCall> {
    let load = Load {
        calls,
        in_flight,
        latency: Duration::ZERO,
        http: Http::One,
    };
    let run = loopback(client, work_dir, body, load).await?;
    Ok(CpuPerCall {
        runs: 0,
        calls,
        cpu_s: run.cpu_s,
        wall_s: run.wall_s,
    })
}

/// Item 11 as measured: each system's figure, or why it is missing.
pub struct Measured {
    /// The batch's shape.
    pub plan: Plan,
    /// deepfleet embedded.
    pub deepfleet: Result<CpuPerCall, String>,
    /// deepagents (absent without a venv: the note says why).
    pub deepagents: Result<CpuPerCall, String>,
    /// The bare client.
    pub floor: Result<CpuPerCall, String>,
}

impl Measured {
    /// deepagents' CPU per call ÷ deepfleet's.
    pub fn ratio(&self) -> Option<f64> {
        let ours = self.deepfleet.as_ref().ok()?.ms_per_call();
        let theirs = self.deepagents.as_ref().ok()?.ms_per_call();
        Some(theirs / ours)
    }
}

fn row(out: &mut String, name: &str, measured: &Result<CpuPerCall, String>) {
    match measured {
        Ok(m) => {
            let runs = if m.runs == 0 {
                "–".to_owned()
            } else {
                m.runs.to_string()
            };
            let _ = writeln!(
                out,
                "| {name} | {runs} | {} | {:.2} | {:.2} | {:.3} |",
                m.calls,
                m.cpu_s,
                m.wall_s,
                m.ms_per_call()
            );
        }
        Err(e) => {
            let _ = writeln!(out, "| {name} | {e} | | | | |");
        }
    }
}

/// The section of BENCHMARKS.md.
pub fn render(out: &mut String, section: &Result<Measured, String>) {
    let _ = writeln!(out, "## 11. CPU per model call, embedded (issue #20)\n");
    let m = match section {
        Ok(m) => m,
        Err(e) => {
            let _ = writeln!(out, "Failed: {e}\n");
            return;
        }
    };
    let _ = writeln!(
        out,
        "{} scenario runs ({} model calls each), {} in flight, model latency 0; each system in a process of its own \
         against the scripted server in the bench's process, its CPU (user + system) read from outside \
         (`getrusage` of the reaped child). deepfleet's figure is its whole process (start-up, spec checks \
         and tokenizer tables included); deepagents' counts only the runs (`time.process_time()` around them, \
         leaving out the interpreter's start and imports). The floor is a bare HTTP client (`loopback-client`) \
         posting one captured mid-run request of the scenario as many times, as many at once, and parsing each \
         answer: the per-call work no harness avoids.\n",
        m.plan.runs, CALLS_PER_RUN, m.plan.in_flight
    );
    let _ = writeln!(
        out,
        "| system | runs | model calls | CPU (s) | wall (s) | CPU per call (ms) |\n|---|---:|---:|---:|---:|---:|"
    );
    row(out, "deepfleet, embedded (`deepfleet run`)", &m.deepfleet);
    row(out, "deepagents 0.7 (Python, asyncio)", &m.deepagents);
    row(out, "floor: a bare HTTP client, no harness", &m.floor);
    if let Some(ratio) = m.ratio() {
        let _ = writeln!(
            out,
            "\nCPU per call, deepagents ÷ deepfleet: **{ratio:.0}×**."
        );
    }
    out.push('\n');
}
