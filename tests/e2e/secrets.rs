//! Runtime-context secrets on the fleet: with a worker process logging at
//! trace level, nothing under the fleet's Redis prefix and nothing in the
//! worker's logs holds the secret, while the run is parked (context at
//! rest, sealed) or after it finished (context dropped). The embedded
//! half of this check is in `resume_cli.rs`; below, `deepfleet run` at
//! trace level with secrets nested, in lists and in other casings.

use std::process::Stdio;

use deepfleet_proto::{Decision, ResultStatus, TaskLine};
use deepfleet_scheduler::resume::resume;
use tokio::io::AsyncReadExt;

use crate::support::{delegating_one_write, distributed, fleet, redis_values, replay_model, spec};

const SECRET: &str = "sk-live-fleet-9876543210-do-not-log";

/// Every key and value under `prefix`, as text.
async fn dump(prefix: &str) -> String {
    let mut out = String::new();
    let mut last_key = None;
    for (_, key, value) in redis_values(prefix).await {
        if last_key.as_ref() != Some(&key) {
            out.push_str(&key);
            out.push('\n');
            last_key = Some(key);
        }
        out.push_str(&value);
        out.push('\n');
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_and_worker_logs_never_hold_a_context_secret() {
    let Some(mut fleet) = distributed(fleet(), 0).await else {
        return;
    };
    let mut worker = fleet
        .worker_command()
        .unwrap()
        .env("RUST_LOG", "trace")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut logs = worker.stderr.take().unwrap();
    let collected = tokio::spawn(async move {
        let mut text = String::new();
        let _ = logs.read_to_string(&mut text).await;
        text
    });

    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        "secrets",
        &replay_model(dir.path(), &delegating_one_write("^Delegate a write$")),
        "interrupt_on: {write_file: true}\ncontext_secrets: [api_key]\n",
    );
    let task = TaskLine {
        id: "t1".into(),
        input: "Delegate a write".into(),
        context: Some(serde_json::json!({"user_id": "u-9", "api_key": SECRET})),
        files: None,
        state: None,
        timeout_secs: None,
    };
    let batch = fleet.run_batch(&spec, &[task]).await.unwrap();
    let (line, run) = (&batch.results[0], &batch.runs[0]);
    assert_eq!(line.status, ResultStatus::Interrupted);
    // Parked: the parent and its subagent hold the context, sealed.
    let parked = dump(&fleet.prefix).await;
    assert!(parked.matches("\"ciphertext\"").count() >= 2, "{parked}");
    assert!(
        !parked.contains(SECRET),
        "the secret is in Redis while parked"
    );

    let review = line.review.clone().unwrap();
    resume(
        &*fleet.store,
        &*fleet.queue,
        &review.thread_id,
        &review.run_id,
        vec![Decision::Approve],
    )
    .await
    .unwrap();
    let done = fleet.follow_run(run).await.unwrap();
    assert_eq!(done.status, ResultStatus::Success, "{:?}", done.error);
    assert_eq!(done.output, "wrote gamma");

    let finished = dump(&fleet.prefix).await;
    assert!(
        !finished.contains(SECRET),
        "the secret is in Redis after the run"
    );
    assert!(
        !finished.contains("\"ciphertext\""),
        "finished runs drop their context"
    );

    worker.kill().await.unwrap();
    let logs = collected.await.unwrap();
    assert!(
        logs.contains("opened runtime context"),
        "the worker logged at trace level"
    );
    assert!(!logs.contains(SECRET), "the secret is in the worker's logs");
    assert!(
        !logs.contains("u-9"),
        "a decrypted context value is in the worker's logs"
    );
    fleet.shutdown().await.unwrap();
}

/// Issue 14: at debug level the context was logged whole, with only exact
/// top-level `context_secrets` keys redacted. Now no log line, at any
/// level, holds a value of the decrypted context.
#[test]
fn trace_logs_of_an_embedded_batch_hold_no_context_value() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let script = deepfleet_testkit::script::ScriptBuilder::new()
        .answer(deepfleet_testkit::script::When::always(), "done")
        .build();
    std::fs::write(d.join("script.yaml"), script).unwrap();
    std::fs::write(
        d.join("agent.yaml"),
        "name: nested\nmodel: replay:script.yaml\ncontext_secrets: [api_key, token]\n",
    )
    .unwrap();
    let task = serde_json::json!({
        "id": "t1",
        "input": "Hi",
        "context": {
            "user": {"name": "plain-value-1", "API_KEY": SECRET},
            "accounts": [{"Token": format!("{SECRET}-in-list")}],
        },
    });
    std::fs::write(d.join("tasks.jsonl"), format!("{task}\n")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_deepfleet"))
        .current_dir(d)
        .args(["run", "tasks.jsonl", "--agent", "agent.yaml"])
        .env("RUST_LOG", "trace")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let logs = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{logs}");
    assert!(logs.contains("opened runtime context"), "{logs}");
    assert!(!logs.contains(SECRET), "a secret is in the logs:\n{logs}");
    assert!(
        !logs.contains("plain-value-1"),
        "a decrypted context value is in the logs"
    );
}
