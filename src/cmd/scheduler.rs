//! `deepfleet scheduler`: the HTTP API (Agent Server protocol) over the
//! fleet's RabbitMQ and Redis, with every agent spec of a directory served
//! as a graph.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use deepfleet_api::browser_guard::AllowedHosts;
use deepfleet_api::{ApiState, MetricsRender};
use deepfleet_fleet::Metrics;
use deepfleet_proto::AgentSpec;
use deepfleet_queue::amqp::AmqpQueue;
use deepfleet_scheduler::runs::{Graphs, Runs};
use deepfleet_scheduler::{
    CronLoop, Intake, Lifecycle, Replier, ReservedQueues, SubmissionIntake, WebhookDeliverer,
};
use deepfleet_store::Store;
use tokio_util::sync::CancellationToken;
use tracing::info;

use super::agent_source::AgentSource;
use super::health::{self, Attached, Probes, WatchedQueue};
use crate::settings::Settings;

/// How often queued runs are checked for a free thread.
const STARTER_EVERY: Duration = Duration::from_millis(200);
/// How often the due crons are looked at when none is due sooner: new
/// and changed crons fire within this of their time.
pub(super) const CRONS_EVERY: Duration = Duration::from_millis(250);
/// How often ended submitted runs are looked for, to answer them.
const REPLIER_EVERY: Duration = Duration::from_millis(250);
/// How often pending webhook deliveries are looked at.
pub(super) const WEBHOOKS_EVERY: Duration = Duration::from_millis(500);
/// Submissions in hand at once (each takes a few store round trips).
const SUBMISSION_PREFETCH: u16 = 16;

/// Arguments of `deepfleet scheduler`.
#[derive(Args)]
pub struct SchedulerArgs {
    /// RabbitMQ URL (`amqp://...` or `amqps://...`).
    #[arg(long, env = "DEEPFLEET__QUEUE")]
    queue: Option<String>,
    /// Redis URL (`redis://...`, `rediss://...`, or
    /// `redis+cluster://h1:p1,h2:p2`).
    #[arg(long, env = "DEEPFLEET__STORE")]
    store: Option<String>,
    /// Address of the HTTP API, `/metrics`, `/healthz` and `/readyz`, e.g.
    /// `0.0.0.0:2024` in a pod (overrides `scheduler.listen`, default
    /// `127.0.0.1:2024`).
    #[arg(long, env = "DEEPFLEET__SCHEDULER__LISTEN")]
    listen: Option<String>,
    /// Directory of agent specs: each YAML file with top-level `name` and
    /// `model` is a graph named after the spec; other files (a replay
    /// script beside its spec) are skipped. Default: the project
    /// manifest's `[agents]`.
    #[arg(long)]
    agents: Option<PathBuf>,
    /// RabbitMQ queue taking JSON submissions (docs/queue-intake.md); its
    /// dead letters go to `NAME.dead`, answers without a reply queue to
    /// the tenant's `NAME.results.TENANT`. Default: the step queue's name
    /// and `.submissions` (`deepfleet.steps.submissions`).
    #[arg(long)]
    submissions: Option<String>,
}

pub async fn run(args: SchedulerArgs, settings: Settings) -> anyhow::Result<ExitCode> {
    let shutdown = super::signals::shutdown_token()?;
    let keys = super::api_keys(&settings)?;
    let listen = args
        .listen
        .clone()
        .unwrap_or_else(|| settings.scheduler.listen.clone());
    check_open_listener(&listen, keys.is_open(), settings.api.allow_open)?;
    let amqp_url = args.queue.clone().or_else(|| settings.queue.clone());
    let (queue, store) = super::connect_fleet(args.queue, args.store, &settings).await?;
    let mut intake = Intake::new(Arc::clone(&store), Arc::clone(&queue))
        .with_limits(settings.limits.input())
        .with_retention(super::retention(&settings)?)
        .with_bounds(super::run_bounds(&settings)?)
        .with_webhooks(super::webhooks(&settings)?);
    // Without a key, runs that carry a context are refused with a clear
    // error; runs without one work.
    if let Some(key) = settings.context_key()? {
        intake = intake.with_context_key(key);
    }
    let graphs = Graphs::default();
    let load = |path: &Path| super::load_checked_spec(path, None, &settings);
    let agents = AgentSource::choose(args.agents, &settings)?;
    register_graphs(&intake, &agents, &load, &graphs).await?;
    let life = Lifecycle::new(intake);
    tokio::spawn(life.clone().run_starter(STARTER_EVERY));
    let metrics = Arc::new(Metrics::new().context("creating the metrics registry")?);
    let webhook_metrics = Arc::clone(&metrics);
    let render: MetricsRender = Arc::new(move || metrics.render().unwrap_or_default());
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
    tokio::spawn(deliverer.run(WEBHOOKS_EVERY));
    tokio::spawn(
        CronLoop::new(state.runs.clone(), CRONS_EVERY).run(shutdown.clone().cancelled_owned()),
    );
    let url = amqp_url.context("no queue URL for the submission queue")?;
    let submissions_name = args
        .submissions
        .unwrap_or_else(|| format!("{}.submissions", settings.queue_name));
    // Answers must never be published to a queue of the fleet's own.
    let reserved = ReservedQueues::new([
        settings.queue_name.clone(),
        deepfleet_queue::lanes::interactive_name(&settings.queue_name),
        submissions_name.clone(),
    ]);
    let attached = start_submissions(
        &url,
        submissions_name,
        state.clone(),
        &store,
        &settings,
        reserved,
    )
    .await?;
    let probes = Probes::new(shutdown.clone())
        .broker(queue)
        .store(store)
        .consumer("submissions", attached);
    let app = deepfleet_api::router(state)
        .layer(super::cors_layer(&settings)?)
        .merge(health::routes(probes));
    let grace = Duration::from_secs(settings.scheduler.grace_secs);
    serve(&listen, app, shutdown, grace).await?;
    Ok(ExitCode::SUCCESS)
}

