//! Item 10 (issue #17): batch admission, interactive priority and sharing
//! between batches, on an embedded fleet against the scripted server
//! (model latency [`LATENCY`], each run two model calls: an `ls`, then
//! its answer).
//!
//! - (a) time to the first 10 % of a 3,000-run batch's results (when
//!   their runs ended, from the records), against 10 % of the batch's
//!   total time, both from the start of its submission;
//! - (b) how long after its submission an interactive run's first model
//!   call comes while a 2,000-run batch runs, against one step's time
//!   (the median time between a batch run's two model calls), 20 tries;
//! - (c) two tenants' equal batches started together: their results at
//!   every quarter of the way;
//! - (d) a crowded fleet: one tenant's [`CROWD_BATCHES`] batches against
//!   another tenant's one small batch, with each tenant limited to half
//!   the fleet (`admission.tenant_concurrency`) and without limits: the
//!   small tenant's results against the big one's at every quarter of its
//!   batch.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use deepfleet_proto::{AgentSpec, Priority, TaskLine, TenantId};
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_scheduler::{BatchFollower, Intake, RunBounds, submit_task};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::fleet::{Fleet, task};
use deepfleet_testkit::script::{Call, ScriptBuilder, When};
use serde_json::Value;

/// The scripted model's latency per call.
pub const LATENCY: Duration = Duration::from_millis(100);
/// Steps the fleet runs at once, and each batch's admission window.
pub const CONCURRENCY: u16 = 20;
/// How long one batch may take.
const LIMIT: Duration = Duration::from_secs(900);
/// (d): how many batches the big tenant runs at once.
pub const CROWD_BATCHES: usize = 4;

/// Sizes of item 10.
pub struct Plan {
    pub first_tenth_runs: usize,
    pub interactive_batch: usize,
    pub interactive_tries: usize,
    pub fair_runs: usize,
    /// (d): runs of each of the big tenant's batches; the small tenant's
    /// one batch has a tenth of their sum.
    pub crowd_runs: usize,
}

/// What item 10 measured.
pub struct Numbers {
    pub plan_runs: (usize, usize, usize, usize),
    /// (a): the first 10 % of results, and all of them.
    pub first_tenth: Duration,
    pub total: Duration,
    /// (a): how long submitting the batch (every record) took.
    pub submitted: Duration,
    /// (b): each interactive run's wait for its first model call.
    pub interactive_waits: Vec<Duration>,
    /// (b): one step's time, the median between a batch run's two calls.
    pub step_time: Duration,
    /// (c): results of each batch when a quarter, half, three quarters
    /// and all of both were in.
    pub quarters: Vec<(usize, usize)>,
    /// (d), with the tenants limited: (small tenant's, big tenant's)
    /// results at every quarter of the small tenant's batch.
    pub crowded: Vec<(usize, usize)>,
    /// (d) without limits.
    pub crowded_unlimited: Vec<(usize, usize)>,
}

fn spec() -> anyhow::Result<AgentSpec> {
    Ok(AgentSpec::from_yaml(
        "name: admission-bench\nmodel: 'openai:scripted-model'\n",
    )?)
}

async fn server() -> anyhow::Result<ScriptedServer> {
    let script = ScriptBuilder::new()
        .calls_then_answer(When::always(), [Call::ls("/")], "done")
        .build();
    let engine = ReplayEngine::new(Script::from_yaml(&script)?);
    ScriptedServer::start(Arc::new(engine), LATENCY).await
}

fn fleet(server: &ScriptedServer) -> anyhow::Result<Fleet> {
    crate::fleet::builder(&server.url(), CONCURRENCY, LIMIT).embedded()
}

fn tasks(prefix: &str, n: usize) -> Vec<TaskLine> {
    (0..n)
        .map(|i| task(&format!("{prefix}{i}"), &format!("Job {prefix}{i}")))
        .collect()
}

