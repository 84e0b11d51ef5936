//! `deepfleet run`: a batch in this process, with no servers.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use deepfleet_fleet::Metrics;
use deepfleet_proto::{TaskLine, TenantId};
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_store::sealed::ContextKey;
use deepfleet_worker::events::EventSink;

use super::agent_source::run_agent;
use super::batch::{BatchPlan, InProcess};
use crate::batch_io::read_tasks;
use crate::settings::Settings;

/// Arguments of `deepfleet run`.
#[derive(Args)]
pub struct RunArgs {
    /// Tasks, one JSON object per line. Default: `run.tasks` of the
    /// project manifest.
    tasks: Option<PathBuf>,
    /// The agent: a spec file (YAML), or a name of the project manifest's
    /// `[agents]`. Default: `run.agent`, or the manifest's only agent.
    #[arg(long)]
    agent: Option<String>,
    /// Steps run at once. Default: `run.concurrency` (16).
    #[arg(long)]
    concurrency: Option<u16>,
    /// Runs in flight at once; the next starts as one ends (`0`: every
    /// run at once, their steps interleaved). Default: the concurrency.
    #[arg(long)]
    window: Option<u32>,
    /// Where result lines go. Default: `run.out` (`results.jsonl`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Use this model (`provider:model`) instead of the spec's.
    #[arg(long)]
    model: Option<String>,
    /// Serve Prometheus metrics on `/metrics` at this address while the
    /// batch runs (overrides `metrics_listen`).
    #[arg(long, env = "DEEPFLEET__METRICS_LISTEN")]
    metrics_listen: Option<String>,
    /// Persist the embedded store to this file, so `deepfleet resume` can
    /// continue runs that wait for a human decision, and an interrupted
    /// batch continues its runs where they were.
    #[arg(long)]
    state: Option<PathBuf>,
    /// Start the batch over even if `--out` holds an unfinished one (an
    /// interrupted run of it), replacing its results.
    #[arg(long)]
    fresh: bool,
    /// Before the first run, make one cheap authenticated call (listing
    /// models) per provider the spec uses, and stop if one refuses it.
    #[arg(long)]
    check_providers: bool,
    /// Dollars the batch's runs may spend in all (at the `[costs]`
    /// prices); once spent, its open runs end `budget_exceeded`.
    #[arg(long)]
    budget_usd: Option<f64>,
    /// The tenant the batch's runs belong to: its retention, daily
    /// budget and concurrency limit (`[admission.tenants]`) apply, and
    /// its agents' `/memories/` are its. Default: the default tenant.
    #[arg(long, default_value_t = TenantId::default())]
    tenant: TenantId,
}

pub async fn run(args: RunArgs, settings: Settings) -> anyhow::Result<ExitCode> {
    let agent = run_agent(args.agent.as_deref(), &settings)?;
    let spec = super::load_checked_spec(&agent, args.model.as_deref(), &settings)?;
    if args.check_providers {
        super::check_provider_access(&agent, &spec, &settings).await?;
    }
    let tasks_file = args.tasks.or_else(|| settings.run.tasks.clone()).context(
        "no tasks: pass a tasks file (one JSON object per line), or set run.tasks in the project manifest",
    )?;
    let tasks = read_tasks(&tasks_file)?;
    let out = args
        .out
        .or_else(|| settings.run.out.clone())
        .unwrap_or_else(|| PathBuf::from("results.jsonl"));
    let concurrency = args.concurrency.unwrap_or(settings.run.concurrency);
    let queue = Arc::new(MemoryQueue::new());
    let store = Arc::new(match &args.state {
        Some(path) => EmbeddedStore::open_with(path, settings.encryption.keyring()?)
            .with_context(|| format!("opening the state file {}", path.display()))?,
        None => EmbeddedStore::new(),
    });
    let key = embedded_context_key(&settings, args.state.as_deref(), &tasks)?;
    let metrics = Arc::new(Metrics::new()?);
    let probes = super::health::Probes::new(tokio_util::sync::CancellationToken::new())
        .broker(queue.clone())
        .store(store.clone());
    super::serve_metrics(
        args.metrics_listen,
        &settings,
        &metrics,
        queue.clone(),
        probes,
    )
    .await?;
    metrics.set_queue_consumers(1);
    let runner = super::step_runner(
        queue.clone(),
        store.clone(),
        &settings,
        key.clone(),
        Some(metrics as Arc<dyn EventSink>),
    );
    let worker = super::EmbeddedWorker::start(queue.clone(), runner, concurrency);
    let plan = BatchPlan {
        limits: settings.limits.input(),
        spec: &spec,
        tasks: &tasks,
        out: &out,
        fresh: args.fresh,
        state_file: args.state.as_deref(),
        batch_id: None,
        watch_queue: None,
        retention: super::retention(&settings)?,
        window: Some(args.window.unwrap_or(u32::from(concurrency))).filter(|w| *w > 0),
        bounds: super::run_bounds(&settings)?,
        budget_nano_usd: args
            .budget_usd
            .map(|usd| super::budget_nano_usd(usd, "--budget-usd"))
            .transpose()?,
        tenant: args.tenant,
    };
    let in_process = InProcess {
        worker,
        store: store.clone(),
    };
    let code =
        super::batch::run_batch(queue, store.clone(), plan, Some(key), Some(in_process)).await;
    store.flush()?;
    code
}

/// The key for runtime context in embedded mode: the configured one, or a
/// key for this process alone. A persisted store outlives the process, so
/// sealing contexts into one needs a configured key that `resume` can use.
fn embedded_context_key(
    settings: &Settings,
    state: Option<&Path>,
    tasks: &[TaskLine],
) -> anyhow::Result<ContextKey> {
    if let Some(key) = settings.context_key()? {
        return Ok(key);
    }
    if let Some(path) = state
        && tasks.iter().any(|t| t.context.is_some())
    {
        bail!(
            "tasks carry runtime context and --state {} keeps it (sealed) for `deepfleet resume`: \
             set context_key / DEEPFLEET__CONTEXT_KEY (base64 of 32 bytes, e.g. `openssl rand -base64 32`)",
            path.display()
        );
    }
    Ok(ContextKey::generate())
}
