//! Replay scripts: YAML rules that say how the scripted model answers.
//!
//! A script is validated once, when it loads: regexes compile, templates
//! parse, and every `{{variable}}` must be a built-in or a named group of
//! the rule's own patterns. Errors name the rule as `rules[i]`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use deepfleet_proto::Usage;
use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

use super::template::{Template, ValueTemplate, Vars};

/// Variables every rule has: the first user message, the last tool
/// result and the turn number.
const BUILTIN_VARS: &[&str] = &["input", "last_tool", "turn"];

/// A replay script that failed to load.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read.
    #[error("cannot read replay script {}: {error}", path.display())]
    Read {
        /// The script's path.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The text is not YAML of the script's shape.
    #[error("invalid replay script{}: {message}", origin(path.as_deref()))]
    Syntax {
        /// The script's path, when loaded from a file.
        path: Option<PathBuf>,
        /// The parser's message (with line and column).
        message: String,
    },
    /// One rule is wrong.
    #[error("invalid replay script{}: rules[{rule}]: {message}", origin(path.as_deref()))]
    Rule {
        /// The script's path, when loaded from a file.
        path: Option<PathBuf>,
        /// Index of the rule in `rules`, from 0.
        rule: usize,
        /// What is wrong.
        message: String,
    },
}

fn origin(path: Option<&Path>) -> String {
    path.map(|p| format!(" {}", p.display()))
        .unwrap_or_default()
}

/// A parsed, validated replay script.
#[derive(Debug)]
pub struct Script {
    pub(crate) rules: Vec<Rule>,
    /// How long each answer takes, as a provider's would.
    pub(crate) latency: Duration,
}

/// One rule: a condition and what to answer.
#[derive(Debug)]
pub(crate) struct Rule {
    when: When,
    pub(crate) action: Action,
}

#[derive(Debug, Default)]
struct When {
    input: Option<Regex>,
    turn: Option<usize>,
    system: Option<Regex>,
    last_tool: Option<Regex>,
}

/// What a matching rule does.
#[derive(Debug)]
pub(crate) enum Action {
    Reply(Reply),
    Fail(Failure),
}

/// A scripted assistant turn.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) text: Option<Template>,
    pub(crate) tool_calls: Vec<CallTemplate>,
    pub(crate) usage: Option<Usage>,
}

/// A scripted tool call.
#[derive(Debug)]
pub(crate) struct CallTemplate {
    pub(crate) name: String,
    pub(crate) args: CallArgs,
    /// The call id to send as written (even empty or repeated, to test
    /// the harness); `call_{turn}_{index}` when absent.
    pub(crate) id: Option<String>,
}

/// Arguments of a scripted tool call.
#[derive(Debug)]
pub(crate) enum CallArgs {
    /// Templated JSON, serialized when sent.
    Json(ValueTemplate),
    /// Sent exactly as written, to test broken JSON.
    Raw(String),
}

/// A scripted provider error.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) status: u16,
    pub(crate) message: Template,
    pub(crate) retry_after: Option<Duration>,
    /// Fail only this many matching requests; `None` = always.
    pub(crate) times: Option<u32>,
}

/// What the matcher looks at in a request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Facts {
    /// Text of the first user message.
    pub(crate) input: String,
    /// Text of the leading system message ("" without one).
    pub(crate) system: String,
    /// Text of the last tool message, if any.
    pub(crate) last_tool: Option<String>,
    /// Assistant messages already in the request.
    pub(crate) turn: usize,
}

impl Rule {
    /// The rule's variables when it matches `facts`.
    pub(crate) fn matches(&self, facts: &Facts) -> Option<Vars> {
        if self.when.turn.is_some_and(|turn| turn != facts.turn) {
            return None;
        }
        let mut vars = Vars::new();
        vars.insert("input".into(), facts.input.clone());
        vars.insert(
            "last_tool".into(),
            facts.last_tool.clone().unwrap_or_default(),
        );
        vars.insert("turn".into(), facts.turn.to_string());
        capture(self.when.input.as_ref(), &facts.input, &mut vars)?;
        capture(self.when.system.as_ref(), &facts.system, &mut vars)?;
        if let Some(pattern) = &self.when.last_tool {
            capture(Some(pattern), facts.last_tool.as_deref()?, &mut vars)?;
        }
        Some(vars)
    }
}

/// Matches `text` against `pattern` (absent = matches), adding its named
/// groups that took part in the match.
fn capture(pattern: Option<&Regex>, text: &str, vars: &mut Vars) -> Option<()> {
    let Some(pattern) = pattern else {
        return Some(());
    };
    let captures = pattern.captures(text)?;
    for name in pattern.capture_names().flatten() {
        if let Some(value) = captures.name(name) {
            vars.insert(name.to_owned(), value.as_str().to_owned());
        }
    }
    Some(())
}

