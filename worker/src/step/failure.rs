//! What happens when a step cannot complete: a delayed retry, or the run
//! ends with a recorded error (and the message is dead-lettered when
//! retrying ran out), and what a run's end must still publish.

use chrono::Utc;
use deepfleet_fleet::publish_step;
use deepfleet_proto::{Envelope, ErrorCode, RunError, RunRecord, RunStatus, StepJob};
use deepfleet_queue::Delivery;
use deepfleet_store::{CommitOutcome, StepCommit};
use tracing::{info, warn};

use crate::error::StepError;
use crate::events::{DeadLetterReason, Event, EventScope};
use crate::step::announce::announce;
use crate::step::driver::{Committed, StepRunner};

impl StepRunner {
    /// Ends a run with `status` and publishes what its end implies.
    pub(super) async fn end_run(
        &self,
        mut run: RunRecord,
        step: u64,
        status: RunStatus,
        error: RunError,
    ) -> Result<(), StepError> {
        let checkpoint = self.store.load_thread(&run.thread_id).await?;
        if checkpoint.step != step || run.status.is_terminal() {
            return Ok(());
        }
        if let Some(pending) = &checkpoint.pending {
            // Cancel and failure cascade to the subagents still running.
            for child in &pending.children {
                self.store
                    .request_cancel(&child.thread_id, &child.run_id)
                    .await?;
                self.wake_if_interrupted(&child.thread_id, &child.run_id)
                    .await?;
            }
        }
        run.status = status;
        run.error = Some(error);
        run.context = None;
        run.updated_at = Utc::now();
        let commit = StepCommit {
            thread_id: run.thread_id.clone(),
            step,
            messages: Vec::new(),
            files: Default::default(),
            state: None,
            pending: None,
            run: run.clone(),
            fan_in_expected: None,
            context: None,
        };
        if let CommitOutcome::Committed = self.store.commit_step(&commit).await? {
            self.finished(&EventScope::of(&run), &run);
            let log = checkpoint.messages.len() as u64;
            announce(&*self.store, &run, step, log, log).await;
            let committed = Committed {
                run: &run,
                step: step + 1,
                pending: None,
                spawned: Vec::new(),
                files: &checkpoint.files,
                child_state: &Default::default(),
            };
            self.publish_follow_ups(committed).await?;
        }
        Ok(())
    }

    /// Publishes a step for a cancelled subagent that waits for a human:
    /// it has no step message out to see its cancel flag, and would stay
    /// `interrupted` until its thread expired. Its step ends it
    /// `cancelled` (a waiting run's only halt, see `decide`); a running
    /// one has its message out already and gets none, so no step runs
    /// twice at once.
    async fn wake_if_interrupted(&self, thread_id: &str, run_id: &str) -> Result<(), StepError> {
        let Some(child) = self.store.get_run(thread_id, run_id).await? else {
            return Ok(());
        };
        if child.status != RunStatus::Interrupted {
            return Ok(());
        }
        let step = self.store.load_thread(thread_id).await?.step;
        let job = StepJob {
            run_id: run_id.to_owned(),
            thread_id: thread_id.to_owned(),
            step,
            priority: child.priority,
        };
        publish_step(&*self.queue, job, child.traceparent).await?;
        Ok(())
    }

