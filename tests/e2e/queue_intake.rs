//! Queue intake driven by a non-Rust AMQP client: a live `deepfleet
//! scheduler` and two workers on RabbitMQ and Redis, and
//! `queue_intake/pika_flows.py` (Python `pika`, from the venv the Agent
//! Server scenario builds) submitting jobs with `reply_to` and
//! `correlation_id`, reading the answers on its reply queue and on the
//! results queue, and finding malformed messages in the dead-letter queue
//! with their reasons. Skipped with a note without PyPI, failed under
//! `CI=true`, like a missing RabbitMQ or Redis.

use std::path::Path;
use std::time::Duration;

use crate::live_scheduler::{
    delete_submission_queues, fixtures, listening, run_flows, start_scheduler, submissions,
};
use crate::support::{AMQP_URL, distributed, fleet};

#[tokio::test]
async fn pika_submits_jobs_and_reads_answers_and_dead_letters() {
    let Some(fleet) = distributed(fleet(), 2).await else {
        return;
    };
    run_flows(
        fleet,
        &fixtures().join("agents"),
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/queue_intake/pika_flows.py"),
        |_, submissions| vec![AMQP_URL.to_owned(), submissions.to_owned()],
        Duration::from_secs(120),
    )
    .await;
}

/// The reply address lives in the store, not in the scheduler: a job
/// accepted by one scheduler, which then dies before the run ends, is
/// answered by the next one.
#[tokio::test]
async fn the_answer_survives_a_scheduler_restart() {
    let Some(mut fleet) = distributed(fleet(), 0).await else {
        return;
    };
    let submissions = submissions(&fleet);
    let agents = fixtures().join("agents");
    let (mut first, addr) = start_scheduler(&fleet, &agents);
    assert!(
        listening(&addr).await,
        "the scheduler did not listen on {addr}"
    );
    let client = lapin::Connection::connect(AMQP_URL, lapin::ConnectionProperties::default())
        .await
        .unwrap();
    let channel = client.create_channel().await.unwrap();
    let exclusive = lapin::options::QueueDeclareOptions {
        exclusive: true,
        ..Default::default()
    };
    let replies = channel
        .queue_declare("".into(), exclusive, Default::default())
        .await
        .unwrap()
        .name()
        .to_string();
    let job = br#"{"id": "restart-1", "assistant_id": "helper", "input": "write notes"}"#;
    channel
        .basic_publish(
            "".into(),
            submissions.as_str().into(),
            Default::default(),
            job,
            lapin::BasicProperties::default()
                .with_reply_to(replies.as_str().into())
                .with_correlation_id("corr-restart".into()),
        )
        .await
        .unwrap();
    // No worker yet: the run waits while the first scheduler records it.
    let mut recorded = false;
    for _ in 0..100 {
        if !fleet
            .store
            .list_records("replies")
            .await
            .unwrap()
            .is_empty()
        {
            recorded = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = first.kill().await;
    let (mut second, addr) = start_scheduler(&fleet, &agents);
    let second_up = listening(&addr).await;
    fleet.spawn_worker().unwrap();
    let mut answer = None;
    for _ in 0..300 {
        let got = channel
            .basic_get(
                replies.as_str().into(),
                lapin::options::BasicGetOptions { no_ack: true },
            )
            .await
            .unwrap();
        if let Some(got) = got {
            answer = Some(got.delivery);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = second.kill().await;
    let left = fleet.store.list_records("replies").await.unwrap().len();
    let _ = client.close(200, "done".into()).await;
    delete_submission_queues(&submissions).await;
    fleet.shutdown().await.unwrap();
    assert!(
        recorded && second_up,
        "recorded: {recorded}, second scheduler up: {second_up}"
    );
    let answer = answer.expect("no answer after the restart");
    assert_eq!(
        answer
            .properties
            .correlation_id()
            .as_ref()
            .map(|c| c.as_str()),
        Some("corr-restart")
    );
    let result: deepfleet_proto::SubmissionResult = serde_json::from_slice(&answer.data).unwrap();
    assert_eq!(
        (result.result.id.as_str(), result.result.output.as_str()),
        ("restart-1", "wrote notes")
    );
    assert_eq!(left, 0, "the reply address was not forgotten");
}
