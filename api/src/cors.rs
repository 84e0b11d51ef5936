//! Cross-origin requests: a browser UI served from another origin (the
//! Agent Chat UI, LangGraph Studio) calls the API only if the scheduler
//! answers its preflights and marks its answers as readable there, as the
//! Agent Server's `http.cors` configures.
//!
//! Origins are exact (`https://chat.example.com`), any port of a host
//! (`http://localhost:*`), or `*` for any. The default lets a UI on the
//! same machine in (localhost and loopback addresses, any port) and no
//! one else, so a local UI works out of the box and a deployed API opens
//! only to the origins it names.

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, Method};
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer, ExposeHeaders};

/// Origins a local UI is served from.
pub const LOCAL_ORIGINS: [&str; 3] = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

/// Headers the SDKs send: the body's type, the API key (`x-api-key`, or
/// a bearer token), the request id, and where a stream resumes.
pub const DEFAULT_ALLOW_HEADERS: [&str; 6] = [
    "content-type",
    "x-api-key",
    "authorization",
    "x-auth-scheme",
    "x-request-id",
    "last-event-id",
];

/// Headers a browser client may read: the run a stream or wait answers
/// (`Content-Location`, what the JavaScript SDK takes the run id from),
/// the new resource, the request id, and when to retry.
pub const DEFAULT_EXPOSE_HEADERS: [&str; 4] = [
    "content-location",
    "location",
    "x-request-id",
    "retry-after",
];

/// What the API answers cross-origin requests with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorsPolicy {
    /// Origins allowed in: exact, `scheme://host:*`, or `*`.
    pub allow_origins: Vec<String>,
    /// Methods allowed.
    pub allow_methods: Vec<String>,
    /// Request headers allowed; `*` allows whatever a preflight asks for.
    pub allow_headers: Vec<String>,
    /// Response headers a browser client may read.
    pub expose_headers: Vec<String>,
    /// Whether requests may carry cookies and HTTP authentication (never
    /// with origin `*`, which browsers refuse).
    pub allow_credentials: bool,
    /// How long a browser may reuse a preflight's answer.
    pub max_age: Duration,
}

impl Default for CorsPolicy {
    fn default() -> Self {
        let owned = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect();
        CorsPolicy {
            allow_origins: owned(&LOCAL_ORIGINS),
            allow_methods: owned(&["GET", "POST", "PUT", "PATCH", "DELETE"]),
            allow_headers: owned(&DEFAULT_ALLOW_HEADERS),
            expose_headers: owned(&DEFAULT_EXPOSE_HEADERS),
            allow_credentials: false,
            max_age: Duration::from_secs(600),
        }
    }
}

/// A CORS setting that cannot be applied, named.
#[derive(Debug, thiserror::Error)]
#[error("api.cors.{field}: {reason}")]
pub struct CorsError {
    field: &'static str,
    reason: String,
}

