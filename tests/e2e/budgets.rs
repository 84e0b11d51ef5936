//! Cost budgets (issue 17): a batch that spends its budget (its own or
//! its tenant's for the day) ends its open runs `budget_exceeded`, and the costs on its result lines add up to
//! what its account reports, to the nano-dollar.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::cost::{nanos, usd};
use deepfleet_proto::{ResultStatus, TaskLine, TenantId};
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_scheduler::{BatchFollower, RunBounds, submit_task};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::fleet::Fleet;
use deepfleet_testkit::script::{ScriptBuilder, When};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::{distributed, fleet, spec, task};

/// What one scripted call costs at the built-in price of `gpt-4.1`
/// ($2 in, $8 out per million tokens): 1,000 tokens in, 100 out.
const CALL_NANO_USD: u64 = 1_000 * 2_000 + 100 * 8_000;
/// The batch's budget: a few calls' worth, far less than its runs would
/// spend (each would list files for 50 steps).
const BUDGET_USD: f64 = 0.01;
const RUNS: usize = 6;

/// Every turn lists files, reporting a fixed usage.
fn endless_listing() -> Script {
    let script = ScriptBuilder::new()
        .reply(
            When::always(),
            json!({
                "tool_calls": [{"name": "ls", "args": {"path": "/"}}],
                "usage": {"input_tokens": 1000, "output_tokens": 100, "cached_input_tokens": 0},
            }),
        )
        .build();
    Script::from_yaml(&script).unwrap()
}

async fn server() -> ScriptedServer {
    ScriptedServer::start(
        Arc::new(ReplayEngine::new(endless_listing())),
        Duration::ZERO,
    )
    .await
    .unwrap()
}

/// Whose budget stops the batch.
#[derive(Clone, Copy)]
enum Account {
    /// The batch's own (`--budget-usd`).
    Batch,
    /// Its tenant's for today (`[costs] tenant_daily_usd`).
    TenantDay,
}

async fn a_batch_stops_at_its_budget(fleet: &mut Fleet, account: Account) {
    // Priced by the built-in table; served by the scripted server.
    let spec = spec("spender", "openai:gpt-4.1", "limits: {max_steps: 50}\n");
    let batch = uuid::Uuid::new_v4().to_string();
    // Task lines run as the default tenant; its day is today's, as the
    // intake's clock has it when it creates the runs.
    let day = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let intake = fleet.intake().unwrap();
    let (intake, account) = match account {
        Account::Batch => (
            intake.with_batch_budget(Some(nanos(BUDGET_USD))),
            format!("batch:{batch}"),
        ),
        Account::TenantDay => (
            intake.with_bounds(RunBounds {
                tenant_daily_nano_usd: BTreeMap::from([(TenantId::default(), nanos(BUDGET_USD))]),
                ..RunBounds::default()
            }),
            format!("tenant:{}:{day}", TenantId::default()),
        ),
    };
    intake.register(&spec).await.unwrap();
    let mut follower = BatchFollower::new(fleet.store.clone(), &batch);
    let tasks: Vec<TaskLine> = (0..RUNS).map(|i| task(&format!("t{i}"), "Spend")).collect();
    for task in &tasks {
        let run = submit_task(&intake, &spec.name, task, Some(&batch))
            .await
            .unwrap();
        follower.track(&run);
    }
    let lines = fleet.follow(follower).await.unwrap();
    assert_eq!(lines.len(), RUNS);
    for line in &lines {
        assert_eq!(line.status, ResultStatus::BudgetExceeded, "{line:?}");
        let error = line.error.as_deref().unwrap_or_default();
        assert_eq!(
            error,
            format!("budget_exceeded: the budget of {account} is spent")
        );
        assert!(line.steps < 50, "{line:?}");
        // Each line's cost is its own calls'.
        assert_eq!(
            nanos(line.cost_usd),
            u64::from(line.steps) * CALL_NANO_USD,
            "{line:?}"
        );
    }
    let spent = fleet.store.spent(&account).await.unwrap();
    let on_lines: u64 = lines.iter().map(|l| nanos(l.cost_usd)).sum();
    assert_eq!(on_lines, spent, "result lines add up to the account");
    // The budget was reached (steps in flight when it was may pass it).
    assert!(
        spent >= nanos(BUDGET_USD),
        "spent {} of {BUDGET_USD}",
        usd(spent)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_stops_at_its_budget_embedded() {
    let server = server().await;
    let mut fleet = fleet().model_url(Some(server.url())).embedded().unwrap();
    a_batch_stops_at_its_budget(&mut fleet, Account::Batch).await;
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_stops_at_its_budget_distributed() {
    let server = server().await;
    let Some(mut fleet) = distributed(fleet().model_url(Some(server.url())), 2).await else {
        return;
    };
    a_batch_stops_at_its_budget(&mut fleet, Account::Batch).await;
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_daily_budget_stops_its_runs_embedded() {
    let server = server().await;
    let mut fleet = fleet().model_url(Some(server.url())).embedded().unwrap();
    a_batch_stops_at_its_budget(&mut fleet, Account::TenantDay).await;
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_daily_budget_stops_its_runs_distributed() {
    let server = server().await;
    let Some(mut fleet) = distributed(fleet().model_url(Some(server.url())), 2).await else {
        return;
    };
    a_batch_stops_at_its_budget(&mut fleet, Account::TenantDay).await;
    fleet.shutdown().await.unwrap();
}
