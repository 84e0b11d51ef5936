//! `deepfleet scripted-server`: a replay script served as an
//! OpenAI-compatible endpoint, for benchmarks and trying the fleet
//! without an API key.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use deepfleet_model::replay::ReplayEngine;

/// Arguments of `deepfleet scripted-server`.
#[derive(Args)]
pub struct ScriptedServerArgs {
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

pub async fn run(args: ScriptedServerArgs) -> anyhow::Result<ExitCode> {
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
    Ok(ExitCode::SUCCESS)
}
