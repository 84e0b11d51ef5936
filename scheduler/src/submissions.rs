//! Queue intake: runs submitted as JSON messages on a queue (RabbitMQ's
//! `deepfleet.submissions` by default) by services in any language.
//!
//! Each message is a [`Submission`]; it becomes a run exactly as
//! `POST /threads/{thread_id}/runs` (or `/runs` without a thread) would
//! make it, so it shows in the HTTP API, follows the same multitask rules
//! (`enqueue`) and is answered through [`Replier`] when it ends (and,
//! with a `webhook`, POSTed there: see [`crate::webhooks`]). A
//! message that is not a valid submission, names an unknown assistant or
//! asks to be answered on one of the fleet's own queues
//! ([`ReservedQueues`]) starts no run: its sender is answered with a
//! [`deepfleet_proto::SubmissionRefusal`], then
//! the message is dead-lettered with the reason (RabbitMQ: the
//! `x-deepfleet-reason` header) and never retried; a store or queue
//! failure requeues it. The dead letter keeps no runtime context in
//! clear: see [`crate::refusals::without_clear_context`].
//!
//! When the API has keys, a submission carries one in its `x-api-key`
//! header, like an HTTP request: its run belongs to the key's tenant, and
//! a message without a known key with the `submit` role is refused
//! (`unauthenticated`, `forbidden`). The dead letter's copy drops the
//! header.
//!
//! Every answer, refusals included, names the tenant it belongs to (the
//! key's, when the key is known), so one that has no live `reply_to`
//! lands in that tenant's results queue and no other.
//!
//! The message is acked only after its run and reply address are
//! recorded, so a crash re-reads it: intake is at least once, and a crash
//! in that window may start the run twice.

use std::sync::Arc;

use deepfleet_proto::api::{MultitaskStrategy, RunCreateParams};
use deepfleet_proto::tenant::{CREDENTIAL_HEADER, Role, TenantId};
use deepfleet_proto::{Submission, SubmissionInput};
use deepfleet_queue::{Consumer, Delivery, Queue, Replies};
use serde_json::{Value, json};
use tracing::{info, warn};

use crate::error::SchedulerError;
use crate::keys::ApiKeys;
use crate::refusals::{CONTEXT_HEADER, Refusal, without_clear_context};
use crate::replies::Replier;
use crate::repo::replies::ReplyRecord;
use crate::reserved::ReservedQueues;
use crate::runs::{Runs, create_run};

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
    runs: Runs,
    /// Who may submit, by the key a message carries.
    keys: ApiKeys,
    replier: Replier,
    /// Answers refusals (the replier's channel).
    replies: Arc<dyn Replies>,
    /// Queues no answer may be published to.
    reserved: ReservedQueues,
}

impl SubmissionIntake {
    /// An intake creating runs through `runs` for the callers of `keys`,
    /// remembering their reply addresses with `replier` and refusing
    /// reply addresses in `reserved`.
    pub fn new(runs: Runs, keys: ApiKeys, replier: Replier, reserved: ReservedQueues) -> Self {
        let replies = replier.replies();
        SubmissionIntake {
            runs,
            keys,
            replier,
            replies,
            reserved,
        }
    }

