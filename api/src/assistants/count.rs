//! `POST /assistants/count`: how many assistants a search with the same
//! filters would list over all its pages, the system ones included.

use axum::Extension;
use axum::Json;
use axum::extract::State;
use deepfleet_proto::Caller;
use deepfleet_proto::api::{Assistant, AssistantCountParams};
use deepfleet_proto::keys::records::tenant_assistants;
use deepfleet_store::Order;

use crate::error::{ApiError, Body};
use crate::routes::{READ, Routes};
use crate::search::metadata_matches;
use crate::state::ApiState;
use deepfleet_scheduler::repo::assistants::assistants;
use deepfleet_scheduler::runs::assistants::system;

pub(crate) fn routes() -> Routes {
    Routes::new().post("/assistants/count", READ, count)
}

/// Walks the tenant's index, as a search does (it also lists records
/// deleted since, which only reading them tells apart).
async fn count(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<AssistantCountParams>,
) -> Result<Json<u64>, ApiError> {
    let matches = |a: &Assistant| {
        body.graph_id.as_ref().is_none_or(|g| a.graph_id == *g)
            && body.name.as_ref().is_none_or(|n| a.name == *n)
            && metadata_matches(body.metadata.as_ref(), &a.metadata)
    };
    let mut n = 0;
    for graph in state.runs.graphs.names() {
        n += u64::from(matches(&system(&state.runs, &graph)));
    }
    let repo = assistants(state.store());
    let mut walk = repo.walk(tenant_assistants(caller.tenant.as_str()), Order::Ascending);
    while let Some(record) = walk.next().await? {
        n += u64::from(record.tenant == caller.tenant && matches(&record.assistant));
    }
    Ok(Json(n))
}

#[cfg(test)]
#[path = "assistant_count_tests.rs"]
mod router_tests;
