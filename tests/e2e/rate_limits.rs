//! Issue #17: the fleet-wide rate limiter. A batch against a scripted
//! server that enforces requests and tokens per minute the way providers
//! do (429s with `Retry-After` and `x-ratelimit-*` headers) gets no 429
//! at all: every worker takes its capacity from one limiter (in process
//! when embedded, in Redis when distributed), and steps that would wait
//! longer than the limiter's `max_wait_ms` are deferred, not held.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_model::ratelimit::Limits;
use deepfleet_proto::ResultStatus;
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::limits::ServerLimits;
use deepfleet_testkit::script::{ScriptBuilder, When};
use pretty_assertions::assert_eq;

use crate::support::{Fleet, distributed, fleet, spec, task};

/// Runs in the batch: 30 past the first minute's burst, so about 15 s of
/// pacing at 2 calls a second.
const RUNS: usize = 150;
/// The server's and the limiter's requests per minute.
const RPM: u64 = 120;
/// Tokens per minute: metered on both sides (and corrected with the
/// reported usage), never the scarcer limit.
const TPM: u64 = 2_000_000;

async fn server() -> ScriptedServer {
    let script = ScriptBuilder::new().answer(When::always(), "done").build();
    let engine = ReplayEngine::new(Script::from_yaml(&script).unwrap());
    let limits = ServerLimits {
        requests_per_minute: Some(RPM),
        tokens_per_minute: Some(TPM),
    };
    ScriptedServer::start_limited(Arc::new(engine), Duration::ZERO, limits)
        .await
        .unwrap()
}

fn limits() -> Limits {
    Limits {
        requests_per_minute: Some(RPM),
        tokens_per_minute: Some(TPM),
        ..Limits::default()
    }
}

async fn a_batch_over_the_limit_gets_no_429(mut fleet: Fleet, server: &ScriptedServer) {
    let spec = spec("limited", "openai:scripted-model", "");
    let tasks: Vec<_> = (0..RUNS)
        .map(|i| task(&format!("t{i}"), &format!("Say done {i}.")))
        .collect();
    let results = fleet.run(&spec, &tasks).await.unwrap();
    assert_eq!(results.len(), RUNS);
    for r in &results {
        assert_eq!(r.status, ResultStatus::Success, "{:?}", r.error);
    }
    let (refused, admitted) = server.rate_limited();
    assert_eq!((refused, admitted), (0, RUNS as u64));
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_over_the_limit_gets_no_429_embedded() {
    let server = server().await;
    let fleet = fleet()
        .model_url(Some(server.url()))
        .rate_limits(limits())
        .embedded()
        .unwrap();
    a_batch_over_the_limit_gets_no_429(fleet, &server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_over_the_limit_gets_no_429_distributed() {
    let server = server().await;
    let builder = fleet().model_url(Some(server.url())).rate_limits(limits());
    let Some(fleet) = distributed(builder, 2).await else {
        return;
    };
    a_batch_over_the_limit_gets_no_429(fleet, &server).await;
}
