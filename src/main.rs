//! `deepfleet`: run deep agents in batches, embedded or as a fleet.
//!
//! This binary is wiring only: flags and configuration in, the library
//! crates do the work.

mod batch_io;
mod cmd;
#[cfg(test)]
mod flag_variables_tests;
mod results_file;
mod unfinished_batch;

// Every step allocates and frees many small values (messages, request
// bodies, replies) across tokio's threads; mimalloc does that with less
// CPU than glibc's malloc and gives freed memory back to the system.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// The settings are a library crate, so a team's own worker loads them too.
use deepfleet_settings as settings;
use deepfleet_settings::redacted_url;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "deepfleet", version, about)]
struct Cli {
    /// Configuration file (TOML), also a project manifest (`[agents]`,
    /// `[env]`, `[run]`); `DEEPFLEET__...` variables override it. Default:
    /// `deepfleet.toml` in the working directory, when there is one.
    #[arg(long, global = true, env = "DEEPFLEET_CONFIG")]
    config: Option<PathBuf>,
    /// Export traces over OTLP/HTTP to this collector (base URL, e.g.
    /// `http://127.0.0.1:4318`); overrides `otlp_endpoint` and
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`. Off by default.
    #[arg(long, global = true, env = "DEEPFLEET__OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a batch in this process, with no servers.
    Run(cmd::run::RunArgs),
    /// Enqueue a batch into a running fleet and follow it.
    Submit(cmd::submit::SubmitArgs),
    /// Re-attach to a submitted batch by its id: status, follow, results,
    /// cancel.
    Batch(cmd::batch_handles::BatchArgs),
    /// Execute steps from the fleet's queue.
    Worker(cmd::worker::WorkerArgs),
    /// Answer a run that waits for a human decision and continue it.
    Resume(cmd::resume::ResumeArgs),
    /// Serve the HTTP API (Agent Server protocol) over the fleet.
    Scheduler(cmd::scheduler::SchedulerArgs),
    /// Serve the HTTP API with queue, store and workers in this process,
    /// no servers (like `langgraph dev`), reloading edited specs.
    Dev(cmd::dev::DevArgs),
    /// Write a fresh context key for a fleet (base64 of 32 random bytes).
    Keygen(cmd::keygen::KeygenArgs),
    /// Make an API key for a tenant and role, and print its configuration
    /// line (the key's SHA-256, never the key).
    #[command(subcommand)]
    ApiKey(cmd::api_key::ApiKeyCommand),
    /// Re-seal the stored values (Redis, or an embedded state file) under
    /// the current encryption key, after a rotation.
    RotateKeys(cmd::rotate_keys::RotateKeysArgs),
    /// Print the project manifest's agents and environment as values of
    /// the Helm chart.
    ChartValues(cmd::chart_values::ChartValuesArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // TLS to providers and brokers uses ring; installing twice is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = settings::locate(cli.config.as_deref());
    let settings::Loaded { settings, unknown } = settings::Settings::load(config.as_deref())?;
    let explicit = cli.otlp_endpoint.or_else(|| settings.otlp_endpoint.clone());
    let otlp = cmd::telemetry::OtlpConfig::resolve(explicit.as_deref(), |name| settings.var(name))?;
    let log_filter = settings.var("RUST_LOG");
    let telemetry =
        cmd::telemetry::init(otlp.as_ref(), settings.log_format, log_filter.as_deref())?;
    if let Some(file) = &config {
        tracing::info!(file = %file.display(), "configuration file");
    }
    for variable in &unknown {
        tracing::warn!(variable = %variable.name, "{variable}");
    }
    let code = match cli.command {
        Command::Run(args) => cmd::run::run(args, settings).await,
        Command::Submit(args) => cmd::submit::run(args, settings).await,
        Command::Batch(args) => cmd::batch_handles::run(args, settings).await,
        Command::Worker(args) => cmd::worker::run(args, settings).await,
        Command::Resume(args) => cmd::resume::run(args, settings).await,
        Command::Scheduler(args) => cmd::scheduler::run(args, settings).await,
        Command::Dev(args) => cmd::dev::run(args, settings).await,
        Command::Keygen(args) => cmd::keygen::run(&args),
        Command::ApiKey(command) => cmd::api_key::run(&command),
        Command::RotateKeys(args) => cmd::rotate_keys::run(args, settings).await,
        Command::ChartValues(args) => cmd::chart_values::run(&args, &settings),
    };
    telemetry.shutdown().await;
    code
}
