//! Human in the loop: gated calls park the run as `interrupted`; a resume
//! with decisions continues it to the end (deepagents conformance §13.2
//! item 25: two gated `write_file` calls and an ungated `ls` in one turn).

use deepfleet_proto::{
    Decision, DecisionType, EditedAction, Message, ResultLine, ResultStatus, RunRecord,
    ToolMessage, ToolStatus,
};
use deepfleet_scheduler::SchedulerError;
use deepfleet_scheduler::resume::resume;
use serde_json::json;

use crate::support::{
    Fleet, delegating_one_write, replay_model, scenario, spec, task, two_writes_and_ls,
};

const GATED: &str = "interrupt_on:\n  write_file: true\n";

/// Runs one task in `dir` (which must outlive the resume: workers load
/// the replay script from it); returns its (interrupted) line and its run.
async fn interrupted(
    fleet: &mut Fleet,
    dir: &tempfile::TempDir,
    spec_yaml: &str,
    input: &str,
) -> (ResultLine, RunRecord) {
    let spec = spec(
        "hitl",
        &replay_model(dir.path(), &two_writes_and_ls("done: {{last_tool}}")),
        spec_yaml,
    );
    let mut batch = fleet.run_batch(&spec, &[task("t1", input)]).await.unwrap();
    (batch.results.remove(0), batch.runs.remove(0))
}

/// The tool messages of the run's thread, in order.
async fn tool_messages(fleet: &Fleet, run: &RunRecord) -> Vec<ToolMessage> {
    let thread = fleet.store.load_thread(&run.thread_id).await.unwrap();
    thread
        .messages
        .into_iter()
        .filter_map(|m| match m.message {
            Message::Tool(t) => Some(t),
            _ => None,
        })
        .collect()
}

fn text(message: &ToolMessage) -> String {
    deepfleet_proto::message::joined_text(&message.content)
}

scenario!(edit_and_reject_then_the_turn_finishes, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let (line, run) = interrupted(&mut fleet, &dir, GATED, "Write two files").await;
    assert_eq!(line.status, ResultStatus::Interrupted);
    assert!(
        line.files.is_empty(),
        "nothing ran before the decision: {:?}",
        line.files
    );
    let review = line
        .review
        .clone()
        .expect("an interrupted line carries its review");
    assert_eq!(review.run_id, run.run_id);
    let names: Vec<&str> = review
        .action_requests
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(names, ["write_file", "write_file"], "ls is not gated");
    assert_eq!(
        review.action_requests[1].args,
        json!({"file_path": "/b.txt", "content": "beta"})
    );
    assert_eq!(
        review.review_configs[0].allowed_decisions,
        DecisionType::ALL.to_vec()
    );

    // Bad decisions are refused and change nothing.
    let err = resume(
        &*fleet.store,
        &*fleet.queue,
        &run.thread_id,
        &run.run_id,
        vec![Decision::Approve],
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, SchedulerError::InvalidDecisions { .. }),
        "{err}"
    );

    let decisions = vec![
        Decision::Edit {
            edited_action: EditedAction {
                name: "write_file".into(),
                args: json!({"file_path": "/a2.txt", "content": "alpha"}),
            },
        },
        Decision::Reject {
            message: Some("no b".into()),
        },
    ];
    resume(
        &*fleet.store,
        &*fleet.queue,
        &run.thread_id,
        &run.run_id,
        decisions,
    )
    .await
    .unwrap();
    // A second resume finds the run no longer interrupted.
    let again = resume(
        &*fleet.store,
        &*fleet.queue,
        &run.thread_id,
        &run.run_id,
        vec![],
    )
    .await
    .unwrap_err();
    assert!(
        matches!(again, SchedulerError::NotInterrupted { .. }),
        "{again}"
    );

    let done = fleet.follow_run(&run).await.unwrap();
    assert_eq!(done.status, ResultStatus::Success, "{:?}", done.error);
    assert_eq!(done.files.get("/a2.txt").map(String::as_str), Some("alpha"));
    assert!(!done.files.contains_key("/a.txt") && !done.files.contains_key("/b.txt"));
    assert_eq!(
        done.steps, 2,
        "one model call before the interrupt, one after"
    );

    let tools = tool_messages(&fleet, &run).await;
    assert_eq!(tools.len(), 3);
    assert_eq!(tools[0].status, ToolStatus::Success);
    let edited = text(&tools[0]);
    assert!(
        edited.starts_with("Note: a human reviewer replaced this tool call"),
        "{edited}"
    );
    assert!(edited.ends_with("Updated file /a2.txt"), "{edited}");
    assert_eq!(tools[1].status, ToolStatus::Error);
    assert_eq!(
        text(&tools[1]),
        "User rejected the tool call for `write_file` with reason: no b"
    );
    assert_eq!(
        (tools[2].name.as_str(), tools[2].status),
        ("ls", ToolStatus::Success)
    );
});

