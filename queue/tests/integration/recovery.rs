//! Riding out a lost broker, against a RabbitMQ node of each test's own
//! (so the shared one is untouched): publishes and consumers survive a
//! restart and a crash of the broker, a publish made while it is down
//! completes once it is back, and a consumer whose channel the broker
//! closed (a delivery held past `consumer_timeout`) subscribes again.
//!
//! Needs `rabbitmq-server` installed; without it the tests are skipped
//! with a note, and fail under `CI=true`.

use std::collections::BTreeSet;
use std::time::Duration;

use deepfleet_queue::amqp::{AmqpConfig, AmqpQueue};
use deepfleet_queue::{Consumer, Delivery, Queue};
use deepfleet_testkit::fleet::services::in_ci;
use deepfleet_testkit::servers::{PrivateRabbit, RabbitOptions};
use pretty_assertions::assert_eq;

/// Long enough for a broker to come back on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(90);

/// A private node, or `None` (after a note) when RabbitMQ is not
/// installed outside CI.
async fn rabbit(options: RabbitOptions) -> Option<PrivateRabbit> {
    if PrivateRabbit::script().is_none() {
        let what = "rabbitmq-server is not installed";
        assert!(!in_ci(), "{what} (required under CI=true)");
        eprintln!("skipping: {what}");
        return None;
    }
    Some(PrivateRabbit::start(options).await.unwrap())
}

/// The next delivery, reading past interruptions.
async fn next(consumer: &mut Box<dyn Consumer>) -> Box<dyn Delivery> {
    tokio::time::timeout(PATIENCE, async {
        loop {
            match consumer.next().await {
                Some(Ok(delivery)) => return delivery,
                Some(Err(e)) => eprintln!("interrupted: {e}"),
                None => panic!("the consumer ended"),
            }
        }
    })
    .await
    .expect("a delivery in time")
}

/// Takes deliveries until every payload of `want` came, acking each;
/// fails on one neither wanted nor `earlier` (a delivery whose ack a
/// recovery lost comes again, which is no loss and no stray).
async fn receive_all(
    consumer: &mut Box<dyn Consumer>,
    want: &BTreeSet<String>,
    earlier: &BTreeSet<String>,
) {
    let mut got = BTreeSet::new();
    while !want.is_subset(&got) {
        let delivery = next(consumer).await;
        let payload = String::from_utf8(delivery.payload().to_vec()).unwrap();
        assert!(
            want.contains(&payload) || earlier.contains(&payload),
            "unexpected {payload}"
        );
        // A settle on a channel lost meanwhile fails; the broker has the
        // message back and delivers it again.
        let _ = delivery.ack().await;
        got.insert(payload);
    }
}

