//! Queue intake driven by a non-Rust AMQP client: a live `deepfleet
//! scheduler` and two workers on RabbitMQ and Redis, and
//! `queue_intake/pika_flows.py` (Python `pika`, from the venv the Agent
//! Server scenario builds) submitting jobs with `reply_to` and
//! `correlation_id`, reading the answers on its reply queue and on the
//! default tenant's results queue, and finding malformed messages in the
//! dead-letter queue with their reasons and refusals. Skipped with a note
//! without PyPI, failed under `CI=true`, like a missing RabbitMQ or Redis.
//! The Rust client cases below check what is refused and how refusals
//! read.

use std::path::Path;
use std::time::Duration;

use deepfleet_store::Order;

use crate::live_scheduler::{
    delete_submission_queues, fixtures, listening, run_flows, start_scheduler, submissions,
};
use crate::support::{AMQP_URL, Fleet, distributed, fleet, reply_queue};

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
    let (client, channel, replies) = reply_queue().await;
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
        if fleet.store.index_count("replies").await.unwrap() > 0 {
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
    // The address is forgotten just after the answer goes out (a kill in
    // between would answer twice): give the scheduler that moment.
    let mut left = kept_replies(&fleet).await;
    for _ in 0..100 {
        if left == 0 || answer.is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = kept_replies(&fleet).await;
    }
    let _ = second.kill().await;
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

/// Reply addresses still kept: a listed id whose record is gone is an
/// entry a kill cut short, which the next reply loop drops.
async fn kept_replies(fleet: &Fleet) -> usize {
    let mut left = 0;
    let listed = fleet.store.index_page("replies", Order::Ascending, 0, 100);
    for entry in listed.await.unwrap() {
        if fleet
            .store
            .get_record("replies", &entry.id)
            .await
            .unwrap()
            .is_some()
        {
            left += 1;
        }
    }
    left
}

/// How long an answer or a dead letter may take to arrive.
const ARRIVAL: Duration = Duration::from_secs(30);

/// A client of the broker, as a service submitting jobs would be, with an
/// exclusive reply queue of its own.
struct Client {
    connection: lapin::Connection,
    channel: lapin::Channel,
    replies: String,
}

impl Client {
    async fn connect() -> Self {
        let (connection, channel, replies) = reply_queue().await;
        Client {
            connection,
            channel,
            replies,
        }
    }

    /// Publishes `body` to `queue` with a `reply_to` (when given) and a
    /// correlation id.
    async fn publish(&self, queue: &str, body: &[u8], reply_to: Option<&str>, correlation: &str) {
        let mut properties =
            lapin::BasicProperties::default().with_correlation_id(correlation.into());
        if let Some(reply_to) = reply_to {
            properties = properties.with_reply_to(reply_to.into());
        }
        self.channel
            .basic_publish(
                "".into(),
                queue.into(),
                Default::default(),
                body,
                properties,
            )
            .await
            .unwrap()
            .await
            .unwrap();
    }

    /// Takes up to `n` messages off `queue`, waiting at most [`ARRIVAL`]
    /// (the caller checks how many came, after cleaning up).
    async fn take(&self, queue: &str, n: usize) -> Vec<lapin::message::Delivery> {
        let mut got = Vec::new();
        let deadline = tokio::time::Instant::now() + ARRIVAL;
        while got.len() < n && tokio::time::Instant::now() < deadline {
            let next = self
                .channel
                .basic_get(
                    queue.into(),
                    lapin::options::BasicGetOptions { no_ack: true },
                )
                .await
                .unwrap();
            match next {
                Some(message) => got.push(message.delivery),
                None => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        got
    }

    /// How many messages wait on `queue` (0 for a queue that does not
    /// exist).
    async fn depth(&self, queue: &str) -> u32 {
        let probe = self.connection.create_channel().await.unwrap();
        let passive = lapin::options::QueueDeclareOptions {
            passive: true,
            ..Default::default()
        };
        let depth = probe
            .queue_declare(queue.into(), passive, Default::default())
            .await
            .map_or(0, |q| q.message_count());
        let _ = probe.close(200, "done".into()).await;
        depth
    }

    async fn close(self) {
        let _ = self.connection.close(200, "done".into()).await;
    }
}

fn correlation(message: &lapin::message::Delivery) -> String {
    message
        .properties
        .correlation_id()
        .as_ref()
        .map(|c| c.to_string())
        .unwrap_or_default()
}

fn reason(message: &lapin::message::Delivery) -> String {
    header(message, "x-deepfleet-reason").unwrap_or_default()
}

fn header(message: &lapin::message::Delivery, name: &str) -> Option<String> {
    message
        .properties
        .headers()
        .as_ref()
        .and_then(|h| h.inner().get(name).cloned())
        .and_then(|v| match v {
            lapin::types::AMQPValue::LongString(s) => Some(s.to_string()),
            _ => None,
        })
}

/// A job whose `reply_to` names one of the fleet's own queues (a tenant's
/// results queue too) is refused before it starts a run: dead-lettered
/// with the reason, answered (as refused, with its correlation id) on its
/// tenant's results queue, and nothing is published to the queue it
/// named.
#[tokio::test]
async fn a_reply_to_naming_a_fleet_queue_is_refused() {
    let Some(fleet) = distributed(fleet(), 1).await else {
        return;
    };
    let submissions = submissions(&fleet);
    let (mut scheduler, addr) = start_scheduler(&fleet, &fixtures().join("agents"));
    let up = listening(&addr).await;
    let client = Client::connect().await;
    let steps = fleet.queue_name.clone();
    let reserved = [
        steps.clone(),
        format!("{steps}.dead"),
        format!("{steps}.delay.1000"),
        submissions.clone(),
        format!("{submissions}.dead"),
        format!("{submissions}.results.another-tenant"),
    ];
    let job = br#"{"id": "misrouted", "assistant_id": "helper", "input": "write notes"}"#;
    for (i, name) in reserved.iter().enumerate() {
        client
            .publish(&submissions, job, Some(name), &format!("reserved-{i}"))
            .await;
    }
    let dead = client
        .take(&format!("{submissions}.dead"), reserved.len())
        .await;
    // No API keys: every job is the default tenant's.
    let refusals = client
        .take(&format!("{submissions}.results.default"), reserved.len())
        .await;
    // Give a misrouted answer time to show up where it must not.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let step_dead = client.depth(&format!("{steps}.dead")).await;
    let replies_left = fleet.store.index_count("replies").await.unwrap();
    let more_dead = client.depth(&format!("{submissions}.dead")).await;
    client.close().await;
    let _ = scheduler.kill().await;
    delete_submission_queues(&submissions).await;
    fleet.shutdown().await.unwrap();

    assert!(up, "the scheduler did not listen on {addr}");
    assert_eq!(
        (dead.len(), refusals.len()),
        (reserved.len(), reserved.len()),
        "dead letters and refusals that arrived"
    );
    for message in &dead {
        assert_eq!(message.data, job.to_vec(), "dead-lettered unchanged");
        let why = reason(message);
        assert!(why.starts_with("reserved_reply_to: "), "{why}");
    }
    let mut answered: Vec<String> = refusals.iter().map(correlation).collect();
    answered.sort();
    let mut want: Vec<String> = (0..reserved.len())
        .map(|i| format!("reserved-{i}"))
        .collect();
    want.sort();
    assert_eq!(answered, want, "one refusal per job, by correlation id");
    for message in &refusals {
        let refusal: deepfleet_proto::SubmissionRefusal =
            serde_json::from_slice(&message.data).unwrap();
        assert_eq!(refusal.id.as_deref(), Some("misrouted"));
        assert_eq!(refusal.code, "reserved_reply_to");
        assert!(
            refusal.error.contains("internal queue"),
            "{}",
            refusal.error
        );
    }
    assert_eq!(
        (step_dead, more_dead, replies_left),
        (0, 0, 0),
        "nothing reached the fleet's queues, no run was started"
    );
}

/// A refused job (malformed, or naming what does not exist) is answered
/// on its reply queue with a typed refusal carrying its correlation id,
/// and dead-lettered with the same reason; a runtime context is sealed in
/// the dead letter, never kept in clear.
#[tokio::test]
async fn refused_jobs_are_answered_before_they_are_dead_lettered() {
    let Some(fleet) = distributed(fleet(), 0).await else {
        return;
    };
    let submissions = submissions(&fleet);
    let (mut scheduler, addr) = start_scheduler(&fleet, &fixtures().join("agents"));
    let up = listening(&addr).await;
    let client = Client::connect().await;
    let bad: [(&str, &[u8], Option<&str>); 4] = [
        ("bad-json", b"{not json", None),
        (
            "no-input",
            br#"{"id": "job-no-input", "assistant_id": "helper"}"#,
            Some("job-no-input"),
        ),
        (
            "unknown-assistant",
            br#"{"id": "job-nobody", "assistant_id": "nobody", "input": "hi"}"#,
            Some("job-nobody"),
        ),
        (
            "traversal",
            br#"{"assistant_id": "helper", "input": "hi", "files": {"/../x": ""}}"#,
            None,
        ),
    ];
    let secret = br#"{"id": "job-secret", "assistant_id": "nobody", "input": "hi",
                      "context": {"api_key": "s3cret"}}"#;
    let sent = bad.iter().map(|(corr, body, _)| (*corr, *body));
    for (corr, body) in sent.chain([("secret", &secret[..])]) {
        client
            .publish(&submissions, body, Some(&client.replies), corr)
            .await;
    }
    let answers = client.take(&client.replies, bad.len() + 1).await;
    let dead = client
        .take(&format!("{submissions}.dead"), bad.len() + 1)
        .await;
    client.close().await;
    let _ = scheduler.kill().await;
    delete_submission_queues(&submissions).await;
    fleet.shutdown().await.unwrap();

    assert!(up, "the scheduler did not listen on {addr}");
    assert_eq!(
        (answers.len(), dead.len()),
        (bad.len() + 1, bad.len() + 1),
        "answers and dead letters that arrived"
    );
    let (sealed, dead): (Vec<_>, Vec<_>) = dead
        .iter()
        .partition(|d| header(d, "x-deepfleet-context").is_some());
    let [sealed] = sealed.as_slice() else {
        panic!("one dead letter had a context: {sealed:?}");
    };
    let kept: serde_json::Value = serde_json::from_slice(&sealed.data).unwrap();
    assert_eq!(
        (
            header(sealed, "x-deepfleet-context").as_deref(),
            kept["id"].as_str(),
            kept["context"]["ciphertext"].is_string(),
            String::from_utf8_lossy(&sealed.data).contains("s3cret"),
        ),
        (Some("sealed"), Some("job-secret"), true, false),
        "the context is sealed, the rest kept"
    );
    let reasons: std::collections::BTreeMap<Vec<u8>, String> =
        dead.iter().map(|d| (d.data.clone(), reason(d))).collect();
    let answers: std::collections::BTreeMap<String, deepfleet_proto::SubmissionRefusal> = answers
        .iter()
        .map(|a| (correlation(a), serde_json::from_slice(&a.data).unwrap()))
        .collect();
    for (corr, body, id) in bad {
        let refusal = answers
            .get(corr)
            .unwrap_or_else(|| panic!("no answer for {corr}: {answers:?}"));
        assert_eq!(refusal.id.as_deref(), id, "{corr}");
        assert_eq!(
            refusal.status,
            deepfleet_proto::RefusalStatus::Refused,
            "{corr}"
        );
        let why = reasons.get(body).expect("dead-lettered unchanged");
        assert_eq!(
            &refusal.error, why,
            "{corr}: the answer gives the dead letter's reason"
        );
    }
    assert_eq!(answers["bad-json"].code, "invalid_submission");
    assert_eq!(answers["unknown-assistant"].code, "not_found");
    assert_eq!(answers["secret"].error, reason(sealed));
}
