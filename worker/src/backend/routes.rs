//! The backend a step's file tools use, as the spec's `backend:` section
//! configures it: the thread's state backend, with routes to the
//! long-term store or a local directory laid over it.
//!
//! The store namespace is rendered here from the agent's name and the
//! run's runtime context, never from anything the model says, so one
//! user's run cannot address another user's memories; it lies under the
//! run's tenant's root label, so one tenant's agents cannot address
//! another's.

use std::sync::Arc;

use deepfleet_proto::AgentSpec;
use deepfleet_proto::harness::BackendRoute;
use deepfleet_proto::tenant::{TenantId, store_namespace};
use deepfleet_store::Store;
use serde_json::Value;

use super::{Backend, CompositeBackend, LocalBackend, StateBackend, StoreBackend};
use crate::error::StepError;

/// The backend of one step.
pub struct Configured {
    /// What the file tools use.
    pub backend: Arc<dyn Backend>,
    /// The run's store namespace, when a route leads to the store.
    pub store: Option<StoreBackend>,
}

/// Builds the backend `spec` configures over the thread's `state` for a
/// run of `tenant`. `context` is the run's runtime context in clear.
pub fn build(
    spec: &AgentSpec,
    tenant: &TenantId,
    context: Option<&Value>,
    store: &Arc<dyn Store>,
    state: &StateBackend,
) -> Result<Configured, StepError> {
    let routes = spec.backend.effective_routes();
    if routes.is_empty() {
        return Ok(Configured {
            backend: Arc::new(state.clone()),
            store: None,
        });
    }
    let mut store_backend: Option<StoreBackend> = None;
    let mut mounted: Vec<(String, Arc<dyn Backend>)> = Vec::new();
    for (prefix, route) in routes {
        let backend: Arc<dyn Backend> = match route {
            BackendRoute::Store => {
                let backend = match &store_backend {
                    Some(existing) => existing.clone(),
                    None => {
                        let scoped = store_namespace(tenant, &namespace(spec, context)?);
                        let created = StoreBackend::new(Arc::clone(store), scoped);
                        store_backend = Some(created.clone());
                        created
                    }
                };
                Arc::new(backend)
            }
            BackendRoute::Local { root } => {
                Arc::new(LocalBackend::new(&root).map_err(|e| StepError::Agent {
                    agent: spec.name.clone(),
                    message: format!("backend.routes.{prefix}: {e}"),
                })?)
            }
        };
        mounted.push((prefix, backend));
    }
    Ok(Configured {
        backend: Arc::new(CompositeBackend::new(Arc::new(state.clone()), mounted)),
        store: store_backend,
    })
}

/// Renders the spec's store namespace for a run.
pub fn namespace(spec: &AgentSpec, context: Option<&Value>) -> Result<Vec<String>, StepError> {
    spec.backend
        .namespace_template()
        .iter()
        .map(|label| render_label(label, &spec.name, context))
        .collect()
}

/// One label: `{agent}` and `{context.KEY}` (a dotted path into the
/// context) replaced; the result must be a valid namespace label.
fn render_label(template: &str, agent: &str, context: Option<&Value>) -> Result<String, StepError> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..]
            .find('}')
            .ok_or_else(|| bad(template, "unclosed '{'"))?;
        let name = &rest[open + 1..open + close];
        if name == "agent" {
            out.push_str(agent);
        } else if let Some(path) = name.strip_prefix("context.") {
            let value = context
                .and_then(|c| lookup(c, path))
                .ok_or_else(|| {
                    StepError::InvalidRequest(format!(
                        "backend.store_namespace: the runtime context has no '{path}' (needed by '{template}')"
                    ))
                })?;
            out.push_str(&scalar(value).ok_or_else(|| {
                bad(
                    template,
                    &format!("context.{path} must be a string or a number"),
                )
            })?);
        } else {
            return Err(bad(template, &format!("unknown placeholder {{{name}}}")));
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    if out.is_empty() || out.contains(['.', '\0']) {
        // The rendered label is not quoted: it holds context values, and
        // run errors are stored and shown.
        return Err(bad(
            template,
            "renders to an empty label or one with '.' or NUL, which is not a namespace label",
        ));
    }
    Ok(out)
}

fn bad(template: &str, why: &str) -> StepError {
    StepError::InvalidRequest(format!("backend.store_namespace '{template}': {why}"))
}

/// A dotted path into a JSON object.
pub(crate) fn lookup<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(value, |v, key| v.get(key))
}

/// A string as is, a number or boolean as written; `None` otherwise.
pub(crate) fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_store::embedded::EmbeddedStore;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn spec(extra: &str) -> AgentSpec {
        AgentSpec::from_yaml(&format!("name: helper\nmodel: replay:x\n{extra}")).unwrap()
    }

    #[test]
    fn namespace_comes_from_agent_and_context() {
        let spec = spec("backend:\n  store_namespace: ['{agent}', 'user-{context.user.id}']\n");
        let context = json!({"user": {"id": 42}});
        assert_eq!(
            namespace(&spec, Some(&context)).unwrap(),
            ["helper", "user-42"]
        );
        let err = namespace(&spec, Some(&json!({}))).unwrap_err();
        assert!(matches!(err, StepError::InvalidRequest(_)), "{err}");
        assert!(err.to_string().contains("'user.id'"), "{err}");
        let err = namespace(&spec, Some(&json!({"user": {"id": "a.b"}}))).unwrap_err();
        assert!(err.to_string().contains("not a namespace label"), "{err}");
    }

    #[test]
    fn a_label_that_cannot_be_one_does_not_quote_the_context() {
        let spec = spec("backend:\n  store_namespace: ['{context.token}']\n");
        let err = namespace(&spec, Some(&json!({"token": "sk.secret-value"}))).unwrap_err();
        assert!(err.to_string().contains("not a namespace label"), "{err}");
        assert!(!err.to_string().contains("secret-value"), "{err}");
    }

    #[tokio::test]
    async fn memories_route_to_the_store_namespace() {
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let spec = spec("backend:\n  store_namespace: ['{agent}', '{context.user_id}']\n");
        let state = StateBackend::default();
        let context = json!({"user_id": "u1"});
        let acme = TenantId::new("acme").unwrap();
        let configured = build(&spec, &acme, Some(&context), &store, &state).unwrap();
        configured
            .backend
            .write("/memories/prefs.txt", "tea")
            .await
            .unwrap();
        configured.backend.write("/notes.md", "n").await.unwrap();
        assert_eq!(state.changes().keys().collect::<Vec<_>>(), ["/notes.md"]);
        let scoped = ["tenant:acme".to_owned(), "helper".into(), "u1".into()];
        let item = store.get_item(&scoped, "/prefs.txt").await.unwrap();
        assert!(item.is_some());
        assert_eq!(configured.store.unwrap().namespace(), scoped);
        // Another tenant's run of the same agent and user reads nothing.
        let other = build(&spec, &TenantId::default(), Some(&context), &store, &state).unwrap();
        assert!(other.backend.read("/memories/prefs.txt").await.is_err());
    }

    #[test]
    fn no_routes_is_the_state_backend() {
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let configured = build(
            &spec(""),
            &TenantId::default(),
            None,
            &store,
            &StateBackend::default(),
        )
        .unwrap();
        assert!(configured.store.is_none());
    }
}
