//! Queue intake: runs submitted as JSON messages on a queue (RabbitMQ's
//! `deepfleet.submissions` by default) by services in any language.
//!
//! Each message is a [`Submission`]; it becomes a run exactly as
//! `POST /threads/{thread_id}/runs` (or `/runs` without a thread) would
//! make it, so it shows in the HTTP API, follows the same multitask rules
//! (`enqueue`) and is answered through [`Replier`] when it ends. A
//! message that is not a valid submission, or names an unknown assistant,
//! is dead-lettered with the reason (RabbitMQ: the `x-deepfleet-reason`
//! header) and never retried; a store or queue failure requeues it.
//!
//! The message is acked only after its run and reply address are
//! recorded, so a crash re-reads it: intake is at least once, and a crash
//! in that window may start the run twice.

use std::sync::Arc;

use deepfleet_proto::api::{MultitaskStrategy, RunCreateParams};
use deepfleet_proto::{Submission, SubmissionInput};
use deepfleet_queue::{Consumer, Delivery, Queue};
use serde_json::{Map, Value, json};
use tracing::{info, warn};

use crate::api::run_create::create_run;
use crate::api::state::ApiState;
use crate::error::SchedulerError;
use crate::replies::Replier;
use crate::repo::replies::ReplyRecord;

/// How long to wait after a consumer error before reading on.
const CONSUMER_BACKOFF: std::time::Duration = std::time::Duration::from_secs(1);

/// What became of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A run was created (`run_id`), to be answered when it ends.
    Accepted(String),
    /// The message was refused and dead-lettered, for this reason.
    Refused(String),
    /// A transient failure; the message was handed back.
    Requeued,
}

/// Consumes the submission queue.
#[derive(Clone)]
pub struct SubmissionIntake {
    api: ApiState,
    replier: Replier,
}

impl SubmissionIntake {
    /// An intake creating runs through `api` and remembering their reply
    /// addresses with `replier`.
    pub fn new(api: ApiState, replier: Replier) -> Self {
        SubmissionIntake { api, replier }
    }

    /// Handles one message and settles it.
    pub async fn handle(&self, delivery: Box<dyn Delivery>) -> Result<Outcome, SchedulerError> {
        let submission = match parse(delivery.payload()) {
            Ok(submission) => submission,
            Err(reason) => {
                delivery.dead_letter(&reason).await?;
                return Ok(Outcome::Refused(reason));
            }
        };
        let body = run_create(&submission);
        let meta = match create_run(&self.api, submission.thread_id.as_deref(), &body, None).await {
            Ok(meta) => meta,
            Err(e) if e.status.is_client_error() => {
                let reason = format!("{}: {}", e.code.as_str(), e.detail);
                delivery.dead_letter(&reason).await?;
                return Ok(Outcome::Refused(reason));
            }
            Err(e) => {
                warn!(code = e.code.as_str(), detail = %e.detail, "submission failed; requeued");
                delivery.requeue().await?;
                return Ok(Outcome::Requeued);
            }
        };
        let address = delivery.reply_address();
        let record = ReplyRecord {
            run_id: meta.run_id.clone(),
            thread_id: meta.thread_id.clone(),
            id: submission.id.clone(),
            reply_to: address.reply_to,
            correlation_id: address.correlation_id,
        };
        if let Err(e) = self.replier.remember(&record).await {
            delivery.requeue().await?;
            return Err(e);
        }
        delivery.ack().await?;
        info!(run_id = %meta.run_id, thread_id = %meta.thread_id, "submission accepted");
        Ok(Outcome::Accepted(meta.run_id))
    }

