//! Human in the loop inside the step protocol.
//!
//! After a model turn, [`gate`] picks the calls `interrupt_on` holds for a
//! reviewer; if any, the whole turn parks (no call runs, ungated ones
//! included, so the reviewer decides before anything happens) and the run
//! becomes `interrupted`, holding no worker. The resume records decisions;
//! the next step runs the turn with them: [`plan`] says what each call
//! becomes (approved calls as written, edited calls as the reviewer wrote
//! them, rejected and answered calls not at all, ungated calls as usual),
//! the driver runs the [`runnable`] ones, and [`decided`] puts the turn
//! back together in the model's order. All pure, by the role's [`Gates`]
//! (which tools are held, whatever name a call uses).

use std::collections::HashMap;

use deepfleet_proto::{
    ActionRequest, ContentBlock, Decision, Interrupt, PendingCall, PendingTools, ReviewConfig,
    ToolCall, ToolMessage, ToolStatus,
};
use serde_json::Value;

use crate::error::StepError;
use crate::gates::Gates;
use crate::step::delegation::ToolRun;

/// The interrupt for `calls` under `gates`, or `None` when no call is
/// gated. The reviewer sees each call under the name the model used.
pub fn gate(gates: &Gates<'_>, calls: &[ToolCall]) -> Option<Interrupt> {
    let mut action_requests = Vec::new();
    let mut review_configs = Vec::new();
    for call in calls {
        let Some((gate, allowed)) = gates.allowed(&call.name) else {
            continue;
        };
        let args = serde_json::from_str(&call.arguments)
            .unwrap_or_else(|_| Value::String(call.arguments.clone()));
        let description = match gate.description() {
            Some(text) => text.to_owned(),
            None => default_description(&call.name, &args),
        };
        action_requests.push(ActionRequest {
            name: call.name.clone(),
            args,
            description,
            tool_call_id: call.id.clone(),
        });
        review_configs.push(ReviewConfig {
            action_name: call.name.clone(),
            allowed_decisions: allowed,
        });
    }
    (!action_requests.is_empty()).then_some(Interrupt {
        action_requests,
        review_configs,
        decisions: None,
    })
}

/// What the reviewer reads when the spec gives no description.
fn default_description(name: &str, args: &Value) -> String {
    format!("Tool execution requires approval\n\nTool: {name}\nArgs: {args}")
}

/// The parked form of a gated turn: every call pending, none run.
pub fn parked(calls: &[ToolCall], interrupt: Interrupt) -> PendingTools {
    PendingTools {
        calls: calls
            .iter()
            .map(|call| PendingCall {
                call: call.clone(),
                result: None,
            })
            .collect(),
        children: Vec::new(),
        interrupt: Some(interrupt),
    }
}

/// What one call of a decided turn becomes.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Run this call (the model's, or the reviewer's replacement).
    Run {
        /// The call to run; keeps the model's call id.
        call: ToolCall,
        /// Whether a reviewer replaced the model's call.
        edited: bool,
    },
    /// Do not run it; this is its result.
    Answer(ToolMessage),
}

/// The plan for each call of a decided turn, in the model's order.
/// Decisions answer the interrupt's action requests in order; calls
/// without one were not gated when the turn parked and run as written,
/// unless `gates` (now) gate the tool they run: their names may lead
/// elsewhere on this worker (another MCP listing), and a gated tool never
/// runs unreviewed, so such a call is answered with an error instead.
pub fn plan(pending: &PendingTools, gates: &Gates<'_>) -> Result<Vec<Plan>, StepError> {
    let interrupt = pending
        .interrupt
        .as_ref()
        .ok_or_else(|| StepError::Inconsistent("a decided turn without an interrupt".into()))?;
    let decisions = interrupt.decisions.as_ref().ok_or_else(|| {
        StepError::Inconsistent("an interrupted turn stepped before its decisions".into())
    })?;
    if decisions.len() != interrupt.action_requests.len() {
        return Err(StepError::Inconsistent(format!(
            "{} decision(s) recorded for {} action request(s)",
            decisions.len(),
            interrupt.action_requests.len()
        )));
    }
    let by_call: HashMap<&str, &Decision> = interrupt
        .action_requests
        .iter()
        .map(|r| r.tool_call_id.as_str())
        .zip(decisions)
        .collect();
    Ok(pending
        .calls
        .iter()
        .map(|p| match by_call.get(p.call.id.as_str()).copied() {
            Some(decision) => decide_call(&p.call, Some(decision)),
            None if gates.allowed(&p.call.name).is_some() => unreviewed(&p.call),
            None => decide_call(&p.call, None),
        })
        .collect())
}

