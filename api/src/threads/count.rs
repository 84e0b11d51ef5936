//! `POST /threads/count`: how many of the caller's threads a search with
//! the same filters would list, over all its pages.

use axum::Extension;
use axum::Json;
use axum::extract::State;
use deepfleet_proto::Caller;
use deepfleet_proto::api::ThreadCountParams;
use deepfleet_proto::keys::records::tenant_threads;
use deepfleet_store::Order;

use crate::error::{ApiError, Body};
use crate::routes::{READ, Routes};
use crate::search::{metadata_matches, values_match};
use crate::state::ApiState;
use deepfleet_scheduler::convert::values_if_any;
use deepfleet_scheduler::repo::threads::threads;

pub(crate) fn routes() -> Routes {
    Routes::new().post("/threads/count", READ, count)
}

/// Walks the tenant's index, as a search does: the index also lists
/// records deleted since, which only reading them tells apart. The status
/// and the values are looked up only for threads the metadata filter
/// keeps.
async fn count(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<ThreadCountParams>,
) -> Result<Json<u64>, ApiError> {
    let repo = threads(state.store());
    let mut walk = repo.walk(tenant_threads(caller.tenant.as_str()), Order::Descending);
    let mut n = 0;
    while let Some(record) = walk.next().await? {
        if record.tenant != caller.tenant
            || !metadata_matches(body.metadata.as_ref(), &record.metadata)
        {
            continue;
        }
        if let Some(status) = &body.status
            && state.runs.life.thread_status(&record).await?.as_str() != status
        {
            continue;
        }
        if body.values.is_some() {
            let checkpoint = state.store().load_thread(&record.thread_id).await?;
            let values = values_if_any(&record.thread_id, &checkpoint);
            if !values_match(body.values.as_ref(), values.as_ref()) {
                continue;
            }
        }
        n += 1;
    }
    Ok(Json(n))
}

#[cfg(test)]
#[path = "thread_count_tests.rs"]
mod router_tests;