    /// Handles one message and settles it.
    pub async fn handle(&self, delivery: Box<dyn Delivery>) -> Result<Outcome, SchedulerError> {
        let submission = match parse(delivery.payload()) {
            Ok(submission) => submission,
            Err(reason) => return self.refuse(delivery, Refusal::invalid(reason)).await,
        };
        let address = delivery.reply_address();
        if let Err(detail) = self.reserved.check(address.reply_to.as_deref()) {
            let refusal = Refusal::coded("reserved_reply_to", &detail);
            return self.refuse(delivery, refusal).await;
        }
        let tenant = match self.caller(delivery.as_ref()) {
            Ok(tenant) => tenant,
            Err(refusal) => return self.refuse(delivery, refusal).await,
        };
        let body = run_create(&submission);
        let thread_id = submission.thread_id.as_deref();
        let meta = match create_run(&self.runs, &tenant, thread_id, &body, None).await {
            Ok(meta) => meta,
            Err(e) if !e.is_backend() => {
                let refusal = Refusal::coded(e.code().as_str(), &e.to_string());
                return self.refuse(delivery, refusal).await;
            }
            Err(e) => {
                warn!(error = %e, "submission failed; requeued");
                delivery.requeue().await?;
                return Ok(Outcome::Requeued);
            }
        };
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

    /// The tenant a message submits for, from the key in its header; a
    /// refusal without a known key that may submit.
    fn caller(&self, delivery: &dyn Delivery) -> Result<TenantId, Refusal> {
        let key = delivery.header(CREDENTIAL_HEADER);
        let Some(caller) = self.keys.identify(key.as_deref()) else {
            return Err(Refusal::coded(
                "unauthenticated",
                "a submission needs a known API key in its x-api-key header",
            ));
        };
        if !caller.role.allows(Role::Submit) {
            return Err(Refusal::coded(
                "forbidden",
                &format!("this key's role ({}) may not submit runs", caller.role),
            ));
        }
        Ok(caller.tenant)
    }

    /// Answers the sender of a refused message, then dead-letters the
    /// message with the reason, its runtime context sealed or removed. The
    /// answer goes to the message's `reply_to` (without one, or when it
    /// names a queue of the fleet's, to the results queue of the key's
    /// tenant, or of no tenant without a known key); one that cannot be
    /// published hands the message back, to be refused again.
    async fn refuse(
        &self,
        delivery: Box<dyn Delivery>,
        refusal: Refusal,
    ) -> Result<Outcome, SchedulerError> {
        let mut to = delivery.reply_address();
        if self.reserved.check(to.reply_to.as_deref()).is_err() {
            to.reply_to = None;
        }
        let key = delivery.header(CREDENTIAL_HEADER);
        to.tenant = self
            .keys
            .identify(key.as_deref())
            .map(|caller| caller.tenant);
        match serde_json::to_vec(&refusal.answer(delivery.payload())) {
            Ok(answer) => {
                if let Err(e) = self.replies.reply(&to, answer).await {
                    warn!(error = %e, reason = %refusal.reason, "answering a refused submission; requeued");
                    delivery.requeue().await?;
                    return Ok(Outcome::Requeued);
                }
            }
            Err(e) => warn!(error = %e, "encoding a refusal; dead-lettered unanswered"),
        }
        let intake = self.runs.life.intake();
        let seal = |context: &Value| intake.seal_context("dead letter", Some(context)).ok()?;
        match without_clear_context(delivery.payload(), seal) {
            Some((body, fate)) => {
                let headers = [(CONTEXT_HEADER, fate.as_str())];
                delivery
                    .dead_letter_amended(&refusal.reason, body, &headers)
                    .await?;
            }
            None => delivery.dead_letter(&refusal.reason).await?,
        }
        Ok(Outcome::Refused(refusal.reason))
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
        priority: Some(submission.priority),
        // Checked and recorded as the HTTP API's `webhook` is.
        rest: submission
            .webhook
            .iter()
            .map(|url| ("webhook".to_owned(), Value::String(url.clone())))
            .collect(),
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
    use deepfleet_store::sealed::ContextKey;
    use pretty_assertions::assert_eq;
    use std::sync::Mutex;

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
        assert!(fresh.rest.is_empty());
        let hooked = br#"{"assistant_id": "a", "input": "hi", "webhook": "https://h.example/x"}"#;
        let hooked = run_create(&parse(hooked).unwrap());
        assert_eq!(
            hooked.rest.get("webhook"),
            Some(&json!("https://h.example/x"))
        );
    }

    /// An API over the embedded store and queue serving graph `helper`,
    /// reserving the queues of `steps` and `subs`; returns it with the
    /// queue the submissions come on and the outbox answers go to.
    async fn fixture() -> (
        SubmissionIntake,
        Arc<MemoryQueue>,
        Arc<dyn Store>,
        Arc<Outbox>,
    ) {
        fixture_with(crate::keys::ApiKeys::open(), None).await
    }

    /// [`fixture`] with API keys, sealing runtime context under
    /// `context_key` when there is one.
    async fn fixture_with(
        keys: crate::keys::ApiKeys,
        context_key: Option<ContextKey>,
    ) -> (
        SubmissionIntake,
        Arc<MemoryQueue>,
        Arc<dyn Store>,
        Arc<Outbox>,
    ) {
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let steps: Arc<dyn Queue> = Arc::new(MemoryQueue::new());
        let mut intake = crate::intake::Intake::new(Arc::clone(&store), steps);
        if let Some(key) = context_key {
            intake = intake.with_context_key(key);
        }
        intake
            .register(&AgentSpec::from_yaml("name: helper\nmodel: openai:x\n").unwrap())
            .await
            .unwrap();
        let runs = Runs {
            life: crate::lifecycle::Lifecycle::new(intake),
            graphs: crate::runs::Graphs::new(["helper".to_owned()]),
            started_at: chrono::Utc::now(),
            tenant_runs_in_flight: None,
        };
        let outbox = Arc::new(Outbox::default());
        let replier = Replier::new(Arc::clone(&store), outbox.clone());
        let reserved = ReservedQueues::new(["steps", "subs"]);
        (
            SubmissionIntake::new(runs, keys, replier, reserved),
            Arc::new(MemoryQueue::new()),
            store,
            outbox,
        )
    }

    /// Keeps the answers it is asked to publish; refuses while `down`.
    #[derive(Default)]
    struct Outbox {
        sent: Mutex<Vec<(deepfleet_queue::ReplyAddress, Vec<u8>)>>,
        down: std::sync::atomic::AtomicBool,
    }

    impl Outbox {
        fn refusals(&self) -> Vec<(Option<String>, deepfleet_proto::SubmissionRefusal)> {
            self.sent
                .lock()
                .unwrap()
                .iter()
                .map(|(to, body)| (to.reply_to.clone(), serde_json::from_slice(body).unwrap()))
                .collect()
        }
    }

    #[async_trait::async_trait]
    impl deepfleet_queue::Replies for Outbox {
        async fn reply(
            &self,
            to: &deepfleet_queue::ReplyAddress,
            payload: Vec<u8>,
        ) -> Result<(), deepfleet_queue::QueueError> {
            if self.down.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(deepfleet_queue::QueueError::Connection("down".into()));
            }
            self.sent.lock().unwrap().push((to.clone(), payload));
            Ok(())
        }
    }