scenario!(approve_and_respond, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let (line, run) = interrupted(&mut fleet, &dir, GATED, "Write two files").await;
    assert_eq!(line.status, ResultStatus::Interrupted);
    let decisions = vec![
        Decision::Approve,
        Decision::Respond {
            message: "b.txt is already up to date".into(),
        },
    ];
    resume(
        &*fleet.store,
        &*fleet.queue,
        &run.thread_id,
        &run.run_id,
        decisions,
    )
    .await
    .unwrap();
    let done = fleet.follow_run(&run).await.unwrap();
    assert_eq!(done.status, ResultStatus::Success, "{:?}", done.error);
    assert_eq!(done.files.get("/a.txt").map(String::as_str), Some("alpha"));
    assert!(!done.files.contains_key("/b.txt"));
    let tools = tool_messages(&fleet, &run).await;
    assert_eq!(text(&tools[0]), "Updated file /a.txt");
    assert_eq!(tools[1].status, ToolStatus::Success);
    assert_eq!(text(&tools[1]), "b.txt is already up to date");
});

scenario!(allowed_decisions_are_enforced, |fleet| {
    let gate = "interrupt_on:\n  write_file: {allowed_decisions: [approve, reject], description: Check the path}\n";
    let dir = tempfile::tempdir().unwrap();
    let (line, run) = interrupted(&mut fleet, &dir, gate, "Write two files").await;
    let review = line.review.unwrap();
    assert_eq!(review.action_requests[0].description, "Check the path");
    let err = resume(
        &*fleet.store,
        &*fleet.queue,
        &run.thread_id,
        &run.run_id,
        vec![
            Decision::Approve,
            Decision::Respond {
                message: "x".into(),
            },
        ],
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains(
            "decision 2 (respond) is not allowed for `write_file`; allowed: approve, reject"
        ),
        "{err}"
    );
    resume(
        &*fleet.store,
        &*fleet.queue,
        &run.thread_id,
        &run.run_id,
        vec![Decision::Approve, Decision::Reject { message: None }],
    )
    .await
    .unwrap();
    let done = fleet.follow_run(&run).await.unwrap();
    assert_eq!(done.status, ResultStatus::Success, "{:?}", done.error);
    assert_eq!(done.files.keys().collect::<Vec<_>>(), ["/a.txt"]);
});

// Subagents inherit the parent's interrupt_on; the top-level line reports
// the subagent's review, and resuming the subagent finishes the parent.
scenario!(a_subagent_inherits_interrupt_on, |fleet| {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        "hitlsub",
        &replay_model(dir.path(), &delegating_one_write("^Delegate the write$")),
        GATED,
    );
    let batch = fleet
        .run_batch(&spec, &[task("t1", "Delegate the write")])
        .await
        .unwrap();
    let (line, run) = (&batch.results[0], &batch.runs[0]);
    assert_eq!(line.status, ResultStatus::Interrupted);
    let review = line.review.clone().unwrap();
    assert_ne!(review.run_id, run.run_id, "the subagent's run waits");
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
    assert_eq!(done.files.get("/g.txt").map(String::as_str), Some("gamma"));
});
