//! Messages on the submission queue, as the scheduler's queue intake
//! takes them.
//!
//! Each input is one message body, handled by a real `SubmissionIntake`
//! over the in-process queue and an embedded store serving the graph
//! `helper`. Checked: handling never panics or errs; a body `parse`
//! refuses is dead-lettered with that reason; a decoded submission encodes
//! back to itself; with nothing able to fail transiently, a message is
//! never requeued, only accepted or refused; an accepted one has its run,
//! its reply record and its files under their normalised paths, and a
//! refused one is answered once with a refusal giving the reason, and
//! dead-lettered with that reason and its payload (less a runtime
//! context, which no key is there to seal).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::json::assert_round_trip;
use crate::runtime::block_on;
use async_trait::async_trait;
use deepfleet_proto::keys::records::REPLIES;
use deepfleet_proto::{AgentSpec, SubmissionRefusal};
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_queue::{DeadLetters, Queue, QueueError, Replies, ReplyAddress};
use deepfleet_scheduler::keys::ApiKeys;
use deepfleet_scheduler::repo::replies::ReplyRecord;
use deepfleet_scheduler::runs::{Graphs, Runs};
use deepfleet_scheduler::submissions::{Outcome, parse};
use deepfleet_scheduler::{Intake, Lifecycle, Replier, ReservedQueues, SubmissionIntake};
use deepfleet_store::Store;
use deepfleet_store::embedded::EmbeddedStore;

/// Checks one input; a failure panics, as libFuzzer expects.
pub fn check(payload: &[u8]) {
    let parsed = parse(payload);
    if let Ok(submission) = &parsed {
        assert_round_trip(submission);
        let again = serde_json::to_vec(submission).expect("encodes");
        assert!(parse(&again).is_ok(), "a parsed submission parses again");
    }
    block_on(handle(payload, parsed));
}

async fn handle(payload: &[u8], parsed: Result<deepfleet_proto::Submission, String>) {
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
    let steps: Arc<dyn Queue> = Arc::new(MemoryQueue::new());
    let intake = Intake::new(Arc::clone(&store), steps);
    let spec = AgentSpec::from_yaml("name: helper\nmodel: openai:x\n").expect("spec");
    intake.register(&spec).await.expect("registers");
    let runs = Runs {
        life: Lifecycle::new(intake),
        graphs: Graphs::new(["helper".to_owned()]),
        started_at: chrono::Utc::now(),
        tenant_runs_in_flight: None,
    };
    let answers = Arc::new(Answers::default());
    let submissions = SubmissionIntake::new(
        runs,
        ApiKeys::open(),
        Replier::new(Arc::clone(&store), Arc::clone(&answers) as Arc<dyn Replies>),
        ReservedQueues::new(["deepfleet"]),
    );
    let queue = MemoryQueue::new();
    queue
        .publish(payload.to_vec(), None)
        .await
        .expect("publish");
    let mut consumer = queue.consume(1).await.expect("consume");
    let delivery = consumer
        .next()
        .await
        .expect("a delivery")
        .expect("no error");
    let outcome = match submissions.handle(delivery).await {
        Ok(outcome) => outcome,
        Err(e) => panic!("handling failed: {e}"),
    };
    assert_eq!(queue.depth().await.expect("depth"), Some(0), "settled");
    let dead = queue.drain_dead_letters(usize::MAX).await.expect("dead");
    match (outcome, parsed) {
        (Outcome::Refused(reason), parsed) => {
            if let Err(why) = parsed {
                assert_eq!(reason, why);
            }
            assert_eq!(dead.len(), 1);
            assert_eq!(dead[0].reason, reason);
            dead_letter_keeps_no_context(payload, &dead[0].payload);
            let answers = answers.taken();
            assert_eq!(answers.len(), 1, "a refusal is answered once");
            let answer: SubmissionRefusal =
                serde_json::from_slice(&answers[0]).expect("the answer is a refusal");
            assert_eq!(
                answer.error, reason,
                "the answer says what the dead letter says"
            );
        }
        (Outcome::Accepted(run_id), Ok(submission)) => {
            assert!(dead.is_empty());
            assert!(answers.taken().is_empty(), "no run ends here");
            let record: ReplyRecord = serde_json::from_value(
                store
                    .get_record(REPLIES, &run_id)
                    .await
                    .expect("reads")
                    .expect("a reply record"),
            )
            .expect("a reply record decodes");
            assert_eq!(record.id, submission.id);
            let run = store
                .get_run(&record.thread_id, &run_id)
                .await
                .expect("reads");
            assert!(run.is_some(), "the accepted run exists");
            let thread = store.load_thread(&record.thread_id).await.expect("thread");
            let expected: BTreeMap<String, String> = submission
                .files
                .iter()
                .flatten()
                .map(|(path, content)| {
                    let path = deepfleet_proto::path::validate(path).expect("accepted path");
                    (path, content.clone())
                })
                .collect();
            let stored: BTreeMap<String, String> = thread
                .files
                .into_iter()
                .map(|(path, file)| (path, file.content))
                .collect();
            assert_eq!(stored, expected);
        }
        (outcome, parsed) => panic!("{outcome:?} for {parsed:?}"),
    }
}

/// Keeps every answer published: the in-process queue carries no reply
/// address, and only refusals are answered here (no run ends).
#[derive(Default)]
struct Answers(Mutex<Vec<Vec<u8>>>);

impl Answers {
    fn taken(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.0.lock().expect("answers"))
    }
}

#[async_trait]
impl Replies for Answers {
    async fn reply(&self, _: &ReplyAddress, answer: Vec<u8>) -> Result<(), QueueError> {
        self.0.lock().expect("answers").push(answer);
        Ok(())
    }
}

/// A runtime context may hold secrets: without a context key to seal it,
/// it is taken out of the dead letter; anything else is dead-lettered as
/// it came.
fn dead_letter_keeps_no_context(payload: &[u8], dead: &[u8]) {
    let has_context = |bytes: &[u8]| {
        serde_json::from_slice::<BTreeMap<String, Box<serde_json::value::RawValue>>>(bytes)
            .is_ok_and(|members| members.contains_key("context"))
    };
    if has_context(payload) {
        assert!(!has_context(dead), "no context in clear");
    } else {
        assert_eq!(dead, payload);
    }
}
