//! [`ReplayEngine`]: answers Chat Completions requests from a [`Script`].
//!
//! The engine works on the wire types, so the in-process
//! [`super::ReplayClient`] and the test kit's HTTP server share one matcher
//! and one set of `times` counters.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::Value;

use super::script::{Action, CallArgs, Facts, Failure, Reply, Script, ScriptError};
use super::template::Vars;
use deepfleet_model::openai::wire::{
    ChatMessage, ChatRequest, ChatResponse, Choice, ErrorBody, ErrorDetail, FunctionCall,
    PromptTokensDetails, ResponseMessage, WireToolCall, WireUsage,
};

/// How much of the input a "no rule matches" error quotes.
const QUOTED_INPUT_CHARS: usize = 80;

/// A scripted error answer, as an HTTP server would send it.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedError {
    /// HTTP status.
    pub status: u16,
    /// OpenAI-style error body.
    pub body: ErrorBody,
    /// Sent as `Retry-After` (whole seconds).
    pub retry_after: Option<Duration>,
}

impl ScriptedError {
    fn new(status: u16, message: String, code: Option<&str>) -> Self {
        let kind = match status {
            429 => "rate_limit_error",
            401 | 403 => "authentication_error",
            500..=599 => "server_error",
            _ => "invalid_request_error",
        };
        ScriptedError {
            status,
            body: ErrorBody {
                error: ErrorDetail {
                    message,
                    kind: Some(kind.to_owned()),
                    code: code.map(|c| Value::String(c.to_owned())),
                },
            },
            retry_after: None,
        }
    }

    /// A script mistake found while answering (a variable without a value):
    /// a 400, so the client fails at once instead of retrying.
    fn script_bug(rule: usize, message: String) -> Self {
        ScriptedError::new(
            400,
            format!("replay script rules[{rule}]: {message}"),
            Some("replay_script_error"),
        )
    }
}

/// Answers requests from a script; shareable across threads.
#[derive(Debug)]
pub struct ReplayEngine {
    script: Script,
    /// Failures already served, per rule (only rules with `times` use it).
    failures: Vec<AtomicU32>,
}

impl ReplayEngine {
    /// An engine for `script`, its counters at zero.
    pub fn new(script: Script) -> Self {
        let failures = script.rules.iter().map(|_| AtomicU32::new(0)).collect();
        ReplayEngine { script, failures }
    }

    /// How long each answer takes (the script's `latency_ms`): the
    /// in-process client and the test kit's server wait this long before
    /// they answer.
    pub fn latency(&self) -> std::time::Duration {
        self.script.latency
    }

    /// An engine for the script at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ScriptError> {
        Ok(ReplayEngine::new(Script::load(path)?))
    }

    /// Answers `request` with the first matching rule.
    pub fn answer(&self, request: &ChatRequest) -> Result<ChatResponse, ScriptedError> {
        let facts = facts(request);
        for (index, rule) in self.script.rules.iter().enumerate() {
            let Some(vars) = rule.matches(&facts) else {
                continue;
            };
            match &rule.action {
                Action::Fail(failure) => {
                    if self.take_failure(index, failure) {
                        return Err(scripted_failure(index, failure, &vars));
                    }
                }
                Action::Reply(reply) => {
                    return render_reply(reply, &vars, request, facts.turn)
                        .map_err(|message| ScriptedError::script_bug(index, message));
                }
            }
        }
        let quoted: String = facts.input.chars().take(QUOTED_INPUT_CHARS).collect();
        Err(ScriptedError::new(
            400,
            format!(
                "no replay rule matches turn {} with input {quoted:?}",
                facts.turn
            ),
            Some("replay_no_matching_rule"),
        ))
    }

    /// Whether a `times`-limited failure still has a failure to serve;
    /// counts it if so. An exhausted rule steps aside for the next one.
    fn take_failure(&self, index: usize, failure: &Failure) -> bool {
        let Some(times) = failure.times else {
            return true;
        };
        self.failures.get(index).is_some_and(|served| {
            served
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                    (n < times).then_some(n + 1)
                })
                .is_ok()
        })
    }
}

