//! Custom state: the fields an agent spec declares in `state_schema`,
//! checked when a run is seeded so a bad seed is refused before anything
//! is written, with the offending field named.

use deepfleet_proto::{AgentSpec, SpecError};
use serde_json::{Map, Value};

use crate::error::SchedulerError;

/// Checks that a spec's `state_schema` is a schema the validator accepts.
pub fn check_schema(spec: &AgentSpec) -> Result<(), SchedulerError> {
    if let Some(schema) = &spec.state_schema {
        jsonschema::validator_for(schema).map_err(|e| SpecError {
            field: "state_schema".to_owned(),
            line: None,
            message: e.to_string(),
        })?;
    }
    Ok(())
}

/// Validates task `id`'s seed `state` against `spec`'s `state_schema` and
/// returns the fields to seed. Errors name the field (`state.priority`).
pub fn validate_seed(
    spec: &AgentSpec,
    id: &str,
    state: Option<&Map<String, Value>>,
) -> Result<Map<String, Value>, SchedulerError> {
    let invalid = |reason: String| SchedulerError::InvalidTask {
        id: id.to_owned(),
        reason,
    };
    let Some(state) = state else {
        return Ok(Map::new());
    };
    let Some(schema) = &spec.state_schema else {
        return Err(invalid(format!(
            "state: agent '{}' declares no state_schema, so a run cannot be seeded with state",
            spec.name
        )));
    };
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| invalid(format!("state_schema of agent '{}': {e}", spec.name)))?;
    let instance = Value::Object(state.clone());
    if let Some(error) = validator.iter_errors(&instance).next() {
        let field = field_name("state", &error.instance_path().to_string());
        return Err(invalid(format!("{field}: {error}")));
    }
    Ok(state.clone())
}

/// `/a/0/b` (a JSON pointer into the `root` object) as `root.a[0].b`.
pub(crate) fn field_name(root: &str, pointer: &str) -> String {
    let mut out = root.to_owned();
    for part in pointer.split('/').skip(1) {
        let part = part.replace("~1", "/").replace("~0", "~");
        if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{part}]"));
        } else {
            out.push('.');
            out.push_str(&part);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn spec() -> AgentSpec {
        AgentSpec::from_yaml(
            "name: a\nmodel: openai:x\nstate_schema:\n  type: object\n  required: [ticket]\n  properties:\n    ticket: {type: string}\n    priority: {type: integer, minimum: 1}\n    tags: {type: array, items: {type: string}}\n",
        )
        .unwrap()
    }

    fn seed(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn valid_seeds_pass_through() {
        let state = seed(json!({"ticket": "T-1", "priority": 2}));
        assert_eq!(validate_seed(&spec(), "t", Some(&state)).unwrap(), state);
        assert_eq!(validate_seed(&spec(), "t", None).unwrap(), Map::new());
    }

    #[test]
    fn errors_name_the_field() {
        let err = validate_seed(
            &spec(),
            "t1",
            Some(&seed(json!({"ticket": "T", "priority": "high"}))),
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("task t1: state.priority: "), "{err}");
        assert!(err.contains("\"high\" is not of type \"integer\""), "{err}");
        let err = validate_seed(
            &spec(),
            "t1",
            Some(&seed(json!({"ticket": "T", "tags": ["a", 3]}))),
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("task t1: state.tags[1]: "), "{err}");
        let err = validate_seed(&spec(), "t1", Some(&seed(json!({"priority": 1}))))
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"ticket\" is a required property"), "{err}");
    }

    #[test]
    fn state_without_a_schema_is_refused() {
        let plain = AgentSpec::from_yaml("name: a\nmodel: openai:x\n").unwrap();
        let err = validate_seed(&plain, "t", Some(&seed(json!({"x": 1}))))
            .unwrap_err()
            .to_string();
        assert!(err.contains("declares no state_schema"), "{err}");
    }

    #[test]
    fn broken_schemas_are_spec_errors() {
        let mut bad = spec();
        bad.state_schema = Some(json!({"type": "no-such-type"}));
        let err = check_schema(&bad).unwrap_err().to_string();
        assert!(
            err.starts_with("invalid agent spec: state_schema: "),
            "{err}"
        );
    }
}
