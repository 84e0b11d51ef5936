//! Encryption at rest (issue 15): with `[encryption]` keys, a scenario
//! that writes messages, thread files, custom state, a `/memories/` item
//! and a runtime context with a secret leaves none of that plaintext
//! anywhere at rest: not in any key under the fleet's Redis prefix
//! (strings, hashes, lists, sets, sorted sets, streams), parked or
//! finished, and not in the embedded state file. `deepfleet rotate-keys`
//! then re-seals everything under a new key, so the old one can go.

use std::path::Path;
use std::process::Output;
use std::sync::Arc;

use deepfleet_proto::{Decision, ResultStatus, TaskLine};
use deepfleet_scheduler::resume::resume;
use deepfleet_store::at_rest;
use deepfleet_store::prelude::*;
use deepfleet_store::redis::RedisStore;
use deepfleet_store::sealed::ContextKey;
use deepfleet_store::{Keyring, StoreError};
use deepfleet_testkit::script::{Call, ScriptBuilder, When};

use crate::support::{
    CONTEXT_KEY, REDIS_URL, distributed, fleet, redis_values, replay_model, spec,
};

const INPUT: &str = "input-marker-5b1e: save the plan";
const FILE: &str = "file-marker-77c2 the plan is to wait";
const MEMORY: &str = "memory-marker-0d9a tea, no sugar";
const STATE: &str = "state-marker-c3f0";
const SECRET: &str = "sk-secret-marker-4e21-do-not-store";
const ANSWER: &str = "answer-marker-a6b8 saved";
const MARKERS: [&str; 6] = [INPUT, FILE, MEMORY, STATE, SECRET, ANSWER];

/// The spec after its name and model.
const AGENT: &str = "interrupt_on:
  write_file: true
context_secrets: [api_key]
backend:
  store_namespace: ['{agent}', 'user-{context.user_id}']
state_schema:
  type: object
  properties:
    ticket: {type: string}
";

/// Writes a thread file and a memory (each held for review first), then
/// answers.
fn script() -> String {
    ScriptBuilder::new()
        .calls_then_answer(
            When::input("save the plan"),
            [
                Call::write_file("/plan.md", FILE),
                Call::write_file("/memories/prefs.txt", MEMORY),
            ],
            ANSWER,
        )
        .build()
}

fn task() -> serde_json::Value {
    serde_json::json!({
        "id": "t1",
        "input": INPUT,
        "context": {"user_id": "u-1", "api_key": SECRET},
        "state": {"ticket": STATE},
    })
}

/// `kid:base64` entries of two fresh keys, as `encryption.keys` takes
/// them.
fn two_keys() -> (String, String) {
    let entry = |kid: &str| format!("{kid}:{}", ContextKey::generate_base64());
    (entry("k1"), entry("k2"))
}

/// Fails naming the key if any marker is in any key name or value.
fn assert_no_marker(values: &[(String, String, String)], when: &str) {
    for (_, key, value) in values {
        for marker in MARKERS {
            assert!(
                !key.contains(marker) && !value.contains(marker),
                "{when}: {marker:?} in plaintext at {key}: {value}"
            );
        }
    }
    assert!(
        values.iter().any(|(_, _, v)| at_rest::is_sealed(v)),
        "{when}: nothing is sealed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fleets_redis_holds_no_plaintext_and_rotates() {
    let (k1, k2) = two_keys();
    let Some(mut fleet) = distributed(fleet().encryption(&k1, "k1"), 1).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("sealed", &replay_model(dir.path(), &script()), AGENT);
    let line: TaskLine = serde_json::from_value(task()).unwrap();

    let batch = fleet.run_batch(&spec, &[line]).await.unwrap();
    let (parked, run) = (&batch.results[0], &batch.runs[0]);
    assert_eq!(
        parked.status,
        ResultStatus::Interrupted,
        "{:?}",
        parked.error
    );
    assert_no_marker(&redis_values(&fleet.prefix).await, "parked");

    let review = parked.review.clone().unwrap();
    resume(
        &*fleet.store,
        &*fleet.queue,
        &review.thread_id,
        &review.run_id,
        vec![Decision::Approve, Decision::Approve],
    )
    .await
    .unwrap();
    let done = fleet.follow_run(run).await.unwrap();
    assert_eq!(done.status, ResultStatus::Success, "{:?}", done.error);
    assert_eq!(done.output, ANSWER);
    assert_eq!(done.files.get("/plan.md").map(String::as_str), Some(FILE));
    assert_no_marker(&redis_values(&fleet.prefix).await, "finished");

    // k2 becomes current; the rotation re-seals everything durable.
    let ring = format!("{k1},{k2}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_deepfleet"))
        .args(["rotate-keys", "--store", REDIS_URL])
        .env("DEEPFLEET__KEY_PREFIX", &fleet.prefix)
        .env("DEEPFLEET__ENCRYPTION__KEYS", &ring)
        .env("DEEPFLEET__ENCRYPTION__CURRENT", "k2")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("re-sealed under key k2"), "{stdout}");
    assert!(stdout.contains(" 0 unreadable"), "{stdout}");
    let rotated = redis_values(&fleet.prefix).await;
    assert_no_marker(&rotated, "rotated");
    for (kind, key, value) in &rotated {
        if kind != "stream" && at_rest::is_sealed(value) {
            assert_eq!(at_rest::key_id(value), Some("k2"), "{key}");
        }
    }

    // k1 can go: the thread and the memory read under k2 alone.
    let only_k2 = RedisStore::connect(REDIS_URL, &fleet.prefix)
        .await
        .unwrap()
        .with_keyring(Arc::new(Keyring::parse(&k2, None).unwrap()));
    let thread = only_k2.load_thread(&review.thread_id).await.unwrap();
    assert_eq!(thread.state["ticket"], STATE);
    let memories = only_k2
        .search_items(&deepfleet_proto::ItemSearch {
            // Memories live under their tenant's label (the default one here).
            namespace_prefix: deepfleet_proto::tenant::store_namespace(
                &deepfleet_proto::TenantId::default(),
                &["sealed".to_owned()],
            ),
            ..deepfleet_proto::ItemSearch::default()
        })
        .await
        .unwrap();
    assert_eq!(memories.len(), 1, "{memories:?}");
    // A process without the keys cannot read the thread, and says why.
    let clear = RedisStore::connect(REDIS_URL, &fleet.prefix).await.unwrap();
    assert!(matches!(
        clear.load_thread(&review.thread_id).await,
        Err(StoreError::Sealed { .. })
    ));
    fleet.shutdown().await.unwrap();
}

