//! `deepfleet run` and `deepfleet submit` refuse a spec that can never
//! work before any task runs, naming the field and its line, exit code 2
//! (issue 14: an `interrupt_on` typo let `write_file` run without
//! approval; an unknown provider, a missing replay script or a bad
//! template failed every task later; issue 19: a missing API key ran a
//! batch for half a minute of retries without naming the key).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use deepfleet_model::ProviderConfig;
use deepfleet_proto::ResultStatus;
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::script::{ScriptBuilder, When};

use crate::support::two_writes_and_ls;

/// `deepfleet COMMAND` on the batch in `dir`, with `env` and no provider
/// key from the test's own environment; its exit code and error output.
fn deepfleet(dir: &Path, command: &str, env: &[(&str, String)]) -> (Option<i32>, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_deepfleet"));
    cmd.current_dir(dir)
        .args([command, "tasks.jsonl", "--agent", "agent.yaml"]);
    for variable in [
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
    ] {
        cmd.env_remove(variable);
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let out = cmd.output().expect("running deepfleet");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs and submits `agent` (YAML) on one task, with `env`; the error
/// output, after checking both refused it alike with exit code 2 before
/// any result (`submit` before reaching for a fleet).
fn refused_with(agent: &str, env: &[(&str, String)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("script.yaml"), two_writes_and_ls("done")).unwrap();
    std::fs::write(d.join("agent.yaml"), agent).unwrap();
    std::fs::write(
        d.join("tasks.jsonl"),
        "{\"id\": \"t1\", \"input\": \"Write two files\"}\n",
    )
    .unwrap();
    let (code, run) = deepfleet(d, "run", env);
    assert_eq!(code, Some(2), "{agent}\n{run}");
    assert!(!d.join("results.jsonl").exists(), "a task ran: {agent}");
    let (code, submit) = deepfleet(d, "submit", env);
    assert_eq!(code, Some(2), "{agent}\n{submit}");
    assert_eq!(submit, run, "submit refuses as run does");
    assert!(!d.join("results.jsonl").exists(), "a task ran: {agent}");
    run
}

fn refused(agent: &str) -> String {
    refused_with(agent, &[])
}

fn assert_names(stderr: &str, field: &str, line: usize, message: &str) {
    let at = format!("{field} (line {line}): ");
    assert!(stderr.contains(&at), "expected `{at}` in:\n{stderr}");
    assert!(
        stderr.contains(message),
        "expected `{message}` in:\n{stderr}"
    );
}

/// A task whose runtime context breaks the spec's `context_schema` stops
/// `run` and `submit` before any run, naming the field (issue 16).
#[test]
fn a_context_breaking_the_context_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("script.yaml"), two_writes_and_ls("done")).unwrap();
    std::fs::write(
        d.join("agent.yaml"),
        "name: a\nmodel: replay:script.yaml\ncontext_schema:\n  type: object\n  properties:\n    user: {type: object, required: [id]}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("tasks.jsonl"),
        "{\"id\": \"t1\", \"input\": \"Write two files\", \"context\": {\"user\": {}}}\n",
    )
    .unwrap();
    for command in ["run", "submit"] {
        let (code, stderr) = deepfleet(d, command, &[]);
        assert_eq!(code, Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains("task t1: context.user: \"id\" is a required property"),
            "{command}: {stderr}"
        );
        assert!(!d.join("results.jsonl").exists(), "{command} ran a task");
    }
}

#[test]
fn an_interrupt_on_key_naming_no_tool_is_refused() {
    let err = refused(
        "name: gated\nmodel: replay:script.yaml\ninterrupt_on:\n  write_fle: true\n  ls: false\n",
    );
    assert_names(
        &err,
        "interrupt_on.write_fle",
        4,
        "names no tool of this agent",
    );
    assert!(err.contains("write_file"), "the tools are listed: {err}");
    let err = refused(
        "name: gated\nmodel: replay:script.yaml\nsubagents:\n  - name: r\n    description: d\n    \
         tools: [ls]\n    interrupt_on: {write_file: true}\n",
    );
    assert_names(
        &err,
        "subagents[0].interrupt_on.write_file",
        7,
        "names no tool of this agent",
    );
}

#[test]
fn an_unknown_provider_is_refused() {
    let err = refused("name: a\nmodel: nosuch:model-1\n");
    assert_names(&err, "model", 2, "unknown model provider \"nosuch\"");
    let err = refused(
        "name: a\nmodel: replay:script.yaml\nsubagents:\n  - name: r\n    description: d\n    \
         model: 'nosuch:x'\n",
    );
    assert_names(&err, "subagents[0].model", 6, "unknown model provider");
}

