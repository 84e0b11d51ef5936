use std::time::Duration;

use deepfleet_model::ProviderConfig;
use deepfleet_proto::{AgentSpec, ResultStatus, TaskLine};
use pretty_assertions::assert_eq;

use super::*;
use crate::script::{ScriptBuilder, When};

/// A spec whose replay script (in `dir`) echoes the task's word.
fn echo_spec(dir: &std::path::Path) -> AgentSpec {
    let script = ScriptBuilder::new()
        .answer(When::input(r"^say (?P<w>\w+)$"), "{{w}}")
        .build();
    let path = dir.join("script.yaml");
    std::fs::write(&path, script).unwrap();
    AgentSpec::from_yaml(&format!("name: echo\nmodel: 'replay:{}'\n", path.display())).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_fleet_runs_a_batch_in_task_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut fleet = FleetBuilder::new().embedded().unwrap();
    let tasks: Vec<TaskLine> = (0..5)
        .map(|i| task(&format!("t{i}"), &format!("say w{i}")))
        .collect();
    let batch = fleet
        .run_batch(&echo_spec(dir.path()), &tasks)
        .await
        .unwrap();
    let seen: Vec<(&str, ResultStatus, &str)> = batch
        .results
        .iter()
        .map(|r| (r.id.as_str(), r.status, r.output.as_str()))
        .collect();
    let expected: Vec<(String, String)> =
        (0..5).map(|i| (format!("t{i}"), format!("w{i}"))).collect();
    let expected: Vec<(&str, ResultStatus, &str)> = expected
        .iter()
        .map(|(id, out)| (id.as_str(), ResultStatus::Success, out.as_str()))
        .collect();
    assert_eq!(seen, expected);
    let ids: Vec<Option<&str>> = batch.runs.iter().map(|r| r.task_id.as_deref()).collect();
    assert_eq!(ids, ["t0", "t1", "t2", "t3", "t4"].map(Some));
    assert_eq!(batch.kills, 0);
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_embedded_fleet_has_no_worker_processes() {
    let mut fleet = FleetBuilder::new().binary("/bin/true").embedded().unwrap();
    let err = fleet.spawn_worker().unwrap_err();
    assert_eq!(err.to_string(), "an embedded fleet has no worker processes");
    assert!(fleet.kill_worker(0).await.is_err());
    assert_eq!(fleet.worker_pids(), Vec::<u32>::new());
    fleet.shutdown().await.unwrap();
}

#[tokio::test]
async fn worker_processes_need_a_binary() {
    let fleet = FleetBuilder::new().embedded().unwrap();
    let err = fleet.worker_command().unwrap_err();
    assert!(
        err.to_string().starts_with("no `deepfleet` binary"),
        "{err}"
    );
    fleet.shutdown().await.unwrap();
}

#[test]
fn a_model_url_configures_openai_beside_the_given_providers() {
    let builder = FleetBuilder::new()
        .providers([("anthropic".to_owned(), ProviderConfig::default())].into())
        .model_url(Some("http://127.0.0.1:1/v1".into()))
        .model_timeout(Duration::from_secs(120));
    let providers = builder.provider_configs();
    let mut names: Vec<&str> = providers.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["anthropic", "openai"]);
    let openai = &providers["openai"];
    assert_eq!(
        (
            openai.base_url.as_deref(),
            openai.api_key.as_deref(),
            openai.timeout_secs
        ),
        (Some("http://127.0.0.1:1/v1"), Some(API_KEY), Some(120))
    );
}

#[test]
fn fast_retries_back_off_from_base_to_max() {
    let retries = FleetBuilder::new().fast_retries().retries();
    assert_eq!(
        (retries.base_delay, retries.max_delay),
        (FAST_RETRY_BASE, FAST_RETRY_MAX)
    );
    assert_eq!(
        FleetBuilder::new().retries().base_delay,
        deepfleet_worker::RetryConfig::default().base_delay
    );
}
