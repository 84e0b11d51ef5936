//! Delegation: `task` calls become child runs on the queue; results fan
//! in by call id, files merge back, failures stay local to their call.

use deepfleet_proto::ResultStatus;

use crate::support::{replay_model, scenario, spec, task};

const PARALLEL: &str = r##"
rules:
  - when: {input: '^Split the work$', turn: 0}
    reply:
      tool_calls:
        - {name: task, args: {subagent_type: general-purpose, description: "Write alpha to /a.txt"}}
        - {name: task, args: {subagent_type: general-purpose, description: "Write beta to /b.txt"}}
  # The last tool message is the second call's result: results keep call order.
  - when: {input: '^Split the work$', turn: 1, last_tool: '^wrote beta$'}
    reply:
      tool_calls:
        - {name: ls, args: {path: /}}
  - when: {input: '^Split the work$', turn: 2}
    reply: {text: "{{last_tool}}"}
  - when: {input: '^Write (?P<word>\w+) to (?P<path>\S+)$', turn: 0}
    reply:
      tool_calls:
        - {name: write_file, args: {file_path: '{{path}}', content: '{{word}}'}}
  - when: {input: '^Write (?P<word>\w+) to (?P<path>\S+)$', turn: 1}
    reply: {text: 'wrote {{word}}'}
"##;

// deepagents conformance §13.2 items 20-21: the final message comes back
// as the tool result, one per call, and the children's files merge back.
scenario!(parallel_tasks_fan_in, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("parallel", &replay_model(dir.path(), PARALLEL), "");
    let r = &fleet.run(&spec, &[task("t1", "Split the work")]).await[0];
    assert_eq!(r.error, None);
    assert_eq!(r.output, "['/a.txt', '/b.txt']");
    assert_eq!(r.files.get("/a.txt").map(String::as_str), Some("alpha"));
    assert_eq!(r.files.get("/b.txt").map(String::as_str), Some("beta"));
    assert_eq!(r.steps, 3, "the parent's own model calls");
});

const ONE_FAILS: &str = r##"
rules:
  - when: {input: '^Two jobs$', turn: 0}
    reply:
      tool_calls:
        - {name: task, args: {subagent_type: general-purpose, description: "Write ok to /ok.txt"}}
        - {name: task, args: {subagent_type: general-purpose, description: "Fail now"}}
  - when: {input: '^Two jobs$', turn: 1}
    reply: {text: "{{last_tool}}"}
  - when: {input: '^Fail now$'}
    error: {status: 400, message: "this subagent cannot work"}
  - when: {input: '^Write (?P<word>\w+) to (?P<path>\S+)$', turn: 0}
    reply:
      tool_calls:
        - {name: write_file, args: {file_path: '{{path}}', content: '{{word}}'}}
  - when: {input: '^Write (?P<word>\w+) to (?P<path>\S+)$', turn: 1}
    reply: {text: 'wrote {{word}}'}
"##;

scenario!(
    a_failed_child_is_an_error_result_and_siblings_go_on,
    |fleet| {
        let dir = tempfile::tempdir().unwrap();
        let spec = spec("onefails", &replay_model(dir.path(), ONE_FAILS), "");
        let r = &fleet.run(&spec, &[task("t1", "Two jobs")]).await[0];
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

const NESTED: &str = r##"
rules:
  - when: {input: '^Delegate$', turn: 0}
    reply:
      tool_calls:
        - {name: task, args: {subagent_type: general-purpose, description: "Delegate again"}}
  - when: {input: '^Delegate$', turn: 1}
    reply: {text: "{{last_tool}}"}
  - when: {input: '^Delegate again$', turn: 0}
    reply:
      tool_calls:
        - {name: task, args: {subagent_type: general-purpose, description: "Too deep"}}
  - when: {input: '^Delegate again$', turn: 1}
    reply: {text: "{{last_tool}}"}
"##;

scenario!(depth_limit_hides_task_from_subagents, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("nested", &replay_model(dir.path(), NESTED), "");
    let r = &fleet.run(&spec, &[task("t1", "Delegate")]).await[0];
    assert!(
        r.output.starts_with("Error: task is not a valid tool"),
        "{}",
        r.output
    );
});
