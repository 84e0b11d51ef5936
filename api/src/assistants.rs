//! Assistants: one system assistant per registered graph (agent spec),
//! plus created ones that override its config and context.

use axum::Extension;
use axum::Json;
use axum::extract::{Path, RawQuery, State};
use chrono::Utc;
use deepfleet_proto::api::{Assistant, AssistantCreateParams, AssistantSearchParams};
use deepfleet_proto::keys::records::{assistant_versions, tenant_assistants};
use deepfleet_proto::{Caller, SealedContext, TenantId};
use deepfleet_store::Order;
use deepfleet_store::sealed::redact;
use serde_json::{Map, Value};

use super::convert::to_json;
use super::error::{ApiError, Body};
use super::routes::{ADMIN, READ, Routes};
use super::search::{Paging, metadata_matches, page_limit};
use super::select::{Select, fields_of};
use super::sort::{MAX_SORTED, Sort};
use super::state::ApiState;
use crate::error::SchedulerError;
use crate::repo::assistants::{AssistantRecord, assistants, versions_of};

/// The namespace of system assistant ids, the reference server's, so a
/// graph's system assistant has the same id on both servers.
const SYSTEM_NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6ba7b821_9dad_11d1_80b4_00c04fd430c8);

/// The id of `graph_id`'s system assistant: `uuid5(SYSTEM_NAMESPACE, graph_id)`.
pub fn system_assistant_id(graph_id: &str) -> String {
    uuid::Uuid::new_v5(&SYSTEM_NAMESPACE, graph_id.as_bytes()).to_string()
}

pub(super) fn routes() -> Routes {
    Routes::new()
        .post("/assistants", ADMIN, create)
        .post("/assistants/search", READ, search)
        .get("/assistants/{assistant_id}", READ, get_one)
        .delete("/assistants/{assistant_id}", ADMIN, delete)
}

async fn create(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<AssistantCreateParams>,
) -> Result<Json<Assistant>, ApiError> {
    if !state.graphs.contains(&body.graph_id) {
        return Err(unknown_graph(&state, &body.graph_id));
    }
    let id = body
        .assistant_id
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    crate::ids::check_id("assistant_id", &id).map_err(ApiError::unprocessable)?;
    let now = Utc::now();
    let empty = || Value::Object(Map::new());
    let given = Given {
        context: body.context.unwrap_or_else(empty),
        config: body.config.unwrap_or_else(empty),
    };
    let guarded = given.guard(&state, &body.graph_id, &id).await?;
    let assistant = Assistant {
        assistant_id: id.clone(),
        graph_id: body.graph_id,
        config: guarded.config,
        context: guarded.context,
        metadata: body.metadata.unwrap_or_default(),
        name: body.name.unwrap_or_else(|| "Untitled".into()),
        description: body.description,
        version: 1,
        created_at: now,
        updated_at: now,
    };
    let record = AssistantRecord {
        tenant: caller.tenant.clone(),
        assistant,
        sealed_context: guarded.sealed_context,
        sealed_config: guarded.sealed_config,
        latest: 1,
    };
    if assistants(state.store()).insert(&id, &record).await? {
        versions_of(state.store(), &id).put("1", &record).await?;
        return Ok(Json(record.assistant));
    }
    match body.if_exists.as_deref() {
        Some("do_nothing") => find(&state, &caller.tenant, &id).await.map(Json),
        _ => Err(ApiError::conflict(format!(
            "Assistant '{id}' already exists."
        ))),
    }
}

async fn search(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<AssistantSearchParams>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let select = Select::parse(
        body.select.as_deref(),
        &fields_of::<Assistant>(),
        "an assistant",
        false,
    )?;
    let sort = Sort::parse(
        body.sort_by.as_deref(),
        body.sort_order.as_deref(),
        &[
            "assistant_id",
            "graph_id",
            "name",
            "created_at",
            "updated_at",
        ],
        "created_at",
    )?;
    let matches = |a: &Assistant| {
        body.graph_id.as_ref().is_none_or(|g| a.graph_id == *g)
            && body.name.as_ref().is_none_or(|n| a.name == *n)
            && metadata_matches(body.metadata.as_ref(), &a.metadata)
    };
    let Some(sort) = sort else {
        let paging = Paging::new(body.offset, body.limit, true)?;
        let found = matching_assistants(&state, &caller, matches, paging).await?;
        return Ok(Json(select.apply_all(&found)));
    };
    let every = Paging::unchecked(None, MAX_SORTED + 1, true);
    let all = matching_assistants(&state, &caller, matches, every).await?;
    let all = all.iter().map(to_json).collect();
    let (offset, limit) = (body.offset.unwrap_or(0), page_limit(body.limit)?);
    Ok(Json(
        sort.page(all, offset, limit)?
            .iter()
            .map(|a| select.apply(a))
            .collect(),
    ))
}

