//! The HTTP API, compatible with the LangGraph Agent Server protocol that
//! `langgraph-sdk` clients and UIs speak (reference `agent-server.md` §1).
//!
//! Routes are in a folder per resource: [`assistants`] (with their
//! count, graph and versions), [`threads`] (with patch, count, copy,
//! prune, history, state and the thread stream), [`runs`] (creation,
//! listing, cancel, batches, waits and streams), [`crons`], and
//! [`store_items`] (the long-term store), plus [`system`] (`/ok`,
//! `/info`, `/metrics`) and [`openapi`] (`/openapi.json`, `/docs`: the
//! description of all of them). Each assistant is also an A2A agent
//! ([`a2a`], with its card) and an MCP tool ([`mcp`]), both running it as
//! a run any route could have made; [`protocol`] is the thread protocol's
//! commands and event stream.
//!
//! This crate is an edge: every handler that makes, renders or follows a
//! run goes through the runs service ([`deepfleet_scheduler::runs`]) and
//! maps its refusals to statuses, and nothing below it imports it. Every
//! failure is an [`ApiError`]. Each module registers its routes in a
//! [`Routes`] table with the access each needs ([`routes`]). Every route
//! but the system and description ones passes [`auth`] first, which
//! resolves the caller's key to its tenant and role, then the route's own
//! access check; handlers take the [`Caller`](deepfleet_proto::Caller) as
//! an extension and see only that tenant's records. One `ServiceBuilder`
//! adds request ids, tracing, a timeout on producing the response head, a
//! body limit and [`browser_guard`]'s refusal of bodies a browser sends
//! without a preflight; without keys, the same guard answers only the
//! loopback and allowed host names.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod a2a;
pub mod assistants;
pub mod auth;
pub mod browser_guard;
pub mod checkpoint_ref;
pub mod cors;
pub mod crons;
pub mod error;
pub mod mcp;
pub mod openapi;
pub mod protocol;
pub mod routes;
pub mod runs;
pub mod search;
pub mod select;
pub mod sort;
pub mod state;
pub mod store_items;
pub mod system;
pub mod threads;

#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod webhook_delivery_tests;

use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, StatusCode};
use axum::{Router, middleware};
use tower::ServiceBuilder;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

pub use error::ApiError;
pub use routes::Routes;
pub use state::{ApiState, MetricsRender};

/// Largest request body accepted unless configured otherwise
/// (`limits.max_body_bytes`).
pub const BODY_LIMIT: usize = 16 * 1024 * 1024;
/// How long a handler may take to produce the response head. Waits and
/// streams answer at once and keep the body open, so they are not cut.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// The routes anyone may call: health, metrics and the description.
fn public_routes() -> Routes {
    system::routes().merge(openapi::routes())
}

/// The routes that need a key, each with the role it declares.
fn tenanted_routes() -> Routes {
    assistants::routes()
        .merge(assistants::count::routes())
        .merge(assistants::graph::routes())
        .merge(assistants::versions::routes())
        .merge(threads::routes())
        .merge(threads::patch::routes())
        .merge(threads::count::routes())
        .merge(threads::copy::routes())
        .merge(threads::prune::routes())
        .merge(threads::history::routes())
        .merge(threads::state_update::routes())
        .merge(threads::state_notes::routes())
        .merge(runs::thread_stream::routes())
        .merge(protocol::routes())
        .merge(runs::routes())
        .merge(runs::bulk_cancel::routes())
        .merge(runs::follow::routes())
        .merge(runs::batches::routes())
        .merge(crons::routes())
        .merge(store_items::routes())
        .merge(a2a::routes())
        .merge(a2a::card::routes())
        .merge(mcp::routes())
}

/// Every route with the access it declares: the public ones and those
/// behind a key.
pub fn route_table() -> Vec<routes::Declared> {
    let mut table = public_routes().table().to_vec();
    table.extend_from_slice(tenanted_routes().table());
    table
}

/// The API router with its layers.
pub fn router(state: ApiState) -> Router {
    let request_id = HeaderName::from_static("x-request-id");
    let layers = ServiceBuilder::new()
        .layer(SetRequestIdLayer::new(request_id.clone(), MakeRequestUuid))
        .layer(TraceLayer::new_for_http())
        .layer(PropagateRequestIdLayer::new(request_id))
        // The extractors enforce it (a declared length at once, a streamed
        // body as it arrives), so a refusal is a 413 with a `detail`.
        .layer(DefaultBodyLimit::max(state.max_body_bytes))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            HEAD_TIMEOUT,
        ))
        // Bodies a browser sends cross-site without a preflight: no route
        // reads them.
        .layer(middleware::from_fn(browser_guard::refuse_simple_bodies));
    // Every route but the public ones needs a key (when keys exist); each
    // route's own declaration (`routes::Access`) says which role. Without
    // keys, they answer loopback and allowed host names only (the public
    // ones answer any, as they do with keys: probes and scrapers name
    // the host as they reach it).
    let tenanted = tenanted_routes()
        .into_router()
        .route_layer(middleware::from_fn_with_state(
            state.keys.clone(),
            auth::authenticate,
        ))
        .route_layer(middleware::from_fn_with_state(
            browser_guard::HostCheck(state.keys.is_open().then(|| state.allowed_hosts.clone())),
            browser_guard::check_host,
        ));
    Router::new()
        .merge(public_routes().into_router())
        .merge(tenanted)
        .fallback(error::no_route)
        .method_not_allowed_fallback(error::no_method)
        .layer(layers)
        .with_state(state)
}