    /// A step failed: retry it later, or end the run once retrying cannot
    /// help or the attempts are used up.
    pub(super) async fn failed(
        &self,
        delivery: Box<dyn Delivery>,
        envelope: Envelope,
        job: StepJob,
        error: StepError,
    ) {
        if error.is_retryable() && envelope.attempt + 1 < self.retry.max_attempts {
            return self.retry(delivery, envelope, &job, &error).await;
        }
        let code = if error.is_retryable() {
            ErrorCode::AttemptsExhausted
        } else {
            error.code()
        };
        let reason = format!("{code}: {error}");
        warn!(run = %job.run_id, step = job.step, %reason, "run failed");
        let ended = match self.store.get_run(&job.thread_id, &job.run_id).await {
            Ok(Some(run)) => {
                let error = RunError {
                    code,
                    message: error.to_string(),
                };
                self.end_run(run, job.step, RunStatus::Error, error).await
            }
            Ok(None) => Ok(()),
            Err(e) => Err(e.into()),
        };
        if let Err(e) = ended {
            // Recording the failure failed too: hand the message back.
            warn!(run = %job.run_id, error = %e, "recording a run failure failed");
            if let Err(e) = delivery.requeue().await {
                warn!(run = %job.run_id, error = %e, "requeue failed");
            }
            return;
        }
        // A step that ran out of attempts (ours or the queue's) goes to the
        // dead-letter queue for an operator; other failures were handled.
        let settled = if code == ErrorCode::AttemptsExhausted {
            self.events.emit(
                &EventScope::of_job(&job.run_id, &job.thread_id),
                &Event::DeadLettered {
                    reason: DeadLetterReason::AttemptsExhausted,
                },
            );
            delivery.dead_letter(&reason).await
        } else {
            delivery.ack().await
        };
        if let Err(e) = settled {
            warn!(run = %job.run_id, error = %e, "settling a failed step failed");
        }
    }

    /// Publishes the step again with `attempt + 1`, after the provider's
    /// `Retry-After` or the backoff, and settles this delivery.
    async fn retry(
        &self,
        delivery: Box<dyn Delivery>,
        envelope: Envelope,
        job: &StepJob,
        error: &StepError,
    ) {
        let attempt = envelope.attempt + 1;
        let delay = match error {
            StepError::Model(e) => e.retry_after.unwrap_or_else(|| self.retry.delay(attempt)),
            _ => self.retry.delay(attempt),
        };
        warn!(run = %job.run_id, step = job.step, attempt, ?delay, error = %error, "step failed; retrying");
        self.events.emit(
            &EventScope::of_job(&job.run_id, &job.thread_id),
            &Event::Retried { code: error.code() },
        );
        let retry = Envelope {
            attempt,
            ..envelope
        };
        self.publish_again(delivery, retry, job, delay, "retried")
            .await;
    }

    /// Publishes `envelope` again on its run's lane, due after `delay`
    /// (its queue wait starting then), and acks `delivery`; hands the
    /// delivery back when the publish failed, so the step is never lost.
    pub(super) async fn publish_again(
        &self,
        delivery: Box<dyn Delivery>,
        envelope: Envelope,
        job: &StepJob,
        delay: std::time::Duration,
        what: &str,
    ) {
        let due = chrono::Duration::from_std(delay)
            .ok()
            .map(|d| Utc::now() + d);
        let again = Envelope {
            published_at: due,
            ..envelope
        };
        let republished = match serde_json::to_vec(&again) {
            Ok(payload) => self
                .queue
                .publish_to(job.priority, payload, Some(delay))
                .await
                .is_ok(),
            Err(_) => false,
        };
        let settled = if republished {
            delivery.ack().await
        } else {
            delivery.requeue().await
        };
        if let Err(e) = settled {
            warn!(run = %job.run_id, error = %e, "settling a {what} step failed");
        }
    }

    /// Reports a run that reached its final status.
    pub(super) fn finished(&self, scope: &EventScope, run: &RunRecord) {
        if !run.status.is_terminal() {
            return;
        }
        let latency = (Utc::now() - run.created_at).to_std().unwrap_or_default();
        info!(run = %run.run_id, status = ?run.status, steps = run.steps, latency_ms = latency.as_millis() as u64, "run finished");
        self.events.emit(
            scope,
            &Event::RunFinished {
                status: run.status,
                latency,
            },
        );
    }

    pub(super) async fn dead_letter(
        &self,
        delivery: Box<dyn Delivery>,
        scope: &EventScope,
        class: DeadLetterReason,
        reason: &str,
    ) {
        self.events
            .emit(scope, &Event::DeadLettered { reason: class });
        warn!(reason, "dead-lettering a message");
        if let Err(e) = delivery.dead_letter(reason).await {
            warn!(error = %e, "dead-lettering failed");
        }
    }
}