/// The answer to a call that reached a gated tool without a decision.
fn unreviewed(call: &ToolCall) -> Plan {
    Plan::Answer(ToolMessage {
        tool_call_id: call.id.clone(),
        name: call.name.clone(),
        content: vec![ContentBlock::text(format!(
            "Error: the call of `{}` was not run: its tool needs a reviewer's approval, and no reviewer saw this call. Call it again to ask for one.",
            call.name
        ))],
        status: ToolStatus::Error,
    })
}

fn decide_call(call: &ToolCall, decision: Option<&Decision>) -> Plan {
    let answer = |text: String, status| {
        Plan::Answer(ToolMessage {
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
            content: vec![ContentBlock::text(text)],
            status,
        })
    };
    match decision {
        None | Some(Decision::Approve) => Plan::Run {
            call: call.clone(),
            edited: false,
        },
        Some(Decision::Edit { edited_action }) => Plan::Run {
            call: ToolCall {
                id: call.id.clone(),
                name: edited_action.name.clone(),
                arguments: edited_action.args.to_string(),
            },
            edited: true,
        },
        Some(Decision::Reject { message }) => {
            answer(rejection(&call.name, message.as_deref()), ToolStatus::Error)
        }
        Some(Decision::Respond { message }) => answer(message.clone(), ToolStatus::Success),
    }
}

/// The error result of a rejected call.
pub fn rejection(name: &str, message: Option<&str>) -> String {
    match message {
        Some(reason) => format!("User rejected the tool call for `{name}` with reason: {reason}"),
        None => format!(
            "User rejected the tool call for `{name}`. It was not executed; do not retry it unless asked to."
        ),
    }
}

/// The notice above the result of a call a reviewer replaced, so the
/// model knows the result is not of the call it wrote.
pub fn edited_notice(call: &ToolCall) -> String {
    format!(
        "Note: a human reviewer replaced this tool call before it ran. It ran as `{}` with arguments {}. Its result:\n\n",
        call.name, call.arguments
    )
}

/// The calls of `plans` to run, in order.
pub fn runnable(plans: &[Plan]) -> Vec<ToolCall> {
    plans
        .iter()
        .filter_map(|p| match p {
            Plan::Run { call, .. } => Some(call.clone()),
            Plan::Answer(_) => None,
        })
        .collect()
}

