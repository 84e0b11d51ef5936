//! `/healthz` and `/readyz` of the worker and the scheduler, for
//! Kubernetes' probes.
//!
//! Liveness only says the process still serves HTTP: restarting a pod
//! because RabbitMQ is down would not bring RabbitMQ back. Readiness runs
//! every check (broker, store, consumers attached) at each request, each
//! bounded by [`CHECK_TIMEOUT`], so it turns false while a connection is
//! lost and true again once the client has reconnected, and false for good
//! once the process drains.

mod attached;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use deepfleet_queue::Queue;
use deepfleet_store::Store;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

pub use self::attached::{Attached, WatchedQueue};

/// Longest wait for one check; under the probes' `timeoutSeconds`, so a
/// hung connection reads as "not ready", not as a failed probe request.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Record kind read by the store check: a cheap single-key read.
const PROBE_RECORD_KIND: &str = "readyz";

type CheckFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;
type CheckFn = Arc<dyn Fn() -> CheckFuture + Send + Sync>;

/// The readiness checks of one process.
#[derive(Clone)]
pub struct Probes {
    checks: Vec<(&'static str, CheckFn)>,
    draining: CancellationToken,
    /// The last answer, to log changes rather than every probe.
    was_ready: Arc<AtomicBool>,
}

/// One check's outcome in the `/readyz` body.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct CheckResult {
    name: &'static str,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// The `/readyz` body.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Readiness {
    ready: bool,
    draining: bool,
    checks: Vec<CheckResult>,
}

impl Probes {
    /// No checks yet; ready until `draining` is cancelled.
    pub fn new(draining: CancellationToken) -> Self {
        Probes {
            checks: Vec::new(),
            draining,
            was_ready: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Adds a check; `check` must return within [`CHECK_TIMEOUT`] or it
    /// counts as failed.
    pub fn check<F, Fut>(mut self, name: &'static str, check: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        self.checks
            .push((name, Arc::new(move || Box::pin(check()) as CheckFuture)));
        self
    }

    /// The broker answers (a passive declare of the queue: it fails while
    /// the connection is down or recovering).
    pub fn broker(self, queue: Arc<dyn Queue>) -> Self {
        self.check("broker", move || {
            let queue = Arc::clone(&queue);
            async move { queue.depth().await.map(|_| ()).map_err(|e| e.to_string()) }
        })
    }

    /// The store answers a one-key read.
    pub fn store(self, store: Arc<dyn Store>) -> Self {
        self.check("store", move || {
            let store = Arc::clone(&store);
            async move {
                store
                    .get_record(PROBE_RECORD_KIND, "probe")
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        })
    }

    /// At least one consumer of `attached` is open.
    pub fn consumer(self, name: &'static str, attached: Attached) -> Self {
        self.check(name, move || {
            let open = attached.count();
            async move {
                if open > 0 {
                    Ok(())
                } else {
                    Err("no consumer attached".to_owned())
                }
            }
        })
    }

    /// Runs every check at once.
    pub async fn readiness(&self) -> Readiness {
        let running: Vec<_> = self
            .checks
            .iter()
            .map(|(name, check)| (*name, tokio::spawn(bounded(check()))))
            .collect();
        let mut checks = Vec::with_capacity(running.len());
        for (name, handle) in running {
            let outcome = handle
                .await
                .unwrap_or_else(|e| Err(format!("the check failed: {e}")));
            checks.push(CheckResult {
                name,
                ok: outcome.is_ok(),
                error: outcome.err(),
            });
        }
        let draining = self.draining.is_cancelled();
        let ready = !draining && checks.iter().all(|c| c.ok);
        if self.was_ready.swap(ready, Ordering::SeqCst) != ready {
            if ready {
                tracing::info!("ready");
            } else {
                tracing::warn!(draining, checks = ?checks, "not ready");
            }
        }
        Readiness {
            ready,
            draining,
            checks,
        }
    }
}

/// `check`, failed when it takes longer than [`CHECK_TIMEOUT`].
async fn bounded(check: CheckFuture) -> Result<(), String> {
    match tokio::time::timeout(CHECK_TIMEOUT, check).await {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("no answer within {CHECK_TIMEOUT:?}")),
    }
}

/// `/healthz` and `/readyz` over `probes`.
pub fn routes(probes: Probes) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(probes)
}

async fn readyz(State(probes): State<Probes>) -> Response {
    let readiness = probes.readiness().await;
    let status = if readiness.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(readiness)).into_response()
}

#[cfg(test)]
#[path = "health_tests.rs"]
mod tests;
