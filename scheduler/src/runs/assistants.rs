//! Assistants as runs find them: a tenant's own, or a registered graph's
//! system assistant, with the context and config its runs start with
//! (secrets sealed when stored, opened for a run).

use deepfleet_proto::api::Assistant;
use deepfleet_proto::{SealedContext, TenantId};
use deepfleet_store::sealed::redact;
use serde_json::{Map, Value};

use super::Runs;
use super::error::RunsError;
use crate::error::SchedulerError;
use crate::repo::assistants::{AssistantRecord, assistants};

/// The namespace of system assistant ids, the reference server's, so a
/// graph's system assistant has the same id on both servers.
const SYSTEM_NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6ba7b821_9dad_11d1_80b4_00c04fd430c8);

/// The id of `graph_id`'s system assistant: `uuid5(SYSTEM_NAMESPACE, graph_id)`.
pub fn system_assistant_id(graph_id: &str) -> String {
    uuid::Uuid::new_v5(&SYSTEM_NAMESPACE, graph_id.as_bytes()).to_string()
}

/// An assistant's `context` and `config` as given (or, for a stored
/// one, as opened): what its runs start with. Its `config.configurable`
/// joins its runs' context, so either may carry a secret.
pub struct Given {
    /// Its runtime context.
    pub context: Value,
    /// Its config.
    pub config: Value,
}

/// An assistant's `context` and `config` as stored: each shown with the
/// values of its graph's `context_secrets` redacted and, where that hid
/// any, whole and sealed for its runs, so a secret is never stored or
/// answered in clear.
pub struct Guarded {
    /// The context to show.
    pub context: Value,
    /// The whole context, when the shown one hides a secret.
    pub sealed_context: Option<SealedContext>,
    /// The config to show.
    pub config: Value,
    /// The whole config, when the shown one hides a secret.
    pub sealed_config: Option<SealedContext>,
}

impl Given {
    /// These values as assistant `id` of `graph` stores them. A secret
    /// with no context key to seal it is refused (422), as a run's is.
    pub async fn guard(self, runs: &Runs, graph: &str, id: &str) -> Result<Guarded, RunsError> {
        let secrets = runs
            .life
            .intake()
            .spec_for(graph)
            .await?
            .spec
            .context_secrets;
        let (context, sealed_context) = seal_secrets(runs, &secrets, id, "context", self.context)?;
        let (config, sealed_config) = seal_secrets(runs, &secrets, id, "config", self.config)?;
        Ok(Guarded {
            context,
            sealed_context,
            config,
            sealed_config,
        })
    }

    /// What `record` stores, its sealed parts opened.
    pub fn of(runs: &Runs, record: &AssistantRecord) -> Result<Self, RunsError> {
        let open = |sealed: &Option<SealedContext>, shown: &Value| match sealed {
            Some(sealed) => runs
                .life
                .intake()
                .open_context(sealed)
                .map_err(RunsError::from),
            None => Ok(shown.clone()),
        };
        Ok(Given {
            context: open(&record.sealed_context, &record.assistant.context)?,
            config: open(&record.sealed_config, &record.assistant.config)?,
        })
    }
}

/// `value` (the assistant's `field`) shown with `secrets` redacted and,
/// when that hid any, whole and sealed.
fn seal_secrets(
    runs: &Runs,
    secrets: &[String],
    id: &str,
    field: &str,
    value: Value,
) -> Result<(Value, Option<SealedContext>), RunsError> {
    let shown = redact(&value, secrets);
    if shown == value {
        return Ok((value, None));
    }
    let sealed = runs
        .life
        .intake()
        .seal_context(id, Some(&value))
        .map_err(|e| match e {
            SchedulerError::InvalidTask { reason, .. } => RunsError::invalid(format!(
                "{field} holds a value named in the graph's context_secrets, which must be \
                 sealed: {reason}"
            )),
            other => other.into(),
        })?;
    Ok((shown, sealed))
}

/// `tenant`'s assistant `id_or_graph` (as [`find`] finds it) and what its
/// runs start with: its context and config, opened where they were
/// sealed.
pub async fn find_for_run(
    runs: &Runs,
    tenant: &TenantId,
    id_or_graph: &str,
) -> Result<(Assistant, Given), RunsError> {
    let assistant = find(runs, tenant, id_or_graph).await?;
    let given = match assistants(runs.store())
        .get_owned(&assistant.assistant_id, tenant)
        .await?
    {
        Some(record) => Given::of(runs, &record)?,
        None => Given {
            context: assistant.context.clone(),
            config: assistant.config.clone(),
        },
    };
    Ok((assistant, given))
}

/// `tenant`'s assistant with this id, or the system assistant of the
/// graph with this name (anywhere an assistant id is accepted, a graph
/// name is too). Another tenant's assistant is not found.
pub async fn find(
    runs: &Runs,
    tenant: &TenantId,
    id_or_graph: &str,
) -> Result<Assistant, RunsError> {
    if let Some(graph) = runs
        .graphs
        .names()
        .iter()
        .find(|g| *g == id_or_graph || system_assistant_id(g) == id_or_graph)
    {
        return Ok(system(runs, graph));
    }
    assistants(runs.store())
        .get_owned(id_or_graph, tenant)
        .await?
        .map(|record| record.assistant)
        .ok_or_else(|| RunsError::not_found(format!("Assistant '{id_or_graph}' not found.")))
}

/// The system assistant of `graph`.
pub fn system(runs: &Runs, graph: &str) -> Assistant {
    Assistant {
        assistant_id: system_assistant_id(graph),
        graph_id: graph.to_owned(),
        config: Value::Object(Map::new()),
        context: Value::Object(Map::new()),
        metadata: Map::from_iter([("created_by".to_owned(), Value::from("system"))]),
        name: graph.to_owned(),
        description: None,
        version: 1,
        created_at: runs.started_at,
        updated_at: runs.started_at,
    }
}

/// The 404 of a graph that is not registered.
pub fn unknown_graph(runs: &Runs, graph: &str) -> RunsError {
    RunsError::not_found(format!(
        "Graph '{graph}' not found. Expected one of: {:?}",
        runs.graphs.names()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_ids_match_the_reference_derivation() {
        // Python: uuid.uuid5(uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8"), "agent")
        assert_eq!(
            system_assistant_id("agent"),
            "fe096781-5601-53d2-b2f6-0d3403f7e9ca"
        );
    }
}
