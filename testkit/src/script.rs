//! Replay scripts built from the shapes tests and benchmarks share.
//!
//! A replay script (`replay:PATH` models, [`crate::ScriptedServer`]) is a
//! list of rules, each a condition on the request and the answer to give.
//! Tests keep needing the same few shapes: a parent that delegates to
//! subagents which write a file, tool calls followed by an answer, a
//! model that loops or fails. [`ScriptBuilder`] writes those once; a test
//! names the shape and its values instead of carrying its own copy of
//! the YAML.
//!
//! The built text is JSON, which the YAML loader reads as it is.

use serde_json::{Map, Value, json};

/// The instruction [`ScriptBuilder::writing_subagents`] answers: a
/// subagent told this writes `word` to `path`.
pub fn write_task(word: &str, path: &str) -> String {
    format!("Write {word} to {path}")
}

/// The input pattern of [`write_task`] descriptions.
const WRITE_TASK: &str = r"^Write (?P<word>\w+) to (?P<path>\S+)$";

/// Which requests a rule answers: all of the given conditions hold.
#[derive(Debug, Clone, Default)]
pub struct When(Map<String, Value>);

impl When {
    /// Every request.
    pub fn always() -> When {
        When::default()
    }

    /// Requests of runs whose first user message matches `pattern` (a
    /// regex; its named groups become template variables).
    pub fn input(pattern: &str) -> When {
        When::always().and("input", pattern)
    }

    /// Requests after `n` assistant messages.
    pub fn at_turn(n: u32) -> When {
        When::always().turn(n)
    }

    /// Requests whose last tool result matches `pattern`.
    pub fn after_tool(pattern: &str) -> When {
        When::always().last_tool(pattern)
    }

    /// Also: after `n` assistant messages.
    pub fn turn(self, n: u32) -> When {
        self.and("turn", n)
    }

    /// Also: the last tool result matches `pattern`.
    pub fn last_tool(self, pattern: &str) -> When {
        self.and("last_tool", pattern)
    }

    fn and(mut self, key: &str, value: impl Into<Value>) -> When {
        self.0.insert(key.to_owned(), value.into());
        self
    }
}

/// One tool call of a scripted answer. String arguments may use the
/// rule's template variables (`{{path}}`).
#[derive(Debug, Clone)]
pub struct Call(Value);

impl Call {
    /// A call of `name` with `args` (a JSON object).
    pub fn new(name: &str, args: Value) -> Call {
        Call(json!({"name": name, "args": args}))
    }

    /// A call of `name` whose arguments are `raw` as given, valid JSON or
    /// not.
    pub fn raw(name: &str, raw: &str) -> Call {
        Call(json!({"name": name, "raw_args": raw}))
    }

    /// This call sent with call id `id` as written: empty, or the id of
    /// another call, to test how the harness pairs results with calls.
    pub fn with_id(mut self, id: &str) -> Call {
        if let Value::Object(fields) = &mut self.0 {
            fields.insert("id".to_owned(), id.into());
        }
        self
    }

    /// `task`: delegates `description` to a `general-purpose` subagent.
    pub fn task(description: &str) -> Call {
        Call::new(
            "task",
            json!({"subagent_type": "general-purpose", "description": description}),
        )
    }

    /// `write_file` of `content` at `path`.
    pub fn write_file(path: &str, content: &str) -> Call {
        Call::new("write_file", json!({"file_path": path, "content": content}))
    }

    /// `read_file` of `path`.
    pub fn read_file(path: &str) -> Call {
        Call::new("read_file", json!({"file_path": path}))
    }

    /// `ls` of `path`.
    pub fn ls(path: &str) -> Call {
        Call::new("ls", json!({"path": path}))
    }
}

/// A scripted provider error: the HTTP status and message a model call
/// fails with.
#[derive(Debug, Clone)]
pub struct Failure(Map<String, Value>);

impl Failure {
    /// Fails with HTTP `status` and `message`, on every matching request.
    pub fn new(status: u16, message: &str) -> Failure {
        let mut fields = Map::new();
        fields.insert("status".to_owned(), status.into());
        fields.insert("message".to_owned(), message.into());
        Failure(fields)
    }

    /// Sends `Retry-After: secs`.
    pub fn retry_after(mut self, secs: u64) -> Failure {
        self.0.insert("retry_after".to_owned(), secs.into());
        self
    }

    /// Fails only the first `n` matching requests; later ones fall
    /// through to the next rules.
    pub fn times(mut self, n: u32) -> Failure {
        self.0.insert("times".to_owned(), n.into());
        self
    }
}

