//! Spec versions: a batch that brings its own spec under a name a
//! scheduler serves runs its own version beside the served one's runs,
//! never replaces what the name serves, and a run keeps its version when
//! a newer spec is served while it waits.

use deepfleet_proto::ResultStatus;
use deepfleet_scheduler::{BatchFollower, submit_task};

use crate::support::{replay_model, scenario, spec, task};

/// A script answering every run with `answer`, after one `ls` so that a
/// run spans two steps (each loads the spec anew).
fn answering(answer: &str) -> String {
    format!(
        "rules:\n  - when: {{turn: 0}}\n    reply:\n      tool_calls:\n        - {{name: ls, args: {{path: /}}}}\n  - when: {{turn: 1}}\n    reply: {{text: {answer}}}\n"
    )
}

scenario!(a_brought_spec_runs_beside_the_served_one, |fleet| {
    let (served_dir, brought_dir, newer_dir) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let served = spec(
        "versioned",
        &replay_model(served_dir.path(), &answering("served")),
        "",
    );
    let brought = spec(
        "versioned",
        &replay_model(brought_dir.path(), &answering("brought")),
        "",
    );
    let scheduler = fleet.intake().unwrap();
    scheduler.register(&served).await.unwrap();
    let submitter = fleet.intake().unwrap().pin(&brought).await.unwrap();

    let mut follower = BatchFollower::new(fleet.store.clone(), "versions");
    let theirs = submit_task(
        &submitter,
        "versioned",
        &task("theirs", "go"),
        Some("versions"),
    )
    .await
    .unwrap();
    let ours = submit_task(
        &scheduler,
        "versioned",
        &task("ours", "go"),
        Some("versions"),
    )
    .await
    .unwrap();
    follower.track(&theirs);
    follower.track(&ours);
    // A newer spec served while both run changes neither.
    let newer = spec(
        "versioned",
        &replay_model(newer_dir.path(), &answering("newer")),
        "",
    );
    scheduler.register(&newer).await.unwrap();

    let mut results = fleet.follow(follower).await.unwrap();
    results.sort_by(|a, b| a.id.cmp(&b.id));
    let outcome: Vec<(&str, ResultStatus, &str)> = results
        .iter()
        .map(|r| (r.id.as_str(), r.status, r.output.as_str()))
        .collect();
    assert_eq!(
        outcome,
        [
            ("ours", ResultStatus::Success, "served"),
            ("theirs", ResultStatus::Success, "brought"),
        ]
    );
    assert_eq!(
        fleet.store.get_spec("versioned").await.unwrap(),
        Some(newer)
    );
});
