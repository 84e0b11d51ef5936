//! After the batch: every run the store holds, top-level and subagent,
//! checked for steps committed twice (`deepfleet_testkit::exactly_once`,
//! as `tests/e2e/crash.rs` checks them) and for runs created twice.

use deepfleet_proto::RunStatus;
use deepfleet_store::Store;
use deepfleet_testkit::exactly_once;

/// What the store holds after the batch.
#[derive(Debug, Default)]
pub struct Audit {
    /// Runs in the store, subagents included.
    pub runs: usize,
    /// Steps committed, over all runs.
    pub steps: u64,
    /// Runs not ended `success`.
    pub unfinished: Vec<String>,
    /// What was done twice: a step committed twice (more assistant turns
    /// than steps), a tool call answered twice, a call never answered.
    pub duplicated: Vec<String>,
}

/// Every run id under `prefix` in the Redis at `url`, with its thread.
async fn run_ids(url: &str, prefix: &str) -> anyhow::Result<Vec<(String, String)>> {
    let client = redis::Client::open(url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let index = format!("{prefix}:run:");
    let mut keys = Vec::new();
    let mut cursor = 0_u64;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{index}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut conn)
            .await?;
        keys.extend(batch);
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    let mut runs = Vec::with_capacity(keys.len());
    for key in keys {
        let thread: String = redis::cmd("GET").arg(&key).query_async(&mut conn).await?;
        let run = key.strip_prefix(&index).unwrap_or(&key).to_owned();
        runs.push((run, thread));
    }
    Ok(runs)
}

/// Checks every run of the fleet whose keys start with `prefix`.
pub async fn audit(store: &dyn Store, url: &str, prefix: &str) -> anyhow::Result<Audit> {
    let mut audit = Audit::default();
    for (run_id, thread_id) in run_ids(url, prefix).await? {
        let record = store
            .get_run(&thread_id, &run_id)
            .await?
            .ok_or_else(|| anyhow::anyhow!("run {run_id} is indexed but has no record"))?;
        audit.runs += 1;
        audit.steps += u64::from(record.steps);
        if record.status != RunStatus::Success {
            audit
                .unfinished
                .push(format!("{run_id}: {:?} {:?}", record.status, record.error));
        }
        let thread = store.load_thread(&thread_id).await?;
        audit
            .duplicated
            .extend(exactly_once::repeats(&record, &thread));
    }
    Ok(audit)
}