/// A replay script, rule by rule; the first rule that matches a request
/// answers it.
#[derive(Debug, Clone, Default)]
pub struct ScriptBuilder {
    rules: Vec<Value>,
}

impl ScriptBuilder {
    /// A script without rules (every request fails as unscripted).
    pub fn new() -> Self {
        ScriptBuilder::default()
    }

    /// Answers `text` (templates allowed: `{{last_tool}}` is the last tool
    /// result, `{{turn}}` the turn, named groups their match).
    pub fn answer(self, when: When, text: &str) -> Self {
        self.reply(when, json!({"text": text}))
    }

    /// Answers with `reply` as a script writes it (`text`, `tool_calls`,
    /// `usage`).
    pub fn reply(self, when: When, reply: Value) -> Self {
        self.rule(when, "reply", reply)
    }

    /// Answers with `calls`, made in one turn.
    pub fn call(self, when: When, calls: impl IntoIterator<Item = Call>) -> Self {
        let calls: Vec<Value> = calls.into_iter().map(|c| c.0).collect();
        self.reply(when, json!({"tool_calls": calls}))
    }

    /// Fails the model call.
    pub fn fail(self, when: When, failure: Failure) -> Self {
        self.rule(when, "error", Value::Object(failure.0))
    }

    /// Makes `calls` in the first turn of the runs `when` matches, then
    /// answers `text` in the second.
    pub fn calls_then_answer(
        self,
        when: When,
        calls: impl IntoIterator<Item = Call>,
        text: &str,
    ) -> Self {
        self.call(when.clone().turn(0), calls)
            .answer(when.turn(1), text)
    }

    /// A parent whose first message matches `input`: it hands each of
    /// `descriptions` to a `general-purpose` subagent in its first turn
    /// and answers with the last result.
    pub fn delegating(self, input: &str, descriptions: &[&str]) -> Self {
        let calls = descriptions.iter().map(|d| Call::task(d));
        self.calls_then_answer(When::input(input), calls, "{{last_tool}}")
    }

    /// Subagents given a [`write_task`]: they write the word to the path,
    /// then answer `wrote WORD`.
    pub fn writing_subagents(self) -> Self {
        self.calls_then_answer(
            When::input(WRITE_TASK),
            [Call::write_file("{{path}}", "{{word}}")],
            "wrote {{word}}",
        )
    }

    /// Reads `path` on every turn until turn `last`, then answers `done`:
    /// a run of `last + 1` steps whose conversation keeps growing.
    pub fn reading_until(self, last: u32, path: &str) -> Self {
        self.answer(When::at_turn(last), "done")
            .call(When::always(), [Call::read_file(path)])
    }

    /// The script's text, for a `replay:` file or `Script::from_yaml`.
    pub fn build(&self) -> String {
        format!("{:#}", json!({"rules": self.rules}))
    }

    fn rule(mut self, when: When, key: &str, value: Value) -> Self {
        let mut rule = Map::new();
        rule.insert("when".to_owned(), Value::Object(when.0));
        rule.insert(key.to_owned(), value);
        self.rules.push(Value::Object(rule));
        self
    }
}

#[cfg(test)]
mod tests {
    use deepfleet_replay::Script;
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn built_scripts_load_as_replay_scripts() {
        let script = ScriptBuilder::new()
            .delegating("^Split$", &[&write_task("alpha", "/a.txt")])
            .writing_subagents()
            .fail(
                When::input("^Fail$"),
                Failure::new(429, "slow down").retry_after(0).times(2),
            )
            .call(
                When::at_turn(0),
                [Call::raw("ls", r#"{"path": "#).with_id("")],
            )
            .reading_until(3, "/notes.md")
            .build();
        assert_eq!(Script::from_yaml(&script).unwrap().len(), 8);
    }

    #[test]
    fn a_writing_subagent_is_its_two_rules() {
        let built: Value =
            serde_json::from_str(&ScriptBuilder::new().writing_subagents().build()).unwrap();
        assert_eq!(
            built,
            json!({"rules": [
                {
                    "when": {"input": WRITE_TASK, "turn": 0},
                    "reply": {"tool_calls": [
                        {"name": "write_file", "args": {"file_path": "{{path}}", "content": "{{word}}"}}
                    ]}
                },
                {"when": {"input": WRITE_TASK, "turn": 1}, "reply": {"text": "wrote {{word}}"}},
            ]})
        );
    }

    #[test]
    fn an_empty_condition_matches_everything() {
        let built = ScriptBuilder::new().answer(When::always(), "ok").build();
        let value: Value = serde_json::from_str(&built).unwrap();
        assert_eq!(value["rules"][0]["when"], json!({}));
        assert_eq!(Script::from_yaml(&built).unwrap().len(), 1);
    }
}