fn deepfleet(dir: &Path, keys: &str, current: &str, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_deepfleet"))
        .current_dir(dir)
        .args(args)
        .env("DEEPFLEET__CONTEXT_KEY", CONTEXT_KEY.as_str())
        .env("DEEPFLEET__ENCRYPTION__KEYS", keys)
        .env("DEEPFLEET__ENCRYPTION__CURRENT", current)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("running deepfleet")
}

/// The state file, checked to be sealed under `kid` and to hold no marker.
fn assert_sealed_file(path: &Path, kid: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert_eq!(at_rest::key_id(&text), Some(kid), "{text}");
    for marker in MARKERS {
        assert!(!text.contains(marker), "{marker:?} in the state file");
    }
}

#[test]
fn the_embedded_state_file_holds_no_plaintext_and_rotates() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("script.yaml"), script()).unwrap();
    std::fs::write(
        d.join("agent.yaml"),
        format!("name: sealed\nmodel: replay:script.yaml\n{AGENT}"),
    )
    .unwrap();
    std::fs::write(d.join("tasks.jsonl"), format!("{}\n", task())).unwrap();
    let (k1, k2) = two_keys();
    let state = d.join("state.json");

    let run = deepfleet(
        d,
        &k1,
        "k1",
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
    assert_eq!(
        run.status.code(),
        Some(1),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_sealed_file(&state, "k1");
    let line: deepfleet_proto::ResultLine = serde_json::from_str(
        std::fs::read_to_string(d.join("results.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let review = line.review.unwrap();

    // Rotated before the resume: k2 seals, k1 still opens the old file.
    let ring = format!("{k1},{k2}");
    let rotate = deepfleet(d, &ring, "k2", &["rotate-keys", "--state", "state.json"]);
    assert_eq!(
        rotate.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&rotate.stderr)
    );
    assert_sealed_file(&state, "k2");

    std::fs::write(
        d.join("approve.json"),
        r#"[{"type": "approve"}, {"type": "approve"}]"#,
    )
    .unwrap();
    let resumed = deepfleet(
        d,
        &k2,
        "k2",
        &[
            "resume",
            "--state",
            "state.json",
            "--run",
            &review.run_id,
            "--decisions",
            "approve.json",
        ],
    );
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&resumed.stdout),
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert_sealed_file(&state, "k2");

    // Without the key the file does not open, and the error says why.
    let without = std::process::Command::new(env!("CARGO_BIN_EXE_deepfleet"))
        .current_dir(d)
        .args(["resume", "--state", "state.json", "--run", &review.run_id])
        .args(["--decisions", "approve.json"])
        .env("DEEPFLEET__CONTEXT_KEY", CONTEXT_KEY.as_str())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&without.stderr);
    assert_eq!(without.status.code(), Some(2), "{err}");
    assert!(err.contains("no encryption keys are configured"), "{err}");
}
