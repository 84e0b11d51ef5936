//! Batches of task lines as a fleet keeps them (`deepfleet submit`): a
//! header per batch and its members, the tasks with the run each is
//! given, so a batch can be followed, counted and cancelled by its id
//! alone, from any process.
//!
//! A member is recorded before its run is created: every run of the
//! batch is on its roster, and a member without a run is a task whose
//! submission was interrupted.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use deepfleet_proto::keys::records::{TASK_BATCHES, task_batch_members};
use deepfleet_proto::{RunRecord, RunStatus};
use deepfleet_store::{Order, Store};
use serde::{Deserialize, Serialize};

use crate::batch_ids::batch_run_id;
use crate::error::SchedulerError;
use crate::repo::{Listing, Repository};

/// A task batch's header: that it exists, and for which agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskBatchHeader {
    /// The batch.
    pub batch_id: String,
    /// The agent its tasks run.
    pub agent: String,
    /// When it was first submitted.
    pub created_at: DateTime<Utc>,
    /// Random, made with the header: what the batch's thread ids are
    /// derived with besides the batch and the task, so they cannot be
    /// told, and claimed, before the batch makes them. Empty for a batch
    /// from before salts.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub salt: String,
}

/// One task of a batch.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TaskBatchMember {
    /// Its position in the tasks file.
    pub index: u64,
    /// The task.
    pub task_id: String,
    /// Its run ([`batch_run_id`]).
    pub run_id: String,
}

/// How many of a batch's tasks are where.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskBatchCounts {
    /// The batch.
    pub batch_id: String,
    /// Its tasks.
    pub total: usize,
    /// Tasks by their run's status (`not_submitted` for a task whose run
    /// was never created).
    pub counts: BTreeMap<String, usize>,
}

impl TaskBatchCounts {
    /// Tasks whose run has ended or waits for a human decision.
    pub fn ended(&self) -> usize {
        ["success", "error", "cancelled", "timeout", "interrupted"]
            .iter()
            .filter_map(|s| self.counts.get(*s))
            .sum()
    }
}

/// The task batches of one store.
#[derive(Clone)]
pub struct TaskBatches {
    store: Arc<dyn Store>,
}

impl TaskBatches {
    /// The task batches `store` keeps.
    pub fn new(store: Arc<dyn Store>) -> Self {
        TaskBatches { store }
    }

    fn headers(&self) -> Repository<'_, TaskBatchHeader> {
        Repository::new(self.store.as_ref(), TASK_BATCHES)
    }

    /// The members of `batch_id`, listed in the index of the same name in
    /// file order.
    fn members(&self, batch_id: &str) -> Repository<'_, TaskBatchMember> {
        let index = task_batch_members(batch_id);
        Repository::new(self.store.as_ref(), index.clone()).indexed(
            move |member: &TaskBatchMember| {
                let score = i64::try_from(member.index).unwrap_or(i64::MAX);
                vec![Listing::new(index.clone(), score)]
            },
        )
    }

    /// Records batch `batch_id` of `agent` unless it exists.
    pub async fn open(&self, batch_id: &str, agent: &str) -> Result<(), SchedulerError> {
        self.salt(batch_id, agent).await.map(drop)
    }

    /// The salt of batch `batch_id`'s thread ids, recording the batch (of
    /// `agent`, with a new salt) unless it exists: whichever intake
    /// records it first, every intake reads the same salt.
    pub async fn salt(&self, batch_id: &str, agent: &str) -> Result<String, SchedulerError> {
        // Read first: every task of a batch asks, and only the first finds
        // no header.
        if let Some(kept) = self.headers().get(batch_id).await? {
            return Ok(kept.salt);
        }
        let header = TaskBatchHeader {
            batch_id: batch_id.to_owned(),
            agent: agent.to_owned(),
            created_at: Utc::now(),
            salt: uuid::Uuid::new_v4().simple().to_string(),
        };
        if self.headers().insert(batch_id, &header).await? {
            return Ok(header.salt);
        }
        let kept = self.headers().get(batch_id).await?;
        Ok(kept.map_or(header.salt, |kept| kept.salt))
    }

    /// Records task `task_id`, the `index`th of its file, as a member of
    /// `batch_id` (again: the same task has the same run).
    pub async fn add(
        &self,
        batch_id: &str,
        index: u64,
        task_id: &str,
    ) -> Result<(), SchedulerError> {
        let run_id = batch_run_id(batch_id, task_id);
        let member = TaskBatchMember {
            index,
            task_id: task_id.to_owned(),
            run_id: run_id.clone(),
        };
        self.members(batch_id).put(&run_id, &member).await?;
        Ok(())
    }

    /// The batch's tasks in file order, each with its run if it was
    /// created; `None` if the store has no such batch.
    pub async fn runs(
        &self,
        batch_id: &str,
    ) -> Result<Option<Vec<(TaskBatchMember, Option<RunRecord>)>>, SchedulerError> {
        if self.headers().get(batch_id).await?.is_none() {
            return Ok(None);
        }
        let members = self
            .members(batch_id)
            .walk(task_batch_members(batch_id), Order::Ascending)
            .all()
            .await?;
        let mut out = Vec::with_capacity(members.len());
        for member in members {
            let run = self.store.find_run(&member.run_id).await?;
            out.push((member, run));
        }
        Ok(Some(out))
    }

    /// The batch's tasks counted by status; `None` if there is no such
    /// batch.
    pub async fn counts(&self, batch_id: &str) -> Result<Option<TaskBatchCounts>, SchedulerError> {
        let Some(runs) = self.runs(batch_id).await? else {
            return Ok(None);
        };
        let mut counts = TaskBatchCounts {
            batch_id: batch_id.to_owned(),
            total: runs.len(),
            counts: BTreeMap::new(),
        };
        for (_, run) in &runs {
            let status = run
                .as_ref()
                .map_or("not_submitted", |r| status_name(r.status));
            *counts.counts.entry(status.to_owned()).or_default() += 1;
        }
        Ok(Some(counts))
    }

    /// Asks every run of the batch that has not ended (nor waits for a
    /// human decision) to stop: a worker ends it, cancelled, at its next
    /// step. Returns how many were asked; `None` if there is no such
    /// batch.
    pub async fn cancel(&self, batch_id: &str) -> Result<Option<usize>, SchedulerError> {
        let Some(runs) = self.runs(batch_id).await? else {
            return Ok(None);
        };
        let mut asked = 0;
        for run in runs.iter().filter_map(|(_, run)| run.as_ref()) {
            if run.status.is_terminal() || run.status == RunStatus::AwaitingHuman {
                continue;
            }
            self.store
                .request_cancel(&run.thread_id, &run.run_id)
                .await?;
            asked += 1;
        }
        Ok(Some(asked))
    }
}

