//! `deepfleet run` refuses a spec that can never work before any task
//! runs, naming the field and its line (issue 14: an `interrupt_on` typo
//! let `write_file` run without approval; an unknown provider, a missing
//! replay script or a bad template failed every task later).

use std::path::Path;
use std::process::Output;

use crate::support::two_writes_and_ls;

fn deepfleet_run(dir: &Path) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_deepfleet"))
        .current_dir(dir)
        .args(["run", "tasks.jsonl", "--agent", "agent.yaml"])
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("running deepfleet")
}

/// Runs `agent` (YAML) on one task; the error output, after checking the
/// run failed and wrote no result.
fn refused(agent: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("script.yaml"), two_writes_and_ls("done")).unwrap();
    std::fs::write(d.join("agent.yaml"), agent).unwrap();
    std::fs::write(
        d.join("tasks.jsonl"),
        "{\"id\": \"t1\", \"input\": \"Write two files\"}\n",
    )
    .unwrap();
    let out = deepfleet_run(d);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{agent}\n{stderr}");
    assert!(!d.join("results.jsonl").exists(), "a task ran: {agent}");
    stderr
}

fn assert_names(stderr: &str, field: &str, line: usize, message: &str) {
    let at = format!("{field} (line {line}): ");
    assert!(stderr.contains(&at), "expected `{at}` in:\n{stderr}");
    assert!(
        stderr.contains(message),
        "expected `{message}` in:\n{stderr}"
    );
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
