//! Authentication: the caller's API key becomes its tenant and role, and
//! travels to the route's access check ([`crate::routes`]) and the
//! handlers as a [`Caller`](deepfleet_proto::Caller) request extension.
//!
//! [`ApiKeys`] knows keys by their hashes only. The key comes as
//! `x-api-key` (what `langgraph-sdk` sends for `api_key`) or
//! `Authorization: Bearer`.
//! Without any configured key the API is open: every caller is
//! [`Caller::open`](deepfleet_proto::Caller::open), the default tenant's
//! admin.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use deepfleet_proto::tenant::CREDENTIAL_HEADER;

use crate::error::ApiError;
use deepfleet_scheduler::keys::ApiKeys;

/// The key a request presents: `x-api-key`, else `Authorization: Bearer`.
pub fn presented_key(headers: &HeaderMap) -> Option<&str> {
    if let Some(key) = headers.get(CREDENTIAL_HEADER).and_then(|v| v.to_str().ok()) {
        return Some(key.trim());
    }
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// The middleware: answers 401 without a known key; otherwise hands the
/// request on with its [`Caller`](deepfleet_proto::Caller). What the caller may do is each route's
/// own declaration ([`crate::routes`]), checked after this.
pub async fn authenticate(
    State(keys): State<ApiKeys>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(caller) = keys.identify(presented_key(request.headers())) else {
        return ApiError::unauthenticated().into_response();
    };
    request.extensions_mut().insert(caller);
    next.run(request).await
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;
