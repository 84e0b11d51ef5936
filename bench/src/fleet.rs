//! The benchmarks' fleets: the testkit's harness
//! (`deepfleet_testkit::fleet`) with the settings a measurement needs,
//! and what the bench checks of their results.

use std::time::Duration;

use anyhow::{Context, bail};
use deepfleet_proto::ResultLine;
use deepfleet_testkit::fleet::FleetBuilder;

/// How often result lines are polled: often enough that one-at-a-time
/// runs start without delay.
const POLL_EVERY: Duration = Duration::from_millis(2);
/// Model calls may queue behind many others on a saturated fleet.
const MODEL_TIMEOUT: Duration = Duration::from_secs(120);

/// A fleet running `concurrency` steps at once per worker against the
/// scripted server at `base_url`, each batch given `limit`; worker
/// processes (distributed mode) log errors only.
pub fn builder(base_url: &str, concurrency: u16, limit: Duration) -> FleetBuilder {
    FleetBuilder::new()
        .concurrency(concurrency)
        .model_url(Some(base_url.to_owned()))
        .model_timeout(MODEL_TIMEOUT)
        .log_level("error")
        .poll_every(POLL_EVERY)
        .run_limit(limit)
}

/// Fails unless every result is a success with the scenario's answer.
pub fn check(results: &[ResultLine]) -> anyhow::Result<()> {
    for line in results {
        if !crate::scenario::output_ok(&line.id, &line.output) {
            bail!(
                "run {} ended {:?} with {:?} ({:?})",
                line.id,
                line.status,
                line.output,
                line.error
            );
        }
    }
    Ok(())
}

/// Peak resident memory of a process (`VmHWM`), in bytes.
pub fn peak_rss(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .context("no VmHWM line")?;
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .context("an empty VmHWM line")?
        .parse()?;
    Ok(kib * 1024)
}
