use std::collections::BTreeMap;

use super::*;
use chrono::Utc;
use deepfleet_proto::sealed::SealedContext;
use deepfleet_proto::{
    ContentBlock, Decision, Interrupt, InterruptOn, PendingCall, ToolMessage, ToolStatus,
};
use pretty_assertions::assert_eq;

use crate::background::spawned_child;
use crate::tool_names::ToolNames;

const BUDGET: Budget = Budget {
    steps: 2,
    max_steps: 10,
};

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: "{}".into(),
    }
}

fn result(id: &str, text: &str) -> ToolMessage {
    ToolMessage {
        tool_call_id: id.into(),
        name: "ls".into(),
        content: vec![ContentBlock::text(text)],
        status: ToolStatus::Success,
    }
}

fn child(id: &str) -> ChildRun {
    ChildRun {
        run_id: format!("run-{id}"),
        thread_id: format!("thread-{id}"),
        tool_call_id: id.into(),
        subagent: "general-purpose".into(),
        description: "d".into(),
        traceparent: None,
        detached: false,
        run_budget: 0,
    }
}

fn pending(interrupt: Option<Interrupt>) -> PendingTools {
    PendingTools {
        calls: vec![PendingCall {
            call: call("c1", "task"),
            result: None,
        }],
        children: vec![child("c1")],
        interrupt,
    }
}

fn interrupt() -> Interrupt {
    Interrupt {
        action_requests: Vec::new(),
        review_configs: Vec::new(),
        decisions: Some(vec![Decision::Approve]),
    }
}

fn texts(messages: &[LoggedMessage]) -> Vec<String> {
    messages.iter().map(|m| m.message.text()).collect()
}

#[test]
fn a_step_starts_with_its_parked_turn() {
    assert_eq!(Turn::start(None, BUDGET), Turn::CallModel);
    assert_eq!(
        Turn::start(Some(pending(None)), BUDGET),
        Turn::ResumeChildren(pending(None))
    );
    assert_eq!(
        Turn::start(Some(pending(Some(interrupt()))), BUDGET),
        Turn::RunDecided(pending(Some(interrupt())))
    );
}

#[test]
fn the_model_is_not_called_past_max_steps() {
    let spent = Budget {
        steps: 10,
        max_steps: 10,
    };
    let Turn::Done(End::Fail(error)) = Turn::call_model(spent) else {
        panic!("the model was called past its limit");
    };
    assert_eq!(error.code, ErrorCode::MaxSteps);
    assert_eq!(
        error.message,
        "the run reached its limit of 10 model calls (limits.max_steps)"
    );
    // A resumed turn's results are kept even then.
    let next = resumed(vec![logged(Message::user("r"))], spent);
    assert_eq!(texts(&next.append), ["r"]);
    assert!(matches!(next.turn, Turn::Done(End::Fail(_))));
    assert_eq!(resumed(Vec::new(), BUDGET).turn, Turn::CallModel);
}

#[test]
fn a_reply_finishes_parks_or_runs_its_calls() {
    let answer = AssistantMessage {
        content: vec![ContentBlock::text("all done")],
        ..AssistantMessage::default()
    };
    let builtins = ["write_file".to_owned(), "ls".to_owned()];
    let none = BTreeMap::new();
    let ungated = Gates::new(&none, ToolNames::new(&builtins, None));
    let next = replied(answer, &ungated);
    assert_eq!(next.turn, Turn::Done(End::Succeed("all done".into())));
    assert_eq!(next.append.len(), 1);

    let calls = vec![call("c1", "write_file"), call("c2", "ls")];
    let turn = AssistantMessage {
        tool_calls: calls.clone(),
        ..AssistantMessage::default()
    };
    let next = replied(turn.clone(), &ungated);
    assert_eq!(next.turn, Turn::RunTools(calls.clone()));
    assert!(matches!(&next.append[0].message, Message::Assistant(_)));

    let on = BTreeMap::from([("write_file".to_owned(), InterruptOn::Enabled(true))]);
    let gates = Gates::new(&on, ToolNames::new(&builtins, None));
    let Turn::Done(End::Park(parked)) = replied(turn, &gates).turn else {
        panic!("a gated turn did not park");
    };
    assert!(parked.interrupt.is_some());
    assert!(parked.calls.iter().all(|p| p.result.is_none()));
    assert_eq!(parked.calls.len(), 2);
}