/// A status as the counts name it (its serde form).
fn status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Pending => "pending",
        RunStatus::Running => "running",
        RunStatus::Waiting => "waiting",
        RunStatus::AwaitingHuman => "interrupted",
        RunStatus::Success => "success",
        RunStatus::Error => "error",
        RunStatus::Cancelled => "cancelled",
        RunStatus::Timeout => "timeout",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use deepfleet_proto::{AgentSpec, TaskLine};
    use deepfleet_queue::memory::MemoryQueue;
    use deepfleet_store::embedded::EmbeddedStore;

    use crate::{Intake, submit_task};

    fn task(id: &str) -> TaskLine {
        TaskLine {
            id: id.into(),
            input: format!("do {id}"),
            context: None,
            files: None,
            state: None,
            timeout_secs: None,
        }
    }

    #[tokio::test]
    async fn a_batch_is_counted_and_cancelled_by_its_id() {
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let intake = Intake::new(Arc::clone(&store), Arc::new(MemoryQueue::new()));
        intake
            .register(&AgentSpec::from_yaml("name: a\nmodel: openai:x\n").unwrap())
            .await
            .unwrap();
        let batches = TaskBatches::new(Arc::clone(&store));
        assert_eq!(batches.counts("b1").await.unwrap(), None);
        batches.open("b1", "a").await.unwrap();
        for (i, id) in ["t1", "t2", "t3"].into_iter().enumerate() {
            batches.add("b1", i as u64, id).await.unwrap();
        }
        for id in ["t1", "t2"] {
            submit_task(&intake, "a", &task(id), Some("b1"))
                .await
                .unwrap();
        }
        let counts = batches.counts("b1").await.unwrap().unwrap();
        assert_eq!(counts.total, 3);
        assert_eq!(counts.counts.get("pending"), Some(&2));
        assert_eq!(counts.counts.get("not_submitted"), Some(&1));
        assert_eq!(counts.ended(), 0);
        let runs = batches.runs("b1").await.unwrap().unwrap();
        let ids: Vec<&str> = runs.iter().map(|(m, _)| m.task_id.as_str()).collect();
        assert_eq!(ids, ["t1", "t2", "t3"]);
        assert_eq!(batches.cancel("b1").await.unwrap(), Some(2));
        let run = runs[0].1.as_ref().unwrap();
        assert!(
            store
                .cancel_requested(&run.thread_id, &run.run_id)
                .await
                .unwrap()
        );
        assert_eq!(batches.cancel("nope").await.unwrap(), None);
    }
}
