//! Assistants: one system assistant per registered graph (agent spec),
//! plus created ones that override its config and context.

pub mod count;
pub mod graph;
pub mod versions;

use axum::Extension;
use axum::Json;
use axum::extract::{Path, RawQuery, State};
use chrono::Utc;
use deepfleet_proto::Caller;
use deepfleet_proto::api::{
    Assistant, AssistantCreateParams, AssistantSearchParams, AssistantSortBy,
};
use deepfleet_proto::keys::records::{assistant_versions, tenant_assistants};
use deepfleet_store::Order;
use serde_json::{Map, Value};

use crate::error::{ApiError, Body};
use crate::routes::{ADMIN, READ, Routes};
use crate::search::{Paging, metadata_matches, page_size};
use crate::select::{Select, fields_of};
use crate::sort::{MAX_SORTED, Sort};
use crate::state::ApiState;
use deepfleet_scheduler::convert::to_json;
use deepfleet_scheduler::repo::assistants::{AssistantRecord, assistants, versions_of};
use deepfleet_scheduler::runs::assistants::{Given, find, system, unknown_graph};

pub(crate) fn routes() -> Routes {
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
    if !state.runs.graphs.contains(&body.graph_id) {
        return Err(unknown_graph(&state.runs, &body.graph_id).into());
    }
    let id = body
        .assistant_id
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    deepfleet_scheduler::ids::check_id("assistant_id", &id).map_err(ApiError::unprocessable)?;
    let now = Utc::now();
    let empty = || Value::Object(Map::new());
    let given = Given {
        context: body.context.unwrap_or_else(empty),
        config: body.config.unwrap_or_else(empty),
    };
    let guarded = given.guard(&state.runs, &body.graph_id, &id).await?;
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
        Some("do_nothing") => Ok(find(&state.runs, &caller.tenant, &id).await.map(Json)?),
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
    let sort = Sort::asked(body.sort_by, body.sort_order, AssistantSortBy::as_str);
    let matches = |a: &Assistant| {
        body.graph_id.as_ref().is_none_or(|g| a.graph_id == *g)
            && body.name.as_ref().is_none_or(|n| a.name == *n)
            && metadata_matches(body.metadata.as_ref(), &a.metadata)
    };
    let Some(sort) = sort else {
        let paging = Paging::new(body.offset, body.limit, true);
        let found = matching_assistants(&state, &caller, matches, paging).await?;
        return Ok(Json(select.apply_all(&found)));
    };
    let every = Paging::first(MAX_SORTED + 1);
    let all = matching_assistants(&state, &caller, matches, every).await?;
    let all = all.iter().map(to_json).collect();
    let (offset, limit) = (body.offset.unwrap_or(0), page_size(body.limit));
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
    for graph in state.runs.graphs.names() {
        let assistant = system(&state.runs, &graph);
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
    Ok(find(&state.runs, &caller.tenant, &id).await.map(Json)?)
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

#[cfg(test)]
#[path = "assistants_tests.rs"]
mod router_tests;