#[test]
fn ran_tools_append_results_and_start_background_runs() {
    let background = spawned_child("r", "c2", "worker".into(), "d".into(), None);
    let ran = ToolRun {
        calls: vec![
            PendingCall {
                call: call("c1", "ls"),
                result: Some(result("c1", "a")),
            },
            PendingCall {
                call: call("c2", "start_async_task"),
                result: Some(result("c2", "task-id")),
            },
        ],
        children: vec![background.clone()],
    };
    let next = ran_tools(ran);
    assert_eq!(next.turn, Turn::Done(End::Continue));
    assert_eq!(texts(&next.append), ["a", "task-id"]);
    assert_eq!(next.spawned, [background]);
}

#[test]
fn a_delegating_turn_parks_on_its_subagents() {
    let ran = ToolRun {
        calls: vec![
            PendingCall {
                call: call("c1", "ls"),
                result: Some(result("c1", "a")),
            },
            PendingCall {
                call: call("c2", "task"),
                result: None,
            },
        ],
        children: vec![child("c2")],
    };
    let expected = PendingTools {
        calls: ran.calls.clone(),
        children: vec![child("c2")],
        interrupt: None,
    };
    let next = ran_tools(ToolRun {
        calls: ran.calls.clone(),
        children: ran.children.clone(),
    });
    assert_eq!(next.turn, Turn::Done(End::Park(expected.clone())));
    assert!(next.append.is_empty());
    // A decided turn that delegates parks the same way; one that does not
    // goes on to the model with its results.
    assert_eq!(decided(ran, BUDGET).turn, Turn::Done(End::Park(expected)));
    let plain = ToolRun {
        calls: vec![PendingCall {
            call: call("c1", "ls"),
            result: Some(result("c1", "a")),
        }],
        children: Vec::new(),
    };
    let next = decided(plain, BUDGET);
    assert_eq!(next.turn, Turn::CallModel);
    assert_eq!(texts(&next.append), ["a"]);
}

#[test]
fn settling_sets_the_run_status() {
    let run = || {
        let mut run = RunRecord::new("r", "t", "a", Utc::now());
        run.status = RunStatus::Running;
        run.context = Some(SealedContext {
            nonce: "bm9uY2U=".into(),
            ciphertext: "c2VhbGVk".into(),
        });
        run
    };
    let mut parked = run();
    let settled = End::Park(pending(None)).settle(&mut parked);
    assert_eq!(parked.status, RunStatus::Waiting);
    assert_eq!(settled.fan_in_expected, Some(1));
    assert!(parked.context.is_some());

    let mut interrupted = run();
    let settled = End::Park(pending(Some(interrupt()))).settle(&mut interrupted);
    assert_eq!(interrupted.status, RunStatus::AwaitingHuman);
    assert_eq!(settled.fan_in_expected, None);
    assert!(settled.pending.is_some());

    let mut going_on = run();
    assert_eq!(
        End::Continue.settle(&mut going_on),
        Settled {
            pending: None,
            fan_in_expected: None
        }
    );
    assert_eq!(going_on.status, RunStatus::Running);

    let mut done = run();
    End::Succeed("answer".into()).settle(&mut done);
    assert_eq!(done.status, RunStatus::Success);
    assert_eq!(done.output.as_deref(), Some("answer"));
    assert_eq!(done.context, None);

    let mut failed = run();
    let Turn::Done(end) = Turn::call_model(Budget {
        steps: 1,
        max_steps: 1,
    }) else {
        panic!("no end");
    };
    end.settle(&mut failed);
    assert_eq!(failed.status, RunStatus::Error);
    assert_eq!(failed.error.map(|e| e.code), Some(ErrorCode::MaxSteps));
    assert_eq!(failed.context, None);
}
