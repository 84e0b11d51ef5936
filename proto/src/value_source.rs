//! Where a value of a declared tool comes from: a header of an MCP or
//! HTTP tool, an environment variable of an MCP server, an argument or
//! body field. A spec never holds a secret itself; it names where the
//! worker finds it, so neither the spec nor a checkpoint carries it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A value a worker resolves when the tool is called.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(
    untagged,
    expecting = "a string, or one of {secret: NAME}, {context: KEY}, {state: FIELD}"
)]
pub enum ValueSource {
    /// The string itself. Not for secrets: it is part of the spec.
    Literal(String),
    /// `{secret: NAME}`: the worker's environment variable `NAME`, else
    /// the run's runtime context key `NAME` (sealed at rest; list it in
    /// the spec's `context_secrets` so it is redacted wherever shown).
    Secret {
        /// The variable or context key.
        secret: String,
    },
    /// `{context: KEY}`: the run's runtime context field `KEY` (dots reach
    /// into objects: `user.id`).
    Context {
        /// The field's path.
        context: String,
    },
    /// `{state: FIELD}`: the thread's custom state field `FIELD` (dots
    /// reach into objects).
    State {
        /// The field's path.
        state: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_reads_from_yaml() {
        let values: Vec<ValueSource> = serde_norway::from_str(
            "- plain\n- {secret: API_TOKEN}\n- {context: user.id}\n- {state: ticket}\n",
        )
        .unwrap();
        assert_eq!(
            values,
            [
                ValueSource::Literal("plain".into()),
                ValueSource::Secret {
                    secret: "API_TOKEN".into()
                },
                ValueSource::Context {
                    context: "user.id".into()
                },
                ValueSource::State {
                    state: "ticket".into()
                },
            ]
        );
        let e = serde_norway::from_str::<ValueSource>("{secrets: X}").unwrap_err();
        assert!(e.to_string().contains("{secret: NAME}"), "{e}");
    }
}
