//! Dynamic prompts: the spec's `system_prompt_template`, rendered once
//! per run from the runtime context and the run's store namespace, and
//! shown in the agent's own slot.
//!
//! Syntax: `{{context.KEY}}` (a dotted path into the runtime context) and
//! `{{store.KEY}}` (the item `KEY` of the run's store namespace: a file's
//! content, or the value as JSON; when no item has that key, `KEY/FIELD`
//! reads one field of item `KEY`). Spaces inside the braces are ignored.
//! A variable that cannot be filled fails the run with `invalid_request`,
//! naming the variable.
//!
//! The rendered text is kept in the thread's custom state with the run's
//! id ([`STATE_KEY`]), so every step of the run sends the same prompt even
//! if the store changes meanwhile; the next run renders it afresh.

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::backend::routes::{lookup, scalar};
use crate::context::StepContext;
use crate::error::StepError;
use crate::middleware::Middleware;
use crate::prompt::{PromptSection, Slot};

/// Where the rendered prompt lives in the thread's custom state.
pub const STATE_KEY: &str = "_prompt";

/// A piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Context(String),
    Store(String),
}

/// A parsed `system_prompt_template`.
#[derive(Debug, Clone)]
pub struct PromptTemplate {
    parts: Vec<Part>,
}

impl PromptTemplate {
    /// Parses a template; the error names what is wrong.
    pub fn parse(template: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_owned()));
            }
            let close = rest[open..]
                .find("}}")
                .ok_or_else(|| format!("unclosed '{{{{' at '{}'", excerpt(&rest[open..])))?;
            let name = rest[open + 2..open + close].trim();
            parts.push(if let Some(path) = name.strip_prefix("context.") {
                Part::Context(non_empty(name, path)?)
            } else if let Some(key) = name.strip_prefix("store.") {
                Part::Store(non_empty(name, key)?)
            } else {
                return Err(format!(
                    "unknown variable {{{{{name}}}}}; use {{{{context.KEY}}}} or {{{{store.KEY}}}}"
                ));
            });
            rest = &rest[open + close + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        Ok(PromptTemplate { parts })
    }

    /// Renders the template for the run of `cx`.
    async fn render(&self, cx: &StepContext) -> Result<String, StepError> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Context(path) => {
                    let value = cx
                        .context
                        .as_ref()
                        .and_then(|c| lookup(c, path))
                        .ok_or_else(|| {
                            missing(
                                &format!("context.{path}"),
                                "the runtime context has no such value",
                            )
                        })?;
                    out.push_str(&scalar(value).unwrap_or_else(|| value.to_string()));
                }
                Part::Store(key) => out.push_str(&store_value(cx, key).await?),
            }
        }
        Ok(out)
    }
}

fn non_empty(name: &str, rest: &str) -> Result<String, String> {
    if rest.is_empty() {
        Err(format!("variable {{{{{name}}}}} names no key"))
    } else {
        Ok(rest.to_owned())
    }
}

fn excerpt(text: &str) -> String {
    text.chars().take(24).collect()
}

fn missing(variable: &str, why: &str) -> StepError {
    StepError::InvalidRequest(format!(
        "system_prompt_template: missing variable {{{{{variable}}}}}: {why}"
    ))
}

async fn store_value(cx: &StepContext, key: &str) -> Result<String, StepError> {
    let variable = format!("store.{key}");
    let store = cx.store.as_ref().ok_or_else(|| {
        missing(
            &variable,
            "the spec routes no path to the store (backend.routes)",
        )
    })?;
    let read = |key: String| async move {
        store.item_value(&key).await.map_err(|e| StepError::Tool {
            tool: "system_prompt_template".to_owned(),
            message: e.to_string(),
        })
    };
    if let Some(value) = read(key.to_owned()).await? {
        return Ok(match value.get("content").and_then(Value::as_str) {
            Some(content) => content.to_owned(),
            None => Value::Object(value).to_string(),
        });
    }
    if let Some((item, field)) = key.rsplit_once('/')
        && !item.is_empty()
        && let Some(value) = read(item.to_owned()).await?
        && let Some(found) = value.get(field)
    {
        return Ok(scalar(found).unwrap_or_else(|| found.to_string()));
    }
    Err(missing(
        &variable,
        "no such item in the run's store namespace",
    ))
}

/// Renders the template once per run and shows it as the agent's prompt.
pub struct DynamicPrompt {
    template: PromptTemplate,
}