fn input_of(body: &Value) -> Option<&str> {
    body["messages"]
        .as_array()?
        .iter()
        .find(|m| m["role"] == "user")?["content"]
        .as_str()
}

/// Polls `follower` until its runs end; the instant each line came.
async fn finish_times(follower: &mut BatchFollower) -> anyhow::Result<Vec<Instant>> {
    let deadline = Instant::now() + LIMIT;
    let mut times = Vec::new();
    while follower.remaining() > 0 {
        ensure!(
            Instant::now() < deadline,
            "the batch did not finish in time"
        );
        let lines = follower.poll().await?;
        let now = Instant::now();
        if lines.is_empty() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        times.extend(lines.iter().map(|_| now));
    }
    Ok(times)
}

/// Item 10.
pub async fn measure(plan: &Plan) -> anyhow::Result<Numbers> {
    let (first_tenth, total, submitted) = first_tenth(plan.first_tenth_runs).await?;
    let (interactive_waits, step_time) =
        interactive(plan.interactive_batch, plan.interactive_tries).await?;
    let quarters = fairness(plan.fair_runs).await?;
    let crowded = crowding(plan.crowd_runs, true).await?;
    let crowded_unlimited = crowding(plan.crowd_runs, false).await?;
    Ok(Numbers {
        plan_runs: (
            plan.first_tenth_runs,
            plan.interactive_batch,
            plan.fair_runs,
            plan.crowd_runs,
        ),
        first_tenth,
        total,
        submitted,
        interactive_waits,
        step_time,
        quarters,
        crowded,
        crowded_unlimited,
    })
}

/// (a): when the first 10 % and the last run ended, and how long
/// submitting every run took, from the start of the submission.
async fn first_tenth(runs: usize) -> anyhow::Result<(Duration, Duration, Duration)> {
    let server = server().await?;
    let mut fleet = fleet(&server)?;
    // One run first, untimed: the process's one-time start-up (token
    // tables, the model client's connections) is not the batch's.
    let (mut warm, _) = fleet
        .submit_windowed(&spec()?, &tasks("warm", 1), 1)
        .await?;
    finish_times(&mut warm).await?;
    let started = chrono::Utc::now();
    let (mut follower, records) = fleet
        .submit_windowed(&spec()?, &tasks("a", runs), u32::from(CONCURRENCY))
        .await?;
    let submitted = (chrono::Utc::now() - started).to_std().unwrap_or_default();
    finish_times(&mut follower).await?;
    // When each run ended, from its record (the commit of its last step):
    // results exist from then, whether or not a follower polled yet (this
    // one starts once every run is submitted).
    let mut ends = Vec::with_capacity(records.len());
    for run in &records {
        let ended = fleet
            .store
            .find_run(&run.run_id)
            .await?
            .context("a run's record is gone")?;
        ends.push((ended.updated_at - started).to_std().unwrap_or_default());
    }
    fleet.shutdown().await?;
    ends.sort();
    let tenth = ends
        .get(runs.div_ceil(10).saturating_sub(1))
        .context("no results")?;
    let last = ends.last().context("no results")?;
    Ok((*tenth, *last, submitted))
}

