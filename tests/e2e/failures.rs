//! Bad input and provider failures: each ends in an answer the model can
//! read, or a run error with a clear reason, never a stuck run.

use deepfleet_proto::ResultStatus;
use deepfleet_testkit::script::{Call, Failure, ScriptBuilder, When};
use serde_json::json;

use crate::support::{replay_model, scenario, spec, task};

/// A call whose arguments are not JSON; the model reads the error.
fn broken_json() -> String {
    ScriptBuilder::new()
        .call(When::at_turn(0), [Call::raw("ls", r#"{"path": "#)])
        .answer(
            When::at_turn(1).last_tool("^Error: invalid arguments"),
            "recovered: {{last_tool}}",
        )
        .build()
}

scenario!(broken_tool_json_becomes_a_tool_error, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("broken", &replay_model(dir.path(), &broken_json()), "");
    let r = &fleet.run(&spec, &[task("t1", "go")]).await.unwrap()[0];
    assert_eq!(r.status, ResultStatus::Success);
    assert!(
        r.output
            .starts_with("recovered: Error: invalid arguments for tool `ls`"),
        "{}",
        r.output
    );
});

/// A call of a tool that does not exist.
fn unknown_tool() -> String {
    let call = Call::new("frobnicate", json!({}));
    ScriptBuilder::new()
        .calls_then_answer(When::always(), [call], "{{last_tool}}")
        .build()
}

scenario!(unknown_tool_becomes_a_tool_error, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("unknown", &replay_model(dir.path(), &unknown_tool()), "");
    let r = &fleet.run(&spec, &[task("t1", "go")]).await.unwrap()[0];
    assert!(
        r.output
            .starts_with("Error: frobnicate is not a valid tool, try one of [`ls`, `read_file`"),
        "{}",
        r.output
    );
});

/// Lists the root on every turn, never answering.
fn forever() -> String {
    ScriptBuilder::new()
        .call(When::always(), [Call::ls("/")])
        .build()
}

scenario!(max_steps_ends_the_run, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        "loop",
        &replay_model(dir.path(), &forever()),
        "limits: {max_steps: 3}\n",
    );
    let r = &fleet.run(&spec, &[task("t1", "go")]).await.unwrap()[0];
    assert_eq!(r.status, ResultStatus::Error);
    assert_eq!(r.steps, 3);
    assert_eq!(
        r.error.as_deref(),
        Some("max_steps: the run reached its limit of 3 model calls (limits.max_steps)")
    );
});

/// Every call fails: the key is refused.
fn auth() -> String {
    ScriptBuilder::new()
        .fail(When::always(), Failure::new(401, "invalid api key"))
        .build()
}

scenario!(auth_errors_fail_the_run_at_once, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("auth", &replay_model(dir.path(), &auth()), "");
    let r = &fleet.run(&spec, &[task("t1", "go")]).await.unwrap()[0];
    assert_eq!(r.status, ResultStatus::Error);
    let error = r.error.as_deref().unwrap_or_default();
    assert!(error.starts_with("model_auth: "), "{error}");
    assert!(error.contains("invalid api key"), "{error}");
    assert_eq!(r.steps, 0);
});

/// Rate-limited twice, then an answer.
fn flaky() -> String {
    let limited = Failure::new(429, "slow down").retry_after(0).times(2);
    ScriptBuilder::new()
        .fail(When::at_turn(0), limited)
        .answer(When::at_turn(0), "made it")
        .build()
}

scenario!(rate_limits_are_retried, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("flaky", &replay_model(dir.path(), &flaky()), "");
    let r = &fleet.run(&spec, &[task("t1", "go")]).await.unwrap()[0];
    assert_eq!(r.status, ResultStatus::Success);
    assert_eq!(r.output, "made it");
});

/// A script with no rule for the task's input.
fn no_rule() -> String {
    ScriptBuilder::new()
        .answer(When::input("^never"), "x")
        .build()
}

scenario!(unscripted_requests_fail_clearly, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("norule", &replay_model(dir.path(), &no_rule()), "");
    let r = &fleet.run(&spec, &[task("t1", "go")]).await.unwrap()[0];
    assert_eq!(r.status, ResultStatus::Error);
    assert!(
        r.error
            .as_deref()
            .unwrap_or_default()
            .starts_with("model_bad_request: "),
        "{:?}",
        r.error
    );
});

scenario!(malformed_jobs_are_dead_lettered, |fleet| {
    fleet
        .queue
        .publish(b"{not json".to_vec(), None)
        .await
        .unwrap();
    let dead = fleet.wait_dead_letters(1).await.unwrap();
    assert_eq!(dead[0].payload, b"{not json");
    assert!(
        dead[0].reason.starts_with("malformed job: "),
        "{}",
        dead[0].reason
    );
});

/// The provider is down for good.
fn down() -> String {
    let unavailable = Failure::new(503, "upstream unavailable").retry_after(0);
    ScriptBuilder::new()
        .fail(When::always(), unavailable)
        .build()
}

scenario!(exhausted_retries_fail_the_run_and_dead_letter, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("down", &replay_model(dir.path(), &down()), "");
    let r = &fleet.run(&spec, &[task("t1", "go")]).await.unwrap()[0];
    assert_eq!(r.status, ResultStatus::Error);
    let error = r.error.as_deref().unwrap_or_default();
    assert!(error.starts_with("attempts_exhausted: "), "{error}");
    assert!(error.contains("upstream unavailable"), "{error}");
    let dead = fleet.wait_dead_letters(1).await.unwrap();
    assert!(
        dead[0].reason.starts_with("attempts_exhausted: "),
        "{}",
        dead[0].reason
    );
});