impl DynamicPrompt {
    /// The middleware for a parsed template.
    pub fn new(template: PromptTemplate) -> Self {
        DynamicPrompt { template }
    }
}

/// The text rendered for `run_id`, if the state holds it.
fn rendered<'s>(state: &'s serde_json::Map<String, Value>, run_id: &str) -> Option<&'s str> {
    let cached = state.get(STATE_KEY)?;
    (cached.get("run")?.as_str()? == run_id).then_some(())?;
    cached.get("text")?.as_str()
}

#[async_trait]
impl Middleware for DynamicPrompt {
    fn name(&self) -> &'static str {
        "prompt_template"
    }

    fn prompt(&self, cx: &StepContext) -> Option<PromptSection> {
        let state = cx.state.lock().unwrap_or_else(|e| e.into_inner());
        rendered(&state, &cx.run.run_id).map(|text| PromptSection::new(Slot::Agent, text))
    }

    async fn before_model(&self, cx: &mut StepContext) -> Result<(), StepError> {
        {
            let state = cx.state.lock().unwrap_or_else(|e| e.into_inner());
            if rendered(&state, &cx.run.run_id).is_some() {
                return Ok(());
            }
        }
        let text = self.template.render(cx).await?;
        cx.state.lock().unwrap_or_else(|e| e.into_inner()).insert(
            STATE_KEY.to_owned(),
            json!({"run": cx.run.run_id, "text": text}),
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::backend::{Backend, StoreBackend};
    use crate::middleware::test_cx;
    use deepfleet_store::Store;
    use deepfleet_store::embedded::EmbeddedStore;
    use pretty_assertions::assert_eq;

    fn middleware(template: &str) -> DynamicPrompt {
        DynamicPrompt::new(PromptTemplate::parse(template).unwrap())
    }

    #[test]
    fn syntax_errors_name_the_problem() {
        assert!(
            PromptTemplate::parse("Hi {{ context.name ")
                .unwrap_err()
                .contains("unclosed")
        );
        let err = PromptTemplate::parse("{{user.name}}").unwrap_err();
        assert!(err.contains("unknown variable {{user.name}}"), "{err}");
        assert!(PromptTemplate::parse("{{context.}}").is_err());
        assert!(PromptTemplate::parse("plain text").is_ok());
    }

    #[tokio::test]
    async fn renders_context_and_store_values_once_per_run() {
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let ns = StoreBackend::new(Arc::clone(&store), vec!["agent".into(), "u1".into()]);
        ns.write("/prefs.txt", "Answer in French.").await.unwrap();
        store
            .put_item(
                &["agent".into(), "u1".into()],
                "prefs",
                &json!({"theme": "dark"}).as_object().cloned().unwrap(),
            )
            .await
            .unwrap();
        let mut cx = test_cx("");
        cx.context = Some(json!({"role": "admin", "user": {"name": "Ada"}}));
        cx.store = Some(ns.clone());
        let mw = middleware(
            "You help {{ context.user.name }} ({{context.role}}). Theme: {{store.prefs/theme}}. {{store./prefs.txt}}",
        );
        mw.before_model(&mut cx).await.unwrap();
        let expected = "You help Ada (admin). Theme: dark. Answer in French.";
        assert_eq!(
            mw.prompt(&cx).unwrap(),
            PromptSection::new(Slot::Agent, expected)
        );

        // Stable within the run even when the store changes.
        ns.write("/prefs.txt", "Answer in German.").await.unwrap();
        mw.before_model(&mut cx).await.unwrap();
        assert_eq!(mw.prompt(&cx).unwrap().text, expected);

        // The next run renders afresh.
        cx.run.run_id = "run-2".into();
        assert_eq!(mw.prompt(&cx), None);
        mw.before_model(&mut cx).await.unwrap();
        assert!(mw.prompt(&cx).unwrap().text.ends_with("Answer in German."));
    }

    #[tokio::test]
    async fn a_missing_variable_is_an_invalid_request() {
        let mut cx = test_cx("");
        cx.context = Some(json!({}));
        let err = middleware("Role: {{context.role}}")
            .before_model(&mut cx)
            .await
            .unwrap_err();
        assert!(matches!(err, StepError::InvalidRequest(_)));
        assert_eq!(
            err.to_string(),
            "invalid request: system_prompt_template: missing variable {{context.role}}: the runtime context has no such value"
        );
        let err = middleware("{{store.prefs}}")
            .before_model(&mut cx)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("{{store.prefs}}"), "{err}");
        assert_eq!(err.code(), deepfleet_proto::ErrorCode::InvalidRequest);
    }
}