/// The decided turn of `calls` (the model's, as parked) under `plans`,
/// given what its [`runnable`] calls came to (`ran`, in their order): the
/// answered calls' results, the run ones' (an edited call's starting with
/// [`edited_notice`]), all under the model's calls and ids.
pub fn decided(
    calls: Vec<PendingCall>,
    plans: Vec<Plan>,
    ran: ToolRun,
) -> Result<ToolRun, StepError> {
    let ToolRun {
        calls: ran,
        children,
    } = ran;
    let mut ran = ran.into_iter();
    let mut turn = Vec::with_capacity(plans.len());
    for (original, plan) in calls.into_iter().zip(plans) {
        let result = match plan {
            Plan::Answer(message) => Some(message),
            Plan::Run { call, edited } => {
                let done = ran.next().ok_or_else(|| {
                    StepError::Inconsistent("a decided call produced no result".into())
                })?;
                done.result.map(|mut message| {
                    if edited {
                        message
                            .content
                            .insert(0, ContentBlock::text(edited_notice(&call)));
                    }
                    message
                })
            }
        };
        // The log keeps the model's call; its result answers that call id.
        turn.push(PendingCall {
            call: original.call,
            result,
        });
    }
    Ok(ToolRun {
        calls: turn,
        children,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::mcp::naming::testing::{routes, servers};
    use crate::tool_names::ToolNames;
    use deepfleet_proto::mcp::McpServer;
    use deepfleet_proto::{DecisionType, EditedAction, InterruptOn};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn call(id: &str, name: &str, args: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.to_string(),
        }
    }

    fn turn() -> Vec<ToolCall> {
        vec![
            call(
                "c1",
                "write_file",
                json!({"file_path": "/a.txt", "content": "a"}),
            ),
            call(
                "c2",
                "write_file",
                json!({"file_path": "/b.txt", "content": "b"}),
            ),
            call("c3", "ls", json!({"path": "/"})),
        ]
    }

    /// A role's `interrupt_on` and its own tools, for [`Gates`] over them.
    struct Role {
        on: BTreeMap<String, InterruptOn>,
        builtins: Vec<String>,
    }

    impl Role {
        fn gates(&self) -> Gates<'_> {
            Gates::new(&self.on, ToolNames::new(&self.builtins, None))
        }
    }

    fn role(on: BTreeMap<String, InterruptOn>) -> Role {
        Role {
            on,
            builtins: vec!["write_file".into(), "ls".into(), "read_file".into()],
        }
    }

    fn writes_gated() -> Role {
        role(BTreeMap::from([(
            "write_file".to_owned(),
            InterruptOn::Enabled(true),
        )]))
    }

    fn on(yaml: &str) -> BTreeMap<String, InterruptOn> {
        serde_norway::from_str(yaml).unwrap()
    }

    /// Which of the calls named `names` `gates` hold, by name.
    fn held(gates: &Gates<'_>, names: &[&str]) -> Vec<String> {
        let calls: Vec<ToolCall> = names
            .iter()
            .enumerate()
            .map(|(i, name)| call(&format!("c{i}"), name, json!({})))
            .collect();
        gate(gates, &calls)
            .map(|i| i.action_requests.into_iter().map(|r| r.name).collect())
            .unwrap_or_default()
    }

    // deepagents conformance §13.2 item 25: one interrupt for the turn,
    // covering only the gated calls.
    #[test]
    fn gated_calls_make_one_batched_interrupt() {
        let interrupt = gate(&writes_gated().gates(), &turn()).unwrap();
        let names: Vec<(&str, &str)> = interrupt
            .action_requests
            .iter()
            .map(|r| (r.name.as_str(), r.tool_call_id.as_str()))
            .collect();
        assert_eq!(names, [("write_file", "c1"), ("write_file", "c2")]);
        assert_eq!(
            interrupt.action_requests[0].description,
            "Tool execution requires approval\n\nTool: write_file\nArgs: {\"content\":\"a\",\"file_path\":\"/a.txt\"}"
        );
        assert_eq!(
            interrupt.review_configs[1].allowed_decisions,
            DecisionType::ALL.to_vec()
        );
        assert_eq!(gate(&writes_gated().gates(), &turn()[2..]), None);
        let off = BTreeMap::from([("write_file".to_owned(), InterruptOn::Enabled(false))]);
        assert_eq!(gate(&role(off).gates(), &turn()), None);
    }

    #[test]
    fn decisions_apply_in_order_and_ungated_calls_run() {
        let mut pending = parked(&turn(), gate(&writes_gated().gates(), &turn()).unwrap());
        pending.interrupt.as_mut().unwrap().decisions = Some(vec![
            Decision::Edit {
                edited_action: EditedAction {
                    name: "write_file".into(),
                    args: json!({"file_path": "/a2.txt", "content": "a"}),
                },
            },
            Decision::Reject {
                message: Some("no b".into()),
            },
        ]);
        let plans = plan(&pending, &writes_gated().gates()).unwrap();
        assert_eq!(
            plans[0],
            Plan::Run {
                call: call(
                    "c1",
                    "write_file",
                    json!({"file_path": "/a2.txt", "content": "a"})
                ),
                edited: true
            }
        );
        assert_eq!(
            plans[1],
            Plan::Answer(ToolMessage {
                tool_call_id: "c2".into(),
                name: "write_file".into(),
                content: vec![ContentBlock::text(
                    "User rejected the tool call for `write_file` with reason: no b"
                )],
                status: ToolStatus::Error,
            })
        );
        assert_eq!(
            plans[2],
            Plan::Run {
                call: turn()[2].clone(),
                edited: false
            }
        );
    }

    #[test]
    fn respond_answers_without_running_and_approve_runs_as_written() {
        let calls = &turn()[..2];
        let mut pending = parked(calls, gate(&writes_gated().gates(), calls).unwrap());
        pending.interrupt.as_mut().unwrap().decisions = Some(vec![
            Decision::Approve,
            Decision::Respond {
                message: "b is already there".into(),
            },
        ]);
        let plans = plan(&pending, &writes_gated().gates()).unwrap();
        assert_eq!(
            plans[0],
            Plan::Run {
                call: calls[0].clone(),
                edited: false
            }
        );
        assert_eq!(
            plans[1],
            Plan::Answer(ToolMessage {
                tool_call_id: "c2".into(),
                name: "write_file".into(),
                content: vec![ContentBlock::text("b is already there")],
                status: ToolStatus::Success,
            })
        );
    }

    #[test]
    fn a_decided_turn_keeps_the_model_calls_and_marks_edited_results() {
        let mut pending = parked(&turn(), gate(&writes_gated().gates(), &turn()).unwrap());
        pending.interrupt.as_mut().unwrap().decisions = Some(vec![
            Decision::Edit {
                edited_action: EditedAction {
                    name: "write_file".into(),
                    args: json!({"file_path": "/a2.txt", "content": "a"}),
                },
            },
            Decision::Reject { message: None },
        ]);
        let plans = plan(&pending, &writes_gated().gates()).unwrap();
        let runnable = runnable(&plans);
        assert_eq!(
            runnable.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            ["c1", "c3"]
        );
        let result = |call: &ToolCall, text: &str| PendingCall {
            call: call.clone(),
            result: Some(ToolMessage {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content: vec![ContentBlock::text(text)],
                status: ToolStatus::Success,
            }),
        };
        let ran = ToolRun {
            calls: vec![
                result(&runnable[0], "wrote"),
                result(&runnable[1], "a2.txt"),
            ],
            children: Vec::new(),
        };
        let turn_after = decided(pending.calls.clone(), plans, ran).unwrap();
        let calls: Vec<&ToolCall> = turn_after.calls.iter().map(|p| &p.call).collect();
        assert_eq!(calls, turn().iter().collect::<Vec<_>>());
        let contents: Vec<Vec<ContentBlock>> = turn_after
            .calls
            .iter()
            .map(|p| p.result.as_ref().unwrap().content.clone())
            .collect();
        assert_eq!(
            contents,
            [
                vec![
                    ContentBlock::text(edited_notice(&runnable[0])),
                    ContentBlock::text("wrote")
                ],
                vec![ContentBlock::text(rejection("write_file", None))],
                vec![ContentBlock::text("a2.txt")],
            ]
        );
    }

    #[test]
    fn rejection_without_a_reason_says_not_to_retry() {
        assert_eq!(
            rejection("write_file", None),
            "User rejected the tool call for `write_file`. It was not executed; do not retry it unless asked to."
        );
        let edited = call("c1", "write_file", json!({"file_path": "/a2.txt"}));
        assert!(edited_notice(&edited).starts_with(
            "Note: a human reviewer replaced this tool call before it ran. It ran as `write_file` with arguments {\"file_path\":\"/a2.txt\"}."
        ));
    }

    #[test]
    fn a_turn_without_decisions_is_inconsistent() {
        let pending = parked(&turn(), gate(&writes_gated().gates(), &turn()).unwrap());
        assert!(matches!(
            plan(&pending, &writes_gated().gates()),
            Err(StepError::Inconsistent(_))
        ));
    }

    /// A role gating `yaml` with the MCP servers `fs` and `web`, whose
    /// tools [`mcp_gates`] lists.
    fn mcp_role(yaml: &str) -> (Role, BTreeMap<String, McpServer>) {
        (
            role(on(yaml)),
            servers("fs: {command: x}\nweb: {command: y}\n"),
        )
    }

    /// `role`'s gates when `fs` lists `read_text`, `read_text_file` and
    /// `files.read`, and `web` lists `read`.
    fn mcp_gates<'a>(role: &'a Role, servers: &'a BTreeMap<String, McpServer>) -> Gates<'a> {
        let routes = routes(
            servers,
            &[
                ("fs", &["read_text", "read_text_file", "files.read"]),
                ("web", &["read"]),
            ],
            &role.builtins,
            &role.on,
        );
        Gates::new(&role.on, ToolNames::new(&role.builtins, Some(routes)))
    }

    // Security finding: a gate on an MCP tool's bare name held the name
    // it is offered under, not its `SERVER__TOOL` alias, which reaches
    // the same tool.
    #[test]
    fn a_bare_gate_holds_the_mcp_tool_by_its_alias_too() {
        let (role, servers) = mcp_role("read_text: true\n");
        let gates = mcp_gates(&role, &servers);
        assert_eq!(
            held(&gates, &["read_text", "fs__read_text"]),
            ["read_text", "fs__read_text"]
        );
    }

    // Security finding: a gate on a canonical name with a `.` held that
    // spelling, not the sanitized name the tool is offered under.
    #[test]
    fn a_gate_holds_the_mcp_tool_by_its_sanitized_name() {
        let (role, servers) = mcp_role("fs__files.read: true\n");
        let gates = mcp_gates(&role, &servers);
        assert_eq!(
            held(&gates, &["fs__files_read", "fs__files.read"]),
            ["fs__files_read", "fs__files.read"]
        );
        // Gated by its bare name, it is offered bare, sanitized.
        let (role, servers) = mcp_role("files.read: {allowed_decisions: [approve, reject]}\n");
        let gates = mcp_gates(&role, &servers);
        let names = ["files_read", "fs__files.read"];
        assert_eq!(held(&gates, &names), names);
        let calls: Vec<ToolCall> = names.iter().map(|n| call(n, n, json!({}))).collect();
        let interrupt = gate(&gates, &calls).unwrap();
        assert_eq!(
            interrupt.review_configs[0].allowed_decisions,
            [DecisionType::Approve, DecisionType::Reject]
        );
    }

    #[test]
    fn tools_of_similar_names_stay_ungated() {
        let (role, servers) = mcp_role("read_text: true\nfs__files.read: false\nls: true\n");
        let gates = mcp_gates(&role, &servers);
        let ungated = [
            "read_text_file",
            "fs__read_text_file",
            "read",
            "web__read",
            "web__read_text",
            "files_read",
            "read_file",
            "lss",
        ];
        assert_eq!(held(&gates, &ungated), Vec::<String>::new());
        assert_eq!(held(&gates, &["ls"]), ["ls"]);
    }

    #[test]
    fn keys_naming_one_tool_gate_it_if_any_does() {
        let (role, servers) = mcp_role("fs__read_text: false\nread_text: true\n");
        let gates = mcp_gates(&role, &servers);
        assert_eq!(held(&gates, &["fs__read_text"]), ["fs__read_text"]);
    }

    // A call not gated when its turn parked runs after the review only if
    // the tool its name reaches now is not gated either.
    #[test]
    fn an_undecided_call_of_a_gated_tool_does_not_run() {
        let (role, servers) = mcp_role("write_file: true\nread_text: true\n");
        let calls = vec![
            call("c1", "write_file", json!({})),
            call("c2", "fs__read_text", json!({})),
        ];
        // Parked where `fs__read_text` reached no gated tool.
        let mut pending = parked(&calls, gate(&role.gates(), &calls).unwrap());
        pending.interrupt.as_mut().unwrap().decisions = Some(vec![Decision::Approve]);
        let plans = plan(&pending, &mcp_gates(&role, &servers)).unwrap();
        assert_eq!(runnable(&plans), [calls[0].clone()]);
        let Plan::Answer(answer) = &plans[1] else {
            panic!("the undecided call runs: {plans:?}");
        };
        assert_eq!(answer.status, ToolStatus::Error);
    }
}
