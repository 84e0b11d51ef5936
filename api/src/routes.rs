//! The route table: every route is registered with the access it needs,
//! and that declaration is what the authorization layer enforces.
//!
//! The role a request needs is never read from its path: a path can end
//! in any word a caller chooses (an assistant called `search`), so the
//! table is the only source. A handler can only be routed through
//! [`Routes`], whose every method takes an [`Access`], so a route with no
//! declared access does not compile; [`Routes::table`] lists the
//! declarations for the matrix test and the security documentation.

use axum::Router;
use axum::extract::Request;
use axum::handler::Handler;
use axum::http::Method;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, on};
use deepfleet_proto::{Caller, Role};

use crate::error::ApiError;
use crate::state::ApiState;

/// Who may use a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, without a key: health, metrics and the API description.
    Public,
    /// A key of at least this role.
    Role(Role),
}

/// Shorthands for the table's entries.
pub const PUBLIC: Access = Access::Public;
/// Reads: a `read` key or better.
pub const READ: Access = Access::Role(Role::Read);
/// Writes: a `submit` key or better.
pub const SUBMIT: Access = Access::Role(Role::Submit);
/// Assistants' writes: an `admin` key.
pub const ADMIN: Access = Access::Role(Role::Admin);

/// One declared route: `method path` needs `access`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// The HTTP method.
    pub method: Method,
    /// The path as routed, with `{param}` segments.
    pub path: &'static str,
    /// What it needs.
    pub access: Access,
}

/// A router under construction and the access of each route it holds.
pub struct Routes {
    router: Router<ApiState>,
    table: Vec<Declared>,
}

impl Default for Routes {
    fn default() -> Self {
        Routes::new()
    }
}

impl Routes {
    /// No routes.
    pub fn new() -> Self {
        Routes {
            router: Router::new(),
            table: Vec::new(),
        }
    }

    /// Routes `GET path` (and `HEAD`, as axum does) to `handler`.
    pub fn get<H, T>(self, path: &'static str, access: Access, handler: H) -> Self
    where
        H: Handler<T, ApiState>,
        T: 'static,
    {
        self.add(Method::GET, MethodFilter::GET, path, access, handler)
    }

    /// Routes `POST path` to `handler`.
    pub fn post<H, T>(self, path: &'static str, access: Access, handler: H) -> Self
    where
        H: Handler<T, ApiState>,
        T: 'static,
    {
        self.add(Method::POST, MethodFilter::POST, path, access, handler)
    }

    /// Routes `PUT path` to `handler`.
    pub fn put<H, T>(self, path: &'static str, access: Access, handler: H) -> Self
    where
        H: Handler<T, ApiState>,
        T: 'static,
    {
        self.add(Method::PUT, MethodFilter::PUT, path, access, handler)
    }

    /// Routes `PATCH path` to `handler`.
    pub fn patch<H, T>(self, path: &'static str, access: Access, handler: H) -> Self
    where
        H: Handler<T, ApiState>,
        T: 'static,
    {
        self.add(Method::PATCH, MethodFilter::PATCH, path, access, handler)
    }

    /// Routes `DELETE path` to `handler`.
    pub fn delete<H, T>(self, path: &'static str, access: Access, handler: H) -> Self
    where
        H: Handler<T, ApiState>,
        T: 'static,
    {
        self.add(Method::DELETE, MethodFilter::DELETE, path, access, handler)
    }

    /// Both tables and routers.
    pub fn merge(mut self, other: Routes) -> Self {
        self.router = self.router.merge(other.router);
        self.table.extend(other.table);
        self
    }

    /// The declarations, in registration order.
    pub fn table(&self) -> &[Declared] {
        &self.table
    }

    /// The router, each route behind its access check.
    pub fn into_router(self) -> Router<ApiState> {
        self.router
    }

    fn add<H, T>(
        mut self,
        method: Method,
        filter: MethodFilter,
        path: &'static str,
        access: Access,
        handler: H,
    ) -> Self
    where
        H: Handler<T, ApiState>,
        T: 'static,
    {
        let route = on(filter, handler);
        let route = match access {
            Access::Public => route,
            Access::Role(role) => {
                route.route_layer(middleware::from_fn(move |request: Request, next: Next| {
                    authorize(role, request, next)
                }))
            }
        };
        self.router = self.router.route(path, route);
        self.table.push(Declared {
            method,
            path,
            access,
        });
        self
    }
}

/// Lets the request through when its caller (put there by the
/// authentication layer) holds `needed`; 403 otherwise, and 401 when no
/// caller was identified at all.
async fn authorize(needed: Role, request: Request, next: Next) -> Response {
    let Some(caller) = request.extensions().get::<Caller>() else {
        return ApiError::unauthenticated().into_response();
    };
    if let Err(refusal) = require(caller, needed) {
        return refusal.into_response();
    }
    next.run(request).await
}

/// `Ok` when `caller` may do what needs `needed`; the 403 otherwise. The
/// RPC endpoints call it per method, after the route's own check.
pub fn require(caller: &Caller, needed: Role) -> Result<(), ApiError> {
    if caller.role.allows(needed) {
        return Ok(());
    }
    Err(ApiError::forbidden(format!(
        "This key's role ({}) may not do this; it needs {needed}.",
        caller.role
    )))
}

#[cfg(test)]
#[path = "routes_tests.rs"]
mod tests;
