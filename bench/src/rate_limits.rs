//! Item 9 (issue #17): a batch under provider rate limits. Single-call
//! runs on two worker processes against the scripted server enforcing
//! requests and tokens per minute the way providers do (429s with
//! `Retry-After` and `x-ratelimit-*` headers); the fleet's limiter is
//! configured with the same limits. The claim: zero 429s, and the batch
//! finishes within 10 % of the time the limits imply.
//!
//! The time the limits imply is the provider's: a bucket per limit holds
//! a minute's worth (the first minute's calls go at once) and refills at
//! the limit per minute, so `n` calls of `t` tokens take
//! `max(n - rpm, 0) / rpm` minutes by requests and
//! `max(n * t - tpm, 0) / tpm` by tokens, whichever is longer.

use std::fmt::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use deepfleet_model::ratelimit::Limits;
use deepfleet_proto::{AgentSpec, ResultStatus, TaskLine};
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::fleet::task;
use deepfleet_testkit::limits::ServerLimits;
use deepfleet_testkit::script::{ScriptBuilder, When};
use serde_json::Value;

use crate::fleet::builder;

/// Steps each worker process runs at once.
const CONCURRENCY: u16 = 64;
/// Tokens per minute over what the requests limit lets through: the
/// token bucket is metered (and corrected) without being the scarcer.
const TOKEN_SLACK: f64 = 1.1;

/// What the batch did under the limits.
pub struct Limited {
    /// Runs (one model call each).
    pub runs: usize,
    /// Requests per minute, server and limiter.
    pub rpm: u64,
    /// Tokens per minute, server and limiter.
    pub tpm: u64,
    /// Tokens one call takes as the server counts them.
    pub tokens_per_call: u64,
    /// Seconds from submitting the batch to its last result.
    pub elapsed_s: f64,
    /// Seconds the limits imply.
    pub implied_s: f64,
    /// Calls the server refused with a 429.
    pub refused: u64,
    /// Calls it answered.
    pub admitted: u64,
}

impl Limited {
    /// Whether the claim holds.
    pub fn met(&self) -> bool {
        self.refused == 0 && self.elapsed_s <= self.implied_s * 1.1
    }
}

/// Runs `runs` single-call runs at `rpm` requests per minute on two
/// worker processes of `binary`.
pub async fn batch_under_limits(binary: &Path, runs: usize, rpm: u64) -> anyhow::Result<Limited> {
    let script = ScriptBuilder::new().answer(When::always(), "done").build();
    let engine = Arc::new(ReplayEngine::new(Script::from_yaml(&script)?));
    let tokens_per_call = calibrate(&engine).await?;
    let tpm = (rpm as f64 * tokens_per_call as f64 * TOKEN_SLACK).ceil() as u64;
    let server = ScriptedServer::start_limited(
        engine,
        Duration::ZERO,
        ServerLimits {
            requests_per_minute: Some(rpm),
            tokens_per_minute: Some(tpm),
        },
    )
    .await?;
    let limits = Limits {
        requests_per_minute: Some(rpm),
        tokens_per_minute: Some(tpm),
        ..Limits::default()
    };
    let mut fleet = builder(&server.url(), CONCURRENCY, Duration::from_secs(1_800))
        .rate_limits(limits)
        .binary(binary)
        .distributed(2)
        .await?;
    let spec = AgentSpec::from_yaml("name: bench-rate-limits\nmodel: 'openai:scripted-model'\n")?;
    let tasks: Vec<TaskLine> = (0..runs)
        .map(|n| {
            task(
                &format!("limited-{n}"),
                &format!("Bench run {n}: say done."),
            )
        })
        .collect();
    let started = Instant::now();
    let results = fleet.run(&spec, &tasks).await;
    let elapsed_s = started.elapsed().as_secs_f64();
    let stopped = fleet.shutdown().await;
    let results = results?;
    stopped?;
    ensure!(results.len() == runs, "{} results of {runs}", results.len());
    for line in &results {
        ensure!(
            line.status == ResultStatus::Success,
            "run {} ended {:?}: {:?}",
            line.id,
            line.status,
            line.error
        );
    }
    let (refused, admitted) = server.rate_limited();
    let by_requests = (runs as f64 - rpm as f64).max(0.0) * 60.0 / rpm as f64;
    let tokens = runs as f64 * tokens_per_call as f64;
    let by_tokens = (tokens - tpm as f64).max(0.0) * 60.0 / tpm as f64;
    Ok(Limited {
        runs,
        rpm,
        tpm,
        tokens_per_call,
        elapsed_s,
        implied_s: by_requests.max(by_tokens),
        refused,
        admitted,
    })
}

