//! Runs `bench/deepagents_overhead.py` in the bench's venv and reads its
//! JSON report.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use serde::Deserialize;
use tokio::process::Command;

/// The interpreter of a venv with deepagents, and the driver script.
pub struct Python {
    /// `target/bench-venv/bin/python`.
    pub interpreter: PathBuf,
    /// `bench/deepagents_overhead.py`.
    pub script: PathBuf,
}

/// What the script prints.
#[derive(Debug, Deserialize)]
pub struct PythonReport {
    /// Runs started.
    pub runs: usize,
    /// Runs that ended as scripted.
    pub ok: usize,
    /// Wall time of all runs, in seconds.
    pub wall_s: f64,
    /// CPU time of the process while the runs ran, in seconds (cpu mode).
    #[serde(default)]
    pub cpu_s: Option<f64>,
    /// Peak resident memory (`VmHWM`) of the process, KiB.
    pub peak_rss_kib: u64,
    /// Exception types of failed runs (concurrency mode).
    #[serde(default)]
    pub errors: Vec<String>,
    /// Package versions.
    pub versions: BTreeMap<String, String>,
    /// The interpreter's version.
    pub python: String,
}

impl Python {
    /// Runs the script in `mode` for `runs` runs against `base_url`,
    /// killing it after `limit`.
    pub async fn run(
        &self,
        mode: &str,
        base_url: &str,
        runs: usize,
        limit: Duration,
    ) -> anyhow::Result<PythonReport> {
        self.run_with(mode, base_url, runs, &[], limit).await
    }

    /// [`Python::run`] with more arguments for the script.
    pub async fn run_with(
        &self,
        mode: &str,
        base_url: &str,
        runs: usize,
        extra: &[&str],
        limit: Duration,
    ) -> anyhow::Result<PythonReport> {
        let child = Command::new(&self.interpreter)
            .arg(&self.script)
            .arg(mode)
            .args(["--base-url", base_url, "--runs", &runs.to_string()])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", self.interpreter.display()))?;
        let output = tokio::time::timeout(limit, child.wait_with_output())
            .await
            .with_context(|| format!("deepagents {mode} ({runs} runs) ran past {limit:?}"))??;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let lines: Vec<&str> = stderr.lines().collect();
            let tail = lines[lines.len().saturating_sub(15)..].join("\n");
            bail!("deepagents {mode} exited with {}: {tail}", output.status);
        }
        serde_json::from_slice(&output.stdout).context("reading the deepagents report")
    }
}
