use std::collections::BTreeSet;
use std::time::Duration;

use deepfleet_model::{CallPurpose, ErrorKind};
use deepfleet_proto::{ErrorCode, RunStatus, ToolStatus, Usage};
use pretty_assertions::assert_eq;

use deepfleet_fleet::{METRIC_NAMES, Metrics};

use crate::events::{CompactionKind, DeadLetterReason, Event, EventScope, EventSink};

fn scope(subagent: Option<&str>) -> EventScope {
    EventScope {
        run_id: "r".into(),
        thread_id: "t".into(),
        agent: "briefer".into(),
        subagent: subagent.map(str::to_owned),
        tenant: "acme".into(),
    }
}

/// One of every event, so every family has a sample.
fn emit_all(m: &Metrics) {
    let main = scope(None);
    let sub = scope(Some("general-purpose"));
    let usage = Usage {
        input_tokens: 100,
        output_tokens: 20,
        cached_input_tokens: 60,
    };
    let call = |purpose, usage| Event::ModelCall {
        model: "gpt-4.1".into(),
        purpose,
        usage,
        latency: Duration::from_millis(1500),
    };
    m.emit(&main, &call(CallPurpose::Agent, Some(usage)));
    m.emit(&sub, &call(CallPurpose::Agent, Some(usage)));
    m.emit(&main, &call(CallPurpose::Summarization, Some(usage)));
    m.emit(&main, &call(CallPurpose::Agent, None));
    m.emit(
        &main,
        &Event::ProviderError {
            model: "gpt-4.1".into(),
            kind: ErrorKind::RateLimited,
        },
    );
    m.emit(
        &main,
        &Event::ToolCall {
            tool: "write_file".into(),
            status: ToolStatus::Success,
            latency: Duration::from_millis(3),
        },
    );
    for (kind, before, after) in [
        (CompactionKind::Offload, 30_000, 500),
        (CompactionKind::Summarization, 180_000, 20_000),
        (CompactionKind::Summarization, 175_000, 19_000),
        (CompactionKind::ArgumentTruncation, 90_000, 88_000),
    ] {
        m.emit(
            &main,
            &Event::Compaction {
                kind,
                tokens_before: before,
                tokens_after: after,
            },
        );
    }
    m.emit(
        &main,
        &Event::StepStarted {
            queue_wait: Some(Duration::from_millis(40)),
        },
    );
    m.emit(
        &main,
        &Event::StepCommitted {
            status: RunStatus::Success,
            latency: Duration::from_secs(2),
        },
    );
    m.emit(
        &main,
        &Event::RunFinished {
            status: RunStatus::Success,
            latency: Duration::from_secs(12),
        },
    );
    m.emit(
        &main,
        &Event::Retried {
            code: ErrorCode::ModelUnavailable,
        },
    );
    m.emit(
        &main,
        &Event::DeadLettered {
            reason: DeadLetterReason::Malformed,
        },
    );
    m.emit(
        &main,
        &Event::Cost {
            model: "gpt-4.1".into(),
            nano_usd: 2_000_000,
        },
    );
    m.emit(
        &main,
        &Event::RateLimitWait {
            wait: Duration::from_millis(250),
        },
    );
    m.emit(
        &main,
        &Event::SlotWait {
            pool: deepfleet_proto::SlotPool::parse("acme/research").unwrap(),
        },
    );
    m.set_queue_depth(7);
    m.set_queue_consumers(1);
}

