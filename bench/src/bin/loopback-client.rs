//! `loopback-client`: the floor of the benchmarks. Posts one captured
//! request body to the scripted server `--calls` times, `--in-flight` at
//! once over pooled connections (or, with `--http2`, one HTTP/2
//! connection), and reads each answer whole: the HTTP work every harness
//! does per model call, and nothing else. `deepfleet-bench` measures
//! this process's CPU and wall time from outside; the process prints its
//! peak resident memory (`peak_rss_kib N`) as it ends, which nothing
//! outside can read once it has exited.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context;
use bytes::Bytes;
use clap::Parser;

/// Post one request body many times and read the answers.
#[derive(Parser)]
struct Args {
    /// The endpoint (`…/chat/completions`).
    #[arg(long)]
    url: String,
    /// The request body, JSON.
    #[arg(long)]
    body: PathBuf,
    /// Requests in all.
    #[arg(long)]
    calls: usize,
    /// Requests at once.
    #[arg(long, default_value_t = 50)]
    in_flight: usize,
    /// Speak HTTP/2 without negotiating it (h2c): every call on one
    /// connection, as deepfleet's `http2_prior_knowledge` does.
    #[arg(long)]
    http2: bool,
}

/// This process's peak resident memory in KiB (`VmHWM`).
fn peak_rss_kib() -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .context("no VmHWM line")?;
    let kib = line.trim().trim_end_matches("kB").trim();
    Ok(kib.parse()?)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // reqwest is built without a crypto provider; the process picks it.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let body = Bytes::from(
        std::fs::read(&args.body).with_context(|| format!("reading {}", args.body.display()))?,
    );
    let client = if args.http2 {
        // The window deepfleet's client gives a connection: thousands of
        // answers arriving together do not exhaust it.
        reqwest::Client::builder()
            .http2_prior_knowledge()
            .http2_initial_connection_window_size(
                deepfleet_model::transport::HTTP2_CONNECTION_WINDOW,
            )
            .build()?
    } else {
        reqwest::Client::new()
    };
    let left = Arc::new(AtomicUsize::new(args.calls));
    let mut callers = tokio::task::JoinSet::new();
    for _ in 0..args.in_flight.max(1) {
        let (client, body, left, url) =
            (client.clone(), body.clone(), left.clone(), args.url.clone());
        callers.spawn(async move {
            while left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                let answer = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await?
                    .error_for_status()?
                    .bytes()
                    .await?;
                serde_json::from_slice::<serde_json::Value>(&answer)?;
            }
            Ok::<_, anyhow::Error>(())
        });
    }
    while let Some(done) = callers.join_next().await {
        done??;
    }
    println!("peak_rss_kib {}", peak_rss_kib()?);
    Ok(())
}
