//! Browser safety for an API that a web page could reach: a page on any
//! site may send a browser "simple" request (no preflight, so CORS never
//! asks the scheduler) to a loopback API, and a page on a name the
//! attacker controls may re-point that name at 127.0.0.1 (DNS
//! rebinding) and then read whatever it asks for.
//!
//! Two checks close those doors. [`refuse_simple_bodies`] refuses, on
//! every route, a body a browser may send cross-site without asking: one
//! of the CORS-safelisted types (`text/plain`,
//! `application/x-www-form-urlencoded`, `multipart/form-data`), or a
//! body with no type at all (a `Blob` or `ArrayBuffer` sent by `fetch`).
//! Every route takes JSON, whose type a browser asks permission for, so
//! no client of the API sends either; a request with neither a type nor
//! a body (a cancel, a delete) goes on as before. [`check_host`] applies
//! when the API has no keys: it answers only the loopback names
//! (`localhost`, `*.localhost`, `127.x.y.z`, `[::1]`, any port) and those
//! in `api.allowed_hosts`, so a rebound name gets nothing. With keys the
//! key is the protection and any name is answered. A request that names
//! no host at all cannot come from a browser (browsers always send
//! `Host`), and is let through: the router's in-process callers send
//! none.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use axum::body::HttpBody;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// The body types a browser sends cross-site without a preflight.
const SIMPLE_TYPES: [&str; 3] = [
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
];

/// Host names an API without keys answers besides the loopback ones
/// (`api.allowed_hosts`): the names it is reached by on a network.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedHosts(Arc<[String]>);

/// A configured host name that could never match a request, named.
#[derive(Debug, thiserror::Error)]
#[error("api.allowed_hosts: {name:?} is no host name: {reason}")]
pub struct HostsError {
    name: String,
    reason: &'static str,
}

impl AllowedHosts {
    /// The allow-list of `names`: host names or IP addresses (IPv6 bare
    /// or in brackets), without scheme, port or path, any case. A name
    /// that no `Host` could match is refused, so a typo is not a silent
    /// lock-out.
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<Self, HostsError> {
        let parsed = names
            .iter()
            .map(|name| {
                let name = name.as_ref().trim();
                let refused = |reason| HostsError {
                    name: name.to_owned(),
                    reason,
                };
                if let Ok(addr) = name.parse::<Ipv6Addr>() {
                    return Ok(format!("[{addr}]"));
                }
                if name.is_empty() {
                    return Err(refused("it is empty"));
                }
                if name.contains("://") || name.contains('/') {
                    return Err(refused("write the name alone, without scheme or path"));
                }
                match split_authority(name) {
                    Some((host, "")) => Ok(host),
                    Some(_) => Err(refused("write it without a port; any port is allowed")),
                    None => Err(refused("it has characters no host name has")),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AllowedHosts(parsed.into()))
    }

    /// Whether `host` (as [`split_authority`] gives it) is loopback or
    /// listed.
    fn allows(&self, host: &str) -> bool {
        is_loopback(host) || self.0.iter().any(|allowed| allowed == host)
    }
}

/// Refuses with 415 a request whose body a browser may send cross-site
/// without a preflight: a safelisted type, or a body with no type.
pub async fn refuse_simple_bodies(request: Request, next: Next) -> Response {
    let carries_body =
        [Method::POST, Method::PUT, Method::PATCH, Method::DELETE].contains(request.method());
    if carries_body {
        let empty = request.body().size_hint().exact() == Some(0);
        if let Err(refusal) = check_body_type(request.headers(), empty) {
            return refusal.into_response();
        }
    }
    next.run(request).await
}

fn check_body_type(headers: &HeaderMap, empty: bool) -> Result<(), ApiError> {
    let types: Vec<_> = headers.get_all(header::CONTENT_TYPE).iter().collect();
    if types.is_empty() && !empty {
        return Err(ApiError::unsupported_media_type(
            "A request body must say its type: Content-Type: application/json.",
        ));
    }
    for value in types {
        // Bytes, not text: a browser sends a safelisted type with a
        // parameter that is not ASCII just the same.
        let bytes = value.as_bytes();
        let essence = bytes.split(|b| *b == b';').next().unwrap_or(bytes);
        let essence = essence.trim_ascii();
        if let Some(simple) = SIMPLE_TYPES
            .iter()
            .find(|t| t.as_bytes().eq_ignore_ascii_case(essence))
        {
            return Err(ApiError::unsupported_media_type(format!(
                "The API reads JSON bodies (Content-Type: application/json), not {simple}, \
                 which a browser would send from any site without asking."
            )));
        }
    }
    Ok(())
}

/// Refuses with 421 a request to an API without keys that names a host
/// other than a loopback or allowed one (in `Host`, or the URI's
/// authority as HTTP/2 sends it).
pub async fn check_host(State(hosts): State<HostCheck>, request: Request, next: Next) -> Response {
    if let Some(allowed) = &hosts.0
        && let Err(refusal) = check_named_hosts(&request, allowed)
    {
        return refusal.into_response();
    }
    next.run(request).await
}

/// What [`check_host`] enforces: the names an open API answers (`None`
/// when keys are configured, so any name is answered).
#[derive(Clone)]
pub struct HostCheck(pub Option<AllowedHosts>);

fn check_named_hosts(request: &Request, allowed: &AllowedHosts) -> Result<(), ApiError> {
    let named = request
        .headers()
        .get_all(header::HOST)
        .iter()
        .map(|value| value.to_str().ok())
        .chain(request.uri().authority().map(|a| Some(a.as_str())));
    for name in named {
        if name
            .and_then(split_authority)
            .is_some_and(|(host, _)| allowed.allows(&host))
        {
            continue;
        }
        let name = name.map_or_else(|| "that is not text".to_owned(), |n| format!("{n:?}"));
        return Err(ApiError::client(
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "This API has no keys, so it answers only localhost and loopback addresses, \
                 not the host {name} (a page on another site could reach it by that name). \
                 List the name in api.allowed_hosts (DEEPFLEET__API__ALLOWED_HOSTS), or \
                 configure API keys."
            ),
        ));
    }
    Ok(())
}

/// The host of an authority (`host[:port]`, `[v6][:port]`), lowercase,
/// without a trailing dot, an IPv6 address in its canonical form, and its
/// port's digits (empty without one); `None` for anything else (user
/// info, a path, a bad port).
fn split_authority(authority: &str) -> Option<(String, &str)> {
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => {
            let (inner, after) = rest.split_once(']')?;
            let addr: Ipv6Addr = inner.parse().ok()?;
            let port = match after {
                "" => "",
                after => after.strip_prefix(':')?,
            };
            (format!("[{addr}]"), port)
        }
        None => {
            let (host, port) = authority.rsplit_once(':').unwrap_or((authority, ""));
            let host = host.strip_suffix('.').unwrap_or(host);
            let name_char = |c: char| c.is_ascii_alphanumeric() || "-._".contains(c);
            if host.is_empty() || !host.chars().all(name_char) {
                return None;
            }
            (host.to_ascii_lowercase(), port)
        }
    };
    port.chars()
        .all(|c| c.is_ascii_digit())
        .then_some((host, port))
}

/// `localhost`, a name under it, or a loopback address.
fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<Ipv4Addr>().is_ok_and(|a| a.is_loopback())
        || host == "[::1]"
}

#[cfg(test)]
#[path = "browser_guard_tests.rs"]
mod tests;
