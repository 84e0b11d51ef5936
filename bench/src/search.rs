//! Item 8 (issue #15): one page of thread search as a tenant's threads
//! grow from 1,000 to 100,000, through the scheduler's HTTP API on Redis.
//!
//! The scheduler's router serves on a loopback port over a Redis store
//! under a prefix of its own (deleted afterwards, pass or fail). Thread
//! records are written through the scheduler's repository, so they are
//! indexed as the API indexes them; ten other tenants hold 1,000 threads
//! each (noise the search must not read), and the searching tenant's
//! newest thread has 1,000 runs queued on it (the case where one page
//! once took seconds). Each size is searched many times: an unfiltered
//! page (`limit` 10), and a page filtered by metadata that one thread in
//! ten matches.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use chrono::{TimeZone, Utc};
use deepfleet_api::{ApiState, router};
use deepfleet_proto::TenantId;
use deepfleet_proto::api::MultitaskStrategy;
use deepfleet_queue::Queue;
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_scheduler::keys::ApiKeys;
use deepfleet_scheduler::repo::queued::queued;
use deepfleet_scheduler::repo::runs::RunMeta;
use deepfleet_scheduler::repo::threads::{ThreadRecord, threads};
use deepfleet_scheduler::runs::{Graphs, Runs};
use deepfleet_scheduler::{Intake, Lifecycle};
use deepfleet_store::Store;
use deepfleet_store::redis::RedisStore;
use futures::{StreamExt, TryStreamExt};
use serde_json::{Map, Value, json};

use crate::stats::{median, percentile, ratio};

/// Where the bench's Redis is (`scripts/services.sh` starts it).
const REDIS_URL: &str = "redis://127.0.0.1:6379";
/// Writes in flight while filling.
const FILL_CONCURRENCY: usize = 128;
/// Threads of each other tenant, and how many other tenants.
const NOISE: (usize, usize) = (1_000, 10);
/// Runs queued on the searching tenant's newest thread.
const QUEUED_RUNS: usize = 1_000;
/// The page size searched.
const LIMIT: usize = 10;

/// How many searches, and at which sizes.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Threads of the searching tenant, in increasing order.
    pub sizes: Vec<usize>,
    /// Searches timed per size and kind (after as many unmeasured).
    pub searches: usize,
}

/// One size's timings, in milliseconds per search.
pub struct SearchTimes {
    /// Threads of the searching tenant.
    pub threads: usize,
    /// Unfiltered pages.
    pub page: Vec<f64>,
    /// Pages filtered by a metadata value one thread in ten has.
    pub filtered: Vec<f64>,
}

impl SearchTimes {
    /// Median and 99th percentile of unfiltered pages.
    pub fn page_p50_p99(&self) -> (Option<f64>, Option<f64>) {
        (median(&self.page), percentile(&self.page, 99.0))
    }
}

/// Measures thread search at every size of `plan`.
pub async fn thread_search(plan: &Plan) -> anyhow::Result<Vec<SearchTimes>> {
    let prefix = format!("dfbench-search-{}", uuid::Uuid::new_v4().simple());
    let store = Arc::new(
        RedisStore::connect(REDIS_URL, &prefix)
            .await
            .with_context(|| format!("connecting to Redis at {REDIS_URL}"))?,
    );
    let measured = measure(Arc::clone(&store) as Arc<dyn Store>, plan).await;
    let deleted = store.delete_prefix().await;
    let times = measured?;
    deleted.context("deleting the bench's keys")?;
    Ok(times)
}

