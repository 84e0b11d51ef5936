//! A measured child process: run to its end, its CPU and wall time.
//!
//! A child's CPU is read from `getrusage(RUSAGE_CHILDREN)` around its
//! life: the kernel adds a child's user and system time there when it is
//! reaped, and the bench reaps one child at a time.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::sys::resource::{UsageWho, getrusage};
use tokio::process::Command;

/// CPU seconds, user and system, of every reaped child so far.
fn children_cpu() -> anyhow::Result<f64> {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).context("getrusage")?;
    let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
    Ok(seconds(usage.user_time()) + seconds(usage.system_time()))
}

/// A measured process that ran to its end.
pub struct Timed {
    /// Its CPU seconds, user and system.
    pub cpu_s: f64,
    /// Seconds from its start to its end.
    pub wall_s: f64,
    /// What it printed.
    pub stdout: Vec<u8>,
}

/// Runs `command` to its end within `limit`; its CPU and wall time.
pub async fn timed_child(mut command: Command, limit: Duration) -> anyhow::Result<Timed> {
    let before = children_cpu()?;
    let started = Instant::now();
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting the measured process")?;
    let output = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .with_context(|| format!("the measured process ran past {limit:?}"))??;
    let wall = started.elapsed().as_secs_f64();
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        bail!(
            "the measured process exited with {}: {}",
            output.status,
            lines[lines.len().saturating_sub(15)..].join("\n")
        );
    }
    Ok(Timed {
        cpu_s: children_cpu()? - before,
        wall_s: wall,
        stdout: output.stdout,
    })
}