/// Refuses to serve the API without keys on `listen` unless it is
/// loopback only or `allow_open` says so: an open API on a network
/// address would let anyone run agents on the fleet's providers.
fn check_open_listener(listen: &str, open: bool, allow_open: bool) -> anyhow::Result<()> {
    if !open || allow_open {
        return Ok(());
    }
    let addrs: Vec<std::net::SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(listen)
        .with_context(|| format!("resolving the listen address {listen}"))?
        .collect();
    if !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback()) {
        return Ok(());
    }
    anyhow::bail!(
        "refusing to serve the API on {listen} without API keys: configure [api.keys] or \
         api.keys_file (`deepfleet api-key new`), listen on loopback, or set \
         api.allow_open = true (DEEPFLEET__API__ALLOW_OPEN)"
    )
}

/// Registers every spec of `agents`, each loaded by `load`, and serves
/// them as `graphs`.
pub(super) async fn register_graphs(
    intake: &Intake,
    agents: &AgentSource,
    load: &dyn Fn(&Path) -> anyhow::Result<AgentSpec>,
    graphs: &Graphs,
) -> anyhow::Result<()> {
    for (path, spec) in agents.load_all(load)? {
        intake
            .register(&spec)
            .await
            .with_context(|| format!("registering {}", path.display()))?;
        graphs.add(&spec.name);
    }
    Ok(())
}

/// Starts consuming the submission queue `name` and answering its
/// messages; returns the count of its open consumers, for readiness.
async fn start_submissions(
    url: &str,
    name: String,
    state: ApiState,
    store: &Arc<dyn Store>,
    settings: &Settings,
    reserved: ReservedQueues,
) -> anyhow::Result<Attached> {
    let submissions = AmqpQueue::connect(super::amqp_config(url, &name, settings))
        .await
        .with_context(|| {
            format!(
                "connecting the submission queue at {}",
                crate::redacted_url::redacted(url)
            )
        })?;
    submissions
        .declare_results()
        .await
        .context("declaring the submission results queue")?;
    let replier = Replier::new(Arc::clone(store), Arc::new(submissions.clone()));
    tokio::spawn(replier.clone().run(REPLIER_EVERY));
    let intake = SubmissionIntake::new(state.runs, state.keys, replier, reserved);
    let (consumed, attached) = WatchedQueue::wrap(Arc::new(submissions));
    tokio::spawn(async move {
        if let Err(e) = intake.run(consumed, SUBMISSION_PREFETCH).await {
            tracing::error!(error = %e, "the submission queue consumer stopped");
        }
    });
    Ok(attached)
}

/// Serves `app` on `addr` until `shutdown`; then stops accepting, lets
/// open requests finish for up to `grace`, and returns.
pub(super) async fn serve(
    addr: &str,
    app: axum::Router,
    shutdown: CancellationToken,
    grace: Duration,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))?;
    info!(addr = %listener.local_addr()?, "scheduler listening");
    super::http_serve::serve(
        listener,
        app,
        shutdown,
        grace,
        super::http_serve::HEADER_READ_TIMEOUT,
    )
    .await;
    info!("scheduler stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_open_listener;

    #[test]
    fn only_loopback_may_listen_without_keys() {
        assert!(check_open_listener("127.0.0.1:2024", true, false).is_ok());
        assert!(check_open_listener("[::1]:2024", true, false).is_ok());
        let err = check_open_listener("0.0.0.0:2024", true, false).unwrap_err();
        assert!(err.to_string().contains("allow_open"), "{err}");
        assert!(check_open_listener("0.0.0.0:2024", true, true).is_ok());
        assert!(check_open_listener("0.0.0.0:2024", false, false).is_ok());
    }
}
