//! Resolving a declared tool's [`ValueSource`]s when it is called: from
//! the worker's environment, the run's runtime context or the thread's
//! custom state. A value that is not there is an error the model reads
//! (the run goes on without the call), naming where it was looked for
//! but never a value.

use deepfleet_proto::value_source::ValueSource;
use serde_json::Value;

use super::ToolError;
use crate::context::ToolView;

/// The JSON value `source` names for a call seen through `view`.
pub fn resolve(source: &ValueSource, view: &ToolView<'_>) -> Result<Value, ToolError> {
    let missing = |what: String| ToolError::Model(format!("this tool is not usable: {what}"));
    match source {
        ValueSource::Literal(text) => Ok(Value::String(text.clone())),
        ValueSource::Secret { secret } => std::env::var(secret)
            .ok()
            .map(Value::String)
            .or_else(|| view.context().and_then(|c| c.get(secret)).cloned())
            .ok_or_else(|| {
                missing(format!(
                    "the secret {secret} is neither a variable of the worker nor a key of the run's context"
                ))
            }),
        ValueSource::Context { context } => view
            .context()
            .and_then(|c| at_path(c, context))
            .cloned()
            .ok_or_else(|| missing(format!("the run's context has no field {context}"))),
        ValueSource::State { state } => {
            let fields = view.state().lock().unwrap_or_else(|e| e.into_inner());
            let root = fields.get(state.split('.').next().unwrap_or(state));
            let rest = state.split_once('.').map(|(_, rest)| rest);
            match (root, rest) {
                (Some(value), None) => Some(value),
                (Some(value), Some(rest)) => at_path(value, rest),
                (None, _) => None,
            }
            .cloned()
            .ok_or_else(|| missing(format!("the thread's state has no field {state}")))
        }
    }
}

/// [`resolve`] as text, for headers and URLs: a string as it is, any
/// other value as JSON.
pub fn resolve_text(source: &ValueSource, view: &ToolView<'_>) -> Result<String, ToolError> {
    Ok(match resolve(source, view)? {
        Value::String(text) => text,
        other => other.to_string(),
    })
}

/// The value at the dotted `path` inside `value`.
fn at_path<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(value, |node, key| node.get(key))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::tests::{CALL_ID, ctx};

    #[test]
    fn values_come_from_context_state_and_the_environment() {
        let mut cx = ctx();
        cx.context = Some(json!({"user": {"id": 7}, "TOKEN_IN_CONTEXT": "t-1"}));
        cx.state
            .lock()
            .unwrap()
            .insert("ticket".into(), json!({"key": "OPS-1"}));
        let view = cx.tool(CALL_ID);
        let context = ValueSource::Context {
            context: "user.id".into(),
        };
        assert_eq!(resolve(&context, &view).unwrap(), json!(7));
        assert_eq!(resolve_text(&context, &view).unwrap(), "7");
        let state = ValueSource::State {
            state: "ticket.key".into(),
        };
        assert_eq!(resolve_text(&state, &view).unwrap(), "OPS-1");
        let secret = ValueSource::Secret {
            secret: "TOKEN_IN_CONTEXT".into(),
        };
        assert_eq!(resolve_text(&secret, &view).unwrap(), "t-1");
        // PATH is a variable of every worker.
        let env = ValueSource::Secret {
            secret: "PATH".into(),
        };
        assert!(!resolve_text(&env, &view).unwrap().is_empty());
    }

    #[test]
    fn a_missing_value_is_an_error_naming_where_it_was_looked_for() {
        let cx = ctx();
        let view = cx.tool(CALL_ID);
        let secret = ValueSource::Secret {
            secret: "DEEPFLEET_TEST_NO_SUCH_SECRET".into(),
        };
        let Err(ToolError::Model(text)) = resolve(&secret, &view) else {
            panic!("expected a model error");
        };
        assert!(text.contains("DEEPFLEET_TEST_NO_SUCH_SECRET"), "{text}");
        let state = ValueSource::State {
            state: "nothing.here".into(),
        };
        assert!(resolve(&state, &view).is_err());
    }
}