    /// Consumes `queue` (at most `prefetch` messages in hand) until the
    /// consumer closes. A failure to settle is logged (the broker
    /// redelivers the message); a consumer error (a connection lost and
    /// being recovered) is logged and consuming goes on.
    pub async fn run(self, queue: Arc<dyn Queue>, prefetch: u16) -> Result<(), SchedulerError> {
        let mut consumer: Box<dyn Consumer> = queue.consume(prefetch).await?;
        while let Some(delivery) = consumer.next().await {
            let delivery = match delivery {
                Ok(delivery) => delivery,
                Err(e) => {
                    warn!(error = %e, "the submission consumer failed; waiting for recovery");
                    tokio::time::sleep(CONSUMER_BACKOFF).await;
                    continue;
                }
            };
            match self.handle(delivery).await {
                Ok(Outcome::Refused(reason)) => warn!(%reason, "submission dead-lettered"),
                Ok(Outcome::Accepted(_) | Outcome::Requeued) => {}
                Err(e) => warn!(error = %e, "handling a submission"),
            }
        }
        Ok(())
    }
}

/// Decodes a message, or says why it is not a submission.
pub fn parse(payload: &[u8]) -> Result<Submission, String> {
    let submission: Submission = serde_json::from_slice(payload)
        .map_err(|e| format!("invalid submission (see proto/schema/submission.json): {e}"))?;
    if submission.assistant_id.trim().is_empty() {
        return Err("invalid submission: `assistant_id` must not be empty".into());
    }
    if let Some(thread_id) = &submission.thread_id
        && thread_id.trim().is_empty()
    {
        return Err("invalid submission: `thread_id` must not be empty".into());
    }
    Ok(submission)
}

