use std::collections::BTreeSet;
use std::time::Duration;

use deepfleet_proto::{ErrorCode, RunStatus, ToolStatus, Usage};
use pretty_assertions::assert_eq;

use super::{Caller, METRIC_NAMES, Metrics, WebhookOutcome};

/// One update of every family, so each has a sample.
fn record_all(m: &Metrics) {
    let usage = Usage {
        input_tokens: 100,
        output_tokens: 20,
        cached_input_tokens: 60,
    };
    let second = Duration::from_secs(1);
    m.model_call("gpt-4.1", "briefer", Caller::Main, Some(&usage), second);
    m.cost("gpt-4.1", "briefer", "default", 1_250_000);
    m.provider_error("gpt-4.1", "rate_limited");
    m.tool_call("write_file", ToolStatus::Success, second);
    m.compaction("offload", 29_500);
    m.step_started(Some(second));
    m.step_committed(second);
    m.run_finished("briefer", Caller::Main, RunStatus::Success, second);
    m.retried(ErrorCode::ModelUnavailable);
    m.dead_lettered("malformed");
    m.rate_limit_wait(second);
    m.rate_limited_call("openai", "gpt-4.1");
    m.rate_limiter_remaining("openai", "0123456789abcdef", "gpt-4.1", "requests", 12.5);
    m.concurrency_wait("acme", false);
    m.set_queue_depth(7);
    m.set_queue_consumers(1);
    m.webhook_delivery(WebhookOutcome::Delivered);
}

#[test]
fn a_failed_model_call_counts_without_tokens() {
    let m = Metrics::new().unwrap();
    m.model_call("m", "a", Caller::Subagent, None, Duration::from_millis(5));
    assert_eq!(
        m.samples("deepfleet_model_calls_total").unwrap(),
        vec![r#"deepfleet_model_calls_total{caller="subagent",model="m",outcome="error"} 1"#]
    );
    assert_eq!(
        m.samples("deepfleet_model_tokens_total").unwrap(),
        Vec::<String>::new()
    );
}

#[test]
fn runs_count_by_agent_caller_and_status() {
    let m = Metrics::new().unwrap();
    let took = Duration::from_secs(3);
    m.run_finished("a", Caller::Main, RunStatus::Success, took);
    m.run_finished("a", Caller::Subagent, RunStatus::AwaitingHuman, took);
    m.run_finished("a", Caller::Subagent, RunStatus::AwaitingHuman, took);
    assert_eq!(
        m.samples("deepfleet_runs_finished_total").unwrap(),
        vec![
            r#"deepfleet_runs_finished_total{agent="a",caller="main",status="success"} 1"#,
            r#"deepfleet_runs_finished_total{agent="a",caller="subagent",status="interrupted"} 2"#,
        ]
    );
    assert_eq!(
        m.samples("deepfleet_run_duration_seconds_count").unwrap(),
        vec![
            r#"deepfleet_run_duration_seconds_count{status="interrupted"} 2"#,
            r#"deepfleet_run_duration_seconds_count{status="success"} 1"#,
        ]
    );
}

#[test]
fn cost_is_dollars_by_model_agent_and_tenant() {
    let m = Metrics::new().unwrap();
    m.cost("gpt-4.1", "briefer", "acme", 1_500_000_000);
    m.cost("gpt-4.1", "briefer", "acme", 500_000_000);
    m.cost("gpt-4.1", "briefer", "other", 0);
    assert_eq!(
        m.samples("deepfleet_model_cost_usd_total").unwrap(),
        vec![r#"deepfleet_model_cost_usd_total{agent="briefer",model="gpt-4.1",tenant="acme"} 2"#]
    );
}

#[test]
fn queue_gauges_hold_the_last_sample() {
    let m = Metrics::new().unwrap();
    m.set_queue_depth(7);
    m.set_queue_depth(9);
    m.set_queue_consumers(2);
    assert_eq!(
        m.samples("deepfleet_queue_depth").unwrap(),
        vec!["deepfleet_queue_depth 9"]
    );
    assert_eq!(
        m.samples("deepfleet_queue_consumers").unwrap(),
        vec!["deepfleet_queue_consumers 2"]
    );
}

/// `METRIC_NAMES` is what the dashboard check compares queries against:
/// it must list exactly the families a scrape shows.
#[test]
fn metric_names_list_every_exported_family() {
    let m = Metrics::new().unwrap();
    record_all(&m);
    let listed: BTreeSet<String> = METRIC_NAMES.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(m.exported_families(), listed);
    // For `scripts/check-observability.sh`: a full scrape to lint with
    // `promtool check metrics`.
    if let Ok(path) = std::env::var("DEEPFLEET_METRICS_SAMPLE") {
        std::fs::write(path, m.render().unwrap()).unwrap();
    }
}