async fn interactive(runs: usize, tries: usize) -> anyhow::Result<(Vec<Duration>, Duration)> {
    let server = server().await?;
    let mut fleet = fleet(&server)?;
    let spec = spec()?;
    let (mut follower, _) = fleet
        .submit_windowed(&spec, &tasks("b", runs), u32::from(CONCURRENCY))
        .await?;
    let intake = fleet.intake()?.with_priority(Priority::Interactive);
    // The interactive runs are followed as a batch of their own (not
    // windowed): a run of no batch has no done list to follow.
    let own = format!("interactive-{}", uuid::Uuid::new_v4());
    let mut interactive = BatchFollower::new(fleet.store.clone(), own.clone());
    let mut submitted = Vec::new();
    for i in 0..tries {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let input = format!("Now {i}");
        let at = Instant::now();
        let run = submit_task(
            &intake,
            &spec.name,
            &task(&format!("i{i}"), &input),
            Some(&own),
        )
        .await?;
        interactive.track(&run);
        submitted.push((input, at));
    }
    finish_times(&mut follower).await?;
    finish_times(&mut interactive).await?;
    fleet.shutdown().await?;
    let requests = server.timed_requests();
    let mut first: HashMap<&str, Instant> = HashMap::new();
    let mut second: HashMap<&str, Instant> = HashMap::new();
    for (at, body) in &requests {
        let Some(input) = input_of(body) else {
            continue;
        };
        if first.contains_key(input) {
            second.entry(input).or_insert(*at);
        } else {
            first.insert(input, *at);
        }
    }
    let waits = submitted
        .iter()
        .map(|(input, at)| {
            first
                .get(input.as_str())
                .map(|first| first.saturating_duration_since(*at))
                .context("an interactive run never called the model")
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut steps: Vec<f64> = second
        .iter()
        .filter(|(input, _)| input.starts_with("Job b"))
        .filter_map(|(input, s)| first.get(input).map(|f| (*s - *f).as_secs_f64()))
        .collect();
    steps.sort_by(f64::total_cmp);
    let step = crate::stats::median(&steps).context("no batch step measured")?;
    Ok((waits, Duration::from_secs_f64(step)))
}

/// Each tenant limited to half the fleet, as `[admission.tenants]` would.
fn halves(tenants: &[&str]) -> RunBounds {
    RunBounds {
        tenant_concurrency: tenants
            .iter()
            .filter_map(|t| TenantId::new((*t).to_owned()).ok())
            .map(|t| (t, u32::from(CONCURRENCY / 2)))
            .collect(),
        ..RunBounds::default()
    }
}

/// An intake of `tenant`'s batches on `fleet` under `bounds`.
fn tenant_intake(fleet: &Fleet, tenant: &str, bounds: &RunBounds) -> anyhow::Result<Intake> {
    Ok(fleet
        .intake()?
        .with_admission_window(u32::from(CONCURRENCY))
        .with_tenant(TenantId::new(tenant.to_owned())?)
        .with_bounds(bounds.clone()))
}

/// Submits the batches of `lists` (batch `k` through `intakes[k]`) task by
/// task in turn, so they start together; a follower of each.
async fn submit_together(
    fleet: &Fleet,
    spec: &AgentSpec,
    intakes: &[Intake],
    lists: &[Vec<TaskLine>],
) -> anyhow::Result<Vec<BatchFollower>> {
    let mut followers: Vec<BatchFollower> = lists
        .iter()
        .map(|_| BatchFollower::new(fleet.store.clone(), uuid::Uuid::new_v4().to_string()))
        .collect();
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        for (k, list) in lists.iter().enumerate() {
            if let Some(task) = list.get(i) {
                let batch = followers[k].batch_id().to_owned();
                let run = submit_task(&intakes[k], &spec.name, task, Some(&batch)).await?;
                followers[k].track(&run);
            }
        }
    }
    Ok(followers)
}

/// Polls `followers` until every run ended; `on_line(k)` is told of each
/// result of follower `k` as it comes.
async fn drain(
    followers: &mut [BatchFollower],
    mut on_line: impl FnMut(usize),
) -> anyhow::Result<()> {
    let deadline = Instant::now() + LIMIT;
    while followers.iter().any(|f| f.remaining() > 0) {
        ensure!(
            Instant::now() < deadline,
            "the batches did not finish in time"
        );
        let mut polled = false;
        for (k, follower) in followers.iter_mut().enumerate() {
            for _ in follower.poll().await? {
                polled = true;
                on_line(k);
            }
        }
        if !polled {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    Ok(())
}

/// (c): two tenants' batches of `runs`, each tenant limited to half the
/// fleet; results of each when a quarter, half, ... of all were in.
async fn fairness(runs: usize) -> anyhow::Result<Vec<(usize, usize)>> {
    let server = server().await?;
    let fleet = fleet(&server)?;
    let spec = spec()?;
    let tenants = ["alpha", "beta"];
    let bounds = halves(&tenants);
    let intakes = tenants
        .iter()
        .map(|t| tenant_intake(&fleet, t, &bounds))
        .collect::<anyhow::Result<Vec<_>>>()?;
    intakes[0].register(&spec).await?;
    let lists = [tasks("x", runs), tasks("y", runs)];
    let mut followers = submit_together(&fleet, &spec, &intakes, &lists).await?;
    let mut done = [0_usize; 2];
    let mut quarters = Vec::new();
    let total = 2 * runs;
    drain(&mut followers, |k| {
        done[k] += 1;
        if (done[0] + done[1]) * 4 % total == 0 {
            quarters.push((done[0], done[1]));
        }
    })
    .await?;
    fleet.shutdown().await?;
    Ok(quarters)
}

/// (d): tenant `big` runs [`CROWD_BATCHES`] batches of `runs`, tenant
/// `small` one of a tenth of their sum, all started together; `limited`
/// holds each tenant to half the fleet. Returns (small's results, big's
/// results) at every quarter of small's batch.
async fn crowding(runs: usize, limited: bool) -> anyhow::Result<Vec<(usize, usize)>> {
    let server = server().await?;
    let fleet = fleet(&server)?;
    let spec = spec()?;
    let bounds = if limited {
        halves(&["big", "small"])
    } else {
        RunBounds::default()
    };
    let small_runs = (CROWD_BATCHES * runs / 10).max(4);
    let mut intakes = vec![tenant_intake(&fleet, "small", &bounds)?];
    let mut lists = vec![tasks("s", small_runs)];
    for b in 0..CROWD_BATCHES {
        intakes.push(tenant_intake(&fleet, "big", &bounds)?);
        lists.push(tasks(&format!("b{b}-"), runs));
    }
    intakes[0].register(&spec).await?;
    let mut followers = submit_together(&fleet, &spec, &intakes, &lists).await?;
    let (mut small, mut big) = (0_usize, 0_usize);
    let mut quarters = Vec::new();
    drain(&mut followers, |k| {
        if k == 0 {
            small += 1;
            if small * 4 % small_runs == 0 {
                quarters.push((small, big));
            }
        } else {
            big += 1;
        }
    })
    .await?;
    fleet.shutdown().await?;
    Ok(quarters)
}

/// Item 10's section of BENCHMARKS.md, or why it was not measured.
pub fn render(out: &mut String, section: &Result<Numbers, String>) {
    match section {
        Ok(n) => out.push_str(&render_numbers(n)),
        Err(e) => out.push_str(&format!(
            "## 10. Batch admission, priorities and sharing (issue #17)\n\nNot measured: {e}\n\n"
        )),
    }
}

fn render_numbers(n: &Numbers) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1_000.0;
    let tenth = ms(n.total) / 10.0;
    let a_ratio = ms(n.first_tenth) / tenth;
    let mut waits: Vec<f64> = n.interactive_waits.iter().map(|d| ms(*d)).collect();
    waits.sort_by(f64::total_cmp);
    let p50 = crate::stats::median(&waits).unwrap_or(f64::NAN);
    let p99 = crate::stats::percentile(&waits, 99.0).unwrap_or(f64::NAN);
    let step = ms(n.step_time);
    let verdict = |met: bool| if met { "met" } else { "missed" };
    let mut out = String::new();
    out.push_str("## 10. Batch admission, priorities and sharing (issue #17)\n\n");
    out.push_str(&format!(
        "Measured by this item alone (`deepfleet-bench --only admission`{}), on an embedded \
         fleet running {CONCURRENCY} steps at once against the scripted server (model \
         latency {} ms; each run two model calls); each batch's admission window is \
         {CONCURRENCY} runs. (a) starts its clock after one untimed warm-up run (the process's \
         one-time start-up: token tables, connections), when the batch's submission starts.\n\n",
        if cfg!(debug_assertions) {
            ", a debug build"
        } else {
            ""
        },
        LATENCY.as_millis()
    ));
    out.push_str("| claim | measured | target | verdict |\n|---|---|---|---|\n");
    out.push_str(&format!(
        "| (a) first 10 % of a {}-run batch's results | {:.0} ms (total {:.0} ms, of which submitting every run {:.0} ms; 10 % of the total {:.0} ms: {:.2}x) | within 1.3x of 10 % of the total | {} |\n",
        n.plan_runs.0,
        ms(n.first_tenth),
        ms(n.total),
        ms(n.submitted),
        tenth,
        a_ratio,
        verdict(a_ratio <= 1.3)
    ));
    out.push_str(&format!(
        "| (b) an interactive run's first model call after its submission, during a {}-run batch, {} tries | p50 {:.0} ms, p99 {:.0} ms | within one step time ({:.0} ms, the median between a batch run's two calls) | {} |\n",
        n.plan_runs.1,
        waits.len(),
        p50,
        p99,
        step,
        verdict(p99 <= step)
    ));
    let worst = n
        .quarters
        .iter()
        .map(|(a, b)| (*a as f64 - *b as f64).abs() / (*a.max(b)).max(1) as f64)
        .fold(0.0_f64, f64::max);
    let shown: Vec<String> = n.quarters.iter().map(|(a, b)| format!("{a}/{b}")).collect();
    out.push_str(&format!(
        "| (c) two tenants' {}-run batches started together: results of each at every quarter | {} (largest gap {:.1} %) | within 10 % | {} |\n",
        n.plan_runs.2,
        shown.join(", "),
        worst * 100.0,
        verdict(worst <= 0.10)
    ));
    let small_runs = (CROWD_BATCHES * n.plan_runs.3 / 10).max(4);
    // The last quarter holds the small batch's tail, when fewer of its
    // runs are left than its limit lets in flight: no limit keeps pace
    // then, so the claim is the first three quarters.
    let crowd_gap = |quarters: &[(usize, usize)]| {
        quarters
            .iter()
            .take(3)
            .map(|(small, big)| 1.0 - *small as f64 / (*big).max(1) as f64)
            .fold(0.0_f64, f64::max)
    };
    let shown = |quarters: &[(usize, usize)]| {
        quarters
            .iter()
            .map(|(small, big)| format!("{small}/{big}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let limited_gap = crowd_gap(&n.crowded);
    out.push_str(&format!(
        "| (d) a tenant's {CROWD_BATCHES} batches of {} runs against another tenant's one of {small_runs}, each tenant limited to half the fleet: the small tenant's results / the big one's at every quarter of its batch | {} (small tenant behind by at most {:.1} % over the first three); without limits: {} | the small tenant keeps pace (within 10 %) until its batch's tail | {} |\n\n",
        n.plan_runs.3,
        shown(&n.crowded),
        limited_gap * 100.0,
        shown(&n.crowded_unlimited),
        verdict(limited_gap <= 0.10)
    ));
    out.push_str(&format!(
        "(c) and (d) give each tenant half the fleet ({} of its {CONCURRENCY} steps) with \
         `admission.tenant_concurrency`-style limits: a tenant's runs beyond its limit wait \
         on the queue for a place, whatever its batches' windows. Without the limits, (d)'s \
         big tenant holds a window per batch, so its {CROWD_BATCHES} batches take \
         {CROWD_BATCHES} of every {} places and the small tenant gets a fifth of the fleet. \
         The last quarter of (d) is the small batch's tail: once fewer of its runs are left \
         than its limit, the big tenant's share grows, as it should.\n\n",
        CONCURRENCY / 2,
        CROWD_BATCHES + 1
    ));
    out
}