impl CorsPolicy {
    /// The layer answering preflights and marking answers by this policy.
    pub fn layer(&self) -> Result<CorsLayer, CorsError> {
        let bad = |field, reason: String| CorsError { field, reason };
        let any_origin = self.allow_origins.iter().any(|o| o == "*");
        if any_origin && self.allow_credentials {
            return Err(bad(
                "allow_credentials",
                "browsers refuse credentials with origin \"*\"; name the origins".into(),
            ));
        }
        let patterns = self
            .allow_origins
            .iter()
            .filter(|o| o.as_str() != "*")
            .map(|o| OriginPattern::parse(o).map_err(|e| bad("allow_origins", e)))
            .collect::<Result<Vec<_>, _>>()?;
        let methods = self
            .allow_methods
            .iter()
            .map(|m| {
                Method::from_bytes(m.trim().to_ascii_uppercase().as_bytes())
                    .map_err(|e| bad("allow_methods", format!("{m:?}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let headers = |field, list: &[String]| {
            list.iter()
                .filter(|h| h.as_str() != "*")
                .map(|h| {
                    HeaderName::from_bytes(h.trim().as_bytes())
                        .map_err(|e| bad(field, format!("{h:?}: {e}")))
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let allow_headers = if self.allow_headers.iter().any(|h| h == "*") {
            AllowHeaders::mirror_request()
        } else {
            AllowHeaders::list(headers("allow_headers", &self.allow_headers)?)
        };
        let origin = if any_origin {
            AllowOrigin::any()
        } else {
            AllowOrigin::predicate(move |origin: &HeaderValue, _| {
                origin
                    .to_str()
                    .is_ok_and(|o| patterns.iter().any(|p| p.matches(o)))
            })
        };
        Ok(CorsLayer::new()
            .allow_origin(origin)
            .allow_methods(methods)
            .allow_headers(allow_headers)
            .expose_headers(ExposeHeaders::list(headers(
                "expose_headers",
                &self.expose_headers,
            )?))
            .allow_credentials(self.allow_credentials)
            .max_age(self.max_age))
    }
}

/// One allowed origin: exact, or a host on any port (`scheme://host:*`).
#[derive(Debug, Clone)]
enum OriginPattern {
    Exact(String),
    AnyPort(String),
}

impl OriginPattern {
    fn parse(origin: &str) -> Result<Self, String> {
        let origin = origin.trim().trim_end_matches('/');
        let Some((scheme, host)) = origin.split_once("://") else {
            return Err(format!(
                "{origin:?} is no origin: write scheme://host[:port], scheme://host:* or *"
            ));
        };
        if scheme.is_empty() || host.is_empty() || host.contains('/') {
            return Err(format!("{origin:?} is no origin (scheme://host[:port])"));
        }
        Ok(match origin.strip_suffix(":*") {
            Some(base) => OriginPattern::AnyPort(base.to_ascii_lowercase()),
            None => OriginPattern::Exact(origin.to_ascii_lowercase()),
        })
    }

    fn matches(&self, origin: &str) -> bool {
        let origin = origin.to_ascii_lowercase();
        match self {
            OriginPattern::Exact(exact) => origin == *exact,
            OriginPattern::AnyPort(base) => {
                origin == *base
                    || origin.strip_prefix(base.as_str()).is_some_and(|rest| {
                        rest.strip_prefix(':').is_some_and(|port| {
                            !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
                        })
                    })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{Request, StatusCode, header};
    use axum::routing::post;
    use pretty_assertions::assert_eq;
    use tower::ServiceExt;

    fn app(policy: &CorsPolicy) -> axum::Router {
        axum::Router::new()
            .route("/threads/search", post(|| async { "[]" }))
            .layer(policy.layer().unwrap())
    }

    fn preflight(origin: &str) -> Request<Body> {
        Request::builder()
            .method(Method::OPTIONS)
            .uri("/threads/search")
            .header(header::ORIGIN, origin)
            .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
            .header(
                header::ACCESS_CONTROL_REQUEST_HEADERS,
                "content-type,x-api-key",
            )
            .body(Body::empty())
            .unwrap()
    }

    #[tokio::test]
    async fn a_local_ui_is_let_in_by_default_and_others_are_not() {
        let policy = CorsPolicy::default();
        let answer = app(&policy)
            .oneshot(preflight("http://localhost:3000"))
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        let headers = answer.headers();
        assert_eq!(
            headers[header::ACCESS_CONTROL_ALLOW_ORIGIN],
            "http://localhost:3000"
        );
        let allowed = headers[header::ACCESS_CONTROL_ALLOW_HEADERS]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(allowed.contains("x-api-key"), "{allowed}");
        assert!(
            headers[header::ACCESS_CONTROL_ALLOW_METHODS]
                .to_str()
                .unwrap()
                .contains("POST")
        );
        let elsewhere = app(&policy)
            .oneshot(preflight("https://evil.example"))
            .await
            .unwrap();
        assert!(
            !elsewhere
                .headers()
                .contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN)
        );
    }

    #[tokio::test]
    async fn answers_expose_the_run_location_to_the_named_origin() {
        let policy = CorsPolicy {
            allow_origins: vec!["https://chat.example.com".into()],
            ..CorsPolicy::default()
        };
        let request = Request::builder()
            .method(Method::POST)
            .uri("/threads/search")
            .header(header::ORIGIN, "https://chat.example.com")
            .body(Body::empty())
            .unwrap();
        let answer = app(&policy).oneshot(request).await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        let headers = answer.headers();
        assert_eq!(
            headers[header::ACCESS_CONTROL_ALLOW_ORIGIN],
            "https://chat.example.com"
        );
        let exposed = headers[header::ACCESS_CONTROL_EXPOSE_HEADERS]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(exposed.contains("content-location"), "{exposed}");
    }

    #[test]
    fn origins_match_exactly_or_on_any_port() {
        let local = OriginPattern::parse("http://localhost:*").unwrap();
        assert!(local.matches("http://localhost:3000"));
        assert!(local.matches("http://localhost"));
        assert!(!local.matches("http://localhost.evil.example"));
        assert!(!local.matches("http://localhost:3000.evil.example"));
        assert!(!local.matches("https://localhost:3000"));
        let exact = OriginPattern::parse("https://Chat.Example.com/").unwrap();
        assert!(exact.matches("https://chat.example.com"));
        assert!(!exact.matches("https://chat.example.com:8443"));
    }

    #[test]
    fn bad_settings_are_refused_by_name() {
        let refused = |policy: CorsPolicy| policy.layer().unwrap_err().to_string();
        let credentials = refused(CorsPolicy {
            allow_origins: vec!["*".into()],
            allow_credentials: true,
            ..CorsPolicy::default()
        });
        assert!(
            credentials.starts_with("api.cors.allow_credentials: "),
            "{credentials}"
        );
        let origin = refused(CorsPolicy {
            allow_origins: vec!["chat.example.com".into()],
            ..CorsPolicy::default()
        });
        assert!(origin.starts_with("api.cors.allow_origins: "), "{origin}");
        let method = refused(CorsPolicy {
            allow_methods: vec!["GE T".into()],
            ..CorsPolicy::default()
        });
        assert!(method.starts_with("api.cors.allow_methods: "), "{method}");
    }

    #[tokio::test]
    async fn any_origin_and_any_header_when_asked() {
        let policy = CorsPolicy {
            allow_origins: vec!["*".into()],
            allow_headers: vec!["*".into()],
            ..CorsPolicy::default()
        };
        let answer = app(&policy)
            .oneshot(preflight("https://anywhere.example"))
            .await
            .unwrap();
        let headers = answer.headers();
        assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        assert_eq!(
            headers[header::ACCESS_CONTROL_ALLOW_HEADERS],
            "content-type,x-api-key"
        );
    }
}
