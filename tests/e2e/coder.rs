//! The coder example (`examples/coder`): an agent writes a script with
//! `write_file`, runs it with `execute`, and answers from its output or
//! from a file the script wrote; on both modes, and as `deepfleet run`
//! runs it from the README. Needs bubblewrap (see `sandbox.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use deepfleet_proto::{AgentSpec, ResultLine, ResultStatus, TaskLine};

use crate::sandbox::sandbox_missing;
use crate::support::scenario;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/coder")
}

/// The example's spec, with its replay script resolved.
fn coder_spec() -> AgentSpec {
    let text = std::fs::read_to_string(example().join("agent.yaml")).unwrap();
    let mut spec = AgentSpec::from_yaml(&text).unwrap();
    spec.model = format!("replay:{}", example().join("script.yaml").display());
    spec
}

fn coder_tasks() -> Vec<TaskLine> {
    std::fs::read_to_string(example().join("tasks.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What each task must answer.
fn expected() -> BTreeMap<&'static str, &'static str> {
    [
        ("sum-01", "The sum of the integers from 1 to 100 is 5050."),
        ("sum-02", "The sum of the integers from 250 to 1000 is 469375."),
        ("sum-03", "The sum of the integers from 1 to 1000000 is 500000500000."),
        ("words-01", "/notes/meeting.txt has 11 words."),
        ("words-02", "/docs/readme.md has 7 words."),
        (
            "squares-01",
            "Wrote /out/squares.csv:\n@@ lines 1-6 of 6 @@\nn,square\n1,1\n2,4\n3,9\n4,16\n5,25",
        ),
        (
            "squares-02",
            "Wrote /out/squares.csv:\n@@ lines 1-13 of 13 @@\nn,square\n1,1\n2,4\n3,9\n4,16\n5,25\n6,36\n7,49\n8,64\n9,81\n10,100\n11,121\n12,144",
        ),
    ]
    .into()
}

fn assert_answers(results: &[ResultLine]) {
    let answers: BTreeMap<&str, &str> = results
        .iter()
        .map(|r| {
            assert_eq!(r.status, ResultStatus::Success, "{}: {:?}", r.id, r.error);
            (r.id.as_str(), r.output.as_str())
        })
        .collect();
    pretty_assertions::assert_eq!(answers, expected());
}

scenario!(the_coder_example_answers_from_its_programs, |fleet| {
    if sandbox_missing().await {
        fleet.shutdown().await.unwrap();
        return;
    }
    let results = fleet.run(&coder_spec(), &coder_tasks()).await.unwrap();
    assert_answers(&results);
    let squares = results.iter().find(|r| r.id == "squares-01").unwrap();
    assert_eq!(
        squares.files.get("/out/squares.csv").map(String::as_str),
        Some("n,square\n1,1\n2,4\n3,9\n4,16\n5,25\n")
    );
});

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deepfleet_run_runs_the_coder_example() {
    if sandbox_missing().await {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_deepfleet"))
        .current_dir(dir.path())
        .arg("run")
        .arg(example().join("tasks.jsonl"))
        .arg("--agent")
        .arg(example().join("agent.yaml"))
        .env_remove("DEEPFLEET_CONFIG")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let results: Vec<ResultLine> = std::fs::read_to_string(dir.path().join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_answers(&results);
}
