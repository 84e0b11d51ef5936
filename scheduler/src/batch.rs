//! Following a batch of runs to the end.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use deepfleet_proto::{
    Encoding, ErrorCode, PendingReview, ResultLine, ResultStatus, RunRecord, RunStatus,
    checkpoint::FileData,
};
use deepfleet_store::Store;

use crate::error::SchedulerError;

/// Collects the results of a batch's runs as they finish.
pub struct BatchFollower {
    store: Arc<dyn Store>,
    batch_id: String,
    /// Submitted runs not yet reported: run id -> thread id.
    waiting: HashMap<String, String>,
    /// Done notices popped from the store but not yet turned into lines:
    /// a read that fails part-way (the store went away) keeps the rest
    /// here for the next poll instead of losing them.
    popped: VecDeque<String>,
}

impl BatchFollower {
    /// Follows `batch_id`.
    pub fn new(store: Arc<dyn Store>, batch_id: impl Into<String>) -> Self {
        BatchFollower {
            store,
            batch_id: batch_id.into(),
            waiting: HashMap::new(),
            popped: VecDeque::new(),
        }
    }

    /// Adds a submitted run to follow.
    pub fn track(&mut self, run: &RunRecord) {
        self.waiting
            .insert(run.run_id.clone(), run.thread_id.clone());
    }

    /// The batch followed.
    pub fn batch_id(&self) -> &str {
        &self.batch_id
    }

    /// Runs still going.
    pub fn remaining(&self) -> usize {
        self.waiting.len()
    }

    /// The runs still going, as (run id, thread id).
    pub fn waiting(&self) -> impl Iterator<Item = (&str, &str)> {
        self.waiting
            .iter()
            .map(|(run, thread)| (run.as_str(), thread.as_str()))
    }

    /// Result lines of runs that finished since the last call (possibly
    /// none), from the batch's done list. Duplicate notices (a
    /// republished follow-up) are ignored.
    ///
    /// A store error part-way loses nothing already popped: those notices
    /// are read first on the next call (the lines made before the error
    /// are returned by that call too, their runs no longer waiting).
    pub async fn poll(&mut self) -> Result<Vec<ResultLine>, SchedulerError> {
        let done = self.store.pop_batch_done(&self.batch_id, 512).await?;
        self.popped.extend(done);
        let mut lines = Vec::with_capacity(self.popped.len());
        while let Some(run_id) = self.popped.front().cloned() {
            match self.line_of_notice(&run_id).await {
                Ok(line) => lines.extend(line),
                Err(e) if lines.is_empty() => return Err(e),
                // The lines made so far are returned; the error comes back
                // on the next call if it persists.
                Err(_) => break,
            }
            self.popped.pop_front();
        }
        Ok(lines)
    }

    /// The line a done notice of `run_id` adds, if any; the run stops
    /// being followed only once its line is made.
    async fn line_of_notice(&mut self, run_id: &str) -> Result<Option<ResultLine>, SchedulerError> {
        let Some(thread_id) = self.waiting.get(run_id).cloned() else {
            // A subagent of a followed run waits for a reviewer.
            return self.interrupted_subagent(run_id).await;
        };
        let Some(run) = self.store.get_run(&thread_id, run_id).await? else {
            self.waiting.remove(run_id);
            return Ok(None);
        };
        let line = self.line_of(&run).await?;
        self.waiting.remove(run_id);
        Ok(Some(line))
    }

