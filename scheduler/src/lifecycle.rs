//! The API's run lifecycle around the step protocol: run metadata and
//! thread records, the status the API reports, and the per-thread run
//! queue that keeps one active run per thread.
//!
//! A run created while its thread is busy is recorded as *queued* (its
//! input is not applied to the thread yet); [`start_queued`] starts the
//! oldest queued run of every thread whose active run has ended. Every
//! scheduler instance may run it: starting is idempotent
//! ([`Intake::start`] creates a run once), and the queue lives in the
//! store, so a scheduler restart loses nothing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use deepfleet_fleet::tokens::logged;
use deepfleet_proto::{FileData, Message, RunRecord, RunStatus, SealedContext};
use deepfleet_store::{Store, ThreadSeed};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tracing::warn;

use crate::{Intake, SchedulerError};

/// Record kind of thread records.
pub const THREADS: &str = "threads";
/// Record kind of assistants.
pub const ASSISTANTS: &str = "assistants";
/// Record kind of runs waiting for their thread.
pub const QUEUED: &str = "queued";

/// Record kind of one thread's runs.
pub fn thread_runs(thread_id: &str) -> String {
    format!("runs/{thread_id}")
}

/// What the API keeps about a thread beside its checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRecord {
    /// The thread.
    pub thread_id: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When a run last started or the record changed.
    pub updated_at: DateTime<Utc>,
    /// Caller metadata (searchable).
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// The run that last started on the thread.
    #[serde(default)]
    pub active_run: Option<String>,
    /// Made for a stateless run; hidden from searches.
    #[serde(default)]
    pub temporary: bool,
}

impl ThreadRecord {
    /// A new, idle thread.
    pub fn new(thread_id: String, metadata: Map<String, Value>) -> Self {
        let now = Utc::now();
        ThreadRecord {
            thread_id,
            created_at: now,
            updated_at: now,
            metadata,
            active_run: None,
            temporary: false,
        }
    }
}

/// What the API keeps about a run beside its [`RunRecord`]: the request
/// that made it, so a queued run can start later and `GET` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// The run.
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
    /// The assistant it runs.
    pub assistant_id: String,
    /// The agent spec (the assistant's graph).
    pub graph_id: String,
    /// Caller metadata.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// The request's run arguments, echoed as the run's `kwargs`.
    #[serde(default)]
    pub kwargs: Map<String, Value>,
    /// The multitask strategy it was created with.
    pub multitask_strategy: String,
    /// The batch it belongs to.
    #[serde(default)]
    pub batch_id: Option<String>,
    /// The messages it appends to its thread when it starts.
    #[serde(default)]
    pub input: Vec<Message>,
    /// The files it writes into its thread's state backend when it starts.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, FileData>,
    /// Its runtime context (the assistant's, overridden by the request's),
    /// sealed: it may carry keys, and is never stored in clear.
    #[serde(default)]
    pub context: Option<SealedContext>,
    /// Cancelled before it started.
    #[serde(default)]
    pub cancelled: bool,
    /// When it was accepted.
    pub created_at: DateTime<Utc>,
}

/// The run status the Agent Server API reports (`pending`, `running`,
/// `success`, `error`, `interrupted`).
pub fn api_status(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Pending => "pending",
        RunStatus::Running | RunStatus::Waiting => "running",
        // A run parked on a human decision ends `success`; its thread shows
        // `interrupted` (reference §1.4).
        RunStatus::Success | RunStatus::Interrupted => "success",
        RunStatus::Error => "error",
        // A user cancel is `interrupted` on the API.
        RunStatus::Cancelled => "interrupted",
    }
}

/// Whether a run still occupies its thread (a run parked on a human
/// decision does not: the thread is `interrupted`, and a new run resumes
/// or replaces it).
pub fn occupies_thread(status: RunStatus) -> bool {
    match status {
        RunStatus::Pending | RunStatus::Running | RunStatus::Waiting => true,
        RunStatus::Interrupted | RunStatus::Success | RunStatus::Error | RunStatus::Cancelled => {
            false
        }
    }
}

/// The lifecycle operations the API needs, over one store and intake.
#[derive(Clone)]
pub struct Lifecycle {
    intake: Intake,
}

impl Lifecycle {
    /// A lifecycle over `intake`'s store and queue.
    pub fn new(intake: Intake) -> Self {
        Lifecycle { intake }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        self.intake.store()
    }

    /// The intake.
    pub fn intake(&self) -> &Intake {
        &self.intake
    }

    /// Loads a record of `kind` and decodes it.
    pub async fn record<T: serde::de::DeserializeOwned>(
        &self,
        kind: &str,
        id: &str,
    ) -> Result<Option<T>, SchedulerError> {
        self.store()
            .get_record(kind, id)
            .await?
            .map(|v| serde_json::from_value(v).map_err(|e| corrupt(kind, id, &e)))
            .transpose()
    }

