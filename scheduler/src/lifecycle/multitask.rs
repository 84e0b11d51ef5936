//! Multitask strategies ("double texting"): what a new run on a thread
//! does when the thread already has a run in flight or queued.

use deepfleet_proto::api::MultitaskStrategy;

use super::Lifecycle;
use crate::error::SchedulerError;
use crate::repo::queued::queued;
use crate::repo::runs::runs_of;
use crate::repo::threads::ThreadRecord;

/// What to do with a new run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Start it now.
    Start,
    /// Queue it behind the runs ahead.
    Queue,
    /// Cancel the runs ahead (dropping them when `rollback`), and queue
    /// it: it starts once the cancelled run has stopped at its step
    /// boundary.
    Supersede {
        /// Drop the cancelled runs from the thread's list.
        rollback: bool,
    },
}

/// Decides for a thread with `ahead` runs in flight or queued.
pub fn admit(strategy: MultitaskStrategy, ahead: usize) -> Result<Admission, SchedulerError> {
    if ahead == 0 {
        return Ok(Admission::Start);
    }
    match strategy {
        MultitaskStrategy::Reject => Err(SchedulerError::ThreadBusy),
        MultitaskStrategy::Enqueue => Ok(Admission::Queue),
        MultitaskStrategy::Interrupt => Ok(Admission::Supersede { rollback: false }),
        MultitaskStrategy::Rollback => Ok(Admission::Supersede { rollback: true }),
    }
}

impl Lifecycle {
    /// Admits a new run on `thread` under `strategy`: refuses it, or
    /// cancels (and on rollback forgets) the runs ahead as the strategy
    /// says. The answer says whether the new run starts now or queues.
    pub async fn admit(
        &self,
        thread: &ThreadRecord,
        strategy: MultitaskStrategy,
    ) -> Result<Admission, SchedulerError> {
        let queued_ahead = self.queue_head(&thread.thread_id).await?.is_some();
        let active = self.active_run(thread).await?;
        let admission = admit(
            strategy,
            usize::from(queued_ahead) + usize::from(active.is_some()),
        )?;
        let Admission::Supersede { rollback } = admission else {
            return Ok(admission);
        };
        let mut ahead = self.queued(&thread.thread_id).await?;
        let store = self.store().as_ref();
        let runs = runs_of(store, &thread.thread_id);
        if let Some(run) = &active {
            store.request_cancel(&run.thread_id, &run.run_id).await?;
            if rollback {
                self.roll_back(&run.thread_id, &run.run_id).await?;
            }
        }
        for meta in &mut ahead {
            queued(store).delete(&meta.run_id).await?;
            if rollback {
                runs.delete(&meta.run_id).await?;
            } else {
                meta.cancelled = true;
                runs.put(&meta.run_id, meta).await?;
            }
        }
        Ok(admission)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_thread_starts_whatever_the_strategy() {
        for s in [
            MultitaskStrategy::Reject,
            MultitaskStrategy::Enqueue,
            MultitaskStrategy::Interrupt,
            MultitaskStrategy::Rollback,
        ] {
            assert_eq!(admit(s, 0).unwrap(), Admission::Start);
        }
    }

    #[test]
    fn a_busy_thread_follows_the_strategy() {
        let err = admit(MultitaskStrategy::Reject, 1).unwrap_err();
        assert!(matches!(err, SchedulerError::ThreadBusy));
        assert!(
            err.to_string()
                .starts_with("Thread is already running a task.")
        );
        assert_eq!(
            admit(MultitaskStrategy::Enqueue, 2).unwrap(),
            Admission::Queue
        );
        assert_eq!(
            admit(MultitaskStrategy::Interrupt, 1).unwrap(),
            Admission::Supersede { rollback: false }
        );
        assert_eq!(
            admit(MultitaskStrategy::Rollback, 1).unwrap(),
            Admission::Supersede { rollback: true }
        );
    }
}
