//! The loopback floor: `loopback-client` alone against the scripted
//! server the items use, posting a captured mid-run request, so each
//! figure has beside it what the bare HTTP work costs on this machine
//! (item 11's CPU per call, item 3's calls per second, item 4's memory
//! with as many calls in flight).

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use tokio::process::Command;

use crate::child::{Timed, timed_child};
use crate::throughput::{Http, quiet_server};

/// What the bare client does.
#[derive(Clone, Copy)]
pub struct Load {
    /// Calls in all.
    pub calls: usize,
    /// Calls at once.
    pub in_flight: usize,
    /// The server's latency per answer.
    pub latency: Duration,
    /// HTTP/1.1 or HTTP/2.
    pub http: Http,
}

/// The bare client's run.
pub struct Loopback {
    /// The load it ran.
    pub load: Load,
    /// Its CPU seconds.
    pub cpu_s: f64,
    /// Seconds from its start to its last answer.
    pub wall_s: f64,
    /// Its peak resident memory, bytes.
    pub peak_rss: u64,
}

impl Loopback {
    /// Calls answered per second.
    pub fn calls_per_s(&self) -> f64 {
        self.load.calls as f64 / self.wall_s
    }
}

/// Runs `client` with `load` against a fresh scripted server, posting
/// `body` (written under `work_dir`).
pub async fn loopback(
    client: &Path,
    work_dir: &Path,
    body: &Value,
    load: Load,
) -> anyhow::Result<Loopback> {
    let (url, server) = quiet_server(load.latency).await?;
    let body_path = work_dir.join("floor-request.json");
    std::fs::write(&body_path, serde_json::to_vec(body)?)?;
    let mut command = Command::new(client);
    command
        .arg("--url")
        .arg(format!("{url}/chat/completions"))
        .arg("--body")
        .arg(&body_path)
        .args(["--calls", &load.calls.to_string()])
        .args(["--in-flight", &load.in_flight.to_string()]);
    if let Http::Two = load.http {
        command.arg("--http2");
    }
    let measured = timed_child(command, Duration::from_secs(600)).await;
    server.abort();
    let Timed {
        cpu_s,
        wall_s,
        stdout,
    } = measured?;
    let stdout = String::from_utf8_lossy(&stdout);
    let kib: u64 = stdout
        .lines()
        .find_map(|line| line.strip_prefix("peak_rss_kib "))
        .context("loopback-client printed no peak_rss_kib line")?
        .trim()
        .parse()?;
    Ok(Loopback {
        load,
        cpu_s,
        wall_s,
        peak_rss: kib * 1024,
    })
}
