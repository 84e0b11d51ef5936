use super::*;
use pretty_assertions::assert_eq;

fn facts(input: &str, turn: usize) -> Facts {
    Facts {
        input: input.into(),
        system: "You are the main agent.".into(),
        last_tool: None,
        turn,
    }
}

fn rule_error(yaml: &str) -> (usize, String) {
    match Script::from_yaml(yaml).unwrap_err() {
        ScriptError::Rule { rule, message, .. } => (rule, message),
        other => panic!("expected a rule error, got {other}"),
    }
}

#[test]
fn parses_the_documented_example() {
    let script = Script::from_yaml(
        r#"
rules:
  - when:
      input: '^Write a note about (?P<topic>\w+)'
      turn: 0
      system: 'main agent'
    reply:
      text: 'Saved {{topic}}.'
      tool_calls:
        - name: write_file
          args: {file_path: '/notes/{{topic}}.md', content: '# {{topic}}'}
        - name: ls
          raw_args: '{"path": '
      usage: {input_tokens: 10, output_tokens: 5}
  - when: {turn: 3}
    error: {status: 429, message: 'slow down', retry_after: 1, times: 2}
"#,
    )
    .unwrap();
    assert_eq!(script.len(), 2);
    let first = &script.rules[0];
    let vars = first.matches(&facts("Write a note about rust", 0)).unwrap();
    assert_eq!(vars["topic"], "rust");
    assert_eq!(vars["turn"], "0");
    assert_eq!(vars["input"], "Write a note about rust");
    assert_eq!(vars["last_tool"], "");
    assert!(
        first
            .matches(&facts("Write a note about rust", 1))
            .is_none()
    );
    assert!(first.matches(&facts("Read a note", 0)).is_none());
    let Action::Fail(failure) = &script.rules[1].action else {
        panic!("rule 1 is an error rule");
    };
    assert_eq!(failure.status, 429);
    assert_eq!(failure.retry_after, Some(Duration::from_secs(1)));
    assert_eq!(failure.times, Some(2));
}

#[test]
fn system_and_last_tool_conditions() {
    let script = Script::from_yaml(
        r#"
rules:
  - when: {system: 'subagent', last_tool: '^(?P<count>\d+) files'}
    reply: {text: '{{count}}'}
"#,
    )
    .unwrap();
    let rule = &script.rules[0];
    let mut sub = facts("x", 1);
    sub.system = "You are a subagent.".into();
    assert!(rule.matches(&sub).is_none(), "no tool message yet");
    sub.last_tool = Some("3 files".into());
    assert_eq!(rule.matches(&sub).unwrap()["count"], "3");
    let mut main = sub.clone();
    main.system = "You are the main agent.".into();
    assert!(rule.matches(&main).is_none());
}

#[test]
fn a_rule_without_when_matches_everything() {
    let script = Script::from_yaml("rules:\n  - reply: {text: done}\n").unwrap();
    assert!(script.rules[0].matches(&facts("", 9)).is_some());
}

#[test]
fn unknown_variables_fail_the_load_naming_the_rule() {
    let (rule, message) = rule_error(
        r#"
rules:
  - reply: {text: ok}
  - when: {input: '(?P<topic>\w+)'}
    reply:
      tool_calls: [{name: w, args: {path: '{{topc}}'}}]
"#,
    );
    assert_eq!(rule, 1);
    assert!(message.contains("`{{topc}}`"), "{message}");
    assert!(message.contains("topic"), "{message}");
}

#[test]
fn malformed_rules_are_reported_with_their_index() {
    let cases = [
        (
            "rules:\n  - when: {input: '('}\n    reply: {text: a}\n",
            "when.input",
        ),
        ("rules:\n  - when: {turn: 1}\n", "exactly one of"),
        (
            "rules:\n  - reply: {text: a}\n    error: {status: 500}\n",
            "exactly one of",
        ),
        ("rules:\n  - reply: {txt: a}\n", "unknown field"),
        ("rules:\n  - error: {status: 200}\n", "not 4xx or 5xx"),
        ("rules:\n  - reply: {text: '{{oops'}\n", "unclosed"),
        (
            "rules:\n  - reply: {tool_calls: [{name: a, args: {}, raw_args: 'x'}]}\n",
            "both args and raw_args",
        ),
    ];
    for (yaml, expected) in cases {
        let (rule, message) = rule_error(yaml);
        assert_eq!(rule, 0, "{yaml}");
        assert!(message.contains(expected), "{yaml}: {message}");
    }
}

#[test]
fn syntax_errors_and_missing_files_are_reported() {
    let error = Script::from_yaml("rules: [").unwrap_err();
    assert!(matches!(error, ScriptError::Syntax { .. }), "{error}");
    let error = Script::from_yaml("rulez: []").unwrap_err();
    assert!(error.to_string().contains("rulez"), "{error}");
    let error = Script::load("/nonexistent/script.yaml").unwrap_err();
    assert!(
        error.to_string().contains("/nonexistent/script.yaml"),
        "{error}"
    );
}

#[test]
fn load_names_the_file_in_rule_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.yaml");
    std::fs::write(&path, "rules:\n  - reply: {text: '{{nope}}'}\n").unwrap();
    let message = Script::load(&path).unwrap_err().to_string();
    assert!(message.contains("bad.yaml"), "{message}");
    assert!(message.contains("rules[0]"), "{message}");
}
