//! Runtime context: what an agent spec's `context_schema` says a run's
//! context must be (as deepagents' `context_schema` types it), checked at
//! intake in every entry point (a batch's task lines, the HTTP API, queue
//! submissions), before anything is written and before the context is
//! sealed, with the offending field named.

use deepfleet_proto::{AgentSpec, SpecError};
use serde_json::Value;

use crate::error::SchedulerError;

/// Checks that a spec's `context_schema` is a schema the validator
/// accepts.
pub fn check_schema(spec: &AgentSpec) -> Result<(), SchedulerError> {
    if let Some(schema) = &spec.context_schema {
        jsonschema::validator_for(schema).map_err(|e| SpecError {
            field: "context_schema".to_owned(),
            line: None,
            message: e.to_string(),
        })?;
    }
    Ok(())
}

/// Validates run `id`'s runtime `context` against `spec`'s
/// `context_schema`; a run without context is checked as an empty object,
/// so a schema's required fields hold for every run. Errors name the
/// field (`context.user.id`).
pub fn validate(spec: &AgentSpec, id: &str, context: Option<&Value>) -> Result<(), SchedulerError> {
    let Some(schema) = &spec.context_schema else {
        return Ok(());
    };
    let invalid = |reason: String| SchedulerError::InvalidTask {
        id: id.to_owned(),
        reason,
    };
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| invalid(format!("context_schema of agent '{}': {e}", spec.name)))?;
    let empty = Value::Object(serde_json::Map::new());
    let instance = context.unwrap_or(&empty);
    if let Some(error) = validator.iter_errors(instance).next() {
        let field = crate::custom_state::field_name("context", &error.instance_path().to_string());
        return Err(invalid(format!(
            "{field}: {error} (context_schema of agent '{}')",
            spec.name
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec() -> AgentSpec {
        AgentSpec::from_yaml(
            "name: a\nmodel: openai:x\ncontext_schema:\n  type: object\n  required: [user_id]\n  properties:\n    user_id: {type: string}\n    limits: {type: object, properties: {max: {type: integer}}}\n",
        )
        .unwrap()
    }

    #[test]
    fn a_context_breaking_the_schema_is_refused_naming_the_field() {
        let spec = spec();
        validate(&spec, "t1", Some(&json!({"user_id": "u1"}))).unwrap();
        let e = validate(
            &spec,
            "t1",
            Some(&json!({"user_id": "u1", "limits": {"max": "x"}})),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("context.limits.max:"), "{e}");
        let e = validate(&spec, "t2", None).unwrap_err().to_string();
        assert!(e.contains("\"user_id\" is a required property"), "{e}");
    }

    #[test]
    fn without_a_schema_any_context_goes() {
        let spec = AgentSpec::from_yaml("name: a\nmodel: openai:x\n").unwrap();
        validate(&spec, "t", Some(&json!([1, 2]))).unwrap();
    }

    #[test]
    fn a_schema_the_validator_refuses_is_a_spec_error() {
        let mut spec = spec();
        spec.context_schema = Some(json!({"type": "no-such-type"}));
        let e = check_schema(&spec).unwrap_err().to_string();
        assert!(e.contains("context_schema"), "{e}");
    }
}
