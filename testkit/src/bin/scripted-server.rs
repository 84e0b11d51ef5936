//! `scripted-server`: a replay script served as an OpenAI-compatible
//! (and Anthropic, Gemini) endpoint, for benchmarks and trying the fleet
//! without an API key.
//!
//! A binary of the test kit, not of `deepfleet`, so the shipped binary
//! links no test support: `cargo run -p deepfleet-testkit --bin
//! scripted-server -- --script SCRIPT.yaml`. `--fault status=429
//! --fault-times 3` makes it a faulty provider (see
//! `deepfleet_testkit::faults`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use deepfleet_replay::ReplayEngine;
use deepfleet_testkit::faults::{Fault, Faults};

/// Serve a replay script as an OpenAI-compatible endpoint.
#[derive(Parser)]
#[command(name = "scripted-server", version, about)]
struct Args {
    /// The replay script (YAML).
    #[arg(long)]
    script: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8089")]
    listen: String,
    /// Delay added to every answer, in milliseconds.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// A fault to inject: `status=429`, `status=429,retry_after=2`,
    /// `hang`, `stall`, `truncate`, `malformed_json`, `bad_tool_arguments`,
    /// `missing_tool_name`, `empty` or `oversized=BYTES`.
    #[arg(long)]
    fault: Option<Fault>,
    /// How many requests get the fault (all when omitted).
    #[arg(long, requires = "fault")]
    fault_times: Option<u32>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let engine = ReplayEngine::load(&args.script)
        .with_context(|| format!("loading {}", args.script.display()))?;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    println!(
        "serving {} at http://{}/v1",
        args.script.display(),
        listener.local_addr()?
    );
    let faults = args.fault.map(|fault| {
        Arc::new(match args.fault_times {
            Some(times) => Faults::times(fault, times),
            None => Faults::always(fault),
        })
    });
    deepfleet_testkit::serve(
        Arc::new(engine),
        Duration::from_millis(args.latency_ms),
        faults,
        listener,
    )
    .await;
    Ok(())
}