#[test]
fn a_missing_replay_script_is_refused() {
    let err = refused("name: a\nmodel: replay:missing.yaml\n");
    assert_names(&err, "model", 2, "cannot read replay script");
}

#[test]
fn a_bad_template_is_refused() {
    let err = refused(
        "name: a\nmodel: replay:script.yaml\nsystem_prompt_template: 'Hello {{contxt.user}}'\n",
    );
    assert_names(&err, "system_prompt_template", 3, "unknown variable");
}

#[test]
fn a_spec_error_is_refused() {
    let err = refused("name: a\nmodel: replay:script.yaml\nlimits:\n  max_steps: 0\n");
    assert_names(&err, "limits.max_steps", 4, "must be at least 1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_api_key_is_refused_before_any_model_call() {
    let script = ScriptBuilder::new().answer(When::always(), "done");
    let engine = ReplayEngine::new(Script::from_yaml(&script.build()).unwrap());
    let server = ScriptedServer::start(Arc::new(engine), Duration::ZERO)
        .await
        .unwrap();
    let env = [
        ("OPENAI_BASE_URL", server.url()),
        ("ANTHROPIC_BASE_URL", server.root_url()),
    ];
    let err = tokio::task::spawn_blocking(move || {
        let main = refused_with("name: a\nmodel: 'openai:gpt-x'\n", &env);
        let sub = refused_with(
            "name: a\nmodel: replay:script.yaml\nsubagents:\n  - name: r\n    description: d\n    \
             model: 'anthropic:claude-sonnet-4-5'\n",
            &env,
        );
        (main, sub)
    })
    .await
    .unwrap();
    assert_names(
        &err.0,
        "model",
        2,
        "provider openai needs an API key: set OPENAI_API_KEY or providers.openai.api_key",
    );
    assert_names(
        &err.1,
        "subagents[0].model",
        6,
        "set ANTHROPIC_API_KEY or providers.anthropic.api_key",
    );
    assert!(server.requests().is_empty(), "a model call was made");
}

/// A worker given a run on a provider it has no key for (a spec
/// registered elsewhere) fails the run at once, naming the key, rather
/// than retrying the provider's 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_without_the_key_fails_the_run_naming_it() {
    let script = ScriptBuilder::new().answer(When::always(), "done");
    let engine = ReplayEngine::new(Script::from_yaml(&script.build()).unwrap());
    let server = ScriptedServer::start(Arc::new(engine), Duration::ZERO)
        .await
        .unwrap();
    let config = ProviderConfig {
        base_url: Some(server.url()),
        ..ProviderConfig::default()
    };
    let mut fleet = crate::support::fleet()
        .providers(HashMap::from([("openai".to_owned(), config)]))
        .embedded()
        .unwrap();
    let spec = crate::support::spec("keyless", "openai:gpt-x", "");
    let results = fleet
        .run(&spec, &[crate::support::task("t1", "hi")])
        .await
        .unwrap();
    fleet.shutdown().await.unwrap();
    assert_eq!(results[0].status, ResultStatus::Error);
    let error = format!("{:?}", results[0].error);
    assert!(
        error.contains("set OPENAI_API_KEY or providers.openai.api_key"),
        "{error}"
    );
    assert!(server.requests().is_empty(), "a model call was made");
}

/// `run --check-providers` makes one authenticated call per provider
/// before the first run: a key the provider refuses stops the batch,
/// exit code 2, naming the field and the provider's answer; a good one
/// lets it run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_providers_stops_on_a_refused_key_before_any_run() {
    let script = ScriptBuilder::new().answer(When::always(), "done");
    let engine = ReplayEngine::new(Script::from_yaml(&script.build()).unwrap());
    let server = ScriptedServer::start(Arc::new(engine), Duration::ZERO)
        .await
        .unwrap();
    let url = server.url();
    let (refused, accepted) = tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("agent.yaml"), "name: a\nmodel: 'openai:gpt-x'\n").unwrap();
        std::fs::write(
            d.join("tasks.jsonl"),
            "{\"id\": \"t1\", \"input\": \"hi\"}\n",
        )
        .unwrap();
        let run = |key: &str| {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_deepfleet"))
                .current_dir(d)
                .args([
                    "run",
                    "tasks.jsonl",
                    "--agent",
                    "agent.yaml",
                    "--check-providers",
                ])
                .env("OPENAI_BASE_URL", &url)
                .env("OPENAI_API_KEY", key)
                .output()
                .unwrap();
            let results = std::fs::read_to_string(d.join("results.jsonl")).unwrap_or_default();
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
                results,
            )
        };
        (run("sk-wrong"), run(deepfleet_testkit::fleet::API_KEY))
    })
    .await
    .unwrap();
    let (code, stderr, results) = refused;
    assert_eq!(code, Some(2), "{stderr}");
    assert_names(&stderr, "model", 2, "provider openai refused the check");
    assert!(stderr.contains("HTTP 401"), "{stderr}");
    assert!(results.is_empty(), "a task ran: {results}");
    let (code, stderr, results) = accepted;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(results.lines().count(), 1, "{results}");
    assert_eq!(
        server.requests().len(),
        1,
        "one model call, by the accepted run"
    );
}

