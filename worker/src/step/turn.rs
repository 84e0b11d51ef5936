//! The turn machine: where a step stands, and where each result takes it.
//!
//! A step is a short walk over [`Turn`] states: a parked turn is
//! completed first (with its subagents' results, or with a reviewer's
//! decisions), then the model is called, then its tool calls run, and the
//! step ends ([`End`]) parked or finished. Every transition is a plain
//! function of data: the driver (`execute.rs`) performs the I/O a state
//! asks for, hands the result to the transition and applies the [`Next`]
//! it returns. Nothing here touches a store, a model or a tool.

use deepfleet_proto::{
    AssistantMessage, ChildRun, ErrorCode, LoggedMessage, Message, PendingTools, RunError,
    RunRecord, RunStatus, ToolCall,
};

use crate::gates::Gates;
use crate::step::delegation::ToolRun;
use crate::step::hitl;
use deepfleet_fleet::tokens::logged;

/// What the step does next.
#[derive(Debug, PartialEq)]
pub enum Turn {
    /// Complete the turn parked on subagents with their results.
    ResumeChildren(PendingTools),
    /// Run the turn a reviewer decided, with the decisions.
    RunDecided(PendingTools),
    /// Call the model.
    CallModel,
    /// Run the model's tool calls.
    RunTools(Vec<ToolCall>),
    /// The step is over.
    Done(End),
}

/// How a step ends.
#[derive(Debug, PartialEq)]
pub enum End {
    /// The turn parks: on its subagents (fan-in), or for a reviewer (the
    /// pending calls carry the interrupt).
    Park(PendingTools),
    /// The run goes on with its next step.
    Continue,
    /// The run is done with this answer.
    Succeed(String),
    /// The run fails.
    Fail(RunError),
}

/// The model calls a run may still make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Model calls the run made before this step.
    pub steps: u32,
    /// `limits.max_steps`.
    pub max_steps: u32,
}

/// A transition's result: the messages the step appends, the background
/// runs it starts, and the next state.
#[derive(Debug, PartialEq)]
pub struct Next {
    /// Messages to append to the step's log.
    pub append: Vec<LoggedMessage>,
    /// Detached children (`start_async_task`) to create after the commit.
    pub spawned: Vec<ChildRun>,
    /// Where the step goes.
    pub turn: Turn,
}

impl Turn {
    /// Where a step starts: completing the turn the thread parked, if any.
    pub fn start(pending: Option<PendingTools>, budget: Budget) -> Turn {
        match pending {
            Some(pending) if pending.interrupt.is_some() => Turn::RunDecided(pending),
            Some(pending) => Turn::ResumeChildren(pending),
            None => Turn::call_model(budget),
        }
    }

    /// The model call, unless the run used up `limits.max_steps`.
    pub fn call_model(budget: Budget) -> Turn {
        if budget.steps < budget.max_steps {
            return Turn::CallModel;
        }
        Turn::Done(End::Fail(RunError {
            code: ErrorCode::MaxSteps,
            message: format!(
                "the run reached its limit of {} model calls (limits.max_steps)",
                budget.max_steps
            ),
        }))
    }
}

/// After a parked turn got its subagents' results (`messages`): append
/// them and call the model.
pub fn resumed(messages: Vec<LoggedMessage>, budget: Budget) -> Next {
    Next {
        append: messages,
        spawned: Vec::new(),
        turn: Turn::call_model(budget),
    }
}

/// After a decided turn ran: its results, then the model; or, when a
/// decided call delegated, the turn parks on its subagents.
pub fn decided(ran: ToolRun, budget: Budget) -> Next {
    let (spawned, calls) = split(ran);
    let (append, turn) = match calls {
        Calls::Results(append) => (append, Turn::call_model(budget)),
        Calls::Parked(pending) => (Vec::new(), Turn::Done(End::Park(pending))),
    };
    Next {
        append,
        spawned,
        turn,
    }
}

/// After the model's turn: a turn without tool calls finishes the run
/// with its text; one with gated calls parks for a reviewer, none of its
/// calls run; otherwise its calls run.
pub fn replied(turn: AssistantMessage, gates: &Gates<'_>) -> Next {
    let calls = turn.tool_calls.clone();
    let text = deepfleet_proto::message::joined_text(&turn.content);
    let next = if calls.is_empty() {
        Turn::Done(End::Succeed(text))
    } else if let Some(interrupt) = hitl::gate(gates, &calls) {
        Turn::Done(End::Park(hitl::parked(&calls, interrupt)))
    } else {
        Turn::RunTools(calls)
    };
    Next {
        append: vec![logged(Message::Assistant(turn))],
        spawned: Vec::new(),
        turn: next,
    }
}

/// After the model's calls ran: their results, and the run goes on; or
/// the turn parks on the subagents it delegated to.
pub fn ran_tools(ran: ToolRun) -> Next {
    let (spawned, calls) = split(ran);
    let (append, end) = match calls {
        Calls::Results(append) => (append, End::Continue),
        Calls::Parked(pending) => (Vec::new(), End::Park(pending)),
    };
    Next {
        append,
        spawned,
        turn: Turn::Done(end),
    }
}

/// What a turn's calls come to, besides the background runs they start.
enum Calls {
    /// No subagent to wait on: the results to append.
    Results(Vec<LoggedMessage>),
    /// The turn, results filled in, parked on its subagents.
    Parked(PendingTools),
}

/// The background runs `ran` starts (either way), and its calls.
fn split(ran: ToolRun) -> (Vec<ChildRun>, Calls) {
    let (spawned, children): (Vec<_>, Vec<_>) = ran.children.into_iter().partition(|c| c.detached);
    if children.is_empty() {
        let append = ran
            .calls
            .into_iter()
            .filter_map(|p| p.result)
            .map(|m| logged(Message::Tool(m)))
            .collect();
        return (spawned, Calls::Results(append));
    }
    let pending = PendingTools {
        calls: ran.calls,
        children,
        interrupt: None,
    };
    (spawned, Calls::Parked(pending))
}

/// What the commit records of how the step ended.
#[derive(Debug, PartialEq)]
pub struct Settled {
    /// The parked turn, if the step parked.
    pub pending: Option<PendingTools>,
    /// How many subagent results the parked run waits for.
    pub fan_in_expected: Option<u32>,
}

impl End {
    /// Sets `run`'s status (and output or error) for this end. A run that
    /// ends drops its runtime context.
    pub fn settle(self, run: &mut RunRecord) -> Settled {
        let mut settled = Settled {
            pending: None,
            fan_in_expected: None,
        };
        match self {
            End::Park(pending) => {
                if pending.interrupt.is_some() {
                    run.status = RunStatus::AwaitingHuman;
                } else {
                    run.status = RunStatus::Waiting;
                    settled.fan_in_expected =
                        Some(u32::try_from(pending.children.len()).unwrap_or(u32::MAX));
                }
                settled.pending = Some(pending);
            }
            End::Continue => run.status = RunStatus::Running,
            End::Succeed(output) => {
                run.status = RunStatus::Success;
                run.output = Some(output);
            }
            End::Fail(error) => {
                run.status = RunStatus::Error;
                run.error = Some(error);
            }
        }
        if run.status.is_terminal() {
            // A finished run needs its runtime context no more: drop it.
            run.context = None;
        }
        settled
    }
}

#[cfg(test)]
#[path = "turn_tests.rs"]
mod tests;