/// Waits until the broker answers through `queue` again (what readiness
/// asks).
async fn answers(queue: &AmqpQueue) {
    tokio::time::timeout(PATIENCE, async {
        while queue.depth().await.is_err() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the connection recovered in time");
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

async fn publish_all(queue: &AmqpQueue, payloads: &[String]) {
    for p in payloads {
        queue.publish(p.clone().into_bytes(), None).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_and_consumers_survive_a_broker_restart_and_crash() {
    let Some(mut rabbit) = rabbit(RabbitOptions::default()).await else {
        return;
    };
    let queue = AmqpQueue::connect(AmqpConfig::new(rabbit.url(), "recovery"))
        .await
        .unwrap();
    let mut consumer = queue.consume(4).await.unwrap();

    // Held unacked across a restart, and waiting in the queue: both are
    // there afterwards.
    publish_all(&queue, &names("before-restart-", 3)).await;
    let held = next(&mut consumer).await;
    rabbit.restart().await.unwrap();
    assert!(held.ack().await.is_err(), "the old channel is gone");
    answers(&queue).await;
    publish_all(&queue, &names("after-restart-", 2)).await;
    let mut first: BTreeSet<String> = names("before-restart-", 3).into_iter().collect();
    first.extend(names("after-restart-", 2));
    receive_all(&mut consumer, &first, &BTreeSet::new()).await;

    // A crash: connections drop without a word. A publish made while the
    // broker is down completes once it is back.
    rabbit.kill().await.unwrap();
    assert!(queue.depth().await.is_err(), "no broker, no answer");
    let publishing = {
        let queue = queue.clone();
        tokio::spawn(async move { publish_all(&queue, &names("during-crash-", 2)).await })
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    rabbit.start_again().await.unwrap();
    tokio::time::timeout(PATIENCE, publishing)
        .await
        .unwrap()
        .unwrap();
    publish_all(&queue, &names("after-crash-", 2)).await;
    let mut second: BTreeSet<String> = names("during-crash-", 2).into_iter().collect();
    second.extend(names("after-crash-", 2));
    receive_all(&mut consumer, &second, &first).await;
    queue.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_past_the_consumer_timeout_subscribes_again() {
    let options = RabbitOptions {
        consumer_timeout: Some(Duration::from_secs(2)),
    };
    let Some(rabbit) = rabbit(options).await else {
        return;
    };
    let queue = AmqpQueue::connect(AmqpConfig::new(rabbit.url(), "timeout"))
        .await
        .unwrap();
    let mut consumer = queue.consume(4).await.unwrap();
    queue.publish(b"slow".to_vec(), None).await.unwrap();
    let held = next(&mut consumer).await;
    // Held well past the timeout: the broker closes the channel and puts
    // the message back.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(held.ack().await.is_err(), "the channel was closed");
    // It comes again, on a new subscription. (lapin may also recover the
    // whole connection after such a close, failing that delivery's ack
    // too: then it comes once more.)
    loop {
        let again = next(&mut consumer).await;
        assert_eq!(again.payload(), b"slow");
        assert!(again.redelivered());
        if again.ack().await.is_ok() {
            break;
        }
    }
    // The new subscription takes new work too.
    queue.publish(b"next".to_vec(), None).await.unwrap();
    assert_eq!(next(&mut consumer).await.payload(), b"next");
    queue.close().await.unwrap();
}

/// Waits until `queue` counts at least one consumer; how long that took.
async fn consumed(queue: &AmqpQueue) -> Result<Duration, String> {
    let started = tokio::time::Instant::now();
    while !matches!(queue.consumers().await, Ok(Some(n)) if n >= 1) {
        if started.elapsed() > PATIENCE {
            return Err(format!("no consumer after {PATIENCE:?}"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_of_both_lanes_consumes_both_again_after_each_of_several_restarts() {
    let Some(mut rabbit) = rabbit(RabbitOptions::default()).await else {
        return;
    };
    let batch = AmqpQueue::connect(AmqpConfig::new(rabbit.url(), "lanes"))
        .await
        .unwrap();
    let interactive = AmqpQueue::connect(AmqpConfig::new(
        rabbit.url(),
        deepfleet_queue::lanes::interactive_name("lanes"),
    ))
    .await
    .unwrap();
    let lanes = deepfleet_queue::lanes::Lanes::new(
        std::sync::Arc::new(batch.clone()),
        std::sync::Arc::new(interactive.clone()),
    );
    // Held and waiting work on both lanes makes the queues' recovery after
    // a restart take a while, as in a busy fleet.
    let mut consumer = lanes.consume(2).await.unwrap();
    for round in 0..4 {
        for i in 0..200 {
            batch
                .publish(format!("b{round}-{i}").into_bytes(), None)
                .await
                .unwrap();
            interactive
                .publish(format!("i{round}-{i}").into_bytes(), None)
                .await
                .unwrap();
        }
        let held = next(&mut consumer).await;
        rabbit.restart().await.unwrap();
        drop(held);
        answers(&batch).await;
        answers(&interactive).await;
        let b = consumed(&batch).await;
        let i = consumed(&interactive).await;
        eprintln!("round {round}: batch {b:?}, interactive {i:?}");
        assert!(
            b.is_ok() && i.is_ok(),
            "round {round}: batch {b:?}, interactive {i:?}"
        );
    }
    drop(consumer);
    batch.close().await.unwrap();
    interactive.close().await.unwrap();
}
