//! The HTTP API, compatible with the LangGraph Agent Server protocol that
//! `langgraph-sdk` clients and UIs speak (reference `agent-server.md` §1).
//!
//! Routes are split by resource: [`assistants`] (with [`assistant_count`]
//! and [`assistant_versions`]),
//! [`threads`] (with [`thread_patch`], [`thread_count`], [`thread_copy`]
//! and [`thread_prune`]), [`runs`] (creation, listing, cancel; many at
//! once: [`bulk_cancel`]), [`follow`] (wait, join, streaming) and
//! [`system`] (`/ok`, `/info`, `/metrics`), [`openapi`] (`/openapi.json`,
//! `/docs`: the description of all of them), [`store_items`] (the long-term
//! store), [`crons`] (schedules; [`cron_search`] their search), plus
//! [`batches`] to follow thousands of runs. Each assistant is also an
//! A2A agent ([`a2a`], its card [`agent_card`]) and an MCP tool
//! ([`mcp`], the tools [`mcp_tools`]), both running it as a run any route
//! could have made.
//!
//! This crate is an edge: every handler that makes, renders or follows a
//! run goes through the runs service ([`deepfleet_scheduler::runs`]) and
//! maps its refusals to statuses, and nothing below it imports it.
//! Following one run is [`wait`] and [`follower`] (its events [`stream`]
//! and [`partials`]). Every failure is an [`ApiError`]. Each module registers its routes in
//! a [`Routes`] table with the access each needs ([`routes`]). Every route
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
pub mod a2a_stream;
pub mod a2a_task;
pub mod a2a_wire;
pub mod agent_card;
pub mod assistant_count;
pub mod assistant_graph;
pub mod assistant_versions;
pub mod assistants;
pub mod auth;
pub mod batches;
pub mod browser_guard;
pub mod bulk_cancel;
pub mod checkpoint_ref;
pub mod cors;
pub mod cron_search;
pub mod crons;
pub mod error;
pub mod follow;
pub mod follower;
pub mod history;
pub mod mcp;
pub mod mcp_tools;
pub mod openapi;
pub mod partials;
pub mod protocol;
pub mod routes;
pub mod run_headers;
pub mod runs;
pub mod search;
pub mod select;
pub mod sort;
pub mod state;
pub mod state_notes;
pub mod state_update;
pub mod step_trace;
pub mod store_items;
pub mod stream;
pub mod system;
pub mod thread_copy;
pub mod thread_count;
pub mod thread_patch;
pub mod thread_prune;
pub mod thread_stream;
pub mod threads;
pub mod wait;

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
        .merge(assistant_count::routes())
        .merge(assistant_graph::routes())
        .merge(assistant_versions::routes())
        .merge(threads::routes())
        .merge(thread_patch::routes())
        .merge(thread_count::routes())
        .merge(thread_copy::routes())
        .merge(thread_prune::routes())
        .merge(history::routes())
        .merge(state_update::routes())
        .merge(state_notes::routes())
        .merge(thread_stream::routes())
        .merge(protocol::routes())
        .merge(runs::routes())
        .merge(bulk_cancel::routes())
        .merge(follow::routes())
        .merge(batches::routes())
        .merge(crons::routes())
        .merge(store_items::routes())
        .merge(a2a::routes())
        .merge(agent_card::routes())
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
