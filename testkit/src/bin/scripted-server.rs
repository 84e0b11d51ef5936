//! `scripted-server`: a replay script served as an OpenAI-compatible
//! (and Anthropic, Gemini) endpoint, for benchmarks and trying the fleet
//! without an API key.
//!
//! A binary of the test kit, not of `deepfleet`, so the shipped binary
//! links no test support: `cargo run -p deepfleet-testkit --bin
//! scripted-server -- --script SCRIPT.yaml`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use deepfleet_replay::ReplayEngine;

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
    deepfleet_testkit::serve(
        Arc::new(engine),
        Duration::from_millis(args.latency_ms),
        listener,
    )
    .await?;
    Ok(())
}