    /// Encodes and saves a record.
    pub async fn save<T: Serialize>(
        &self,
        kind: &str,
        id: &str,
        value: &T,
    ) -> Result<(), SchedulerError> {
        let value = serde_json::to_value(value).map_err(|e| corrupt(kind, id, &e))?;
        self.store().put_record(kind, id, &value).await?;
        Ok(())
    }

    /// The run that occupies `thread` now, if any.
    pub async fn active_run(
        &self,
        thread: &ThreadRecord,
    ) -> Result<Option<RunRecord>, SchedulerError> {
        let Some(run_id) = &thread.active_run else {
            return Ok(None);
        };
        let run = self.store().get_run(&thread.thread_id, run_id).await?;
        Ok(run.filter(|r| occupies_thread(r.status)))
    }

    /// The queued runs of `thread_id`, oldest first.
    pub async fn queued(&self, thread_id: &str) -> Result<Vec<RunMeta>, SchedulerError> {
        let mut queued: Vec<RunMeta> = self
            .store()
            .list_records(QUEUED)
            .await?
            .into_iter()
            .filter_map(|v| serde_json::from_value::<RunMeta>(v).ok())
            .filter(|m| m.thread_id == thread_id)
            .collect();
        queued.sort_by(|a, b| (a.created_at, &a.run_id).cmp(&(b.created_at, &b.run_id)));
        Ok(queued)
    }

    /// Records `meta` and starts it at once, or queues it behind the
    /// thread's active run when `queue_behind` says so.
    pub async fn submit(&self, meta: &RunMeta, queue_behind: bool) -> Result<(), SchedulerError> {
        self.save(&thread_runs(&meta.thread_id), &meta.run_id, meta)
            .await?;
        if queue_behind {
            self.save(QUEUED, &meta.run_id, meta).await?;
            Ok(())
        } else {
            self.start(meta).await
        }
    }

    /// Starts a recorded run: applies its input to the thread and
    /// publishes its first step.
    pub async fn start(&self, meta: &RunMeta) -> Result<(), SchedulerError> {
        if let Some(mut thread) = self
            .record::<ThreadRecord>(THREADS, &meta.thread_id)
            .await?
        {
            thread.active_run = Some(meta.run_id.clone());
            thread.updated_at = Utc::now();
            self.save(THREADS, &thread.thread_id, &thread).await?;
        }
        let now = Utc::now();
        // API batches are followed through their own records, not the done
        // list `deepfleet submit` drains: no batch id.
        let run = RunRecord {
            context: meta.context.clone(),
            updated_at: now,
            ..RunRecord::new(
                meta.run_id.clone(),
                meta.thread_id.clone(),
                meta.graph_id.clone(),
                meta.created_at,
            )
        };
        let seed = ThreadSeed {
            messages: meta.input.iter().cloned().map(logged).collect(),
            files: meta.files.clone(),
            state: Map::new(),
        };
        self.intake.start(&run, &seed).await?;
        self.store().delete_record(QUEUED, &meta.run_id).await?;
        Ok(())
    }

    /// Starts the oldest queued run of every thread that is free. Returns
    /// how many runs it started.
    pub async fn start_queued(&self) -> Result<usize, SchedulerError> {
        let mut heads: BTreeMap<String, RunMeta> = BTreeMap::new();
        for value in self.store().list_records(QUEUED).await? {
            let Ok(meta) = serde_json::from_value::<RunMeta>(value) else {
                continue;
            };
            let older = heads.get(&meta.thread_id).is_none_or(|head| {
                (meta.created_at, &meta.run_id) < (head.created_at, &head.run_id)
            });
            if older {
                heads.insert(meta.thread_id.clone(), meta);
            }
        }
        let mut started = 0;
        for (thread_id, meta) in heads {
            if meta.cancelled {
                self.store().delete_record(QUEUED, &meta.run_id).await?;
                continue;
            }
            let thread = self.record::<ThreadRecord>(THREADS, &thread_id).await?;
            let busy = match &thread {
                Some(thread) => self.active_run(thread).await?.is_some(),
                None => false,
            };
            if !busy {
                self.start(&meta).await?;
                started += 1;
            }
        }
        Ok(started)
    }

    /// Runs [`Lifecycle::start_queued`] every `every` until the task is
    /// dropped; errors are logged and retried on the next round.
    pub async fn run_starter(self, every: Duration) {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(e) = self.start_queued().await {
                warn!(error = %e, "starting queued runs");
            }
        }
    }
}

fn corrupt(kind: &str, id: &str, e: &serde_json::Error) -> SchedulerError {
    SchedulerError::Store(deepfleet_store::StoreError::Corrupt {
        key: format!("{kind}/{id}"),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_reference() {
        assert_eq!(api_status(RunStatus::Waiting), "running");
        assert_eq!(api_status(RunStatus::Interrupted), "success");
        assert_eq!(api_status(RunStatus::Cancelled), "interrupted");
        assert!(occupies_thread(RunStatus::Waiting));
        assert!(!occupies_thread(RunStatus::Interrupted));
    }
}