/// `submit --check-providers` makes the same call before it reaches the
/// fleet: a refused key stops it, exit code 2, naming the field and the
/// provider's answer, with no connection tried; an accepted one lets it
/// go on to the fleet (here a port nothing listens on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_check_providers_stops_on_a_refused_key_before_the_fleet() {
    let script = ScriptBuilder::new().answer(When::always(), "done");
    let engine = ReplayEngine::new(Script::from_yaml(&script.build()).unwrap());
    let server = ScriptedServer::start(Arc::new(engine), Duration::ZERO)
        .await
        .unwrap();
    let url = server.url();
    let (refused, accepted) = tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("agent.yaml"), "name: a\nmodel: 'openai:gpt-x'\n").unwrap();
        std::fs::write(
            d.join("tasks.jsonl"),
            "{\"id\": \"t1\", \"input\": \"hi\"}\n",
        )
        .unwrap();
        let submit = |key: &str| {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_deepfleet"))
                .current_dir(d)
                .args([
                    "submit",
                    "tasks.jsonl",
                    "--agent",
                    "agent.yaml",
                    "--check-providers",
                    "--queue",
                    "amqp://guest:guest@127.0.0.1:1/%2f",
                    "--store",
                    "redis://127.0.0.1:1",
                ])
                .env("OPENAI_BASE_URL", &url)
                .env("OPENAI_API_KEY", key)
                .env("DEEPFLEET__CONNECT_TIMEOUT_SECS", "2")
                .output()
                .unwrap();
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        };
        (
            submit("sk-wrong"),
            submit(deepfleet_testkit::fleet::API_KEY),
        )
    })
    .await
    .unwrap();
    let (code, stderr) = refused;
    assert_eq!(code, Some(2), "{stderr}");
    assert_names(&stderr, "model", 2, "provider openai refused the check");
    assert!(stderr.contains("HTTP 401"), "{stderr}");
    assert!(!stderr.contains("connecting to"), "{stderr}");
    let (code, stderr) = accepted;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!stderr.contains("refused the check"), "{stderr}");
    assert!(
        stderr.contains("connecting to RabbitMQ at amqp://guest:***@127.0.0.1:1"),
        "{stderr}"
    );
    assert!(server.requests().is_empty(), "a model call was made");
}

/// Each protocol's access check sends its key the way its calls do, and a
/// refused key comes back as an authentication error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_access_check_speaks_every_protocol() {
    // Another test may have installed it already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let script = ScriptBuilder::new().answer(When::always(), "done");
    let engine = ReplayEngine::new(Script::from_yaml(&script.build()).unwrap());
    let server = ScriptedServer::start(Arc::new(engine), Duration::ZERO)
        .await
        .unwrap();
    for key in [deepfleet_testkit::fleet::API_KEY, "sk-wrong"] {
        let config = |base_url: String| ProviderConfig {
            base_url: Some(base_url),
            api_key: Some(key.to_owned()),
            ..ProviderConfig::default()
        };
        let providers = deepfleet_model::Providers::with_env(
            HashMap::from([
                ("openai".to_owned(), config(server.url())),
                ("anthropic".to_owned(), config(server.root_url())),
                ("google_genai".to_owned(), config(server.root_url())),
            ]),
            |_| None,
        );
        for model in ["openai:m", "anthropic:m", "google_genai:m"] {
            let checked = providers
                .resolve(model)
                .unwrap()
                .client
                .check_access()
                .await;
            match key {
                deepfleet_testkit::fleet::API_KEY => checked.unwrap(),
                _ => assert_eq!(
                    checked.unwrap_err().kind,
                    deepfleet_model::ErrorKind::Auth,
                    "{model}"
                ),
            }
        }
    }
    assert!(server.requests().is_empty(), "no model call");
}
