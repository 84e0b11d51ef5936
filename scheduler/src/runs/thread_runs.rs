//! A thread's runs as its followers find them: the newest, and those
//! created since a time that a follower has not followed yet.

use std::collections::VecDeque;

use chrono::{DateTime, Utc};
use deepfleet_proto::keys::records::thread_runs;
use deepfleet_store::{Order, StoreError};

use super::Runs;
use crate::repo::runs::{RunMeta, runs_of};

/// The thread's newest run, if it has any.
pub async fn newest_run(runs: &Runs, thread_id: &str) -> Result<Option<RunMeta>, StoreError> {
    let repo = runs_of(runs.store(), thread_id);
    let mut walk = repo
        .walk(thread_runs(thread_id), Order::Descending)
        .chunk(1);
    walk.next().await
}

/// The thread's runs created at or after `since` that are not in
/// `followed`, oldest first: a walk of its run index from the newest,
/// stopping at the first older run.
pub async fn runs_since(
    runs: &Runs,
    thread_id: &str,
    since: DateTime<Utc>,
    followed: &VecDeque<String>,
) -> Result<Vec<RunMeta>, StoreError> {
    let repo = runs_of(runs.store(), thread_id);
    let mut walk = repo
        .walk(thread_runs(thread_id), Order::Descending)
        .chunk(16);
    let mut news = Vec::new();
    while let Some(meta) = walk.next().await? {
        if meta.created_at < since {
            break;
        }
        if !followed.contains(&meta.run_id) {
            news.push(meta);
        }
    }
    news.reverse();
    Ok(news)
}
