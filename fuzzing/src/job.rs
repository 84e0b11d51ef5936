//! Step messages from the queue, as a worker takes them.
//!
//! Each input is one delivery's payload, handed to a real `StepRunner`
//! over the in-process queue and an embedded store that holds one pending
//! run (`r` on thread `t`, of an agent whose model no provider serves, so
//! an executed step fails and is retried without any network). Checked:
//! handling never panics and always settles the delivery; a payload that
//! is no envelope, or one of another version, is dead-lettered with the
//! reason; a step message for a run nobody knows is dead-lettered as
//! `unknown_run`; every envelope the worker accepts encodes back to
//! itself.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::json::assert_round_trip;
use crate::runtime::block_on;
use chrono::Utc;
use deepfleet_fleet::tokens::logged;
use deepfleet_model::Providers;
use deepfleet_proto::{AgentSpec, ENVELOPE_VERSION, Envelope, Job, Message, RunRecord};
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_queue::{DeadLetters, Queue};
use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_store::{Store, ThreadSeed};
use deepfleet_worker::StepRunner;
use tokio_util::sync::CancellationToken;

/// Checks one input; a failure panics, as libFuzzer expects.
pub fn check(payload: &[u8]) {
    let decoded = serde_json::from_slice::<Envelope>(payload);
    if let Ok(envelope) = &decoded {
        assert_round_trip(envelope);
        assert_eq!(
            serde_json::from_slice::<Envelope>(&serde_json::to_vec(envelope).expect("encodes"))
                .expect("decodes"),
            *envelope
        );
    }
    let dead = block_on(handle(payload));
    match decoded {
        Err(_) => assert_dead_lettered(&dead, payload, "malformed job: "),
        Ok(envelope) if envelope.v != ENVELOPE_VERSION => {
            assert_dead_lettered(&dead, payload, "unsupported envelope version ");
        }
        Ok(Envelope {
            job: Job::Step(job),
            ..
        }) => {
            if (job.run_id.as_str(), job.thread_id.as_str()) != ("r", "t") {
                assert_dead_lettered(&dead, payload, "unknown_run: run ");
            }
        }
        // A check of a run that is gone or moved on is dropped, never
        // dead-lettered.
        Ok(Envelope {
            job: Job::DeadlineCheck(_),
            ..
        }) => assert!(dead.is_empty(), "a deadline check was dead-lettered"),
    }
}

/// Handles `payload` as one delivery; returns the dead letters it left
/// as `(reason, payload)`.
async fn handle(payload: &[u8]) -> Vec<(String, Vec<u8>)> {
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
    let spec = AgentSpec::from_yaml("name: a\nmodel: nowhere:model\n").expect("spec");
    store.serve_spec(&spec).await.expect("stores the spec");
    let now = Utc::now();
    let seed = ThreadSeed {
        messages: vec![logged(Message::user("hi"))],
        files: BTreeMap::new(),
        state: serde_json::Map::new(),
    };
    store
        .create_run(&RunRecord::new("r", "t", "a", now), &seed)
        .await
        .expect("creates the run");
    let queue = Arc::new(MemoryQueue::new());
    let runner = StepRunner::builder(
        Arc::clone(&queue) as Arc<dyn Queue>,
        store,
        Arc::new(Providers::with_env(Default::default(), |_| None)),
    )
    .build();
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
    runner.handle(delivery, &CancellationToken::new()).await;
    if queue.depth().await.expect("depth") != Some(0) {
        let next = consumer
            .next()
            .await
            .expect("a delivery")
            .expect("no error");
        assert!(
            !next.redelivered(),
            "the delivery was dropped unsettled: {:?}",
            String::from_utf8_lossy(payload)
        );
    }
    queue
        .drain_dead_letters(usize::MAX)
        .await
        .expect("dead letters")
        .into_iter()
        .map(|d| (d.reason, d.payload))
        .collect()
}

fn assert_dead_lettered(dead: &[(String, Vec<u8>)], payload: &[u8], reason: &str) {
    assert_eq!(dead.len(), 1, "one dead letter expected, got {dead:?}");
    assert!(
        dead[0].0.starts_with(reason),
        "dead-lettered as {:?}, expected {reason:?}",
        dead[0].0
    );
    assert_eq!(dead[0].1, payload, "the dead letter keeps the payload");
}