/// The HTTP API's run request for a submission: a named thread is made
/// when missing, and runs queue behind a busy thread's active run.
pub fn run_create(submission: &Submission) -> RunCreateParams {
    let messages = match &submission.input {
        SubmissionInput::Text(text) => vec![Value::String(text.clone())],
        SubmissionInput::Messages { messages } => messages.clone(),
    };
    let mut input = json!({ "messages": messages });
    if let Some(files) = &submission.files {
        input["files"] = json!(files);
    }
    RunCreateParams {
        assistant_id: submission.assistant_id.clone(),
        input: Some(input),
        metadata: submission.metadata.clone(),
        context: submission.context.clone().map(Value::Object),
        multitask_strategy: Some(MultitaskStrategy::Enqueue),
        if_not_exists: submission.thread_id.as_ref().map(|_| "create".into()),
        rest: Map::new(),
        ..RunCreateParams::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::AgentSpec;
    use deepfleet_queue::DeadLetters;
    use deepfleet_queue::memory::MemoryQueue;
    use deepfleet_store::Store;
    use deepfleet_store::embedded::EmbeddedStore;
    use pretty_assertions::assert_eq;

    #[test]
    fn malformed_messages_say_why() {
        let cases = [
            (&b"not json"[..], "expected ident"),
            (br#"{"input": "hi"}"#, "missing field `assistant_id`"),
            (
                br#"{"assistant_id": " ", "input": "hi"}"#,
                "must not be empty",
            ),
            (
                br#"{"assistant_id": "a", "input": 3}"#,
                "did not match any variant",
            ),
            (
                br#"{"assistant_id": "a", "input": "hi", "thread_id": ""}"#,
                "`thread_id` must not be empty",
            ),
        ];
        for (payload, why) in cases {
            let err = parse(payload).unwrap_err();
            assert!(err.contains(why), "{err} should say {why}");
        }
    }

    #[test]
    fn submissions_become_api_run_requests() {
        let submission = parse(
            br#"{"id": "j1", "graph_id": "helper", "input": "write notes",
                 "files": {"/a.md": "x"}, "thread_id": "t1", "context": {"user": "u"}}"#,
        )
        .unwrap();
        let body = run_create(&submission);
        assert_eq!(
            body.input,
            Some(json!({"messages": ["write notes"], "files": {"/a.md": "x"}}))
        );
        assert_eq!(body.if_not_exists.as_deref(), Some("create"));
        assert_eq!(body.context, Some(json!({"user": "u"})));
        assert_eq!(body.multitask_strategy, Some(MultitaskStrategy::Enqueue));
        let fresh = run_create(&parse(br#"{"assistant_id": "a", "input": "hi"}"#).unwrap());
        assert_eq!(fresh.if_not_exists, None);
    }

    /// An API over the embedded store and queue serving graph `helper`;
    /// returns it with the queue the submissions come on.
    async fn fixture() -> (SubmissionIntake, Arc<MemoryQueue>, Arc<dyn Store>) {
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let steps: Arc<dyn Queue> = Arc::new(MemoryQueue::new());
        let intake = crate::intake::Intake::new(Arc::clone(&store), steps);
        intake
            .register(&AgentSpec::from_yaml("name: helper\nmodel: openai:x\n").unwrap())
            .await
            .unwrap();
        let api = ApiState {
            life: crate::lifecycle::Lifecycle::new(intake),
            graphs: Arc::new(vec!["helper".into()]),
            started_at: chrono::Utc::now(),
            metrics: None,
        };
        let replier = Replier::new(Arc::clone(&store), Arc::new(NoReplies));
        (
            SubmissionIntake::new(api, replier),
            Arc::new(MemoryQueue::new()),
            store,
        )
    }

    /// The embedded queue cannot answer; these tests never end a run.
    struct NoReplies;

    #[async_trait::async_trait]
    impl deepfleet_queue::Replies for NoReplies {
        async fn reply(
            &self,
            _: &deepfleet_queue::ReplyAddress,
            _: Vec<u8>,
        ) -> Result<(), deepfleet_queue::QueueError> {
            Err(deepfleet_queue::QueueError::Closed)
        }
    }

    async fn submit(intake: &SubmissionIntake, queue: &MemoryQueue, payload: &[u8]) -> Outcome {
        queue.publish(payload.to_vec(), None).await.unwrap();
        let mut consumer = queue.consume(1).await.unwrap();
        let delivery = consumer.next().await.unwrap().unwrap();
        intake.handle(delivery).await.unwrap()
    }

    #[tokio::test]
    async fn a_valid_submission_starts_a_run_with_its_files_and_reply_record() {
        let (intake, queue, store) = fixture().await;
        let outcome = submit(
            &intake,
            &queue,
            br#"{"id": "j1", "assistant_id": "helper", "input": "hi", "thread_id": "t1",
                 "files": {"/a.md": "seed"}}"#,
        )
        .await;
        let Outcome::Accepted(run_id) = outcome else {
            panic!("refused: {outcome:?}");
        };
        let run = store.get_run("t1", &run_id).await.unwrap().unwrap();
        assert_eq!(run.agent, "helper");
        let thread = store.load_thread("t1").await.unwrap();
        assert_eq!(thread.files["/a.md"].content, "seed");
        let record: ReplyRecord = serde_json::from_value(
            store
                .get_record(deepfleet_proto::keys::records::REPLIES, &run_id)
                .await
                .unwrap()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            (record.thread_id.as_str(), record.id.as_deref()),
            ("t1", Some("j1"))
        );
        assert_eq!(queue.depth().await.unwrap(), Some(0));
    }

    #[tokio::test]
    async fn bad_submissions_are_dead_lettered_with_the_reason() {
        let (intake, queue, store) = fixture().await;
        let unknown = br#"{"assistant_id": "nobody", "input": "hi"}"#;
        let traversal = br#"{"assistant_id": "helper", "input": "hi", "files": {"/../x": ""}}"#;
        for payload in [&b"{"[..], unknown, traversal] {
            let outcome = submit(&intake, &queue, payload).await;
            assert!(matches!(outcome, Outcome::Refused(_)), "{outcome:?}");
        }
        let dead = queue.drain_dead_letters(10).await.unwrap();
        let reasons: Vec<&str> = dead.iter().map(|d| d.reason.as_str()).collect();
        assert_eq!(dead.len(), 3, "{reasons:?}");
        assert!(reasons[0].starts_with("invalid submission"), "{reasons:?}");
        assert!(
            reasons[1].starts_with("not_found: Assistant 'nobody'"),
            "{reasons:?}"
        );
        assert!(reasons[2].contains("Path traversal"), "{reasons:?}");
        assert_eq!(dead[1].payload, unknown.to_vec());
        assert!(
            store
                .list_records(deepfleet_proto::keys::records::REPLIES)
                .await
                .unwrap()
                .is_empty()
        );
    }
}
