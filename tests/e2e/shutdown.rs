//! Graceful shutdown: SIGTERM stops a worker within its grace period, and
//! a step it could not finish is redelivered to another worker.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::ResultStatus;
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::script::{ScriptBuilder, When};

use crate::support::{distributed, fleet, spec, task};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_within_grace_and_the_step_moves_on() {
    let script = ScriptBuilder::new().answer(When::at_turn(0), "finished");
    let engine = ReplayEngine::new(Script::from_yaml(&script.build()).unwrap());
    // Every model call takes longer than the worker's 1 s grace period.
    let server = ScriptedServer::start(Arc::new(engine), Duration::from_secs(3))
        .await
        .unwrap();
    let Some(mut fleet) = distributed(fleet().model_url(Some(server.url())), 1).await else {
        return;
    };
    let spec = spec("slow", "openai:scripted-model", "");
    let (mut follower, _) = fleet.submit(&spec, &[task("t1", "go")]).await.unwrap();
    while server.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = fleet.terminate_worker(0).await.unwrap();
    assert!(took < Duration::from_secs(3), "shutdown took {took:?}");
    fleet.spawn_worker().unwrap();
    let mut results = Vec::new();
    while results.is_empty() {
        results = follower.poll().await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(results[0].status, ResultStatus::Success);
    assert_eq!(results[0].output, "finished");
    fleet.shutdown().await.unwrap();
}
