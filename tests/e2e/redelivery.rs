//! A step whose workers keep dying is not dropped by the broker, leaving
//! its run hanging: the last delivery the queue allows goes out again as a
//! fresh message, one attempt more, and once no attempt is left the run
//! ends with a clear error.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::{Envelope, RunStatus};
use deepfleet_queue::amqp::{AmqpConfig, AmqpQueue};
use deepfleet_queue::{DeadLetters, Queue};
use deepfleet_scheduler::{Intake, submit_task};
use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_store::prelude::*;
use deepfleet_testkit::fleet::Service;
use deepfleet_testkit::runner::replay_runner_retrying;
use deepfleet_testkit::script::{ScriptBuilder, When};
use deepfleet_worker::RetryConfig;
use tokio_util::sync::CancellationToken;

use crate::support::{AMQP_URL, replay_model, require, spec, task};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_delivery_goes_out_again_until_the_attempts_run_out() {
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
    let run = submit_task(&intake, &spec.name, &task("t1", "go"), None)
        .await
        .unwrap();

    // Each attempt: a worker takes the step and dies without settling it,
    // and the next one gets the last delivery the queue allows. The first
    // attempt's last delivery goes out again as a fresh message, one
    // attempt more; the last attempt's ends the run.
    let retry = RetryConfig {
        max_attempts: 2,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(10),
    };
    let runner = replay_runner_retrying(queue.clone(), store.clone(), retry);
    let mut consumer = queue.consume(1).await.unwrap();
    for attempt in 0..retry.max_attempts {
        let first = consumer.next().await.unwrap().unwrap();
        let envelope: Envelope = serde_json::from_slice(first.payload()).unwrap();
        assert_eq!(envelope.attempt, attempt);
        assert_eq!(first.deliveries_left(), Some(1));
        first.requeue().await.unwrap();
        let last = consumer.next().await.unwrap().unwrap();
        assert_eq!(last.deliveries_left(), Some(0));
        runner.handle(last, &CancellationToken::new()).await;
        let status = store
            .get_run(&run.thread_id, &run.run_id)
            .await
            .unwrap()
            .unwrap()
            .status;
        if attempt + 1 < retry.max_attempts {
            assert!(
                !status.is_terminal(),
                "ended after attempt {attempt}: {status:?}"
            );
        }
    }

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
