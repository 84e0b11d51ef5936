//! The webhook delivery loop over the embedded store, for runs created
//! over the API, against a receiver on 127.0.0.1 whose answer the test
//! sets: a run is sent once it ends,
//! retried while refused, recorded, and never sent again once delivered,
//! however many deliverers run.

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use deepfleet_proto::RunStatus;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use chrono::Utc;
use deepfleet_fleet::Metrics;
use deepfleet_proto::keys::records::{WEBHOOK_CLAIMS, WEBHOOKS};
use deepfleet_scheduler::repo::webhooks::{DeliveryState, WebhookRecord, webhooks};
use deepfleet_scheduler::webhook_delivery::{PAGE, WebhookDeliverer};
use deepfleet_store::Order;
use std::time::Duration;

use crate::test_support::{TestApi, WEBHOOK_SECRET, api, finish, run_body};
use deepfleet_scheduler::webhooks::sign::{Secret, signature};

/// A receiver answering `status`, keeping what it was sent.
#[derive(Default)]
struct Receiver {
    status: AtomicU16,
    got: Mutex<Vec<(HeaderMap, Bytes)>>,
}

async fn hook(State(r): State<Arc<Receiver>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    r.got.lock().unwrap().push((headers, body));
    StatusCode::from_u16(r.status.load(Ordering::SeqCst)).unwrap()
}

/// Starts a receiver answering `status`; returns it and its URL.
async fn receiver(status: u16) -> (Arc<Receiver>, String) {
    let receiver = Arc::new(Receiver::default());
    receiver.status.store(status, Ordering::SeqCst);
    let app = axum::Router::new()
        .route("/hook", post(hook))
        .with_state(Arc::clone(&receiver));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (receiver, url)
}

fn deliverer(api: &TestApi, metrics: Option<Arc<Metrics>>) -> WebhookDeliverer {
    let _ = rustls::crypto::ring::default_provider().install_default();
    WebhookDeliverer::new(api.state.runs.clone(), metrics).unwrap()
}

/// A run on a new thread with a webhook to `url`; returns thread and run.
async fn run_with_webhook(api: &TestApi, url: &str) -> (String, String) {
    let thread = api.thread().await;
    let mut body = run_body("hi");
    body["webhook"] = json!(url);
    let run = api.run_on(&thread, body).await;
    (thread, run["run_id"].as_str().unwrap().to_owned())
}

async fn record(api: &TestApi, run_id: &str) -> WebhookRecord {
    webhooks(api.store.as_ref())
        .get(run_id)
        .await
        .unwrap()
        .unwrap()
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers.get(name).unwrap().to_str().unwrap()
}

#[tokio::test]
async fn a_run_is_sent_when_it_ends_retried_while_refused_and_then_left_alone() {
    let api = api().await;
    let (receiver, url) = receiver(503).await;
    let metrics = Arc::new(Metrics::new().unwrap());
    let deliverer = deliverer(&api, Some(Arc::clone(&metrics)));
    let (thread, run) = run_with_webhook(&api, &url).await;
    assert_eq!(deliverer.deliver_due().await.unwrap(), 0, "not ended yet");
    assert_eq!(record(&api, &run).await.state, DeliveryState::Waiting);

    finish(api.store.as_ref(), &thread, &run, RunStatus::Success).await;
    assert_eq!(deliverer.deliver_due().await.unwrap(), 1);
    let refused = record(&api, &run).await;
    assert_eq!(refused.state, DeliveryState::Due);
    assert_eq!(refused.attempts.len(), 1);
    assert_eq!(refused.attempts[0].status, Some(503));

    receiver.status.store(204, Ordering::SeqCst);
    assert_eq!(deliverer.deliver_due().await.unwrap(), 1);
    assert_eq!(deliverer.deliver_due().await.unwrap(), 0, "delivered once");
    let delivered = record(&api, &run).await;
    assert_eq!(delivered.state, DeliveryState::Delivered);
    assert_eq!(
        delivered
            .attempts
            .iter()
            .map(|a| a.status)
            .collect::<Vec<_>>(),
        vec![Some(503), Some(204)]
    );
    let pending = api.store.index_page(WEBHOOKS, Order::Ascending, 0, 10);
    assert_eq!(pending.await.unwrap(), Vec::new());

    // Both attempts carried the same id and body, each signed when sent.
    let got = receiver.got.lock().unwrap().clone();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].1, got[1].1);
    let secret = Secret::parse(WEBHOOK_SECRET).unwrap();
    for (headers, body) in &got {
        assert_eq!(header(headers, "webhook-id"), run);
        let timestamp: i64 = header(headers, "webhook-timestamp").parse().unwrap();
        assert!((Utc::now().timestamp() - timestamp).abs() < 60);
        assert_eq!(
            header(headers, "webhook-signature"),
            signature(&secret, &run, timestamp, body)
        );
        assert_eq!(header(headers, "content-type"), "application/json");
    }
    let sent: Value = serde_json::from_slice(&got[0].1).unwrap();
    assert_eq!(
        (&sent["run_id"], &sent["thread_id"], &sent["status"]),
        (&json!(run), &json!(thread), &json!("success"))
    );
    assert_eq!(sent["values"]["messages"][1]["content"], "done");
    assert_eq!(
        metrics
            .samples("deepfleet_webhook_deliveries_total")
            .unwrap(),
        vec![
            r#"deepfleet_webhook_deliveries_total{outcome="delivered"} 1"#,
            r#"deepfleet_webhook_deliveries_total{outcome="retrying"} 1"#,
        ]
    );
}