async fn measure(store: Arc<dyn Store>, plan: &Plan) -> anyhow::Result<Vec<SearchTimes>> {
    let steps: Arc<dyn Queue> = Arc::new(MemoryQueue::new());
    let state = ApiState {
        runs: Runs {
            life: Lifecycle::new(Intake::new(Arc::clone(&store), steps)),
            graphs: Graphs::new(Vec::new()),
            started_at: Utc::now(),
            tenant_runs_in_flight: None,
        },
        metrics: None,
        keys: ApiKeys::open(),
        max_body_bytes: deepfleet_api::BODY_LIMIT,
        allowed_hosts: Default::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/threads/search", listener.local_addr()?);
    let server = tokio::spawn(async move { axum::serve(listener, router(state)).await });
    let client = reqwest::Client::new();
    let tenant = TenantId::default();
    for n in 0..NOISE.1 {
        let other = TenantId::new(format!("noise-{n}"))?;
        fill(store.as_ref(), &other, 0..NOISE.0).await?;
    }
    let mut out = Vec::new();
    let mut written = 0;
    for &size in &plan.sizes {
        fill(store.as_ref(), &tenant, written..size).await?;
        written = size;
        queue_on_newest(store.as_ref(), &tenant, size).await?;
        let page = time(&client, &url, &json!({"limit": LIMIT}), plan.searches).await?;
        let filter = json!({"limit": LIMIT, "metadata": {"shard": 0}});
        let filtered = time(&client, &url, &filter, plan.searches).await?;
        out.push(SearchTimes {
            threads: size,
            page,
            filtered,
        });
    }
    server.abort();
    Ok(out)
}

/// When thread `i` was made: one second apart, so the newest is the last.
fn created(i: usize) -> chrono::DateTime<Utc> {
    let base = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single();
    base.unwrap_or_default() + chrono::Duration::seconds(i64::try_from(i).unwrap_or(i64::MAX))
}

/// Writes threads `range` of `tenant` through the scheduler's repository.
async fn fill(
    store: &dyn Store,
    tenant: &TenantId,
    range: std::ops::Range<usize>,
) -> anyhow::Result<()> {
    let repo = threads(store);
    futures::stream::iter(range)
        .map(|i| {
            let mut metadata = Map::new();
            metadata.insert("shard".into(), Value::from(i % 10));
            let id = format!("{tenant}-thread-{i:06}");
            let record = ThreadRecord {
                created_at: created(i),
                updated_at: created(i),
                ..ThreadRecord::new(tenant.clone(), id, metadata)
            };
            let repo = &repo;
            async move { repo.put(&record.thread_id, &record).await }
        })
        .buffer_unordered(FILL_CONCURRENCY)
        .try_collect::<()>()
        .await?;
    Ok(())
}

/// Queues [`QUEUED_RUNS`] runs on the newest of `size` threads (the first
/// of every page), so that each search reads a busy thread's status.
async fn queue_on_newest(store: &dyn Store, tenant: &TenantId, size: usize) -> anyhow::Result<()> {
    let thread_id = format!("{tenant}-thread-{:06}", size - 1);
    let metas: Vec<RunMeta> = (0..QUEUED_RUNS)
        .map(|i| RunMeta {
            run_id: uuid::Uuid::now_v7().to_string(),
            thread_id: thread_id.clone(),
            tenant: tenant.clone(),
            assistant_id: "agent".into(),
            graph_id: "agent".into(),
            metadata: Map::new(),
            kwargs: Map::new(),
            multitask_strategy: MultitaskStrategy::Enqueue,
            batch_id: None,
            input: Vec::new(),
            files: BTreeMap::new(),
            context: None,
            cancelled: false,
            not_before: None,
            rewind: None,
            priority: Default::default(),
            created_at: created(size) + chrono::Duration::milliseconds(i as i64),
        })
        .collect();
    let repo = queued(store);
    futures::stream::iter(&metas)
        .map(|meta| repo.put(&meta.run_id, meta))
        .buffer_unordered(FILL_CONCURRENCY)
        .try_collect::<()>()
        .await?;
    Ok(())
}

/// Milliseconds of `n` searches with `body`, after `n` unmeasured ones;
/// every answer must be a full page whose first thread is busy.
async fn time(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    n: usize,
) -> anyhow::Result<Vec<f64>> {
    let mut out = Vec::with_capacity(n);
    for i in 0..2 * n {
        let started = Instant::now();
        let answer = client
            .post(url)
            .timeout(Duration::from_secs(30))
            .json(body)
            .send()
            .await?;
        let status = answer.status();
        let page: Vec<Value> = answer.json().await?;
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        ensure!(status.is_success(), "search answered {status}");
        ensure!(page.len() == LIMIT, "a page of {} threads", page.len());
        if body.get("metadata").is_none() {
            let first = page.first().and_then(|t| t["status"].as_str());
            ensure!(first == Some("busy"), "the newest thread is {first:?}");
        }
        if i >= n {
            out.push(elapsed);
        }
    }
    Ok(out)
}

/// The most the 100,000-thread page may take, as a multiple of the
/// 1,000-thread one (issue #15).
const TARGET_RATIO: f64 = 2.0;

/// Section 8 of the report.
pub fn render(out: &mut String, section: &Result<Vec<SearchTimes>, String>) {
    let _ = writeln!(out, "## 8. Thread search (issue #15: indexes, not scans)\n");
    let rows = match section {
        Ok(rows) => rows,
        Err(e) => {
            let _ = writeln!(out, "Not measured: {e}\n");
            return;
        }
    };
    let _ = writeln!(
        out,
        "Milliseconds per `POST /threads/search` (`limit` {LIMIT}) through the scheduler's API on Redis, \
         {} other tenants holding {} threads each; the newest thread has {QUEUED_RUNS} queued runs.\n",
        NOISE.1, NOISE.0
    );
    let _ = writeln!(
        out,
        "| tenant's threads | searches | page p50 | page p99 | filtered p50 | filtered p99 |\n|---:|---:|---:|---:|---:|---:|"
    );
    let ms = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"));
    for r in rows {
        let (p50, p99) = r.page_p50_p99();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            r.threads,
            r.page.len(),
            ms(p50),
            ms(p99),
            ms(median(&r.filtered)),
            ms(percentile(&r.filtered, 99.0)),
        );
    }
    let (first, last) = (rows.first(), rows.last());
    let grown = ratio(
        last.and_then(|r| r.page_p50_p99().0),
        first.and_then(|r| r.page_p50_p99().0),
    );
    let verdict = match grown {
        Some(g) if g <= TARGET_RATIO => "met",
        Some(_) => "**missed**",
        None => "not measured",
    };
    let _ = writeln!(
        out,
        "\nOne page at {} threads ÷ at {} (p50): **{}** (target ≤ {TARGET_RATIO:.0}×: {verdict}). \
         *Filtered* pages match one thread in ten, so a page reads about a hundred records whatever the total.\n",
        last.map_or(0, |r| r.threads),
        first.map_or(0, |r| r.threads),
        grown.map_or_else(|| "–".to_owned(), |g| format!("{g:.2}×")),
    );
}
