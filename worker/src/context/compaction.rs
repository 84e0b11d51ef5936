//! The thread's compression state during one step.
//!
//! [`StepCompaction`] carries the cursor loaded with the checkpoint,
//! collects the changes the step makes (a new summary, an eviction, the
//! summary calls' usage) and hands them to the commit. It is data of the
//! step, read through the context's views; `crate::compress` decides
//! what changes in it.

use std::sync::{Mutex, MutexGuard};

use deepfleet_proto::{CallUsage, ContextCursor, Usage};

/// The compression state of the thread a step runs on.
#[derive(Debug, Default)]
pub struct StepCompaction {
    loaded: ContextCursor,
    log_tokens: u64,
    changes: Mutex<Changes>,
}

#[derive(Debug, Default)]
struct Changes {
    cursor: Option<ContextCursor>,
    summaries: CallUsage,
}

impl StepCompaction {
    /// The state loaded with the checkpoint: the cursor and the log's
    /// running token total.
    pub fn new(loaded: ContextCursor, log_tokens: u64) -> Self {
        StepCompaction {
            loaded,
            log_tokens,
            changes: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Changes> {
        self.changes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Log index where the model's view of the stored log starts (the
    /// loaded summary's cutoff): the step assembles its request from here.
    pub fn view_start(&self) -> usize {
        self.loaded
            .summary
            .as_ref()
            .map_or(0, |s| usize::try_from(s.cutoff).unwrap_or(usize::MAX))
    }

    /// Tokens of the whole stored log.
    pub fn log_tokens(&self) -> u64 {
        self.log_tokens
    }

    /// The cursor as it stands now: the loaded one or this step's change.
    pub fn cursor(&self) -> ContextCursor {
        self.lock()
            .cursor
            .clone()
            .unwrap_or_else(|| self.loaded.clone())
    }

    /// Replaces the cursor (a summary or an eviction happened).
    pub fn set_cursor(&self, cursor: ContextCursor) {
        self.lock().cursor = Some(cursor);
    }

    /// Counts a summary call (and its tokens) toward the run's usage.
    pub fn add_summary_call(&self, usage: &Usage) {
        self.lock().summaries.add_call(usage);
    }

    /// What the step changed: the new cursor (when it changed) and the
    /// calls compression made itself.
    pub fn take(&self) -> (Option<ContextCursor>, CallUsage) {
        let mut changes = self.lock();
        (
            changes.cursor.take(),
            std::mem::take(&mut changes.summaries),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn changes_are_taken_once() {
        let cell = StepCompaction::new(ContextCursor::default(), 42);
        assert_eq!(cell.view_start(), 0);
        assert_eq!(cell.log_tokens(), 42);
        cell.add_summary_call(&Usage {
            input_tokens: 3,
            output_tokens: 1,
            cached_input_tokens: 0,
        });
        cell.set_cursor(ContextCursor::default());
        let (cursor, usage) = cell.take();
        assert_eq!(cursor, Some(ContextCursor::default()));
        assert_eq!(usage.input_tokens, 3);
        assert_eq!(cell.take().0, None);
    }
}
