//! Item 7 (issue #15): the Redis memory a finished run holds, right after
//! it ended and once its retention has passed.
//!
//! A thousand scenario runs (each with a subagent) run through RabbitMQ
//! and Redis with a short retention; the keys under the fleet's prefix
//! are summed with `MEMORY USAGE` (and the server's `used_memory` is
//! read) after the last run ended, then again once every run's expiry
//! has passed. The agent spec, registered once for all runs, and the rate
//! limiter's state, the fleet's rather than a run's (it expires an hour
//! after the account's last call), are left out of both counts.

use std::fmt::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use deepfleet_proto::TaskLine;
use deepfleet_scheduler::{BatchFollower, RetentionPolicy, submit_task};
use deepfleet_testkit::fleet::{Fleet, REDIS_URL};

use crate::fleet::{builder, check};
use crate::scenario::{scenario_task, spec};
use crate::throughput::quiet_server;

/// How many of the keys held are named in [`Held::sample`].
const SAMPLE: usize = 5;

/// What the runs held, before and after their expiry.
pub struct Memory {
    /// Runs measured.
    pub runs: usize,
    /// Their retention.
    pub retention: Duration,
    /// Keys and their bytes right after the last run ended.
    pub before: Held,
    /// The same once the retention has passed.
    pub after: Held,
    /// Seconds from the last run's end until no key was left.
    pub gone_after_s: f64,
}

/// What is held under the prefix at one moment.
pub struct Held {
    /// Keys (the spec's aside).
    pub keys: usize,
    /// The first few of them, with their time to live (`-1`: none), to
    /// name a key that outlives its retention.
    pub sample: Vec<(String, i64)>,
    /// Their `MEMORY USAGE`, summed.
    pub bytes: u64,
    /// The server's `used_memory` over its value before the runs.
    pub used_memory: i64,
}

/// Runs `runs` scenario runs that expire `retention` after they end.
pub async fn memory_per_run(
    binary: &Path,
    runs: usize,
    retention: Duration,
) -> anyhow::Result<Memory> {
    let (url, server) = quiet_server(Duration::ZERO).await?;
    let mut fleet = builder(&url, 256, Duration::from_secs(300))
        .binary(binary)
        .distributed(2)
        .await?;
    let measured = measure(&mut fleet, runs, retention).await;
    let stopped = fleet.shutdown().await;
    server.abort();
    let measured = measured?;
    stopped?;
    Ok(measured)
}

async fn measure(fleet: &mut Fleet, runs: usize, retention: Duration) -> anyhow::Result<Memory> {
    let mut conn = redis::Client::open(REDIS_URL)?
        .get_multiplexed_async_connection()
        .await?;
    let baseline = used_memory(&mut conn).await?;
    let intake = fleet
        .intake()?
        .with_retention(RetentionPolicy::new(Some(retention), Default::default()));
    let spec = spec("bench-retention")?;
    intake.register(&spec).await?;
    let mut follower = BatchFollower::new(fleet.store.clone(), batch_id());
    let tasks: Vec<TaskLine> = (0..runs).map(scenario_task).collect();
    for task in &tasks {
        let run = submit_task(&intake, &spec.name, task, Some(follower.batch_id())).await?;
        follower.track(&run);
    }
    let results = fleet.follow(follower).await?;
    check(&results)?;
    let ended = Instant::now();
    let before = held(&mut conn, &fleet.prefix, baseline).await?;
    let deadline = ended + retention + Duration::from_secs(30);
    let after = loop {
        let now = held(&mut conn, &fleet.prefix, baseline).await?;
        if now.keys == 0 || Instant::now() > deadline {
            break now;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    ensure!(
        after.keys == 0,
        "{} keys outlived their retention, among them (key, seconds to live) {:?}",
        after.keys,
        after.sample
    );
    Ok(Memory {
        runs,
        retention,
        before,
        after,
        gone_after_s: ended.elapsed().as_secs_f64(),
    })
}

/// A batch id of its own per pass.
fn batch_id() -> String {
    format!("bench-retention-{}", chrono::Utc::now().timestamp_micros())
}

async fn used_memory(conn: &mut redis::aio::MultiplexedConnection) -> anyhow::Result<i64> {
    let info: String = redis::cmd("INFO").arg("memory").query_async(conn).await?;
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .context("no used_memory in INFO memory")?
        .trim()
        .parse()
        .context("used_memory")
}

async fn held(
    conn: &mut redis::aio::MultiplexedConnection,
    prefix: &str,
    baseline: i64,
) -> anyhow::Result<Held> {
    let fleet_wide = [format!("{prefix}:spec:"), format!("{prefix}:ratelimit:")];
    let mut keys = Vec::new();
    let mut cursor = 0_u64;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(conn)
            .await?;
        keys.extend(
            batch
                .into_iter()
                .filter(|k| !fleet_wide.iter().any(|p| k.starts_with(p.as_str()))),
        );
        if next == 0 {
            break;
        }
        cursor = next;
    }
    let mut bytes = 0;
    let mut live = 0;
    let mut sample = Vec::new();
    for key in &keys {
        let usage: Option<u64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(key)
            .query_async(conn)
            .await?;
        if let Some(usage) = usage {
            bytes += usage;
            live += 1;
            if sample.len() < SAMPLE {
                let ttl: i64 = redis::cmd("TTL").arg(key).query_async(conn).await?;
                sample.push((key.clone(), ttl));
            }
        }
    }
    Ok(Held {
        keys: live,
        sample,
        bytes,
        used_memory: used_memory(conn).await? - baseline,
    })
}

/// The report's section.
pub fn render(out: &mut String, section: &Result<Memory, String>) {
    let _ = writeln!(
        out,
        "## 7. Retention: Redis memory per finished run (issue #15)\n"
    );
    match section {
        Ok(m) => {
            let per_run = |b: u64| b / m.runs.max(1) as u64;
            let _ = writeln!(
                out,
                "{} scenario runs (each with a subagent) through RabbitMQ and Redis, expiring {} s after they end.\n",
                m.runs,
                m.retention.as_secs()
            );
            let _ = writeln!(
                out,
                "| when | keys | MEMORY USAGE | per run | used_memory over before |\n|---|---:|---:|---:|---:|"
            );
            for (when, h) in [
                ("right after the last run ended", &m.before),
                ("once the retention passed", &m.after),
            ] {
                let _ = writeln!(
                    out,
                    "| {when} | {} | {} B | {} B | {} B |",
                    h.keys,
                    h.bytes,
                    per_run(h.bytes),
                    h.used_memory
                );
            }
            let _ = writeln!(
                out,
                "\nNo key was left {:.1} s after the last run ended.\n",
                m.gone_after_s
            );
        }
        Err(e) => {
            let _ = writeln!(out, "Failed: {e}\n");
        }
    }
}