/// The tokens one run's call takes as the server counts them (its
/// answer's reported usage), from one call to an unlimited server.
async fn calibrate(engine: &Arc<ReplayEngine>) -> anyhow::Result<u64> {
    let server = ScriptedServer::start(Arc::clone(engine), Duration::ZERO).await?;
    let mut fleet = builder(&server.url(), 1, Duration::from_secs(60)).embedded()?;
    let spec = AgentSpec::from_yaml("name: bench-rate-limits\nmodel: 'openai:scripted-model'\n")?;
    let probe = fleet
        .run(&spec, &[task("probe", "Bench run 0: say done.")])
        .await;
    fleet.shutdown().await?;
    probe?;
    let request = server
        .requests()
        .into_iter()
        .next()
        .context("no probe call")?;
    Ok(usage_of(&request))
}

/// The replay engine's count of a request: characters of its messages
/// and tools as JSON, over four, plus the one-word answer.
fn usage_of(request: &Value) -> u64 {
    let chars = |v: &Value| serde_json::to_string(v).map_or(0, |s| s.chars().count());
    let input = (chars(&request["messages"]) + chars(&request["tools"])).div_ceil(4);
    u64::try_from(input).unwrap_or(u64::MAX) + 1
}

/// The section of BENCHMARKS.md.
pub fn render(out: &mut String, section: &Result<Limited, String>) {
    let _ = writeln!(
        out,
        "## 9. Rate limits: a batch under provider limits (issue #17)\n"
    );
    match section {
        Ok(m) => {
            let _ = writeln!(
                out,
                "{} single-call runs on 2 worker processes against the scripted server enforcing {} requests/min and {} tokens/min \
                 ({} tokens a call as the server counts them) per key and model, answering 429 with `Retry-After` and \
                 `x-ratelimit-*` headers; the fleet's limiter (in Redis) has the same limits. The limits imply {:.1} s: \
                 a provider's bucket lets a minute's worth through at once, then refills at the limit.\n",
                m.runs, m.rpm, m.tpm, m.tokens_per_call, m.implied_s
            );
            let _ = writeln!(
                out,
                "| runs | 429s from the server | calls answered | wall time | the limits imply | ratio | claim |\n|---:|---:|---:|---:|---:|---:|---|"
            );
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.1} s | {:.1} s | {:.3} | {} |\n",
                m.runs,
                m.refused,
                m.admitted,
                m.elapsed_s,
                m.implied_s,
                m.elapsed_s / m.implied_s.max(f64::MIN_POSITIVE),
                if m.met() {
                    "met (zero 429s, within 10 %)"
                } else {
                    "missed"
                }
            );
            let tokens = m.runs as f64 * m.tokens_per_call as f64;
            let by_tokens = (tokens - m.tpm as f64).max(0.0) * 60.0 / m.tpm as f64;
            let _ = writeln!(
                out,
                "At {} requests/min, {} calls would take {:.0} s if the first minute's calls waited their turn too; a \
                 provider's bucket (and the scripted server's) lets those {} through at once, so the limits imply \
                 {:.1} s. The token limit, set 10 % above what the requests limit lets through, implies {:.1} s: it is \
                 metered (each call's input counted before it is sent, its output the running average of the \
                 answers) and corrected with the reported usage, but requests bind. The limiter holds back one \
                 second of refill against latency jitter, and the steps it could not serve within `max_wait_ms` \
                 (2 s) are deferred through the broker's delay queues rather than held in a worker slot. \
                 `deepfleet-bench --only rate-limits` measures this item alone and rewrites this section.\n",
                m.rpm,
                m.runs,
                m.runs as f64 * 60.0 / m.rpm as f64,
                m.rpm,
                m.implied_s,
                by_tokens
            );
        }
        Err(e) => {
            let _ = writeln!(out, "Failed: {e}\n");
        }
    }
}
