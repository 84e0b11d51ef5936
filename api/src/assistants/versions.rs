//! Assistant versions: `PATCH /assistants/{id}` makes a new one and shows
//! it, `POST /assistants/{id}/versions` lists them newest first, `POST
//! /assistants/{id}/latest` shows (and runs) an earlier or later one.
//! Each version is the whole record as it made it, sealed context and
//! config included, so showing one again needs nothing else.

use axum::Extension;
use axum::Json;
use axum::extract::{Path, State};
use chrono::Utc;
use deepfleet_proto::api::{
    Assistant, AssistantLatestParams, AssistantPatchParams, AssistantVersionsParams,
};
use deepfleet_proto::keys::records::assistant_versions;
use deepfleet_proto::{Caller, TenantId};
use deepfleet_store::Order;

use crate::error::{ApiError, Body};
use crate::routes::{ADMIN, READ, Routes};
use crate::search::{Paging, metadata_matches, page_size};
use crate::state::ApiState;
use deepfleet_scheduler::repo::assistants::{AssistantRecord, assistants, versions_of};
use deepfleet_scheduler::runs::assistants::Given;
use deepfleet_scheduler::runs::assistants::system;
use deepfleet_scheduler::runs::assistants::system_assistant_id;
use deepfleet_scheduler::runs::assistants::unknown_graph;

pub(crate) fn routes() -> Routes {
    Routes::new()
        .patch("/assistants/{assistant_id}", ADMIN, update)
        .post("/assistants/{assistant_id}/versions", READ, list)
        .post("/assistants/{assistant_id}/latest", ADMIN, set_latest)
}

/// The next version starts from the shown one; a record from before
/// versions first gets its own version written, so it stays listed.
async fn update(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Body(body): Body<AssistantPatchParams>,
) -> Result<Json<Assistant>, ApiError> {
    let mut record = load(&state, &caller.tenant, &id).await?;
    let versions = versions_of(state.store(), &id);
    let shown = record.assistant.version.to_string();
    if versions.get(&shown).await?.is_none() {
        versions.put(&shown, &record).await?;
    }
    let mut next = record.assistant.clone();
    if let Some(graph_id) = body.graph_id {
        if !state.runs.graphs.contains(&graph_id) {
            return Err(unknown_graph(&state.runs, &graph_id).into());
        }
        next.graph_id = graph_id;
    }
    // Both are guarded again, given or kept: the graph (or its
    // `context_secrets`) may have changed since they were stored.
    let kept = Given::of(&state.runs, &record)?;
    let given = Given {
        context: body.context.unwrap_or(kept.context),
        config: body.config.unwrap_or(kept.config),
    };
    let guarded = given.guard(&state.runs, &next.graph_id, &id).await?;
    next.context = guarded.context;
    next.config = guarded.config;
    record.sealed_context = guarded.sealed_context;
    record.sealed_config = guarded.sealed_config;
    next.metadata.extend(body.metadata.unwrap_or_default());
    if let Some(name) = body.name {
        next.name = name;
    }
    if body.description.is_some() {
        next.description = body.description;
    }
    next.updated_at = Utc::now();
    // Each version number is claimed by a create-if-absent write: two
    // PATCHes at once get a version each, never the same one.
    let mut claimed = false;
    for _ in 0..VERSION_CLAIMS {
        record.latest = record.latest.saturating_add(1);
        next.version = record.latest;
        record.assistant = next.clone();
        if versions.insert(&record.latest.to_string(), &record).await? {
            claimed = true;
            break;
        }
    }
    if !claimed {
        return Err(ApiError::conflict(format!(
            "Assistant '{id}' is being changed by other requests; try again."
        )));
    }
    assistants(state.store()).put(&id, &record).await?;
    Ok(Json(record.assistant))
}

/// How many version numbers one PATCH tries before giving up: each taken
/// one means another PATCH won it just now.
const VERSION_CLAIMS: usize = 16;

/// Newest first. A record from before versions lists its one version.
async fn list(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Body(body): Body<AssistantVersionsParams>,
) -> Result<Json<Vec<Assistant>>, ApiError> {
    let limit = page_size(body.limit);
    // A system assistant has its one version, as has a record from
    // before versions.
    let single = |only: Assistant| {
        let keep = metadata_matches(body.metadata.as_ref(), &only.metadata)
            && body.offset.unwrap_or(0) == 0
            && limit > 0;
        Json(if keep { vec![only] } else { Vec::new() })
    };
    if let Some(graph) = system_graph(&state, &id) {
        return Ok(single(system(&state.runs, &graph)));
    }
    let record = load(&state, &caller.tenant, &id).await?;
    let index = assistant_versions(&id);
    if state.store().index_count(&index).await? == 0 {
        return Ok(single(record.assistant));
    }
    let mut paging = Paging::new(body.offset, body.limit, body.metadata.is_some());
    let versions = versions_of(state.store(), &id);
    let mut walk = versions
        .walk(index, Order::Descending)
        .from(paging.from)
        .chunk(paging.chunk());
    let mut out = Vec::new();
    while out.len() < paging.limit {
        let Some(version) = walk.next().await? else {
            break;
        };
        if metadata_matches(body.metadata.as_ref(), &version.assistant.metadata) && !paging.skips()
        {
            out.push(version.assistant);
        }
    }
    Ok(Json(out))
}

/// Shows version `version` (its config, context and metadata are what
/// runs start from now on); the highest version made stays as it was,
/// so the next change still makes a new number.
async fn set_latest(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Body(body): Body<AssistantLatestParams>,
) -> Result<Json<Assistant>, ApiError> {
    let mut record = load(&state, &caller.tenant, &id).await?;
    let version = body.version;
    let chosen = match versions_of(state.store(), &id)
        .get(&version.to_string())
        .await?
    {
        Some(chosen) => chosen,
        // A record from before versions has only the one it shows.
        None if version == record.assistant.version => record.clone(),
        None => {
            return Err(ApiError::not_found(format!(
                "Version {version} of assistant '{id}' not found."
            )));
        }
    };
    record.assistant = chosen.assistant;
    record.sealed_context = chosen.sealed_context;
    record.sealed_config = chosen.sealed_config;
    assistants(state.store()).put(&id, &record).await?;
    Ok(Json(record.assistant))
}

/// `tenant`'s created assistant `id`: 404 for another tenant's or an
/// unknown one, 409 for a graph's system assistant (made by the server,
/// so it has no versions to make).
async fn load(state: &ApiState, tenant: &TenantId, id: &str) -> Result<AssistantRecord, ApiError> {
    if system_graph(state, id).is_some() {
        return Err(ApiError::conflict(format!(
            "Assistant '{id}' is a graph's system assistant; it has no versions. \
             Create an assistant of the graph to change it."
        )));
    }
    assistants(state.store())
        .get_owned(id, tenant)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Assistant '{id}' not found.")))
}

/// The graph whose system assistant `id` names (by its id or the graph's
/// name), if any.
fn system_graph(state: &ApiState, id: &str) -> Option<String> {
    state
        .runs
        .graphs
        .names()
        .into_iter()
        .find(|g| g == id || system_assistant_id(g) == id)
}

#[cfg(test)]
#[path = "assistant_versions_tests.rs"]
mod router_tests;
