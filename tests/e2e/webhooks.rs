//! Run-completion webhooks through a receiver outage (issue #18: "a
//! webhook receiver gets each completion once, with a valid signature,
//! through a receiver outage"), embedded (`deepfleet dev`) and distributed
//! (two `deepfleet scheduler` processes, both delivering until the one
//! that took the runs is killed mid-outage, and two workers on RabbitMQ
//! and Redis).
//!
//! A receiver on 127.0.0.1 answers 503 until every run has ended and been
//! refused at least once, then 200. Runs end every way the API reports:
//! success (a thread run and a stateless one), interrupted (cancelled),
//! and, distributed, a queue submission asking for a webhook. Each run's
//! completion must then arrive exactly once (counted by `webhook-id`, no
//! dedupe), signed with the tenant's secret over `id.timestamp.body`, with
//! a recent timestamp and the run's final status in the body.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::process::{Child, Command};

use crate::live_scheduler::{
    delete_submission_queues, fixtures, free_port, listening, scheduler_command, submissions,
};
use crate::support::{distributed, fleet};

/// The default tenant's signing secret, in the Standard Webhooks form.
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// How long everything may take, outage included.
const LIMIT: Duration = Duration::from_secs(90);

/// What the receiver was sent.
#[derive(Default)]
struct Receiver {
    up: AtomicBool,
    /// Attempts answered 503, by `webhook-id`.
    refused: Mutex<BTreeMap<String, usize>>,
    /// Deliveries accepted: id, timestamp, signature, body.
    accepted: Mutex<Vec<(String, String, String, Bytes)>>,
}

