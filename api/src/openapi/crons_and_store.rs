//! The crons' and the long-term store's operations.

use deepfleet_proto::Item;
use deepfleet_proto::api::{
    Cron, CronCountParams, CronCreateParams, CronSearchParams, CronUpdateParams, ItemDeleteParams,
    ItemGetQuery, ItemPutParams, ItemSearchParams, ItemSearchResponse, NamespaceListParams,
    NamespaceListResponse,
};
use serde_json::{Map, Value};

use super::operation::{Operation, Success, op};
use super::schemas::Schemas;

/// Crons and the long-term store.
pub(super) fn operations(s: &mut Schemas) -> Vec<Operation> {
    vec![
        op(
            "post",
            "/runs/crons",
            "Create a stateless cron",
            s.request::<CronCreateParams>(),
            vec![Success::Json(200, s.response::<Cron>())],
        ),
        op(
            "post",
            "/threads/{thread_id}/runs/crons",
            "Create a cron on a thread",
            s.request::<CronCreateParams>(),
            vec![Success::Json(200, s.response::<Cron>())],
        ),
        op(
            "post",
            "/runs/crons/search",
            "Search crons",
            s.request::<CronSearchParams>(),
            vec![Success::Json(200, s.response::<Vec<Map<String, Value>>>())],
        ),
        op(
            "post",
            "/runs/crons/count",
            "Count crons",
            s.request::<CronCountParams>(),
            vec![Success::Json(200, s.response::<u64>())],
        ),
        op(
            "get",
            "/runs/crons/{cron_id}",
            "Get a cron",
            None,
            vec![Success::Json(200, s.response::<Cron>())],
        ),
        op(
            "patch",
            "/runs/crons/{cron_id}",
            "Update a cron",
            s.request::<CronUpdateParams>(),
            vec![Success::Json(200, s.response::<Cron>())],
        ),
        op(
            "delete",
            "/runs/crons/{cron_id}",
            "Delete a cron",
            None,
            vec![Success::Empty(204)],
        ),
        op(
            "put",
            "/store/items",
            "Put an item",
            s.request::<ItemPutParams>(),
            vec![Success::Empty(204)],
        ),
        Operation {
            query: s.query::<ItemGetQuery>(),
            ..op(
                "get",
                "/store/items",
                "Get an item",
                None,
                vec![Success::Json(200, s.response::<Option<Item>>())],
            )
        },
        op(
            "delete",
            "/store/items",
            "Delete an item",
            s.request::<ItemDeleteParams>(),
            vec![Success::Empty(204)],
        ),
        op(
            "post",
            "/store/items/search",
            "Search items",
            s.request::<ItemSearchParams>(),
            vec![Success::Json(200, s.response::<ItemSearchResponse>())],
        ),
        op(
            "post",
            "/store/namespaces",
            "List namespaces",
            s.request::<NamespaceListParams>(),
            vec![Success::Json(200, s.response::<NamespaceListResponse>())],
        ),
    ]
}