impl Script {
    /// Parses a script from YAML text.
    pub fn from_yaml(text: &str) -> Result<Script, ScriptError> {
        parse(text, None)
    }

    /// Reads and parses the script at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Script, ScriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|error| ScriptError::Read {
            path: path.to_owned(),
            error,
        })?;
        parse(&text, Some(path))
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether the script has no rule (and so answers every request with an
    /// error).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    // Kept as YAML so each rule decodes on its own and errors can name it.
    rules: Vec<serde_norway::Value>,
    #[serde(default)]
    latency_ms: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    #[serde(default)]
    when: RawWhen,
    reply: Option<RawReply>,
    error: Option<RawFailure>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWhen {
    input: Option<String>,
    turn: Option<usize>,
    system: Option<String>,
    last_tool: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReply {
    text: Option<String>,
    #[serde(default)]
    tool_calls: Vec<RawCall>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    name: String,
    id: Option<String>,
    args: Option<Value>,
    raw_args: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFailure {
    status: u16,
    message: Option<String>,
    retry_after: Option<u64>,
    times: Option<u32>,
}

fn parse(text: &str, path: Option<&Path>) -> Result<Script, ScriptError> {
    let raw: RawScript = serde_norway::from_str(text).map_err(|e| ScriptError::Syntax {
        path: path.map(Path::to_owned),
        message: e.to_string(),
    })?;
    let rules = raw
        .rules
        .into_iter()
        .enumerate()
        .map(|(index, value)| {
            rule(value).map_err(|message| ScriptError::Rule {
                path: path.map(Path::to_owned),
                rule: index,
                message,
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(Script {
        rules,
        latency: Duration::from_millis(raw.latency_ms),
    })
}

fn rule(value: serde_norway::Value) -> Result<Rule, String> {
    let raw: RawRule = serde_norway::from_value(value).map_err(|e| e.to_string())?;
    let when = When {
        input: regex("input", raw.when.input)?,
        turn: raw.when.turn,
        system: regex("system", raw.when.system)?,
        last_tool: regex("last_tool", raw.when.last_tool)?,
    };
    let mut known: HashSet<&str> = BUILTIN_VARS.iter().copied().collect();
    for pattern in [&when.input, &when.system, &when.last_tool]
        .into_iter()
        .flatten()
    {
        known.extend(pattern.capture_names().flatten());
    }
    let (action, used) = match (raw.reply, raw.error) {
        (Some(reply), None) => {
            let reply = self::reply(reply)?;
            let mut used: Vec<String> = Vec::new();
            if let Some(text) = &reply.text {
                used.extend(text.vars().map(str::to_owned));
            }
            for call in &reply.tool_calls {
                if let CallArgs::Json(args) = &call.args {
                    used.extend(args.vars().into_iter().map(str::to_owned));
                }
            }
            (Action::Reply(reply), used)
        }
        (None, Some(failure)) => {
            let message = Template::parse(failure.message.as_deref().unwrap_or("scripted error"))?;
            let used = message.vars().map(str::to_owned).collect();
            if !(400..=599).contains(&failure.status) {
                return Err(format!("error status {} is not 4xx or 5xx", failure.status));
            }
            let failure = Failure {
                status: failure.status,
                message,
                retry_after: failure.retry_after.map(Duration::from_secs),
                times: failure.times,
            };
            (Action::Fail(failure), used)
        }
        _ => return Err("a rule needs exactly one of `reply` and `error`".to_owned()),
    };
    if let Some(unknown) = used.iter().find(|name| !known.contains(name.as_str())) {
        let mut names: Vec<&str> = known.into_iter().collect();
        names.sort_unstable();
        return Err(format!(
            "unknown variable `{{{{{unknown}}}}}` (known here: {})",
            names.join(", ")
        ));
    }
    Ok(Rule { when, action })
}

fn regex(field: &str, pattern: Option<String>) -> Result<Option<Regex>, String> {
    pattern
        .map(|p| Regex::new(&p).map_err(|e| format!("when.{field}: {e}")))
        .transpose()
}

fn reply(raw: RawReply) -> Result<Reply, String> {
    let tool_calls = raw
        .tool_calls
        .into_iter()
        .map(|call| {
            let args = match (call.args, call.raw_args) {
                (Some(_), Some(_)) => {
                    return Err(format!(
                        "tool call `{}` has both args and raw_args",
                        call.name
                    ));
                }
                (_, Some(raw)) => CallArgs::Raw(raw),
                (args, None) => CallArgs::Json(ValueTemplate::parse(
                    args.unwrap_or_else(|| Value::Object(Default::default())),
                )?),
            };
            Ok(CallTemplate {
                name: call.name,
                args,
                id: call.id,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(Reply {
        text: raw.text.as_deref().map(Template::parse).transpose()?,
        tool_calls,
        usage: raw.usage,
    })
}

#[cfg(test)]
#[path = "script_tests.rs"]
mod tests;
