//! The operations that need no key: health, info, metrics and this
//! description.

use deepfleet_proto::api::{InfoResponse, OkResponse};

use super::operation::{Operation, Success, object, op};
use super::schemas::Schemas;

/// The routes that need no key.
pub(super) fn operations(s: &mut Schemas) -> Vec<Operation> {
    vec![
        Operation {
            keyed: false,
            ..op(
                "get",
                "/ok",
                "Liveness",
                None,
                vec![Success::Json(200, s.response::<OkResponse>())],
            )
        },
        Operation {
            keyed: false,
            ..op(
                "get",
                "/info",
                "Server information",
                None,
                vec![Success::Json(200, s.response::<InfoResponse>())],
            )
        },
        Operation {
            keyed: false,
            ..op(
                "get",
                "/metrics",
                "Prometheus metrics",
                None,
                vec![Success::Text(200, "text/plain")],
            )
        },
        Operation {
            keyed: false,
            ..op(
                "get",
                "/openapi.json",
                "This description",
                None,
                vec![Success::Json(200, object())],
            )
        },
        Operation {
            keyed: false,
            ..op(
                "get",
                "/docs",
                "This description, rendered",
                None,
                vec![Success::Text(200, "text/html")],
            )
        },
    ]
}
