//! Submitting the batch and following it to the end while the faults
//! strike, riding out the store going away under the follower.

use std::sync::Arc;
use std::time::Duration;

use anyhow::ensure;
use deepfleet_proto::{AgentSpec, ResultLine, TaskLine};
use deepfleet_scheduler::{BatchFollower, submit_task};
use deepfleet_testkit::fleet::Fleet;
use futures::StreamExt;
use tokio::time::Instant;

use crate::faults::Faults;

/// Runs submitted at once.
const SUBMIT_CONCURRENCY: usize = 64;
/// How often results are polled and faults considered.
const POLL_EVERY: Duration = Duration::from_millis(50);

/// What following the batch saw.
pub struct Outcome {
    /// Result lines, in completion order.
    pub results: Vec<ResultLine>,
    /// Polls that failed (the store was away) and were tried again.
    pub poll_errors: usize,
}

/// Submits `tasks` as one batch and follows it until every run reported,
/// for at most `limit`, ticking `faults` all along.
pub async fn run(
    fleet: &mut Fleet,
    faults: &mut Faults<'_>,
    spec: &AgentSpec,
    tasks: &[TaskLine],
    limit: Duration,
) -> anyhow::Result<Outcome> {
    let intake = fleet.intake()?;
    intake.register(spec).await?;
    let batch = uuid::Uuid::new_v4().to_string();
    let submitting = {
        let intake = Arc::new(intake);
        let (name, tasks, batch) = (spec.name.clone(), tasks.to_vec(), batch.clone());
        tokio::spawn(async move {
            futures::stream::iter(tasks)
                .map(|task| {
                    let (intake, name, batch) = (Arc::clone(&intake), name.clone(), batch.clone());
                    async move { submit_task(&intake, &name, &task, Some(&batch)).await }
                })
                .buffered(SUBMIT_CONCURRENCY)
                .collect::<Vec<_>>()
                .await
        })
    };
    // Workers die while runs are still coming in.
    while !submitting.is_finished() {
        faults.tick(fleet, 0, tasks.len()).await?;
        tokio::time::sleep(POLL_EVERY).await;
    }
    let mut follower = BatchFollower::new(fleet.store.clone(), batch);
    for run in submitting.await? {
        follower.track(&run?);
    }
    let followed = follow(fleet, faults, &mut follower, tasks.len(), limit).await;
    faults.finish(fleet).await?;
    followed
}

async fn follow(
    fleet: &mut Fleet,
    faults: &mut Faults<'_>,
    follower: &mut BatchFollower,
    total: usize,
    limit: Duration,
) -> anyhow::Result<Outcome> {
    let deadline = Instant::now() + limit;
    let mut outcome = Outcome {
        results: Vec::new(),
        poll_errors: 0,
    };
    // After a failed poll, runs whose done notice the store lost with the
    // failure are found from their records.
    let mut catch_up = false;
    while follower.remaining() > 0 {
        ensure!(
            Instant::now() < deadline,
            "{} runs did not finish within {limit:?} ({} did)",
            follower.remaining(),
            outcome.results.len()
        );
        match follower.poll().await {
            Ok(lines) => {
                outcome.results.extend(lines);
                if catch_up && let Ok(lines) = follower.collect_ended().await {
                    outcome.results.extend(lines);
                    catch_up = false;
                }
            }
            Err(e) => {
                eprintln!("chaos: following the batch failed ({e}); trying again");
                outcome.poll_errors += 1;
                catch_up = true;
            }
        }
        if follower.remaining() > 0 {
            faults.tick(fleet, outcome.results.len(), total).await?;
            tokio::time::sleep(POLL_EVERY).await;
        }
    }
    Ok(outcome)
}
