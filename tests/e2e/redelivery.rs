//! A step that keeps crashing its workers ends its run with a clear error
//! on the last delivery the queue allows, instead of being dropped by the
//! broker and leaving the run hanging.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::RunStatus;
use deepfleet_queue::amqp::{AmqpConfig, AmqpQueue};
use deepfleet_queue::{DeadLetters, Queue};
use deepfleet_scheduler::Intake;
use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_store::prelude::*;
use deepfleet_testkit::fleet::Service;
use deepfleet_testkit::runner::replay_runner;
use deepfleet_testkit::script::{ScriptBuilder, When};

use crate::support::{AMQP_URL, replay_model, require, spec, task};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_delivery_ends_the_run_instead_of_hanging() {
    if !require(&[Service::RabbitMq]).await {
        return;
    }
    let config = AmqpConfig {
        delivery_limit: 1,
        ..AmqpConfig::new(
            AMQP_URL,
            format!("dftest.{}", uuid::Uuid::new_v4().simple()),
        )
    };
    let queue = Arc::new(AmqpQueue::connect(config).await.unwrap());
    let store = Arc::new(EmbeddedStore::new());
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        "crashy",
        &replay_model(
            dir.path(),
            &ScriptBuilder::new().answer(When::always(), "ok").build(),
        ),
        "",
    );
    let intake = Intake::new(store.clone(), queue.clone());
    intake.register(&spec).await.unwrap();
    let run = intake
        .submit(&spec.name, &task("t1", "go"), None)
        .await
        .unwrap();

    // A worker takes the step and dies without settling it.
    let mut consumer = queue.consume(1).await.unwrap();
    let first = consumer.next().await.unwrap().unwrap();
    assert_eq!(first.deliveries_left(), Some(1));
    first.requeue().await.unwrap();

    let last = consumer.next().await.unwrap().unwrap();
    assert_eq!(last.deliveries_left(), Some(0));
    replay_runner(queue.clone(), store.clone())
        .handle(last)
        .await;

    let ended = store
        .get_run(&run.thread_id, &run.run_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ended.status, RunStatus::Error);
    let error = ended.error.unwrap();
    assert_eq!(error.code.as_str(), "attempts_exhausted");
    assert!(
        error.message.contains("crashed or were stopped"),
        "{}",
        error.message
    );
    let mut dead = Vec::new();
    for _ in 0..100 {
        dead = queue.drain_dead_letters(1).await.unwrap();
        if !dead.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        dead[0].reason.starts_with("attempts_exhausted: "),
        "{}",
        dead[0].reason
    );
    queue.delete_all().await.unwrap();
}