    /// A delivery with AMQP-style reply properties, which the in-process
    /// queue does not carry; records how it was settled.
    struct Addressed {
        payload: Vec<u8>,
        address: deepfleet_queue::ReplyAddress,
        key: Option<String>,
        settled: Arc<Mutex<Vec<String>>>,
    }

    #[async_trait::async_trait]
    impl Delivery for Addressed {
        fn payload(&self) -> &[u8] {
            &self.payload
        }
        fn redelivered(&self) -> bool {
            false
        }
        fn reply_address(&self) -> deepfleet_queue::ReplyAddress {
            self.address.clone()
        }
        fn header(&self, name: &str) -> Option<String> {
            (name == CREDENTIAL_HEADER)
                .then(|| self.key.clone())
                .flatten()
        }
        async fn ack(self: Box<Self>) -> Result<(), deepfleet_queue::QueueError> {
            self.settled.lock().unwrap().push("ack".into());
            Ok(())
        }
        async fn requeue(self: Box<Self>) -> Result<(), deepfleet_queue::QueueError> {
            self.settled.lock().unwrap().push("requeue".into());
            Ok(())
        }
        async fn dead_letter(
            self: Box<Self>,
            reason: &str,
        ) -> Result<(), deepfleet_queue::QueueError> {
            self.settled.lock().unwrap().push(format!("dead: {reason}"));
            Ok(())
        }
        /// Records the reason, then the body, then each header.
        async fn dead_letter_amended(
            self: Box<Self>,
            reason: &str,
            payload: Vec<u8>,
            headers: &[(&str, &str)],
        ) -> Result<(), deepfleet_queue::QueueError> {
            let mut settled = self.settled.lock().unwrap();
            settled.push(format!("dead: {reason}"));
            settled.push(format!("body: {}", String::from_utf8_lossy(&payload)));
            settled.extend(headers.iter().map(|(name, text)| format!("{name}: {text}")));
            Ok(())
        }
    }

