use std::sync::atomic::AtomicBool;

use axum::body::Body;
use axum::http::Request;
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_store::embedded::EmbeddedStore;
use pretty_assertions::assert_eq;
use tower::ServiceExt;

use super::*;

fn result(name: &'static str, error: Option<&str>) -> CheckResult {
    CheckResult {
        name,
        ok: error.is_none(),
        error: error.map(str::to_owned),
    }
}

#[tokio::test]
async fn ready_once_a_consumer_is_attached() {
    let (queue, attached) = WatchedQueue::wrap(Arc::new(MemoryQueue::new()));
    let probes = Probes::new(CancellationToken::new())
        .broker(Arc::clone(&queue))
        .store(Arc::new(EmbeddedStore::new()))
        .consumer("consumer", attached);
    let before = probes.readiness().await;
    assert_eq!(
        before,
        Readiness {
            ready: false,
            draining: false,
            checks: vec![
                result("broker", None),
                result("store", None),
                result("consumer", Some("no consumer attached")),
            ],
        }
    );
    let consumer = queue.consume(1).await.unwrap();
    assert!(probes.readiness().await.ready);
    drop(consumer);
    assert!(!probes.readiness().await.ready);
}

#[tokio::test]
async fn a_lost_connection_turns_readiness_false_until_it_recovers() {
    let up = Arc::new(AtomicBool::new(true));
    let flag = Arc::clone(&up);
    let probes = Probes::new(CancellationToken::new()).check("store", move || {
        let up = flag.load(Ordering::SeqCst);
        async move {
            if up {
                Ok(())
            } else {
                Err("connection refused".to_owned())
            }
        }
    });
    assert!(probes.readiness().await.ready);
    up.store(false, Ordering::SeqCst);
    assert_eq!(
        probes.readiness().await.checks,
        vec![result("store", Some("connection refused"))]
    );
    up.store(true, Ordering::SeqCst);
    assert!(probes.readiness().await.ready);
}

#[tokio::test]
async fn a_hung_check_fails_after_the_timeout() {
    let probes = Probes::new(CancellationToken::new())
        .check("broker", std::future::pending::<Result<(), String>>)
        .check("store", || async { Ok(()) });
    let readiness = probes.readiness().await;
    assert_eq!(
        readiness.checks,
        vec![
            result("broker", Some("no answer within 2s")),
            result("store", None)
        ]
    );
}

#[tokio::test]
async fn draining_is_never_ready() {
    let draining = CancellationToken::new();
    let probes = Probes::new(draining.clone()).check("store", || async { Ok(()) });
    assert!(probes.readiness().await.ready);
    draining.cancel();
    let readiness = probes.readiness().await;
    assert!(!readiness.ready);
    assert!(readiness.draining);
}

#[tokio::test]
async fn routes_answer_200_and_503() {
    let draining = CancellationToken::new();
    let app = routes(Probes::new(draining.clone()));
    let get = |path: &str| Request::get(path).body(Body::empty()).unwrap();
    let live = app.clone().oneshot(get("/healthz")).await.unwrap();
    assert_eq!(live.status(), StatusCode::OK);
    let ready = app.clone().oneshot(get("/readyz")).await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    draining.cancel();
    let ready = app.clone().oneshot(get("/readyz")).await.unwrap();
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body = axum::body::to_bytes(ready.into_body(), 1 << 16)
        .await
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"ready": false, "draining": true, "checks": []})
    );
    // Liveness does not follow readiness: a draining process is alive.
    let live = app.oneshot(get("/healthz")).await.unwrap();
    assert_eq!(live.status(), StatusCode::OK);
}
