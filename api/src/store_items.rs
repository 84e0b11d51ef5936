//! The long-term store: `PUT|GET|DELETE /store/items`,
//! `POST /store/items/search`, `POST /store/namespaces` (reference §1.9).
//!
//! Each tenant's namespaces lie under a root label of its own
//! ([`store_namespace`]): a request's namespaces are scoped on the way in
//! and the label taken off on the way out, so callers never see it and
//! cannot name another tenant's items.

use axum::Extension;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use deepfleet_proto::api::{
    ItemDeleteParams, ItemGetQuery, ItemPutParams, ItemSearchParams, ItemSearchResponse,
    NamespaceListParams, NamespaceListResponse, PageLimit,
};
use deepfleet_proto::item::{ItemSearch, NamespaceQuery, validate_item_address, validate_prefix};
use deepfleet_proto::tenant::{caller_namespace, store_namespace};
use deepfleet_proto::{Caller, Item, TenantId};

use crate::error::{ApiError, Body, QueryString};
use crate::routes::{READ, Routes, SUBMIT};
use crate::state::ApiState;

pub(crate) fn routes() -> Routes {
    Routes::new()
        .put("/store/items", SUBMIT, put_item)
        .get("/store/items", READ, get_item)
        .delete("/store/items", SUBMIT, delete_item)
        .post("/store/items/search", READ, search)
        .post("/store/namespaces", READ, namespaces)
}

async fn put_item(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<ItemPutParams>,
) -> Result<StatusCode, ApiError> {
    validate_item_address(&body.namespace, &body.key)
        .map_err(|e| ApiError::unprocessable(e.to_string()))?;
    // An item is a file of the long-term store: the file limit holds.
    let bytes = serde_json::to_vec(&body.value).map_or(usize::MAX, |v| v.len());
    state
        .runs
        .life
        .intake()
        .limits()
        .check_file(&format!("item {}", body.key), bytes)?;
    state
        .store()
        .put_item(
            &store_namespace(&caller.tenant, &body.namespace),
            &body.key,
            &body.value,
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

fn split_namespace(joined: Option<&str>) -> Vec<String> {
    joined
        .filter(|s| !s.is_empty())
        .map(|s| s.split('.').map(str::to_owned).collect())
        .unwrap_or_default()
}

async fn get_item(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    QueryString(query): QueryString<ItemGetQuery>,
) -> Result<Json<Option<Item>>, ApiError> {
    let namespace = split_namespace(query.namespace.as_deref());
    validate_item_address(&namespace, &query.key)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let item = state
        .store()
        .get_item(&store_namespace(&caller.tenant, &namespace), &query.key)
        .await?;
    Ok(Json(item.and_then(|item| unscoped(&caller.tenant, item))))
}

async fn delete_item(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<ItemDeleteParams>,
) -> Result<StatusCode, ApiError> {
    validate_item_address(&body.namespace, &body.key)
        .map_err(|e| ApiError::unprocessable(e.to_string()))?;
    state
        .store()
        .delete_item(&store_namespace(&caller.tenant, &body.namespace), &body.key)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn search(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<ItemSearchParams>,
) -> Result<Json<ItemSearchResponse>, ApiError> {
    if body.query.is_some() {
        return Err(ApiError::unprocessable(
            "semantic `query` search is not supported by this store",
        ));
    }
    validate_prefix(&body.namespace_prefix).map_err(|e| ApiError::unprocessable(e.to_string()))?;
    let defaults = ItemSearch::default();
    let search = ItemSearch {
        namespace_prefix: store_namespace(&caller.tenant, &body.namespace_prefix),
        filter: body.filter.unwrap_or_default(),
        limit: body.limit.map_or(defaults.limit, PageLimit::get),
        offset: body.offset.unwrap_or(defaults.offset),
    };
    let items = state.store().search_items(&search).await?;
    let items = items
        .into_iter()
        .filter_map(|item| unscoped(&caller.tenant, item))
        .collect();
    Ok(Json(ItemSearchResponse { items }))
}

async fn namespaces(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<NamespaceListParams>,
) -> Result<Json<NamespaceListResponse>, ApiError> {
    let prefix = body.prefix.unwrap_or_default();
    let suffix = body.suffix.unwrap_or_default();
    validate_prefix(&prefix)
        .and_then(|()| validate_prefix(&suffix))
        .map_err(|e| ApiError::unprocessable(e.to_string()))?;
    let defaults = NamespaceQuery::default();
    let query = NamespaceQuery {
        prefix: store_namespace(&caller.tenant, &prefix),
        suffix,
        // The tenant's root label is one more.
        max_depth: body.max_depth.map(|depth| depth.saturating_add(1)),
        limit: body.limit.map_or(defaults.limit, PageLimit::get),
        offset: body.offset.unwrap_or(defaults.offset),
    };
    let namespaces = state
        .store()
        .list_namespaces(&query)
        .await?
        .iter()
        .filter_map(|namespace| caller_namespace(&caller.tenant, namespace))
        .filter(|namespace| !namespace.is_empty())
        .collect();
    Ok(Json(NamespaceListResponse { namespaces }))
}

/// `item` as `tenant`'s callers see it: without the tenant's root label.
fn unscoped(tenant: &TenantId, mut item: Item) -> Option<Item> {
    item.namespace = caller_namespace(tenant, &item.namespace)?;
    Some(item)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_arrive_dot_joined() {
        assert_eq!(split_namespace(Some("a.b")), vec!["a", "b"]);
        assert!(split_namespace(Some("")).is_empty());
    }
}

#[cfg(test)]
#[path = "store_items_tests.rs"]
mod router_tests;