    fn addressed(
        payload: &[u8],
        reply_to: &str,
        correlation_id: &str,
    ) -> (Box<dyn Delivery>, Arc<Mutex<Vec<String>>>) {
        let settled = Arc::new(Mutex::new(Vec::new()));
        let delivery = Addressed {
            payload: payload.to_vec(),
            address: deepfleet_queue::ReplyAddress {
                reply_to: Some(reply_to.into()),
                correlation_id: Some(correlation_id.into()),
                tenant: None,
            },
            key: None,
            settled: settled.clone(),
        };
        (Box::new(delivery), settled)
    }

    async fn submit(intake: &SubmissionIntake, queue: &MemoryQueue, payload: &[u8]) -> Outcome {
        queue.publish(payload.to_vec(), None).await.unwrap();
        let mut consumer = queue.consume(1).await.unwrap();
        let delivery = consumer.next().await.unwrap().unwrap();
        intake.handle(delivery).await.unwrap()
    }

    #[tokio::test]
    async fn a_valid_submission_starts_a_run_with_its_files_and_reply_record() {
        let (intake, queue, store, outbox) = fixture().await;
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
        assert!(outbox.refusals().is_empty(), "answered when the run ends");
    }

    #[tokio::test]
    async fn a_submission_cannot_take_over_a_thread_made_past_the_api() {
        let (intake, queue, store, _) = fixture().await;
        // A subagent's or a batch's thread: in the store, with no record.
        let child =
            deepfleet_proto::RunRecord::new("r0", "made-elsewhere", "helper", chrono::Utc::now());
        let seed = deepfleet_store::ThreadSeed {
            messages: vec![deepfleet_fleet::tokens::logged(
                deepfleet_proto::Message::user("private"),
            )],
            ..Default::default()
        };
        store.create_run(&child, &seed).await.unwrap();
        let outcome = submit(
            &intake,
            &queue,
            br#"{"assistant_id": "helper", "input": "mine now", "thread_id": "made-elsewhere"}"#,
        )
        .await;
        let Outcome::Refused(reason) = outcome else {
            panic!("accepted: {outcome:?}");
        };
        assert!(reason.starts_with("not_found"), "{reason}");
        let thread = store.load_thread("made-elsewhere").await.unwrap();
        assert_eq!(thread.messages.len(), 1, "nothing joined it");
    }