#[tokio::test]
async fn a_failed_run_is_sent_with_its_error_and_given_up_after_the_last_attempt() {
    let api = api().await;
    let (receiver, url) = receiver(500).await;
    let deliverer = deliverer(&api, None);
    let (thread, run) = run_with_webhook(&api, &url).await;
    finish(api.store.as_ref(), &thread, &run, RunStatus::Error).await;
    // The test configuration gives three attempts.
    for _ in 0..3 {
        assert_eq!(deliverer.deliver_due().await.unwrap(), 1);
    }
    assert_eq!(deliverer.deliver_due().await.unwrap(), 0);
    let failed = record(&api, &run).await;
    assert_eq!(failed.state, DeliveryState::Failed);
    assert_eq!(failed.attempts.len(), 3);
    assert!(failed.finished_at.is_some());
    let got = receiver.got.lock().unwrap().clone();
    let sent: Value = serde_json::from_slice(&got[0].1).unwrap();
    assert_eq!(sent["status"], "error");
    assert_eq!(sent["error"]["message"], "the model is down");
    assert_eq!(sent.get("values"), None);
}

#[tokio::test]
async fn deliverers_side_by_side_send_a_run_once_and_a_held_lease_blocks() {
    let api = api().await;
    let (receiver, url) = receiver(200).await;
    let (thread, run) = run_with_webhook(&api, &url).await;
    finish(api.store.as_ref(), &thread, &run, RunStatus::Success).await;
    // Another instance holds the lease: nothing is sent meanwhile.
    let lease = Duration::from_secs(60);
    let held = api
        .store
        .claim_record(WEBHOOK_CLAIMS, &run, &json!("other"), lease)
        .await
        .unwrap();
    assert!(held);
    let (a, b) = (deliverer(&api, None), deliverer(&api, None));
    assert_eq!(a.deliver_due().await.unwrap(), 0);
    api.store.delete_record(WEBHOOK_CLAIMS, &run).await.unwrap();
    let (sent_a, sent_b) = tokio::join!(a.deliver_due(), b.deliver_due());
    assert_eq!(sent_a.unwrap() + sent_b.unwrap(), 1);
    assert_eq!(
        a.deliver_due().await.unwrap() + b.deliver_due().await.unwrap(),
        0
    );
    assert_eq!(receiver.got.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_run_cancelled_before_it_started_is_sent_as_interrupted() {
    let api = api().await;
    let (receiver, url) = receiver(200).await;
    let deliverer = deliverer(&api, None);
    let thread = api.thread().await;
    // The first run keeps the thread busy, so the second one queues.
    api.run_on(&thread, run_body("first")).await;
    let mut body = run_body("second");
    body["webhook"] = json!(url);
    let queued = api.run_on(&thread, body).await;
    let run = queued["run_id"].as_str().unwrap();
    let cancel = format!("/threads/{thread}/runs/{run}/cancel");
    let answer = api.send("POST", &cancel, None).await;
    assert!(answer.status.is_success(), "{}", answer.text);
    assert_eq!(deliverer.deliver_due().await.unwrap(), 1);
    let got = receiver.got.lock().unwrap().clone();
    let sent: Value = serde_json::from_slice(&got[0].1).unwrap();
    assert_eq!(sent["status"], "interrupted");
}

#[tokio::test]
async fn more_deliveries_than_a_page_are_all_sent_once_over_rounds() {
    let api = api().await;
    let (receiver, url) = receiver(200).await;
    let deliverer = deliverer(&api, None);
    let repo = webhooks(api.store.as_ref());
    let count = PAGE + 44;
    for i in 0..count {
        let mut record = WebhookRecord::waiting(&crate::test_support::sample_meta(), url.clone());
        record.run_id = format!("r{i:04}");
        record.state = DeliveryState::Due;
        record.body = Some("{}".into());
        repo.put(&record.run_id, &record).await.unwrap();
    }
    let mut sent = 0;
    for _ in 0..3 {
        sent += deliverer.deliver_due().await.unwrap();
    }
    assert_eq!(sent, count);
    let mut ids: Vec<String> = receiver
        .got
        .lock()
        .unwrap()
        .iter()
        .map(|(headers, _)| header(headers, "webhook-id").to_owned())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), count);
}
