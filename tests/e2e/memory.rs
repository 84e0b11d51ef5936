//! Long-term memory across threads: `/memories/` routed to the store in a
//! namespace of the agent and the run's `context.user_id`. What one run
//! saves, a later run of the same user reads on another thread; another
//! user's run cannot see it.

use deepfleet_proto::{ResultStatus, TaskLine};
use deepfleet_testkit::script::{Call, ScriptBuilder, When};
use serde_json::json;

use crate::support::{replay_model, scenario, spec, task};

/// `save…` writes the preference to long-term memory, `recall…` reads
/// it back.
fn remember() -> String {
    let prefs = "/memories/prefs.txt";
    ScriptBuilder::new()
        .calls_then_answer(
            When::input("^save"),
            [Call::write_file(prefs, "tea, no sugar")],
            "saved",
        )
        .calls_then_answer(
            When::input("^recall"),
            [Call::read_file(prefs)],
            "{{last_tool}}",
        )
        .build()
}

const BACKEND: &str = "backend:\n  store_namespace: ['{agent}', 'user-{context.user_id}']\n";

fn as_user(id: &str, input: &str, user: &str) -> TaskLine {
    TaskLine {
        context: Some(json!({"user_id": user})),
        ..task(id, input)
    }
}

scenario!(memories_follow_the_user_across_threads, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        "rememberer",
        &replay_model(dir.path(), &remember()),
        BACKEND,
    );

    let saved = fleet
        .run(&spec, &[as_user("a", "save my prefs", "u1")])
        .await
        .unwrap();
    assert_eq!(saved[0].output, "saved");
    assert_eq!(
        saved[0].files.get("/memories/prefs.txt"),
        None,
        "not thread state"
    );

    let later = fleet
        .run(
            &spec,
            &[
                as_user("b", "recall my prefs", "u1"),
                as_user("c", "recall my prefs", "u2"),
            ],
        )
        .await
        .unwrap();
    assert_eq!(later[0].output, "@@ lines 1-1 of 1 @@\ntea, no sugar");
    assert_eq!(
        later[1].output,
        "Error: File '/memories/prefs.txt' not found"
    );
});

scenario!(a_missing_namespace_value_fails_the_run, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        "rememberer",
        &replay_model(dir.path(), &remember()),
        BACKEND,
    );
    let results = fleet
        .run(&spec, &[task("d", "recall my prefs")])
        .await
        .unwrap();
    let r = &results[0];
    assert_eq!(r.status, ResultStatus::Error);
    let error = r.error.as_deref().unwrap_or_default();
    assert!(error.contains("user_id"), "{error}");
});
