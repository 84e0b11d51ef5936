//! The assistants' operations.

use deepfleet_proto::api::{
    Assistant, AssistantCountParams, AssistantCreateParams, AssistantLatestParams,
    AssistantPatchParams, AssistantSearchParams, AssistantVersionsParams,
};

use super::operation::{Operation, Success, object, op};
use super::schemas::Schemas;

/// Assistants.
pub(super) fn operations(s: &mut Schemas) -> Vec<Operation> {
    vec![
        op(
            "post",
            "/assistants",
            "Create an assistant",
            s.request::<AssistantCreateParams>(),
            vec![Success::Json(200, s.response::<Assistant>())],
        ),
        op(
            "post",
            "/assistants/search",
            "Search assistants",
            s.request::<AssistantSearchParams>(),
            vec![Success::Json(200, s.response::<Vec<Assistant>>())],
        ),
        op(
            "post",
            "/assistants/count",
            "Count assistants",
            s.request::<AssistantCountParams>(),
            vec![Success::Json(200, s.response::<u64>())],
        ),
        op(
            "get",
            "/assistants/{assistant_id}",
            "Get an assistant",
            None,
            vec![Success::Json(200, s.response::<Assistant>())],
        ),
        op(
            "patch",
            "/assistants/{assistant_id}",
            "Change an assistant (a new version)",
            s.request::<AssistantPatchParams>(),
            vec![Success::Json(200, s.response::<Assistant>())],
        ),
        op(
            "post",
            "/assistants/{assistant_id}/versions",
            "An assistant's versions, newest first",
            s.request::<AssistantVersionsParams>(),
            vec![Success::Json(200, s.response::<Vec<Assistant>>())],
        ),
        op(
            "post",
            "/assistants/{assistant_id}/latest",
            "Show and run another version of an assistant",
            s.request::<AssistantLatestParams>(),
            vec![Success::Json(200, s.response::<Assistant>())],
        ),
        op(
            "delete",
            "/assistants/{assistant_id}",
            "Delete an assistant",
            None,
            vec![Success::Json(200, object())],
        ),
    ]
}
