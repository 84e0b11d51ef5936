//! `deepfleet submit`: enqueue a batch into a running fleet and follow it.
//!
//! The batch's id is derived from its batch key (by default the agent's
//! name and the tasks), and its runs' ids from the batch and each task,
//! so submitting the same tasks again is the same batch: it adds no run,
//! follows the runs still going and writes the results of those that
//! ended. `deepfleet batch` re-attaches to a batch by that id.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use deepfleet_proto::{TaskLine, TenantId};
use tokio_util::sync::CancellationToken;

use super::batch::BatchPlan;
use crate::batch_io::read_tasks;
use crate::settings::Settings;

/// Arguments of `deepfleet submit`.
#[derive(Args)]
pub struct SubmitArgs {
    /// Tasks, one JSON object per line.
    tasks: PathBuf,
    /// The agent spec (YAML).
    #[arg(long)]
    agent: PathBuf,
    /// RabbitMQ URL.
    #[arg(long, env = "DEEPFLEET__QUEUE")]
    queue: Option<String>,
    /// Redis URL (`redis://...`, or `redis+cluster://h1:p1,h2:p2`).
    #[arg(long, env = "DEEPFLEET__STORE")]
    store: Option<String>,
    /// Where result lines go.
    #[arg(long, default_value = "results.jsonl")]
    out: PathBuf,
    /// Use this model (`provider:model`) instead of the spec's.
    #[arg(long)]
    model: Option<String>,
    /// Start a new batch (a new id; every task runs again), even if `--out`
    /// holds an unfinished one (an interrupted submit of it), replacing
    /// its results; its runs still going in the fleet are no longer
    /// followed.
    #[arg(long)]
    fresh: bool,
    /// Name the batch by this key instead of by its agent and tasks: the
    /// same key is the same batch, whose tasks (by id) run once.
    #[arg(long)]
    batch_key: Option<String>,
    /// Enqueue every task, print the batch id and exit without following
    /// the batch (`deepfleet batch follow ID --out FILE` does).
    #[arg(long)]
    detach: bool,
    /// Runs of the batch in flight at once; the fleet starts the next as
    /// one ends (`0`: every run at once). Default: `admission.batch_window`
    /// (64).
    #[arg(long)]
    window: Option<u32>,
    /// Before enqueueing, make one cheap authenticated call (listing
    /// models) per provider the spec uses, and stop if one refuses it.
    #[arg(long)]
    check_providers: bool,
    /// Dollars the batch's runs may spend in all (at the workers'
    /// `[costs]` prices); once spent, its open runs end `budget_exceeded`.
    #[arg(long)]
    budget_usd: Option<f64>,
    /// The tenant the batch's runs belong to: its retention, daily
    /// budget and concurrency limit (`[admission.tenants]`) apply, and
    /// its agents' `/memories/` are its. Default: the default tenant.
    #[arg(long, default_value_t = TenantId::default())]
    tenant: TenantId,
}

pub async fn run(args: SubmitArgs, settings: Settings) -> anyhow::Result<ExitCode> {
    let spec = super::load_checked_spec(&args.agent, args.model.as_deref(), &settings)?;
    // With this process's provider settings, as the key check above: a
    // refused key stops the batch before it reaches the fleet.
    if args.check_providers {
        super::check_provider_access(&args.agent, &spec, &settings).await?;
    }
    let tasks = read_tasks(&args.tasks)?;
    // Before reaching for the fleet, as the spec's own checks.
    super::batch::check_tasks(&spec, &tasks)?;
    let budget = args
        .budget_usd
        .map(|usd| super::budget_nano_usd(usd, "--budget-usd"))
        .transpose()?;
    let bounds = super::run_bounds(&settings)?;
    let (queue, store) = super::connect_fleet(args.queue, args.store, &settings).await?;
    let key = settings.context_key()?;
    let batch_id = if args.fresh {
        uuid::Uuid::now_v7().to_string()
    } else {
        batch_id(&spec.name, &tasks, args.batch_key.as_deref())?
    };
    if args.detach {
        let retention = super::retention(&settings)?;
        let intake = super::batch::intake_for(store, queue, (key, retention), &spec, &tasks)
            .await?
            .with_limits(settings.limits.input())
            .with_bounds(bounds)
            .with_batch_budget(budget)
            .with_tenant(args.tenant.clone());
        let intake = match window(args.window, &settings) {
            Some(w) => intake.with_admission_window(w),
            None => intake,
        };
        super::batch::announce(&batch_id, &args.out);
        let runs = super::batch::enqueue(
            &intake,
            &spec,
            &tasks,
            &batch_id,
            |_| false,
            &CancellationToken::new(),
        )
        .await?;
        eprintln!(
            "{} run(s) enqueued; not following them (--detach)",
            runs.len()
        );
        super::consumer_watch::warn_if_unconsumed(intake.queue().as_ref(), &settings.queue_name)
            .await;
        return Ok(ExitCode::SUCCESS);
    }
    let plan = BatchPlan {
        limits: settings.limits.input(),
        spec: &spec,
        tasks: &tasks,
        out: &args.out,
        fresh: args.fresh,
        state_file: None,
        batch_id: Some(&batch_id),
        watch_queue: Some(settings.queue_name.clone()),
        retention: super::retention(&settings)?,
        window: window(args.window, &settings),
        bounds,
        budget_nano_usd: budget,
        tenant: args.tenant,
    };
    super::batch::run_batch(queue, store, plan, key, None).await
}

/// The batch's admission window: `--window`, else the settings'; `None`
/// (0) starts every run at once.
fn window(arg: Option<u32>, settings: &Settings) -> Option<u32> {
    match arg {
        Some(w) => Some(w).filter(|w| *w > 0),
        None => settings.admission.window(),
    }
}

/// The id of the batch of `agent` with batch key `key`, or without one,
/// of `agent` running `tasks`: the same for the same two.
fn batch_id(agent: &str, tasks: &[TaskLine], key: Option<&str>) -> anyhow::Result<String> {
    let name = match key {
        Some(key) => format!("deepfleet/batch-key/{key}"),
        None => format!(
            "deepfleet/batch/{}:{agent}/{}",
            agent.len(),
            crate::unfinished_batch::fingerprint(tasks)?
        ),
    };
    Ok(uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, name.as_bytes()).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str) -> TaskLine {
        TaskLine {
            id: id.into(),
            input: "go".into(),
            context: None,
            files: None,
            state: None,
            timeout_secs: None,
        }
    }

    #[test]
    fn the_same_tasks_or_key_name_the_same_batch() {
        let tasks = [task("a"), task("b")];
        let id = batch_id("agent", &tasks, None).unwrap();
        assert_eq!(id, batch_id("agent", &tasks, None).unwrap());
        assert_ne!(id, batch_id("other", &tasks, None).unwrap());
        assert_ne!(id, batch_id("agent", &tasks[..1], None).unwrap());
        let keyed = batch_id("agent", &tasks, Some("k")).unwrap();
        assert_eq!(keyed, batch_id("agent", &tasks[..1], Some("k")).unwrap());
        assert_ne!(keyed, id);
    }
}
