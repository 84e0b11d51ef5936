//! Checkpoints in the embedded store's `threads` map; a commit also
//! writes `runs` and resets `fan_in`, all in one critical section. A
//! stored thread's `messages` are its whole log, every branch included;
//! a load hands out the conversation, from `log_base` on.

use std::collections::BTreeMap;

use async_trait::async_trait;
use deepfleet_proto::LoggedMessage;

use crate::checkpoints::{Checkpoint, Checkpoints, CommitOutcome, StepCommit, log_tokens};
use crate::embedded::{EmbeddedStore, RunFanIn};
use crate::error::StoreError;
use crate::history::Change;

#[async_trait]
impl Checkpoints for EmbeddedStore {
    async fn load_thread(&self, thread_id: &str) -> Result<Checkpoint, StoreError> {
        Ok(self
            .lock()
            .threads
            .get(thread_id)
            .map(conversation)
            .unwrap_or_default())
    }

    async fn load_messages(
        &self,
        thread_id: &str,
        from: u64,
    ) -> Result<Vec<LoggedMessage>, StoreError> {
        let from = usize::try_from(from).unwrap_or(usize::MAX);
        Ok(self
            .lock()
            .threads
            .get(thread_id)
            .map(|t| {
                let base = usize::try_from(t.log_base).unwrap_or(usize::MAX);
                t.messages
                    .iter()
                    .skip(base.saturating_add(from))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn commit_step(&self, commit: &StepCommit) -> Result<CommitOutcome, StoreError> {
        let mut state = self.lock();
        if !state.runs.contains_key(&commit.run.run_id) {
            return Ok(CommitOutcome::Gone);
        }
        let thread = state.threads.entry(commit.thread_id.clone()).or_default();
        if thread.step != commit.step {
            return Ok(CommitOutcome::Conflict {
                current: thread.step,
            });
        }
        thread.step += 1;
        thread.update = None;
        thread.notes = None;
        thread.messages.extend(commit.messages.iter().cloned());
        thread.tokens += log_tokens(&commit.messages);
        if let Some(context) = &commit.context {
            thread.context = context.clone();
        }
        for (path, file) in &commit.files {
            match file {
                Some(file) => thread.files.insert(path.clone(), file.clone()),
                None => thread.files.remove(path),
            };
        }
        if let Some(custom) = &commit.state {
            thread.state = custom.clone();
        }
        thread.pending = commit.pending.clone();
        state.tell_history(&commit.thread_id, Change::of_commit(commit));
        let run_id = commit.run.run_id.clone();
        state.runs.insert(run_id.clone(), commit.run.clone());
        if let Some(expected) = commit.fan_in_expected {
            state.fan_in.insert(
                run_id,
                RunFanIn {
                    expected,
                    results: BTreeMap::new(),
                },
            );
        }
        Ok(CommitOutcome::Committed)
    }

    async fn mark_published(&self, thread_id: &str, step: u64) -> Result<(), StoreError> {
        let mut state = self.lock();
        if let Some(thread) = state.threads.get_mut(thread_id) {
            thread.published = thread.published.max(step);
        }
        Ok(())
    }

    async fn copy_thread(&self, from: &str, to: &str) -> Result<bool, StoreError> {
        let mut state = self.lock();
        if state.threads.contains_key(to) || state.history.contains_key(to) {
            return Ok(false);
        }
        let mut thread = state.threads.get(from).cloned().unwrap_or_default();
        thread.pending = None;
        let history = state.history.get(from).cloned().unwrap_or_default();
        state.threads.insert(to.to_owned(), thread);
        state.history.insert(to.to_owned(), history);
        Ok(true)
    }
}

/// A stored thread as a step sees it: its conversation, not the branches
/// left behind.
fn conversation(thread: &Checkpoint) -> Checkpoint {
    let base = usize::try_from(thread.log_base)
        .unwrap_or(usize::MAX)
        .min(thread.messages.len());
    Checkpoint {
        step: thread.step,
        published: thread.published,
        messages: thread.messages[base..].to_vec(),
        log_base: thread.log_base,
        files: thread.files.clone(),
        state: thread.state.clone(),
        pending: thread.pending.clone(),
        tokens: thread.tokens,
        context: thread.context.clone(),
        update: thread.update,
        notes: thread.notes.clone(),
    }
}