async fn hook(
    State(receiver): State<Arc<Receiver>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let id = header("webhook-id");
    if !receiver.up.load(Ordering::SeqCst) {
        *receiver.refused.lock().unwrap().entry(id).or_default() += 1;
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let delivery = (
        id,
        header("webhook-timestamp"),
        header("webhook-signature"),
        body,
    );
    receiver.accepted.lock().unwrap().push(delivery);
    StatusCode::NO_CONTENT
}

/// Starts the receiver (down); returns it and its URL.
async fn receiver() -> (Arc<Receiver>, String) {
    let receiver = Arc::new(Receiver::default());
    let app = Router::new()
        .route("/hook", post(hook))
        .with_state(Arc::clone(&receiver));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (receiver, url)
}

/// The settings every scheduler of the scenario runs with: the secret,
/// and retries fast enough for a test.
fn webhook_env(command: &mut Command) {
    command
        .env("DEEPFLEET__WEBHOOKS__SECRETS__DEFAULT", SECRET)
        .env("DEEPFLEET__WEBHOOKS__RETRY_INITIAL_MS", "200")
        .env("DEEPFLEET__WEBHOOKS__RETRY_MAX_MS", "1000")
        .env("DEEPFLEET__WEBHOOKS__MAX_ATTEMPTS", "200")
        .env("DEEPFLEET__WEBHOOKS__TIMEOUT_SECS", "5")
        .env("DEEPFLEET__WEBHOOKS__ALLOW_PRIVATE_DESTINATIONS", "true");
}

/// The expected final status of each run, by run id.
type Expected = BTreeMap<String, &'static str>;

/// Creates the runs through the API at `base`: a thread run, a stateless
/// one and a cancelled one, all with a webhook to `hook`; checks a bad
/// webhook is refused.
async fn create_runs(http: &reqwest::Client, base: &str, hook: &str) -> Expected {
    let post = |path: &str, body: Value| {
        let request = http.post(format!("{base}{path}")).json(&body);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status();
            let body: Value = response.json().await.unwrap_or(Value::Null);
            (status.as_u16(), body)
        }
    };
    let input = |text: &str| json!({"messages": [{"role": "user", "content": text}]});
    let mut expected = Expected::new();

    let (status, body) = post(
        "/runs",
        json!({"assistant_id": "helper", "input": input("echo hi"), "webhook": "ftp://x/y"}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.to_string().contains("http or https"), "{body}");

    let (_, thread) = post("/threads", json!({})).await;
    let thread_id = thread["thread_id"].as_str().unwrap().to_owned();
    let (status, run) = post(
        &format!("/threads/{thread_id}/runs"),
        json!({"assistant_id": "helper", "input": input("write alpha"), "webhook": hook}),
    )
    .await;
    assert_eq!(status, 200, "{run}");
    expected.insert(run["run_id"].as_str().unwrap().to_owned(), "success");

    let (status, run) = post(
        "/runs",
        json!({"assistant_id": "helper", "input": input("echo beta"), "webhook": hook}),
    )
    .await;
    assert_eq!(status, 200, "{run}");
    expected.insert(run["run_id"].as_str().unwrap().to_owned(), "success");

    let (_, thread) = post("/threads", json!({})).await;
    let looping = thread["thread_id"].as_str().unwrap().to_owned();
    let (status, run) = post(
        &format!("/threads/{looping}/runs"),
        json!({"assistant_id": "helper", "input": input("loop"), "webhook": hook}),
    )
    .await;
    assert_eq!(status, 200, "{run}");
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (status, body) = post(
        &format!("/threads/{looping}/runs/{run_id}/cancel?wait=1"),
        json!({}),
    )
    .await;
    assert!(status < 300, "cancel: {status} {body}");
    expected.insert(run_id, "interrupted");
    expected
}

/// Submits a job with a webhook on the submission queue `queue`; returns
/// its run id once the scheduler has created the run (read from the
/// results queue's answer, after the run ends).
async fn submit_job(queue: &str, hook: &str) -> String {
    let (client, channel, replies) = crate::support::reply_queue().await;
    let job = json!({"id": "job-1", "assistant_id": "helper", "input": "echo queued",
                     "webhook": hook});
    channel
        .basic_publish(
            "".into(),
            queue.into(),
            Default::default(),
            job.to_string().as_bytes(),
            lapin::BasicProperties::default().with_reply_to(replies.as_str().into()),
        )
        .await
        .unwrap();
    let mut consumer = channel
        .basic_consume(
            replies.as_str().into(),
            "webhook-test".into(),
            lapin::options::BasicConsumeOptions {
                no_ack: true,
                ..Default::default()
            },
            Default::default(),
        )
        .await
        .unwrap();
    let answer = tokio::time::timeout(LIMIT, futures::StreamExt::next(&mut consumer))
        .await
        .expect("no answer to the submission")
        .unwrap()
        .unwrap();
    let answer: Value = serde_json::from_slice(&answer.data).unwrap();
    let _ = client.close(0, "done".into()).await;
    answer["run_id"].as_str().unwrap().to_owned()
}

/// Waits (bounded) until every expected run was refused once.
async fn outage_seen(receiver: &Receiver, expected: &Expected) {
    let deadline = tokio::time::Instant::now() + LIMIT;
    let refused_all = || {
        let refused = receiver.refused.lock().unwrap();
        expected.keys().all(|id| refused.contains_key(id))
    };
    while !refused_all() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not every run's webhook was attempted during the outage: {:?}",
            receiver.refused.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Brings the receiver up, waits (bounded) until each run arrived, then
/// a little longer for any repeat; checks each arrived once, signed, with
/// its final status.
async fn check_deliveries(receiver: &Receiver, expected: &Expected, limit: Duration) {
    let deadline = tokio::time::Instant::now() + limit;
    receiver.up.store(true, Ordering::SeqCst);
    while receiver.accepted.lock().unwrap().len() < expected.len() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "webhooks missing after the outage"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Retries come at most a second apart: a repeat would show by now.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let accepted = receiver.accepted.lock().unwrap().clone();
    let mut seen: BTreeMap<String, &'static str> = BTreeMap::new();
    for (id, timestamp, signature, body) in &accepted {
        assert!(
            seen.insert(id.clone(), "").is_none(),
            "run {id} was delivered twice"
        );
        let want = expected
            .get(id)
            .unwrap_or_else(|| panic!("a delivery for no run of the test: {id}"));
        let key = STANDARD.decode(&SECRET["whsec_".len()..]).unwrap();
        let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
        mac.update(format!("{id}.{timestamp}.").as_bytes());
        mac.update(body);
        let valid = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
        assert_eq!(signature, &valid, "the signature of {id}");
        let sent_at: i64 = timestamp.parse().unwrap();
        let age = chrono::Utc::now().timestamp() - sent_at;
        assert!((0..60).contains(&age), "a stale timestamp: {age} s");
        let run: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(run["run_id"], json!(id));
        assert_eq!(run["status"], json!(want), "{run}");
        if *want == "success" {
            assert!(run["values"]["messages"].is_array(), "{run}");
        }
    }
    assert_eq!(seen.len(), expected.len());
}

fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_each_completion_arrives_once_signed_through_an_outage() {
    let (receiver, hook) = receiver().await;
    let addr = format!("127.0.0.1:{}", free_port());
    let mut dev = Command::new(env!("CARGO_BIN_EXE_deepfleet"));
    dev.args(["dev", "--listen", &addr, "--agents"])
        .arg(fixtures().join("agents"))
        .env_remove("DEEPFLEET_CONFIG")
        .env_remove("DEEPFLEET__CONTEXT_KEY")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    webhook_env(&mut dev);
    let mut dev = dev.spawn().unwrap();
    assert!(listening(&addr).await, "dev did not listen on {addr}");
    let expected = create_runs(&http(), &format!("http://{addr}"), &hook).await;
    outage_seen(&receiver, &expected).await;
    check_deliveries(&receiver, &expected, LIMIT).await;
    let _ = dev.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn distributed_each_completion_arrives_once_signed_through_an_outage() {
    let Some(fleet) = distributed(fleet(), 2).await else {
        return;
    };
    let (receiver, hook) = receiver().await;
    let agents = fixtures().join("agents");
    let start = |addr: &str| -> Child {
        let mut command = scheduler_command(&fleet, addr);
        command.arg("--agents").arg(&agents);
        webhook_env(&mut command);
        command.spawn().unwrap()
    };
    // Two schedulers: both deliver, neither may send what the other did.
    let (a, b) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let (mut first, mut second) = (start(&a), start(&b));
    assert!(listening(&a).await && listening(&b).await);
    let mut expected = create_runs(&http(), &format!("http://{a}"), &hook).await;
    let queued = submit_job(&submissions(&fleet), &hook).await;
    expected.insert(queued, "success");
    outage_seen(&receiver, &expected).await;
    // The scheduler that took the runs dies during the outage: the
    // deliveries are the fleet's, and the other one sends them all.
    let _ = first.kill().await;
    // Killed during an attempt, it leaves that delivery leased for the
    // attempt's timeout (5 s here) and the lease's one-minute margin.
    check_deliveries(&receiver, &expected, LIMIT + Duration::from_secs(65)).await;
    let _ = second.kill().await;
    delete_submission_queues(&submissions(&fleet)).await;
    fleet.shutdown().await.unwrap();
}