#[test]
fn slot_waits_count_by_tenant_and_pool() {
    let m = Metrics::new().unwrap();
    emit_all(&m);
    assert_eq!(
        m.samples("deepfleet_concurrency_waits_total").unwrap(),
        vec![r#"deepfleet_concurrency_waits_total{pool="assistant",tenant="acme"} 1"#]
    );
}

#[test]
fn compaction_events_count_by_kind_with_tokens_removed() {
    let m = Metrics::new().unwrap();
    emit_all(&m);
    assert_eq!(
        m.samples("deepfleet_compactions_total").unwrap(),
        vec![
            r#"deepfleet_compactions_total{kind="argument_truncation"} 1"#,
            r#"deepfleet_compactions_total{kind="offload"} 1"#,
            r#"deepfleet_compactions_total{kind="summarization"} 2"#,
        ]
    );
    assert_eq!(
        m.samples("deepfleet_compaction_tokens_removed_total")
            .unwrap(),
        vec![
            r#"deepfleet_compaction_tokens_removed_total{kind="argument_truncation"} 2000"#,
            r#"deepfleet_compaction_tokens_removed_total{kind="offload"} 29500"#,
            r#"deepfleet_compaction_tokens_removed_total{kind="summarization"} 316000"#,
        ]
    );
}

#[test]
fn tokens_split_by_caller_and_type() {
    let m = Metrics::new().unwrap();
    emit_all(&m);
    let tokens = m.samples("deepfleet_model_tokens_total").unwrap();
    let line = |caller: &str, kind: &str, n: u64| {
        format!(
            r#"deepfleet_model_tokens_total{{agent="briefer",caller="{caller}",model="gpt-4.1",type="{kind}"}} {n}"#
        )
    };
    let mut expected = Vec::new();
    for caller in ["main", "subagent", "summarization"] {
        for (kind, n) in [("cached", 60), ("input", 100), ("output", 20)] {
            expected.push(line(caller, kind, n));
        }
    }
    assert_eq!(tokens, expected);
    assert_eq!(
        m.samples("deepfleet_model_calls_total").unwrap(),
        vec![
            r#"deepfleet_model_calls_total{caller="main",model="gpt-4.1",outcome="error"} 1"#,
            r#"deepfleet_model_calls_total{caller="main",model="gpt-4.1",outcome="ok"} 1"#,
            r#"deepfleet_model_calls_total{caller="subagent",model="gpt-4.1",outcome="ok"} 1"#,
            r#"deepfleet_model_calls_total{caller="summarization",model="gpt-4.1",outcome="ok"} 1"#,
        ]
    );
    assert_eq!(
        m.samples("deepfleet_provider_errors_total").unwrap(),
        vec![r#"deepfleet_provider_errors_total{class="rate_limited",model="gpt-4.1"} 1"#]
    );
}

#[test]
fn steps_in_flight_go_up_and_down() {
    let m = Metrics::new().unwrap();
    let s = EventScope::of_job("r", "t");
    m.emit(&s, &Event::StepStarted { queue_wait: None });
    m.emit(&s, &Event::StepStarted { queue_wait: None });
    m.emit(&s, &Event::StepEnded);
    assert_eq!(
        m.samples("deepfleet_steps_in_flight").unwrap(),
        vec!["deepfleet_steps_in_flight 1"]
    );
    assert_eq!(
        m.samples("deepfleet_queue_wait_seconds_count").unwrap(),
        vec!["deepfleet_queue_wait_seconds_count 0"],
        "no wait is observed when the envelope has no publication time"
    );
}

/// Between them, the harness events, the rate limiter's reports (and the
/// queue gauges the binary samples) update every family the fleet
/// exports.
#[test]
fn events_fill_every_exported_family() {
    use deepfleet_model::ratelimit::{LimitKey, LimiterObserver};
    let m = std::sync::Arc::new(Metrics::new().unwrap());
    emit_all(&m);
    let key = LimitKey {
        provider: "openai".into(),
        account: "0123456789abcdef".into(),
        model: "gpt-4.1".into(),
    };
    let limiter = super::LimiterMetrics(std::sync::Arc::clone(&m));
    limiter.throttled(&key);
    limiter.levels(&key, [Some(3.0), None, Some(-20.5), None]);
    assert_eq!(
        m.samples("deepfleet_rate_limiter_remaining").unwrap(),
        vec![
            r#"deepfleet_rate_limiter_remaining{account="0123456789abcdef",dimension="input_tokens",model="gpt-4.1",provider="openai"} -20.5"#,
            r#"deepfleet_rate_limiter_remaining{account="0123456789abcdef",dimension="requests",model="gpt-4.1",provider="openai"} 3"#,
        ]
    );
    // The one family no harness event feeds: the scheduler's webhook
    // deliveries.
    m.webhook_delivery(deepfleet_fleet::metrics::WebhookOutcome::Delivered);
    let listed: BTreeSet<String> = METRIC_NAMES.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(m.exported_families(), listed);
}
