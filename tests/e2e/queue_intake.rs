//! Queue intake driven by a non-Rust AMQP client: a live `deepfleet
//! scheduler` and two workers on RabbitMQ and Redis, and
//! `queue_intake/pika_flows.py` (Python `pika`, from the venv the Agent
//! Server scenario builds) submitting jobs with `reply_to` and
//! `correlation_id`, reading the answers on its reply queue and on the
//! results queue, and finding malformed messages in the dead-letter queue
//! with their reasons. Skipped with a note without PyPI, failed under
//! `CI=true`, like a missing RabbitMQ or Redis.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use deepfleet_queue::amqp::{AmqpConfig, AmqpQueue};
use tokio::process::{Child, Command};

use crate::agent_server::{fixtures, free_port, python};
use crate::support::{AMQP_URL, CONTEXT_KEY, Fleet, REDIS_URL, distributed, fleet};

/// Deletes a submission queue's topology (queue, dead letters, results).
pub async fn delete_submission_queues(name: &str) {
    if let Ok(queue) = AmqpQueue::connect(AmqpConfig::new(AMQP_URL, name)).await {
        let _ = queue.delete_all().await;
        let _ = queue.close().await;
    }
}

/// Starts `deepfleet scheduler` for `fleet` on a free port, serving the
/// specs in `agents`; returns the process and its address.
pub fn start_scheduler(fleet: &Fleet, agents: &Path, extra: &[&str]) -> (Child, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    let child = Command::new(env!("CARGO_BIN_EXE_deepfleet"))
        .args(["scheduler", "--queue", AMQP_URL, "--store", REDIS_URL])
        .args(["--listen", &addr])
        .args(extra)
        .arg("--agents")
        .arg(agents)
        .env("DEEPFLEET__QUEUE_NAME", &fleet.queue_name)
        .env("DEEPFLEET__KEY_PREFIX", &fleet.prefix)
        .env("DEEPFLEET__CONTEXT_KEY", CONTEXT_KEY.as_str())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    (child, addr)
}

/// Whether something listens on `addr` within 10 s (the scheduler
/// declares its queues before it listens).
pub async fn listening(addr: &str) -> bool {
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn pika_submits_jobs_and_reads_answers_and_dead_letters() {
    let Some(fleet) = distributed(fleet(), 2).await else {
        return;
    };
    let Some(python) = python().await else {
        fleet.shutdown().await.unwrap();
        return;
    };
    let submissions = format!("{}.submissions", fleet.queue_name);
    let (mut scheduler, addr) = start_scheduler(
        &fleet,
        &fixtures().join("agents"),
        &["--submissions", &submissions],
    );
    let up = listening(&addr).await;
    let outcome = if up {
        tokio::time::timeout(
            Duration::from_secs(120),
            Command::new(&python)
                .arg(
                    Path::new(env!("CARGO_MANIFEST_DIR"))
                        .join("tests/e2e/queue_intake/pika_flows.py"),
                )
                .args([AMQP_URL, &submissions])
                .status(),
        )
        .await
    } else {
        Ok(Ok(std::process::ExitStatus::default()))
    };
    let _ = scheduler.kill().await;
    delete_submission_queues(&submissions).await;
    fleet.shutdown().await.unwrap();
    assert!(up, "the scheduler did not listen on {addr}");
    let status = outcome.expect("pika flows timed out").unwrap();
    assert!(status.success(), "pika flows failed: {status}");
}

/// The reply address lives in the store, not in the scheduler: a job
/// accepted by one scheduler, which then dies before the run ends, is
/// answered by the next one.
#[tokio::test]
async fn the_answer_survives_a_scheduler_restart() {
    let Some(mut fleet) = distributed(fleet(), 0).await else {
        return;
    };
    let submissions = format!("{}.submissions", fleet.queue_name);
    let agents = fixtures().join("agents");
    let extra = ["--submissions", submissions.as_str()];
    let (mut first, addr) = start_scheduler(&fleet, &agents, &extra);
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
    let (mut second, addr) = start_scheduler(&fleet, &agents, &extra);
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
