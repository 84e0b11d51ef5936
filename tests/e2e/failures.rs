//! Bad input and provider failures: each ends in an answer the model can
//! read, or a run error with a clear reason, never a stuck run.

use deepfleet_proto::ResultStatus;

use crate::support::{replay_model, scenario, spec, task};

const BROKEN_JSON: &str = r##"
rules:
  - when: {turn: 0}
    reply:
      tool_calls:
        - {name: ls, raw_args: '{"path": '}
  - when: {turn: 1, last_tool: "^Error: invalid arguments"}
    reply: {text: "recovered: {{last_tool}}"}
"##;

scenario!(broken_tool_json_becomes_a_tool_error, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("broken", &replay_model(dir.path(), BROKEN_JSON), "");
    let r = &fleet.run(&spec, &[task("t1", "go")]).await[0];
    assert_eq!(r.status, ResultStatus::Success);
    assert!(
        r.output
            .starts_with("recovered: Error: invalid arguments for tool `ls`"),
        "{}",
        r.output
    );
});

const UNKNOWN_TOOL: &str = r##"
rules:
  - when: {turn: 0}
    reply:
      tool_calls:
        - {name: frobnicate, args: {}}
  - when: {turn: 1}
    reply: {text: "{{last_tool}}"}
"##;

scenario!(unknown_tool_becomes_a_tool_error, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("unknown", &replay_model(dir.path(), UNKNOWN_TOOL), "");
    let r = &fleet.run(&spec, &[task("t1", "go")]).await[0];
    assert!(
        r.output
            .starts_with("Error: frobnicate is not a valid tool, try one of [`ls`, `read_file`"),
        "{}",
        r.output
    );
});

const FOREVER: &str = r##"
rules:
  - when: {}
    reply:
      tool_calls:
        - {name: ls, args: {path: /}}
"##;

scenario!(max_steps_ends_the_run, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        "loop",
        &replay_model(dir.path(), FOREVER),
        "limits: {max_steps: 3}\n",
    );
    let r = &fleet.run(&spec, &[task("t1", "go")]).await[0];
    assert_eq!(r.status, ResultStatus::Error);
    assert_eq!(r.steps, 3);
    assert_eq!(
        r.error.as_deref(),
        Some("max_steps: the run reached its limit of 3 model calls (limits.max_steps)")
    );
});

const AUTH: &str = r##"
rules:
  - when: {}
    error: {status: 401, message: "invalid api key"}
"##;

scenario!(auth_errors_fail_the_run_at_once, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("auth", &replay_model(dir.path(), AUTH), "");
    let r = &fleet.run(&spec, &[task("t1", "go")]).await[0];
    assert_eq!(r.status, ResultStatus::Error);
    let error = r.error.as_deref().unwrap_or_default();
    assert!(error.starts_with("model_auth: "), "{error}");
    assert!(error.contains("invalid api key"), "{error}");
    assert_eq!(r.steps, 0);
});

const FLAKY: &str = r##"
rules:
  - when: {turn: 0}
    error: {status: 429, message: "slow down", retry_after: 0, times: 2}
  - when: {turn: 0}
    reply: {text: "made it"}
"##;

scenario!(rate_limits_are_retried, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("flaky", &replay_model(dir.path(), FLAKY), "");
    let r = &fleet.run(&spec, &[task("t1", "go")]).await[0];
    assert_eq!(r.status, ResultStatus::Success);
    assert_eq!(r.output, "made it");
});

const NO_RULE: &str = r##"
rules:
  - when: {input: "^never"}
    reply: {text: "x"}
"##;

scenario!(unscripted_requests_fail_clearly, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("norule", &replay_model(dir.path(), NO_RULE), "");
    let r = &fleet.run(&spec, &[task("t1", "go")]).await[0];
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
    let dead = fleet.wait_dead_letters(1).await;
    assert_eq!(dead[0].payload, b"{not json");
    assert!(
        dead[0].reason.starts_with("malformed job: "),
        "{}",
        dead[0].reason
    );
});

const DOWN: &str = r##"
rules:
  - when: {}
    error: {status: 503, message: "upstream unavailable", retry_after: 0}
"##;

scenario!(exhausted_retries_fail_the_run_and_dead_letter, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("down", &replay_model(dir.path(), DOWN), "");
    let r = &fleet.run(&spec, &[task("t1", "go")]).await[0];
    assert_eq!(r.status, ResultStatus::Error);
    let error = r.error.as_deref().unwrap_or_default();
    assert!(error.starts_with("attempts_exhausted: "), "{error}");
    assert!(error.contains("upstream unavailable"), "{error}");
    let dead = fleet.wait_dead_letters(1).await;
    assert!(
        dead[0].reason.starts_with("attempts_exhausted: "),
        "{}",
        dead[0].reason
    );
});