    #[tokio::test]
    async fn bad_submissions_are_answered_then_dead_lettered_with_the_reason() {
        let (intake, queue, store, outbox) = fixture().await;
        let unknown = br#"{"id": "j2", "assistant_id": "nobody", "input": "hi"}"#;
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
                .index_count(deepfleet_proto::keys::records::REPLIES)
                .await
                .unwrap()
                == 0
        );
        // Each was answered first, with the same reason; without a
        // reply_to (the in-process queue has none), on the results queue.
        let refusals = outbox.refusals();
        let answered: Vec<(Option<&str>, Option<&str>, &str, &str)> = refusals
            .iter()
            .map(|(to, r)| {
                (
                    to.as_deref(),
                    r.id.as_deref(),
                    r.code.as_str(),
                    r.error.as_str(),
                )
            })
            .collect();
        assert_eq!(
            answered,
            vec![
                (None, None, "invalid_submission", reasons[0]),
                (None, Some("j2"), "not_found", reasons[1]),
                (None, None, "invalid_request", reasons[2]),
            ]
        );
        // Without keys every message is the default tenant's, and so is
        // the results queue its refusal goes to.
        assert!(
            outbox
                .sent
                .lock()
                .unwrap()
                .iter()
                .all(|(to, _)| to.tenant == Some(TenantId::default()))
        );
    }

    /// A refused message's runtime context is sealed in its dead letter
    /// under the fleet's key, whether it was refused after parsing or as
    /// malformed; the rest of the body stays, and a header says so.
    #[tokio::test]
    async fn a_refused_submissions_context_is_sealed_in_its_dead_letter() {
        let key = ContextKey::generate();
        let open = crate::keys::ApiKeys::open();
        let (intake, _, _, _) = fixture_with(open, Some(key.clone())).await;
        let unknown = br#"{"id": "j", "assistant_id": "nobody", "input": "hi", "context": {"api_key": "s3cret"}}"#;
        let malformed =
            br#"{"assistant_id": "helper", "context": {"api_key": "s3cret"}, "typo": 1}"#;
        for (payload, reason) in [
            (&unknown[..], "not_found: "),
            (malformed, "invalid submission"),
        ] {
            let (delivery, settled) = addressed(payload, "billing.replies", "c1");
            let outcome = intake.handle(delivery).await.unwrap();
            assert!(matches!(outcome, Outcome::Refused(_)), "{outcome:?}");
            let settled = settled.lock().unwrap().clone();
            let [dead, body, header] = settled.as_slice() else {
                panic!("not amended: {settled:?}");
            };
            assert!(dead.starts_with(&format!("dead: {reason}")), "{dead}");
            assert!(!body.contains("s3cret"), "{body}");
            assert_eq!(header, "x-deepfleet-context: sealed");
            let kept: Value = serde_json::from_str(body.trim_start_matches("body: ")).unwrap();
            let mut original: Value = serde_json::from_slice(payload).unwrap();
            let sealed = serde_json::from_value(kept["context"].clone()).unwrap();
            assert_eq!(key.open(&sealed).unwrap(), json!({"api_key": "s3cret"}));
            original["context"] = kept["context"].clone();
            assert_eq!(kept, original, "the rest of the body is kept");
        }
    }

    /// Without a context key the context is removed instead; a body that is
    /// not JSON has no context to find and is kept as it came.
    #[tokio::test]
    async fn without_a_context_key_a_refused_submissions_context_is_removed() {
        let (intake, _, _, _) = fixture().await;
        // Refused because no key can seal its context for the run.
        let job = br#"{"id": "j", "assistant_id": "helper", "input": "hi", "context": {"api_key": "s3cret"}}"#;
        let (delivery, settled) = addressed(job, "billing.replies", "c1");
        let Outcome::Refused(why) = intake.handle(delivery).await.unwrap() else {
            panic!("accepted a context nothing can seal");
        };
        assert!(why.starts_with("invalid_request: "), "{why}");
        assert_eq!(
            settled.lock().unwrap()[1..],
            [
                r#"body: {"id":"j","assistant_id":"helper","input":"hi"}"#.to_owned(),
                "x-deepfleet-context: removed".to_owned()
            ]
        );
        let (delivery, settled) = addressed(b"{\"context\": 1", "billing.replies", "c2");
        intake.handle(delivery).await.unwrap();
        assert_eq!(settled.lock().unwrap().len(), 1, "dead-lettered as it came");
    }

    #[tokio::test]
    async fn a_reply_to_naming_a_fleet_queue_starts_no_run_and_is_never_answered_there() {
        let (intake, _, store, outbox) = fixture().await;
        let job = br#"{"id": "j3", "assistant_id": "helper", "input": "hi"}"#;
        for (i, queue) in ["steps", "steps.delay.500", "subs", "subs.dead"]
            .iter()
            .enumerate()
        {
            let (delivery, settled) = addressed(job, queue, &format!("c{i}"));
            let outcome = intake.handle(delivery).await.unwrap();
            let Outcome::Refused(reason) = outcome else {
                panic!("accepted a reply to {queue}: {outcome:?}");
            };
            assert!(
                reason.starts_with("reserved_reply_to: reply_to `"),
                "{reason}"
            );
            assert_eq!(*settled.lock().unwrap(), vec![format!("dead: {reason}")]);
        }
        let sent = outbox.sent.lock().unwrap().clone();
        assert_eq!(sent.len(), 4);
        for (i, (to, _)) in sent.iter().enumerate() {
            assert_eq!(to.reply_to, None, "the refusal goes to the results queue");
            assert_eq!(to.correlation_id, Some(format!("c{i}")));
        }
        assert!(
            outbox
                .refusals()
                .iter()
                .all(|(_, r)| r.code == "reserved_reply_to")
        );
        assert!(
            store
                .index_count(deepfleet_proto::keys::records::REPLIES)
                .await
                .unwrap()
                == 0,
            "no run was started"
        );
    }

    #[tokio::test]
    async fn a_refusal_that_cannot_be_answered_is_handed_back() {
        let (intake, _, _, outbox) = fixture().await;
        outbox.down.store(true, std::sync::atomic::Ordering::SeqCst);
        let (delivery, settled) = addressed(b"{", "billing.replies", "c1");
        assert_eq!(intake.handle(delivery).await.unwrap(), Outcome::Requeued);
        assert_eq!(*settled.lock().unwrap(), vec!["requeue".to_owned()]);
        outbox
            .down
            .store(false, std::sync::atomic::Ordering::SeqCst);
        let (delivery, settled) = addressed(b"{", "billing.replies", "c1");
        assert!(matches!(
            intake.handle(delivery).await.unwrap(),
            Outcome::Refused(_)
        ));
        assert_eq!(settled.lock().unwrap().len(), 1);
        let sent = outbox.sent.lock().unwrap().clone();
        assert_eq!(sent[0].0.reply_to.as_deref(), Some("billing.replies"));
    }

    #[tokio::test]
    async fn with_keys_a_submission_needs_one_that_may_submit() {
        let tenant = TenantId::new("acme").unwrap();
        let lines = [
            crate::keys::key_line("submitter", &tenant, Role::Submit),
            crate::keys::key_line("reader", &tenant, Role::Read),
            crate::keys::key_line("other", &TenantId::new("globex").unwrap(), Role::Submit),
        ];
        let keys = crate::keys::ApiKeys::parse(lines.iter().map(|l| ("test", l.as_str()))).unwrap();
        let (intake, _queue, store, outbox) = fixture_with(keys, None).await;
        let payload = br#"{"id": "j", "assistant_id": "helper", "input": "hi", "thread_id": "t1"}"#;
        let keyed = |key: Option<&str>| {
            let settled = Arc::new(Mutex::new(Vec::new()));
            let delivery = Addressed {
                payload: payload.to_vec(),
                address: deepfleet_queue::ReplyAddress::default(),
                key: key.map(str::to_owned),
                settled: settled.clone(),
            };
            (Box::new(delivery) as Box<dyn Delivery>, settled)
        };
        for (key, reason) in [
            (None, "unauthenticated: "),
            (Some("wrong"), "unauthenticated: "),
            (Some("reader"), "forbidden: "),
        ] {
            let (delivery, settled) = keyed(key);
            let Outcome::Refused(why) = intake.handle(delivery).await.unwrap() else {
                panic!("{key:?} accepted");
            };
            assert!(why.starts_with(reason), "{key:?}: {why}");
            assert!(settled.lock().unwrap()[0].starts_with("dead: "));
        }
        assert_eq!(outbox.refusals().len(), 3);
        // Refusals without a known key belong to no tenant; the read key's
        // to its own.
        let tenants: Vec<Option<TenantId>> = outbox
            .sent
            .lock()
            .unwrap()
            .iter()
            .map(|(to, _)| to.tenant.clone())
            .collect();
        assert_eq!(tenants, vec![None, None, Some(tenant.clone())]);
        let (delivery, _) = keyed(Some("submitter"));
        let Outcome::Accepted(run_id) = intake.handle(delivery).await.unwrap() else {
            panic!("refused");
        };
        let run = store.get_run("t1", &run_id).await.unwrap().unwrap();
        assert_eq!(run.tenant, tenant);
        // The thread the submission made is its tenant's: another tenant
        // naming it is told it does not exist.
        let record = crate::repo::threads::threads(store.as_ref())
            .get("t1")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.tenant, tenant);
        let (delivery, _) = keyed(Some("other"));
        let Outcome::Refused(why) = intake.handle(delivery).await.unwrap() else {
            panic!("another tenant ran on the thread");
        };
        assert!(why.starts_with("not_found: "), "{why}");
    }
}