    /// Result lines of the followed runs whose records show them ended
    /// (or parked on a human decision) already, which stop being
    /// followed. The done list is not read: this is how a follower taking
    /// over an interrupted batch finds the runs that ended while nobody
    /// followed them, and how one that stops following misses none that
    /// ended. Their done notices, read later, are ignored.
    pub async fn collect_ended(&mut self) -> Result<Vec<ResultLine>, SchedulerError> {
        let followed: Vec<(String, String)> = self
            .waiting
            .iter()
            .map(|(run, thread)| (run.clone(), thread.clone()))
            .collect();
        let mut lines = Vec::new();
        for (run_id, thread_id) in followed {
            let Some(run) = self.store.get_run(&thread_id, &run_id).await? else {
                continue;
            };
            if run.status.is_terminal() || run.status == RunStatus::AwaitingHuman {
                self.waiting.remove(&run_id);
                lines.push(self.line_of(&run).await?);
            }
        }
        Ok(lines)
    }

    /// The result line of an ended top-level run.
    async fn line_of(&self, run: &RunRecord) -> Result<ResultLine, SchedulerError> {
        let thread = self.store.load_thread(&run.thread_id).await?;
        let mut line = result_line(run, &thread.files);
        if run.status == RunStatus::AwaitingHuman {
            line.review = review_of(run, &thread);
        }
        Ok(line)
    }

    /// The line of the followed top-level run above an interrupted
    /// subagent run: `interrupted`, with the subagent's review.
    async fn interrupted_subagent(
        &mut self,
        run_id: &str,
    ) -> Result<Option<ResultLine>, SchedulerError> {
        let Some(child) = self.store.find_run(run_id).await? else {
            return Ok(None);
        };
        if child.status != RunStatus::AwaitingHuman {
            return Ok(None);
        }
        let Some(root) = crate::resume::root_of(self.store.as_ref(), &child).await? else {
            return Ok(None);
        };
        if !self.waiting.contains_key(&root.run_id) {
            return Ok(None);
        }
        let child_thread = self.store.load_thread(&child.thread_id).await?;
        let root_thread = self.store.load_thread(&root.thread_id).await?;
        let mut line = result_line(&root, &root_thread.files);
        line.status = ResultStatus::Interrupted;
        line.review = review_of(&child, &child_thread);
        self.waiting.remove(&root.run_id);
        Ok(Some(line))
    }
}

/// What an interrupted run asks its reviewer.
pub(crate) fn review_of(
    run: &RunRecord,
    thread: &deepfleet_store::Checkpoint,
) -> Option<PendingReview> {
    let interrupt = thread.pending.as_ref()?.interrupt.as_ref()?;
    Some(PendingReview {
        run_id: run.run_id.clone(),
        thread_id: run.thread_id.clone(),
        action_requests: interrupt.action_requests.clone(),
        review_configs: interrupt.review_configs.clone(),
    })
}

/// The result line of a finished run.
pub fn result_line(
    run: &RunRecord,
    files: &std::collections::BTreeMap<String, FileData>,
) -> ResultLine {
    let status = match run.status {
        RunStatus::Success => ResultStatus::Success,
        RunStatus::AwaitingHuman => ResultStatus::Interrupted,
        RunStatus::Timeout => ResultStatus::Timeout,
        RunStatus::Error
            if run
                .error
                .as_ref()
                .is_some_and(|e| e.code == ErrorCode::BudgetExceeded) =>
        {
            ResultStatus::BudgetExceeded
        }
        RunStatus::Error
        | RunStatus::Cancelled
        | RunStatus::Pending
        | RunStatus::Running
        | RunStatus::Waiting => ResultStatus::Error,
    };
    ResultLine {
        id: run.task_id.clone().unwrap_or_else(|| run.run_id.clone()),
        status,
        output: run.output.clone().unwrap_or_default(),
        error: run
            .error
            .as_ref()
            .map(|e| format!("{}: {}", e.code, e.message)),
        steps: run.steps,
        usage: run.usage.into(),
        by_caller: run.by_caller,
        cost_usd: deepfleet_proto::cost::usd(run.cost_nano_usd),
        files: files
            .iter()
            .filter(|(_, f)| f.encoding == Encoding::Utf8)
            .map(|(p, f)| (p.clone(), f.content.clone()))
            .collect(),
        review: None,
    }
}