fn facts(request: &ChatRequest) -> Facts {
    let mut facts = Facts {
        input: String::new(),
        system: String::new(),
        last_tool: None,
        turn: 0,
    };
    let mut seen_user = false;
    for (position, message) in request.messages.iter().enumerate() {
        match message {
            ChatMessage::System { content } if position == 0 => facts.system = content.text(),
            ChatMessage::System { .. } => {}
            ChatMessage::User { content } if !seen_user => {
                seen_user = true;
                facts.input = content.text();
            }
            ChatMessage::User { .. } => {}
            ChatMessage::Assistant { .. } => facts.turn += 1,
            ChatMessage::Tool { content, .. } => facts.last_tool = Some(content.text()),
        }
    }
    facts
}

fn scripted_failure(index: usize, failure: &Failure, vars: &Vars) -> ScriptedError {
    match failure.message.render(vars) {
        Ok(message) => ScriptedError {
            retry_after: failure.retry_after,
            ..ScriptedError::new(failure.status, message, None)
        },
        Err(message) => ScriptedError::script_bug(index, message),
    }
}

fn render_reply(
    reply: &Reply,
    vars: &Vars,
    request: &ChatRequest,
    turn: usize,
) -> Result<ChatResponse, String> {
    let text = reply
        .text
        .as_ref()
        .map(|template| template.render(vars))
        .transpose()?;
    let tool_calls = reply
        .tool_calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            let arguments = match &call.args {
                CallArgs::Json(args) => args.render(vars)?.to_string(),
                CallArgs::Raw(raw) => raw.clone(),
            };
            Ok(WireToolCall {
                id: call
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("call_{turn}_{index}")),
                kind: "function".to_owned(),
                function: FunctionCall {
                    name: call.name.clone(),
                    arguments,
                },
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let usage = reply
        .usage
        .unwrap_or_else(|| estimate_usage(request, text.as_deref(), &tool_calls));
    let finish_reason = if tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    Ok(ChatResponse {
        id: format!("replay-{turn}"),
        object: "chat.completion".to_owned(),
        created: 0,
        model: request.model.clone(),
        choices: vec![Choice {
            index: 0,
            message: ResponseMessage {
                role: "assistant".to_owned(),
                content: text,
                tool_calls,
            },
            finish_reason: Some(finish_reason.to_owned()),
        }],
        usage: Some(WireUsage {
            prompt_tokens: usage.input_tokens,
            completion_tokens: usage.output_tokens,
            total_tokens: usage.input_tokens + usage.output_tokens,
            prompt_tokens_details: (usage.cached_input_tokens > 0).then_some(PromptTokensDetails {
                cached_tokens: usage.cached_input_tokens,
            }),
        }),
    })
}

/// A stand-in token count (characters / 4, rounded up), deterministic so
/// benchmarks and budget tests see the same numbers on every run.
fn estimate_usage(
    request: &ChatRequest,
    text: Option<&str>,
    tool_calls: &[WireToolCall],
) -> deepfleet_proto::Usage {
    let prompt_chars = serde_json::to_string(&request.messages)
        .map(|json| json.chars().count())
        .unwrap_or_default()
        + serde_json::to_string(&request.tools)
            .map(|json| json.chars().count())
            .unwrap_or_default();
    let reply_chars = text.map(|t| t.chars().count()).unwrap_or_default()
        + tool_calls
            .iter()
            .map(|call| {
                call.function.name.chars().count() + call.function.arguments.chars().count()
            })
            .sum::<usize>();
    let tokens = |chars: usize| u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX);
    deepfleet_proto::Usage {
        input_tokens: tokens(prompt_chars),
        output_tokens: tokens(reply_chars),
        cached_input_tokens: 0,
    }
}
