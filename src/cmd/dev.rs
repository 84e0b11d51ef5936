//! `deepfleet dev`: the scheduler's HTTP API (Agent Server protocol) with
//! its queue, store and workers in this one process, for trying the API
//! and the langgraph SDKs with no RabbitMQ or Redis (as `langgraph dev`
//! does for the Agent Server).
//!
//! The queue is the in-process one and the store the embedded one, in
//! memory: threads, runs and store items last until the process exits.
//! The workers are the fleet's own ([`super::EmbeddedWorker`]), and the
//! agents folder is watched, so an edited spec serves the next step.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use deepfleet_api::browser_guard::AllowedHosts;
use deepfleet_api::{ApiState, MetricsRender};
use deepfleet_fleet::Metrics;
use deepfleet_queue::Queue;
use deepfleet_queue::lanes::Lanes;
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_scheduler::runs::{Graphs, Runs};
use deepfleet_scheduler::{CronLoop, Intake, Lifecycle, WebhookDeliverer};
use deepfleet_store::Store;
use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_store::sealed::ContextKey;
use deepfleet_worker::events::EventSink;
use tracing::info;

use super::agent_source::AgentSource;
use super::health::Probes;
use super::spec_watch::{SpecLoader, SpecWatch};
use crate::settings::Settings;

/// How often queued runs are checked for a free thread.
const STARTER_EVERY: Duration = Duration::from_millis(200);
/// How often the agents folder is checked for edits.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// Arguments of `deepfleet dev`.
#[derive(Args)]
pub struct DevArgs {
    /// Directory of agent specs: each YAML file with top-level `name` and
    /// `model` is a graph named after the spec; other files (a replay
    /// script beside its spec) are skipped. Default: the project
    /// manifest's `[agents]`. Watched: edited (and, in a folder, new)
    /// specs are served without a restart.
    #[arg(long)]
    agents: Option<PathBuf>,
    /// Address of the HTTP API (overrides `scheduler.listen`, default
    /// `127.0.0.1:2024`).
    #[arg(long)]
    listen: Option<String>,
    /// Steps run at once (overrides `worker.concurrency`).
    #[arg(long)]
    concurrency: Option<u16>,
}

pub async fn run(args: DevArgs, settings: Settings) -> anyhow::Result<ExitCode> {
    let shutdown = super::signals::shutdown_token()?;
    // API runs are interactive: their lane is served first.
    let queue: Arc<dyn Queue> = Arc::new(Lanes::new(
        Arc::new(MemoryQueue::new()),
        Arc::new(MemoryQueue::new()),
    ));
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
    let key = context_key(&settings)?;
    let intake = Intake::new(Arc::clone(&store), Arc::clone(&queue))
        .with_context_key(key.clone())
        .with_retention(super::retention(&settings)?)
        .with_bounds(super::run_bounds(&settings)?)
        .with_limits(settings.limits.input())
        .with_webhooks(super::webhooks(&settings)?);
    let graphs = Graphs::default();
    let load = spec_loader(&settings);
    let agents = AgentSource::choose(args.agents, &settings)?;
    // Watching starts from the files as they are before loading them, so
    // no edit falls in between.
    let watch = SpecWatch::new(
        agents.clone(),
        intake.clone(),
        graphs.clone(),
        Arc::clone(&load),
    );
    super::scheduler::register_graphs(&intake, &agents, &*load, &graphs).await?;
    tokio::spawn(watch.run(WATCH_EVERY, shutdown.clone()));
    let life = Lifecycle::new(intake);
    tokio::spawn(life.clone().run_starter(STARTER_EVERY));
    let metrics = Arc::new(Metrics::new().context("creating the metrics registry")?);
    let runner = super::step_runner(
        Arc::clone(&queue),
        Arc::clone(&store),
        &settings,
        key,
        Some(Arc::clone(&metrics) as Arc<dyn EventSink>),
    );
    let concurrency = args.concurrency.unwrap_or(settings.worker.concurrency);
    let worker = super::EmbeddedWorker::start(Arc::clone(&queue), runner, concurrency);
    metrics.set_queue_consumers(1);
    let webhook_metrics = Arc::clone(&metrics);
    let render: MetricsRender = Arc::new(move || metrics.render().unwrap_or_default());
    info!(
        %agents,
        graphs = ?graphs.names(),
        concurrency,
        "dev server: queue, store and workers in this process; nothing is kept after it exits"
    );
    // Embedded: keys are optional, but served when configured.
    let keys = super::api_keys(&settings)?;
    let state = ApiState {
        runs: Runs {
            life,
            graphs,
            started_at: chrono::Utc::now(),
            tenant_runs_in_flight: settings.api.tenant_runs_in_flight,
        },
        metrics: Some(render),
        keys,
        max_body_bytes: settings.limits.body_bytes(),
        allowed_hosts: AllowedHosts::parse(&settings.api.allowed_hosts)?,
    };
    let deliverer = WebhookDeliverer::new(state.runs.clone(), Some(webhook_metrics))
        .context("starting webhook delivery")?;
    tokio::spawn(deliverer.run(super::scheduler::WEBHOOKS_EVERY));
    tokio::spawn(
        CronLoop::new(state.runs.clone(), super::scheduler::CRONS_EVERY)
            .run(shutdown.clone().cancelled_owned()),
    );
    let probes = Probes::new(shutdown.clone()).broker(queue).store(store);
    let app = deepfleet_api::router(state)
        .layer(super::cors_layer(&settings)?)
        .merge(super::health::routes(probes));
    let listen = args.listen.unwrap_or(settings.scheduler.listen);
    let grace = Duration::from_secs(settings.scheduler.grace_secs);
    super::scheduler::serve(&listen, app, shutdown, grace).await?;
    worker.stop().await?;
    Ok(ExitCode::SUCCESS)
}

/// The configured context key, or one made for this process: its runs'
/// context is sealed in memory only, so nothing needs to open it later.
fn context_key(settings: &Settings) -> anyhow::Result<ContextKey> {
    if let Some(key) = settings.context_key()? {
        return Ok(key);
    }
    info!("no context_key configured: runs' context is sealed with a key made for this process");
    Ok(ContextKey::generate())
}

/// Loads spec files as workers of these settings would run them.
fn spec_loader(settings: &Settings) -> SpecLoader {
    let providers = super::providers(settings);
    let options = super::agent_options(settings);
    Arc::new(move |path: &Path| crate::batch_io::load_spec(path, None, &providers, &options))
}
