//! Concurrency limits: a tenant never has more top-level runs in flight
//! than its limit, nor a tenant's assistant more than its spec's
//! `limits.max_concurrent_runs`, across all its batches and workers; runs
//! past a limit wait and then run, each ending once; a run waiting on its
//! subagents keeps its place without starving them.
//!
//! The oracle of "in flight" is the scripted model's request log, as in
//! `admission.rs`: a run is open from its first model call (no tool
//! result in the request yet) to its second. A run can only make its
//! first call once it holds its slots, and gives them back only after
//! its last call came back and committed, so at no point of the log may
//! a pool have more runs open than its limit, whatever the timing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::{AgentSpec, ResultStatus, TaskLine, TenantId};
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_scheduler::{BatchFollower, RunBounds, submit_task};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::script::{Call, ScriptBuilder, When};

use crate::support::{Fleet, distributed, fleet, most_open, spec, task};

const TASKS: usize = 8;
/// (tenant, its limit): tenants `acme` and `beta` share the fleet.
const TENANTS: [(&str, u32); 2] = [("acme", 2), ("beta", 3)];

async fn server() -> ScriptedServer {
    let script = ScriptBuilder::new()
        .calls_then_answer(When::input("^Job "), [Call::ls("/")], "done")
        .delegating("^Lead \\d+$", &["Help out"])
        .answer(When::input("^Help out$"), "helped")
        .build();
    let engine = ReplayEngine::new(Script::from_yaml(&script).unwrap());
    ScriptedServer::start(Arc::new(engine), Duration::from_millis(20))
        .await
        .unwrap()
}

fn tenant(id: &str) -> TenantId {
    TenantId::new(id.to_owned()).unwrap()
}

/// Submits `tasks` as a batch of `tenant`'s under `bounds`, every run
/// admitted at once (the window is the batch): only the limits hold them.
async fn submit(
    fleet: &Fleet,
    spec: &AgentSpec,
    tasks: &[TaskLine],
    tenant: &TenantId,
    bounds: &RunBounds,
) -> BatchFollower {
    let intake = fleet
        .intake()
        .unwrap()
        .with_tenant(tenant.clone())
        .with_bounds(bounds.clone())
        .with_admission_window(tasks.len() as u32);
    intake.register(spec).await.unwrap();
    let mut follower = BatchFollower::new(fleet.store.clone(), uuid::Uuid::new_v4().to_string());
    let batch = follower.batch_id().to_owned();
    for task in tasks {
        let run = submit_task(&intake, &spec.name, task, Some(&batch))
            .await
            .unwrap();
        assert_eq!(run.tenant, *tenant);
        follower.track(&run);
    }
    follower
}

/// Every line once, every run a success.
fn assert_each_once(results: &[deepfleet_proto::ResultLine], n: usize) {
    let by_id = results.iter().fold(BTreeMap::new(), |mut m, r| {
        *m.entry(r.id.as_str()).or_insert(0) += 1;
        m
    });
    assert_eq!(by_id.len(), n, "every task has its line");
    assert!(by_id.values().all(|k| *k == 1), "{by_id:?}");
    assert!(
        results.iter().all(|r| r.status == ResultStatus::Success),
        "{results:?}"
    );
}

async fn tenants_keep_their_limits(mut fleet: Fleet, server: &ScriptedServer) {
    let spec = spec("shared", "openai:scripted-model", "");
    let bounds = RunBounds {
        tenant_concurrency: TENANTS
            .iter()
            .map(|(id, limit)| (tenant(id), *limit))
            .collect(),
        ..RunBounds::default()
    };
    let mut followers = Vec::new();
    for (id, _) in TENANTS {
        let tasks: Vec<TaskLine> = (0..TASKS)
            .map(|i| task(&format!("{id}{i}"), &format!("Job {id} {i}")))
            .collect();
        followers.push(submit(&fleet, &spec, &tasks, &tenant(id), &bounds).await);
    }
    for follower in followers {
        let results = fleet.follow(follower).await.unwrap();
        assert_each_once(&results, TASKS);
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 2 * TASKS * TENANTS.len());
    for (id, limit) in TENANTS {
        let most = most_open(&requests, &format!("Job {id} "));
        assert!(
            most <= limit as usize,
            "tenant {id} had {most} runs in flight at once, over its limit of {limit}"
        );
        assert!(most >= 1);
    }
    // Every run gave its places back.
    for (id, _) in TENANTS {
        let pool = deepfleet_proto::SlotPool {
            tenant: tenant(id),
            agent: None,
        };
        assert_eq!(
            fleet.store.slot_holders(&pool).await.unwrap(),
            Vec::<String>::new()
        );
    }
    fleet.shutdown().await.unwrap();
}

async fn an_assistant_keeps_its_limit_with_subagents(mut fleet: Fleet, server: &ScriptedServer) {
    let spec = spec(
        "lead",
        "openai:scripted-model",
        "limits: {max_concurrent_runs: 2}\n",
    );
    let tasks: Vec<TaskLine> = (0..TASKS)
        .map(|i| task(&format!("l{i}"), &format!("Lead {i}")))
        .collect();
    let follower = submit(
        &fleet,
        &spec,
        &tasks,
        &TenantId::default(),
        &RunBounds::default(),
    )
    .await;
    let results = fleet.follow(follower).await.unwrap();
    assert_each_once(&results, TASKS);
    assert!(results.iter().all(|r| r.output == "helped"), "{results:?}");
    let requests = server.requests();
    // Each lead's two calls and its subagent's one.
    assert_eq!(requests.len(), 3 * TASKS);
    let most = most_open(&requests, "Lead ");
    assert!(
        most <= 2,
        "{most} leads in flight at once, over the limit of 2"
    );
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_never_pass_their_concurrency_limits_embedded() {
    let server = server().await;
    let fleet = fleet().model_url(Some(server.url())).embedded().unwrap();
    tenants_keep_their_limits(fleet, &server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_never_pass_their_concurrency_limits_distributed() {
    let server = server().await;
    let Some(fleet) = distributed(fleet().model_url(Some(server.url())), 2).await else {
        return;
    };
    tenants_keep_their_limits(fleet, &server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_assistants_limit_holds_and_its_subagents_run_embedded() {
    let server = server().await;
    let fleet = fleet().model_url(Some(server.url())).embedded().unwrap();
    an_assistant_keeps_its_limit_with_subagents(fleet, &server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_assistants_limit_holds_and_its_subagents_run_distributed() {
    let server = server().await;
    let Some(fleet) = distributed(fleet().model_url(Some(server.url())), 2).await else {
        return;
    };
    an_assistant_keeps_its_limit_with_subagents(fleet, &server).await;
}