/// `tenant`'s assistants that `matches` keeps, the page `paging` says:
/// the system assistants first, then the created ones, oldest first.
async fn matching_assistants(
    state: &ApiState,
    caller: &Caller,
    matches: impl Fn(&Assistant) -> bool,
    mut paging: Paging,
) -> Result<Vec<Assistant>, ApiError> {
    let mut out = Vec::new();
    for graph in state.graphs.names() {
        let assistant = system(state, &graph);
        if out.len() < paging.limit && matches(&assistant) && !paging.skips() {
            out.push(assistant);
        }
    }
    let repo = assistants(state.store());
    let mut walk = repo
        .walk(tenant_assistants(caller.tenant.as_str()), Order::Ascending)
        .chunk(paging.chunk());
    while out.len() < paging.limit {
        let Some(record) = walk.next().await? else {
            break;
        };
        if record.tenant == caller.tenant && matches(&record.assistant) && !paging.skips() {
            out.push(record.assistant);
        }
    }
    Ok(out)
}

async fn get_one(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Assistant>, ApiError> {
    find(&state, &caller.tenant, &id).await.map(Json)
}

async fn delete(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<Map<String, Value>>, ApiError> {
    // A thread is not an assistant's: runs of many assistants may share
    // it, so deleting an assistant never takes threads with it.
    let delete_threads = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .any(|(key, value)| key == "delete_threads" && !matches!(&*value, "false" | "0" | ""));
    if delete_threads {
        return Err(ApiError::unprocessable(
            "delete_threads is not supported: a thread may hold runs of many assistants; \
             delete threads with DELETE /threads/{thread_id}",
        ));
    }
    let repo = assistants(state.store());
    if repo.get_owned(&id, &caller.tenant).await?.is_none() || !repo.delete(&id).await? {
        return Err(ApiError::not_found(format!("Assistant '{id}' not found.")));
    }
    // Its versions go with it.
    let versions = versions_of(state.store(), &id);
    let made = versions
        .walk(assistant_versions(&id), Order::Ascending)
        .all()
        .await?;
    for version in made {
        versions
            .delete(&version.assistant.version.to_string())
            .await?;
    }
    Ok(Json(Map::new()))
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
pub(super) struct Guarded {
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
    pub(super) async fn guard(
        self,
        state: &ApiState,
        graph: &str,
        id: &str,
    ) -> Result<Guarded, ApiError> {
        let secrets = state
            .life
            .intake()
            .spec_for(graph)
            .await?
            .spec
            .context_secrets;
        let (context, sealed_context) = seal_secrets(state, &secrets, id, "context", self.context)?;
        let (config, sealed_config) = seal_secrets(state, &secrets, id, "config", self.config)?;
        Ok(Guarded {
            context,
            sealed_context,
            config,
            sealed_config,
        })
    }

    /// What `record` stores, its sealed parts opened.
    pub(super) fn of(state: &ApiState, record: &AssistantRecord) -> Result<Self, ApiError> {
        let open = |sealed: &Option<SealedContext>, shown: &Value| match sealed {
            Some(sealed) => state
                .life
                .intake()
                .open_context(sealed)
                .map_err(ApiError::from),
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
    state: &ApiState,
    secrets: &[String],
    id: &str,
    field: &str,
    value: Value,
) -> Result<(Value, Option<SealedContext>), ApiError> {
    let shown = redact(&value, secrets);
    if shown == value {
        return Ok((value, None));
    }
    let sealed = state
        .life
        .intake()
        .seal_context(id, Some(&value))
        .map_err(|e| match e {
            SchedulerError::InvalidTask { reason, .. } => ApiError::unprocessable(format!(
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
    state: &ApiState,
    tenant: &TenantId,
    id_or_graph: &str,
) -> Result<(Assistant, Given), ApiError> {
    let assistant = find(state, tenant, id_or_graph).await?;
    let given = match assistants(state.store())
        .get_owned(&assistant.assistant_id, tenant)
        .await?
    {
        Some(record) => Given::of(state, &record)?,
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
    state: &ApiState,
    tenant: &TenantId,
    id_or_graph: &str,
) -> Result<Assistant, ApiError> {
    if let Some(graph) = state
        .graphs
        .names()
        .iter()
        .find(|g| *g == id_or_graph || system_assistant_id(g) == id_or_graph)
    {
        return Ok(system(state, graph));
    }
    assistants(state.store())
        .get_owned(id_or_graph, tenant)
        .await?
        .map(|record| record.assistant)
        .ok_or_else(|| ApiError::not_found(format!("Assistant '{id_or_graph}' not found.")))
}

/// The system assistant of `graph`.
pub(super) fn system(state: &ApiState, graph: &str) -> Assistant {
    Assistant {
        assistant_id: system_assistant_id(graph),
        graph_id: graph.to_owned(),
        config: Value::Object(Map::new()),
        context: Value::Object(Map::new()),
        metadata: Map::from_iter([("created_by".to_owned(), Value::from("system"))]),
        name: graph.to_owned(),
        description: None,
        version: 1,
        created_at: state.started_at,
        updated_at: state.started_at,
    }
}

/// The 404 of a graph that is not registered.
pub(super) fn unknown_graph(state: &ApiState, graph: &str) -> ApiError {
    ApiError::not_found(format!(
        "Graph '{graph}' not found. Expected one of: {:?}",
        state.graphs.names()
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

#[cfg(test)]
#[path = "assistants_tests.rs"]
mod router_tests;
