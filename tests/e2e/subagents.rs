//! Delegation: `task` calls become child runs on the queue; results fan
//! in by call id, files merge back, failures stay local to their call.

use deepfleet_proto::ResultStatus;
use deepfleet_testkit::script::{Call, Failure, ScriptBuilder, When, write_task};

use crate::support::{replay_model, scenario, spec, task};

/// Two writing subagents; once both reported, the parent lists the
/// files and answers with the listing.
fn parallel() -> String {
    let split = When::input("^Split the work$");
    ScriptBuilder::new()
        .call(
            split.clone().turn(0),
            [
                Call::task(&write_task("alpha", "/a.txt")),
                Call::task(&write_task("beta", "/b.txt")),
            ],
        )
        // The last tool message is the second call's result: results keep
        // call order.
        .call(
            split.clone().turn(1).last_tool("^wrote beta$"),
            [Call::ls("/")],
        )
        .answer(split.turn(2), "{{last_tool}}")
        .writing_subagents()
        .build()
}

// deepagents conformance §13.2 items 20-21: the final message comes back
// as the tool result, one per call, and the children's files merge back.
scenario!(parallel_tasks_fan_in, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("parallel", &replay_model(dir.path(), &parallel()), "");
    let r = &fleet
        .run(&spec, &[task("t1", "Split the work")])
        .await
        .unwrap()[0];
    assert_eq!(r.error, None);
    assert_eq!(r.output, "['/a.txt', '/b.txt']");
    assert_eq!(r.files.get("/a.txt").map(String::as_str), Some("alpha"));
    assert_eq!(r.files.get("/b.txt").map(String::as_str), Some("beta"));
    assert_eq!(r.steps, 3, "the parent's own model calls");
});

/// One subagent writes, its sibling's model call fails.
fn one_fails() -> String {
    ScriptBuilder::new()
        .delegating("^Two jobs$", &[&write_task("ok", "/ok.txt"), "Fail now"])
        .fail(
            When::input("^Fail now$"),
            Failure::new(400, "this subagent cannot work"),
        )
        .writing_subagents()
        .build()
}

scenario!(
    a_failed_child_is_an_error_result_and_siblings_go_on,
    |fleet| {
        let dir = tempfile::tempdir().unwrap();
        let spec = spec("onefails", &replay_model(dir.path(), &one_fails()), "");
        let r = &fleet.run(&spec, &[task("t1", "Two jobs")]).await.unwrap()[0];
        assert_eq!(r.status, ResultStatus::Success);
        assert!(
            r.output
                .starts_with("Error: the subagent failed (model_bad_request): "),
            "{}",
            r.output
        );
        assert_eq!(r.files.get("/ok.txt").map(String::as_str), Some("ok"));
    }
);

/// A subagent that tries to delegate again.
fn nested() -> String {
    ScriptBuilder::new()
        .delegating("^Delegate$", &["Delegate again"])
        .delegating("^Delegate again$", &["Too deep"])
        .build()
}

scenario!(depth_limit_hides_task_from_subagents, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("nested", &replay_model(dir.path(), &nested()), "");
    let r = &fleet.run(&spec, &[task("t1", "Delegate")]).await.unwrap()[0];
    assert!(
        r.output.starts_with("Error: task is not a valid tool"),
        "{}",
        r.output
    );
});
