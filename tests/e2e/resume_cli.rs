//! The CLI's human-in-the-loop path in embedded mode: `deepfleet run
//! --state FILE` parks a run for review and keeps the store in FILE;
//! `deepfleet resume --state FILE` applies decisions in a new process and
//! finishes it. The runtime context's secret never reaches the state file,
//! the results or the logs (captured at debug level).

use std::path::Path;
use std::process::Output;

use deepfleet_proto::{ResultLine, ResultStatus};

use crate::support::{CONTEXT_KEY, two_writes_and_ls};

const SECRET: &str = "sk-live-0123456789-do-not-log";

const AGENT: &str = "name: cli-hitl
model: replay:script.yaml
interrupt_on:
  write_file: true
context_secrets: [api_key]
state_schema:
  type: object
  properties:
    ticket: {type: string}
";

fn deepfleet(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_deepfleet"))
        .current_dir(dir)
        .args(args)
        .env("DEEPFLEET__CONTEXT_KEY", CONTEXT_KEY.as_str())
        .env("RUST_LOG", "debug")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("running deepfleet")
}

fn results(dir: &Path) -> Vec<ResultLine> {
    std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Fails if `SECRET` occurs in `text`, naming where.
fn assert_sealed(text: &str, what: &str) {
    assert!(!text.contains(SECRET), "the secret leaked into {what}");
}

fn assert_no_secret_in(dir: &Path, outputs: &[&Output]) {
    for name in ["state.json", "results.jsonl"] {
        assert_sealed(&std::fs::read_to_string(dir.join(name)).unwrap(), name);
    }
    for out in outputs {
        assert_sealed(&String::from_utf8_lossy(&out.stdout), "stdout");
        assert_sealed(&String::from_utf8_lossy(&out.stderr), "the logs");
    }
}

#[test]
fn run_with_state_then_resume_finishes_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("script.yaml"), two_writes_and_ls("done")).unwrap();
    std::fs::write(d.join("agent.yaml"), AGENT).unwrap();
    let task = serde_json::json!({
        "id": "t1",
        "input": "Write two files",
        "context": {"user_id": "u-7", "api_key": SECRET},
        "state": {"ticket": "T-1"},
    });
    std::fs::write(d.join("tasks.jsonl"), format!("{task}\n")).unwrap();

    let run = deepfleet(
        d,
        &[
            "run",
            "tasks.jsonl",
            "--agent",
            "agent.yaml",
            "--state",
            "state.json",
        ],
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("1 run(s) wait for a human decision"),
        "{stdout}"
    );
    assert!(
        stdout.contains("deepfleet resume --state state.json --run "),
        "{stdout}"
    );
    let first = results(d);
    assert_eq!(first[0].status, ResultStatus::Interrupted);
    let review = first[0].review.clone().unwrap();
    // The context was opened for the step, and none of it logged.
    assert!(stderr.contains("opened runtime context"), "{stderr}");
    assert!(!stderr.contains("u-7"), "{stderr}");
    let state = std::fs::read_to_string(d.join("state.json")).unwrap();
    assert!(
        state.contains("\"ciphertext\""),
        "the parked run keeps its context sealed"
    );
    assert!(
        state.contains("\"ticket\":\"T-1\""),
        "the seeded custom state is checkpointed"
    );
    assert_no_secret_in(d, &[&run]);

    // Wrong decisions: a clear error, nothing recorded.
    std::fs::write(d.join("one.json"), r#"[{"type": "approve"}]"#).unwrap();
    let bad = deepfleet(
        d,
        &[
            "resume",
            "--state",
            "state.json",
            "--run",
            &review.run_id,
            "--decisions",
            "one.json",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("expected 2 decision(s), one per action request in order, got 1"),
        "{err}"
    );

    std::fs::write(
        d.join("decisions.json"),
        r#"[{"type": "edit", "edited_action": {"name": "write_file", "args": {"file_path": "/a2.txt", "content": "alpha"}}},
            {"type": "reject", "message": "no b"}]"#,
    )
    .unwrap();
    let resumed = deepfleet(
        d,
        &[
            "resume",
            "--state",
            "state.json",
            "--run",
            &review.run_id,
            "--decisions",
            "decisions.json",
        ],
    );
    let out = String::from_utf8_lossy(&resumed.stdout);
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{out}\n{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let lines = results(d);
    assert_eq!(lines.len(), 2, "resume appends the task's final line");
    assert_eq!(lines[1].id, "t1");
    assert_eq!(
        lines[1].status,
        ResultStatus::Success,
        "{:?}",
        lines[1].error
    );
    assert_eq!(lines[1].output, "done");
    assert_eq!(
        lines[1].files.get("/a2.txt").map(String::as_str),
        Some("alpha")
    );
    assert!(!lines[1].files.contains_key("/b.txt"));
    // The finished run dropped its context.
    let state = std::fs::read_to_string(d.join("state.json")).unwrap();
    assert!(!state.contains("\"ciphertext\""), "{state}");
    assert_no_secret_in(d, &[&run, &bad, &resumed]);

    let again = deepfleet(
        d,
        &[
            "resume",
            "--state",
            "state.json",
            "--run",
            &review.run_id,
            "--decisions",
            "decisions.json",
        ],
    );
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("is not waiting for a decision"));
}

#[test]
fn invalid_seed_state_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("script.yaml"), two_writes_and_ls("done")).unwrap();
    std::fs::write(d.join("agent.yaml"), AGENT).unwrap();
    std::fs::write(
        d.join("tasks.jsonl"),
        "{\"id\": \"t1\", \"input\": \"Write two files\", \"state\": {\"ticket\": 5}}\n",
    )
    .unwrap();
    let out = deepfleet(d, &["run", "tasks.jsonl", "--agent", "agent.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("task t1: state.ticket: 5 is not of type \"string\""),
        "{err}"
    );
    assert!(
        !d.join("results.jsonl").exists(),
        "a bad batch starts nothing"
    );
}
